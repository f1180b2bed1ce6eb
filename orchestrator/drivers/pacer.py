"""pacer (pacer/pacer.c, compiled with the system's C compiler on first use): the open model at a fixed
arrival rate. Arrival i is due at i / rate seconds into the window whatever the server does; it
goes out on an idle keep-alive connection, a new one when none is idle, and past the profile's
concurrency (the most connections it may open) it waits for one. Its latency runs from its
intended send time to the response's last byte, so a stall of the server or of pacer itself
counts in full (no coordinated omission).

Why a generator of our own: k6's open model kept 2,875-7,750 req/s on the one load CPU here, a
tenth of what the targets serve (docs/load-generators.md has the candidates measured side by side).

pacer writes one record per arrival; the latencies and the send lag are read from them with the
same nearest-rank percentiles as every driver's, then kept as a compact parquet file
(`.records.parquet`, about 7 bytes an arrival against 24) and the raw file deleted. Two counts say
whether the schedule was kept, and by whom: `late_sends` (arrivals pacer sent more than its tolerance
after their time although a connection was idle: its own lag, a generator limit) and `dropped`
(arrivals that waited longer than the timeout for a connection, all of them busy with the server:
the server's).
"""
from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

from orchestrator import lazy
from orchestrator.config.load import ARRIVAL, NOT_SENT, LoadResult, LoadSpec, good, latency_fields
from orchestrator.config.mix import Part, parts_of
from orchestrator.config.scenarios import Scenario
from orchestrator.core.cpus import parse_cpus
from orchestrator.drivers.base import Driver, DriverFailed, run_generators
from orchestrator.infra.procs import log_tail, require_tool
from orchestrator.infra.tools import compiled

np = lazy.module("numpy")
pa = lazy.module("pyarrow")
pq = lazy.module("pyarrow.parquet")

SOURCE = Path(__file__).resolve().parent / "pacer" / "pacer.c"
# 24 bytes per arrival, as pacer.c writes them; flags WAITED: no connection was idle when it was due
RECORD = [("intended_ns", "<u8"), ("latency_ns", "<u8"), ("lag_us", "<u4"), ("status", "<i2"), ("flags", "<u2")]
RECORD_BYTES = 24
WAITED = 1
ERR_READ, ERR_TIMEOUT, ERR_DROPPED, ERR_WRITE = -2, -3, NOT_SENT, -5
TOLERANCE_US = 1000   # later than this after its time, with a connection idle, an arrival was sent late
# How far ahead of now the processes of one schedule start it: each opens its connections first (up to 2 s
# against a server slow to accept; then it starts late, and its records say so)
START_LEAD_NS = 500_000_000
PRECONNECT = 64       # connections opened before the window (at most the concurrency)


def build() -> str:
    """pacer's executable, compiled once per source (infra/tools.compiled): its registry entry's
    `build`, so the run asks for it before anything is measured. Its version line names its source."""
    cc = require_tool("cc", "apt-get install -y gcc")
    source = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]
    return str(compiled("pacer", SOURCE, [cc, "-O2", "-Wall", f'-DPACER_SOURCE="{source}"', "-o", "{out}", str(SOURCE)]))


def request_bytes(s: Scenario, host: str, port: int) -> bytes:
    """The request as pacer sends it: every time the same, but for the id of a scenario that walks
    ids (pacer puts each arrival's in place of "{id}": --ids)."""
    headers = {"Host": f"{host}:{port}", **s.headers}
    if s.body is not None:
        headers["Content-Length"] = str(len(s.body))
    path = s.ids.prefix + "{id}" if s.ids else s.path
    head = f"{s.method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
    return head.encode() + (s.body or b"")


def ids_args(s: Scenario) -> list[str]:
    return ["--ids", f"{s.ids.hot}:{s.ids.every}:{s.ids.first}:{s.ids.count}"] if s.ids else []


def request_args(spec: LoadSpec, request_file: Path) -> list[str]:
    """--request (with its --weight and --ids) per part, each request in a file of its own beside
    request_file (its part's number in the name of all but the first)."""
    argv = []
    for k, part in enumerate(parts_of(spec.scenario)):
        path = request_file if k == 0 else request_file.with_name(f"{request_file.stem}-part{k}.http")
        path.write_bytes(request_bytes(part.scenario, spec.host, spec.port))
        argv += ["--request", str(path), "--weight", f"{part.weight:g}", *ids_args(part.scenario)]
    return argv


