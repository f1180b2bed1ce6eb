"""h2load (Debian's nghttp2-client) over HTTP/1.1: a fixed number of requests at a fixed concurrency.

Counts come from its summary; latencies from its per-request log file (start µs, status, duration µs),
so every percentile is exact. That file (about 25 bytes a request) is gzipped once read
(`.requests.tsv.gz`): every request's latency stays on disk, in less room.
"""
from __future__ import annotations

import gzip
import math
import re
import shutil
import time
from pathlib import Path

from orchestrator import lazy
from orchestrator.config.load import LoadResult, LoadSpec, latency_fields
from orchestrator.core.cpus import cpu_count
from orchestrator.drivers.base import Driver, DriverFailed, run_generator
from orchestrator.infra.procs import log_tail

np = lazy.module("numpy")

_FINISHED = re.compile(r"finished in ([\d.]+)(us|ms|s)")
_REQUESTS = re.compile(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, "
                       r"(\d+) errored, (\d+) timeout")
_STATUS = re.compile(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx")
_TRAFFIC = re.compile(r"traffic: \S+ \((\d+)\) total")
_UNIT = {"us": 1e-6, "ms": 1e-3, "s": 1.0}


def parse_summary(text: str) -> dict:
    """The counts of h2load's closing summary; DriverFailed when it is not there."""
    found = [rx.search(text) for rx in (_FINISHED, _REQUESTS, _STATUS, _TRAFFIC)]
    if not all(found):
        raise DriverFailed(f"h2load printed no summary: {text.strip().splitlines()[-1:] or 'no output'}")
    fin, req, status, traffic = found
    total, started, done, ok, failed, errored, timeout = map(int, req.groups())
    return {"duration_s": float(fin.group(1)) * _UNIT[fin.group(2)], "done": done, "errored": errored,
            "timeout": timeout, "status_4xx_5xx": int(status.group(3)) + int(status.group(4)),
            "bytes": int(traffic.group(1))}


def read_log(path: Path) -> tuple[np.ndarray, float]:
    """Latencies in ms of the answered requests in h2load's --log-file, and the first start (epoch s)."""
    rows = np.loadtxt(path, dtype=np.int64, ndmin=2) if path.stat().st_size else np.empty((0, 3), np.int64)
    answered = rows[rows[:, 1] > 0]
    return answered[:, 2] / 1000.0, (float(rows[:, 0].min()) / 1e6 if len(rows) else float("nan"))


def gzip_away(path: Path) -> Path:
    """path gzipped beside itself (path.gz), and path deleted."""
    packed = path.with_name(path.name + ".gz")
    with open(path, "rb") as src, gzip.open(packed, "wb") as dst:
        shutil.copyfileobj(src, dst)
    path.unlink()
    return packed


class H2loadDriver(Driver):
    name = "h2load"
    walks_ids = False

    def run(self, spec: LoadSpec) -> LoadResult:
        self.can_send(spec)
        h2load = self.executable()
        if spec.requests < spec.concurrency:
            raise DriverFailed(f"{spec.requests} requests cannot keep {spec.concurrency} connections busy")
        # the last of them, an earlier cell's gzipped log, only to be removed
        log, requests_log, body, _ = self.files(spec, "log", "requests.tsv", "body", "requests.tsv.gz")
        threads = max(1, min(cpu_count(spec.cpus), spec.concurrency))
        argv = [h2load, "--h1", f"-n{spec.requests}", f"-c{spec.concurrency}", f"-t{threads}", "-m1",
                f"--connection-inactivity-timeout={math.ceil(spec.timeout_s)}", f"--log-file={requests_log}"]
        for k, v in spec.scenario.headers.items():
            argv += ["-H", f"{k}: {v}"]
        if spec.scenario.body is not None:
            body.write_bytes(spec.scenario.body)
            argv += ["-d", str(body)]     # h2load POSTs when it has data
        argv.append(spec.url)
        rc, wall_s, cpu_s = run_generator(argv, log, deadline_s=spec.timeout_s * 4 + 120, cpus=spec.cpus)
        text = log.read_text(errors="replace") if log.exists() else ""
        if rc != 0:
            raise DriverFailed(f"h2load exited with {rc}: {log_tail(log, 5) or 'no output'}")
        s = parse_summary(text)
        no_status = "0 succeeded" in text and "status codes: 0 2xx, 0 3xx, 0 4xx, 0 5xx" in text
        if s["done"] and not s["errored"] and no_status:
            raise DriverFailed("h2load read no status line of this server: Debian's h2load (nghttp2 1.52) fails on "
                               "one without a reason phrase, as Tomcat sends; use the k6 burst driver")
        latencies, first_start = read_log(requests_log) if requests_log.exists() else (np.empty(0), float("nan"))
        if requests_log.exists():
            gzip_away(requests_log)
        return LoadResult(
            requests=s["done"], duration_s=s["duration_s"], bytes=s["bytes"],
            # h2load does not tell a refused connection from a reset one: both are "errored".
            errors_connect=max(0, s["errored"] - s["timeout"]), errors_timeout=s["timeout"],
            errors_status=s["status_4xx_5xx"], loadgen_cpu_s=cpu_s, loadgen_wall_s=wall_s,
            started_at=first_start if first_start == first_start else time.time() - s["duration_s"],
            **latency_fields(latencies))