def read_records(path: Path):
    """pacer's records: its raw file as it wrote it, or the parquet file the driver keeps (keep_records)."""
    if path.suffix != ".parquet":
        return np.fromfile(path, dtype=RECORD)
    table = pq.read_table(path)
    out = np.empty(table.num_rows, dtype=RECORD)
    for name in out.dtype.names:
        out[name] = table[name].to_numpy()
    return out


def keep_records(records, raw: Path) -> Path:
    """The window's records as a parquet file beside the raw one, which is deleted: every arrival kept,
    in under a third of the space (6.8 bytes an arrival measured at 5,000/s: 80,000/s for 60 s, 115 MB raw, ~33 MB kept). The
    intended times are evenly spaced, so they are stored as deltas; zstd takes the rest."""
    kept = raw.with_name(raw.name + ".parquet")
    table = pa.table({name: np.ascontiguousarray(records[name]) for name in records.dtype.names})
    pq.write_table(table, kept, compression="zstd", use_dictionary=False,
                   column_encoding={"intended_ns": "DELTA_BINARY_PACKED"})
    raw.unlink(missing_ok=True)   # several processes: theirs are gone already, merged
    return kept


def sent_in_window(records, window_s: float):
    """Which arrivals pacer sent inside the window (its own lag included): the requests a window counts."""
    return records["intended_ns"] + records["lag_us"].astype("u8") * 1000 <= window_s * 1e9


def result_of(summary: dict, records, window_s: float, parts: list[Part] | None = None) -> LoadResult:
    """pacer's summary and records -> the window's LoadResult. Latencies are those of every request
    answered with a status below 400 (as k6's), in ms, those that waited past the window's end for a
    connection included (theirs are the longest). `requests` (and so rps) counts the responses to
    requests sent inside the window: an overloaded server's backlog, drained after it, is not
    throughput (5 connections of 100-ms requests at 200/s answer 50/s, however long pacer waits).
    With the parts of a mix, `parts` holds each one's result by scenario name, from its arrivals alone
    (connect errors and bytes are the connection's, not an arrival's: the mix's only)."""
    status = records["status"]
    answered = status > 0
    # its own lag: of the arrivals that found a connection idle (a wait for a busy one is the server's)
    lag_ms = records["lag_us"][(status != ERR_DROPPED) & (records["flags"] & WAITED == 0)] / 1000.0
    result = LoadResult(
        requests=int((answered & sent_in_window(records, window_s)).sum()), duration_s=window_s, bytes=int(summary["bytes"]),
        errors_connect=int(summary["errors_connect"]), errors_read=int((status == ERR_READ).sum()),
        errors_write=int((status == ERR_WRITE).sum()), errors_timeout=int((status == ERR_TIMEOUT).sum()),
        errors_status=int((answered & (status >= 400)).sum()), dropped=int((status == ERR_DROPPED).sum()),
        late_sends=int(summary["late"]),
        send_lag_p99=float(np.percentile(lag_ms, 99, method="inverted_cdf")) if lag_ms.size else float("nan"),
        started_at=float(summary["started_at"]), arrivals=arrivals(records))
    for key, value in latency_fields(records["latency_ns"][good(records)] / 1e6).items():
        setattr(result, key, value)
    if parts and len(parts) > 1:
        part_of = records["flags"] >> 8
        empty = dict(summary, bytes=0, errors_connect=0, late=0)
        for k, part in enumerate(parts):
            mine = records[part_of == k]
            result.parts[part.scenario.name] = result_of({**empty, "late": _late(mine)}, mine, window_s)
    return result


def _late(records) -> int:
    """Arrivals sent later than the tolerance although a connection was idle (pacer's own `late`)."""
    return int(((records["lag_us"] > TOLERANCE_US) & (records["flags"] & WAITED == 0)
                & (records["status"] != ERR_DROPPED)).sum())


def arrivals(records):
    """pacer's records in the drivers' neutral form (base.ARRIVAL); its ERR_* codes are kept as statuses."""
    out = np.empty(len(records), dtype=ARRIVAL)
    out["due_s"], out["latency_ms"], out["status"] = records["intended_ns"] / 1e9, records["latency_ns"] / 1e6, \
        records["status"]
    return out


def merged(docs: list[dict]) -> dict:
    """The summary of one schedule's processes as one: counts added, the earliest start, the longest
    window, the most connections open (each process's peak: their sum is an upper bound)."""
    if len(docs) == 1:
        return docs[0]
    out = dict(docs[0])
    for key in ("arrivals", "sent", "answered", "dropped", "late", "queued", "errors_connect", "errors_read",
                "errors_write", "errors_timeout", "closed_by_server", "bytes", "max_connections_open", "cpu_s"):
        out[key] = sum(d[key] for d in docs)
    out["started_at"] = min(d["started_at"] for d in docs)
    out["window_s"] = max(d["window_s"] for d in docs)
    out["interrupted"] = any(d["interrupted"] for d in docs)
    out["processes"] = len(docs)
    return out


def behind_schedule(r: LoadResult) -> bool:
    """Whether pacer's own lag could have moved the window's figures: its p99 above the tolerance and
    above a tenth of the p99 latency it is part of. This VM's timer alone makes the lag p99 0.1-0.5 ms,
    so a flag at any late send would mark every cell, and a flagged cell is never crowned."""
    return r.send_lag_p99 > max(TOLERANCE_US / 1000, 0.1 * r.latency_p99)


class PacerDriver(Driver):
    name = "pacer"
    mixes = True

    def run(self, spec: LoadSpec) -> LoadResult:
        self.can_send(spec)
        if not spec.rate:
            raise DriverFailed("pacer runs arrival rates only (profile kinds rate and capacity)")
        pacer = self.executable()
        # the last of them, an earlier cell's kept records, only to be removed
        req, records, summary, log, _ = self.files(spec, "http", "records", "json", "log", "records.parquet")
        cpus = sorted(parse_cpus(spec.cpus))
        n = len(cpus)
        conns = -(-spec.concurrency // n)
        common = [pacer, "--host", spec.host, "--port", str(spec.port), *request_args(spec, req),
                  "--rate", f"{spec.rate:g}", "--duration", f"{spec.duration_s:g}",
                  *[arg for rate, seconds in spec.then for arg in ("--then", f"{rate:g}:{seconds:g}")],
                  "--connections", str(conns), "--timeout", f"{spec.timeout_s:g}",
                  "--preconnect", str(min(conns, PRECONNECT)), "--tolerance-us", str(TOLERANCE_US)]
        # one process a CPU, on one schedule from one instant (after their connections are open)
        start_at = time.monotonic_ns() + START_LEAD_NS if n > 1 else 0
        own = [(records, log) if n == 1 else (records.with_name(f"{records.name}-{k}"), log.with_name(f"{log.name}-{k}"))
               for k in range(n)]
        argvs = [common + ["--records", str(rec)] + (["--stride", str(n), "--index", str(k), "--start-at",
                                                      str(start_at)] if n > 1 else []) for k, (rec, _) in enumerate(own)]
        # their summaries are their stdout: the logs hold them, and their complaints
        finished = run_generators(argvs, [lg for _, lg in own], deadline_s=spec.total_s + spec.timeout_s + 30,
                                  cpus=[str(c) for c in cpus] if n > 1 else spec.cpus)
        docs, parts_read = [], []
        for f, (rec, lg) in zip(finished, own):
            lines = lg.read_text().splitlines() if lg.exists() else []
            if f.exit_code != 0 or not lines or not rec.exists():
                raise DriverFailed(f"pacer exited with {f.exit_code}: {log_tail(lg, 5) or 'no output'}")
            try:
                docs.append(json.loads(lines[-1]))
            except ValueError as e:
                raise DriverFailed(f"pacer wrote an unreadable summary ({e}): {lg}") from None
            parts_read.append(read_records(rec))
            if n > 1:
                rec.unlink()
        doc = merged(docs)
        summary.write_text(json.dumps(doc, indent=1) + "\n")
        arrivals_read = np.sort(np.concatenate(parts_read), order="intended_ns", kind="stable") if n > 1 \
            else parts_read[0]
        result = result_of(doc, arrivals_read, spec.total_s, parts_of(spec.scenario))
        keep_records(arrivals_read, records)
        # its whole run's, from wait4: every process's CPU, the longest one's wall
        result.loadgen_cpu_s, result.loadgen_wall_s = sum(f.cpu_s for f in finished), max(f.wall_s for f in finished)
        if result.dropped or result.requests < 0.95 * doc["arrivals"]:
            result.flags.append("rate-not-met")
        if behind_schedule(result):
            result.flags.append("generator-behind-schedule")
        return result
