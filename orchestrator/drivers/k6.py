"""k6: an open model at a fixed arrival rate (constant-arrival-rate), a closed loop of constant VUs,
or a burst of a fixed number of requests shared by VUs that all start at once (shared-iterations).
A burst of one request per connection is one VU's batch of them all, each on its own connection:
the same requests at once, without setting up a VU per request (1,000 VUs took 0.6 s of k6's CPU
here before the first request, a batch of 1,000 none).

At a fixed rate, k6 starts each iteration on schedule whatever the earlier ones do, so a slow
response delays no later request (no coordinated omission); when every VU is busy it drops the
arrival and counts it (dropped_iterations). The summary comes from handleSummary as JSON; a burst
also writes every request to CSV, so that its latencies (stdev included) are exact. k6 gzips that CSV
as it writes it (a name ending .gz): about a dozen rows of its metrics per request, some 2 KB raw, are
kept compressed, and read back a row at a time.

Each VU holds its own connection, so a burst at 2,000 VUs keeps 2,000 connections, as h2load would.
k6 is the default burst driver because Debian's h2load (nghttp2 1.52) cannot read Tomcat's status
line, which has no reason phrase ("HTTP/1.1 200 "): it counts every response as failed.
"""
from __future__ import annotations

import csv
import gzip
import json
import math
import time
from pathlib import Path

import psutil

from orchestrator.config.load import LoadResult, LoadSpec, latency_fields
from orchestrator.core.schema import PERCENTILES
from orchestrator.drivers.base import Driver, DriverFailed, run_generator
from orchestrator.infra.procs import log_tail

TREND_STATS = ["min", "avg", "max", "count", *(f"p({p})" for p in PERCENTILES.values())]


def one_batch(spec: LoadSpec) -> bool:
    """A burst in which each connection sends one request."""
    return bool(spec.requests) and not spec.rate and spec.requests == spec.concurrency


def script(spec: LoadSpec, out_json: str) -> str:
    """The k6 test: one request per iteration (a burst of one request per connection: one iteration
    that sends them all); the executor by whether a rate is given."""
    s = spec.scenario
    duration = f"{max(1, math.ceil(spec.duration_s))}s"
    # a scenario that walks ids asks url(k) for each request's; the others send URL every time
    walks = spec.scenario.ids is not None
    request = f"http.request(METHOD, {'url(exec.scenario.iterationInTest)' if walks else 'URL'}, BODY, PARAMS)"
    if spec.rate:
        executor = {"executor": "constant-arrival-rate", "rate": int(spec.rate), "timeUnit": "1s",
                    "duration": duration, "preAllocatedVUs": spec.concurrency, "maxVUs": spec.concurrency}
    elif one_batch(spec):
        executor = {"executor": "per-vu-iterations", "vus": 1, "iterations": 1,
                    "maxDuration": f"{burst_deadline_s(spec):.0f}s"}
        request = (f"http.batch(Array.from({{ length: {spec.requests} }}, (_, k) => "
                   f"[METHOD, {'url(k)' if walks else 'URL'}, BODY, PARAMS]))")
    elif spec.requests:
        executor = {"executor": "shared-iterations", "vus": spec.concurrency, "iterations": spec.requests,
                    "maxDuration": f"{burst_deadline_s(spec):.0f}s"}
    else:
        executor = {"executor": "constant-vus", "vus": spec.concurrency, "duration": duration}
    options = {"scenarios": {"load": {**executor, "gracefulStop": f"{math.ceil(spec.timeout_s)}s"}},
               "summaryTrendStats": TREND_STATS, "discardResponseBodies": True}
    if one_batch(spec):
        # every request of the batch at once, each on a connection of its own (k6 sends 6 at a time by default)
        options.update(batch=spec.requests, batchPerHost=spec.requests)
    params = {"headers": s.headers, "timeout": f"{math.ceil(spec.timeout_s)}s"}
    body = json.dumps(s.body.decode()) if s.body is not None else "null"
    # json.dumps gives JavaScript literals for every value here; nothing is pasted in as code.
    return (f"import http from 'k6/http';\nimport exec from 'k6/execution';\n"
            f"export const options = {json.dumps(options)};\n"
            f"const URL = {json.dumps(spec.url)}, METHOD = {json.dumps(s.method)}, BODY = {body};\n"
            f"const PARAMS = {json.dumps(params)};\n"
            f"{url_function(spec)}"
            f"export function setup() {{ return {{ t0: Date.now() }}; }}\n"
            f"export default function () {{ {request}; }}\n"
            f"export function handleSummary(data) {{ return {{ {json.dumps(out_json)}: JSON.stringify(data) }}; }}\n")


def url_function(spec: LoadSpec) -> str:
    """url(k): the URL of the test's k-th request: the scenario's, or for one that walks ids
    (config/items.py's IdCycle) step k of the cycle. k counts the test's iterations over all VUs
    (exec.scenario.iterationInTest), so the VUs walk the cycle as one stream, however unevenly an
    arrival rate hands them iterations."""
    ids = spec.scenario.ids
    if not ids:
        return ""
    walk = {"base": f"http://{spec.host}:{spec.port}{ids.prefix}", "hot": ids.hot, "every": ids.every,
            "first": ids.first, "length": ids.length}
    return (f"const IDS = {json.dumps(walk)};\n"
            "function url(k) {\n"
            "  k %= IDS.length;\n"
            "  return IDS.base + (k % IDS.every === 0 ? IDS.first + Math.floor(k / IDS.every) : IDS.hot);\n"
            "}\n")


def go_runtime_env() -> dict[str, str]:
    """k6 with Go's collector off, up to a memory limit at which it collects after all.

    At its default pace the collector pauses k6's VUs often enough to show in the latencies k6
    measures: ktor json at 4,000 req/s, k6 on CPU 0 with 2,000 VUs, read p99 184-295 ms with the
    default GOGC (800: 201 ms) and 4.3 ms with it off, while the server answered in 0.2 ms (p50).
    One k6 process is one window, so its heap never lives long: about 165 MB per second at 10,000
    req/s, so a third of the RAM (at most 8 GiB) lasts 25-50 s of load before Go collects again."""
    limit = min(8 << 30, psutil.virtual_memory().total // 3)
    return {"GOGC": "off", "GOMEMLIMIT": f"{limit >> 20}MiB"}


def burst_deadline_s(spec: LoadSpec) -> float:
    return 4 * spec.timeout_s + 60


def read_requests(path) -> tuple[list[float], int, int, float, float, list[float]]:
    """From k6's CSV output (timestamps in µs, K6_CSV_TIME_FORMAT=unix_micro; gzipped when its name ends
    .gz), read a row at a time: the latencies (ms) of answered requests, how many got a status >= 400,
    how many got no response at all (status 0), the window from the first request sent to the last
    response (epoch s, seconds), and when each request answered below 400 ended (epoch s). A sample's
    time is when its request ended."""
    latencies, good_ends, status_errors, no_response = [], [], 0, 0
    first, last = math.inf, -math.inf
    with (gzip.open if str(path).endswith(".gz") else open)(path, "rt", newline="") as f:
        for row in csv.DictReader(f):
            if row["metric_name"] != "http_req_duration":
                continue
            try:
                status = int(float(row["status"]))
            except ValueError:
                status = 0
            ms, end = float(row["metric_value"]), float(row["timestamp"]) / 1e6
            first, last = min(first, end - ms / 1000), max(last, end)
            if status <= 0:
                no_response += 1
                continue
            latencies.append(ms)
            status_errors += status >= 400
            if status < 400:
                good_ends.append(end)
    if first == math.inf:
        return latencies, status_errors, no_response, float("nan"), float("nan"), good_ends
    return latencies, status_errors, no_response, first, last - first, good_ends


def burst_figures(result: LoadResult, per_request: Path, asked: int) -> None:
    """A burst's figures from its requests one by one (read_requests), in place of k6's summary's.
    Flagged burst-cut-short when fewer than `asked` were sent: k6's maxDuration ended the burst first,
    and the requests it never sent are in no count and no latency."""
    latencies, status_errors, no_response, first, window, good_ends = read_requests(per_request)
    result.requests, result.errors_status, result.errors_read = len(latencies), status_errors, no_response
    result.answered_at = good_ends
    if window == window and window > 0:
        result.started_at, result.duration_s = first, window
    for key, value in latency_fields(latencies).items():
        setattr(result, key, value)
    if len(latencies) + no_response < asked:
        result.flags.append("burst-cut-short")


# k6 times every request it made in http_req_duration; the requests answered with an expected
# status (2xx, 3xx) are its submetric, which k6 writes to every summary.
ANSWERED = "http_req_duration{expected_response:true}"


def parse_summary(doc: dict, loadgen_cpu_s: float, window_s: float) -> LoadResult:
    """k6's summary data -> LoadResult over a window of window_s. Durations are in ms already.

    The window is the scenario's own duration: requests that finish in the graceful stop after it
    were sent inside it, so they count, but the drain does not lengthen the window (an open model
    that kept its rate then reads as its rate, not lower)."""
    m = doc["metrics"]

    def value(metric: str, key: str, default=0):
        return m.get(metric, {}).get("values", {}).get(key, default)

    requests = int(value("http_reqs", "count"))
    failed = int(value("http_req_failed", "passes"))   # "passes" of the failed-rate: requests that failed
    # The answered requests' latencies, as every driver gives them: k6's whole http_req_duration also
    # times the failures (a timeout reads its 120 s into p99), its expected-response submetric not.
    trend = m.get(ANSWERED, m.get("http_req_duration", {})).get("values", {})
    lat = {f"latency_{k}": trend.get(f"p({p})", float("nan")) for k, p in PERCENTILES.items()}
    return LoadResult(
        requests=requests, duration_s=window_s, bytes=int(value("data_received", "count")),
        # k6 does not report why a request failed; status failures and socket errors share one count.
        errors_status=failed, dropped=int(value("dropped_iterations", "count")),
        latency_min=trend.get("min", float("nan")), latency_mean=trend.get("avg", float("nan")),
        latency_max=trend.get("max", float("nan")), loadgen_cpu_s=loadgen_cpu_s, **lat)


class K6Driver(Driver):
    name = "k6"

    def run(self, spec: LoadSpec) -> LoadResult:
        self.can_send(spec)
        k6 = self.executable()
        test, out_json, log, per_request = self.files(spec, "js", "json", "log", "requests.csv.gz")
        test.write_text(script(spec, str(out_json)))
        # No usage report (nothing leaves this machine); the REST API on a loopback port of its choosing.
        argv = [k6, "run", "--no-usage-report", "--no-color", "--quiet", "--no-thresholds",
                "--address", "127.0.0.1:0"]
        if spec.requests:
            argv += ["--out", f"csv={per_request}"]
        argv.append(str(test))
        deadline = burst_deadline_s(spec) if spec.requests else spec.duration_s + 2 * spec.timeout_s
        started = time.time()
        rc, wall_s, cpu_s = run_generator(argv, log, deadline_s=deadline + 60, cpus=spec.cpus,
                                        env={"K6_NO_USAGE_REPORT": "true", "K6_CSV_TIME_FORMAT": "unix_micro",
                                             **go_runtime_env()})
        if rc != 0 or not out_json.exists():
            raise DriverFailed(f"k6 exited with {rc}: {log_tail(log, 5) or 'no output'}")
        try:
            doc = json.loads(out_json.read_text())
            # a burst's window is set from its requests below; k6's run time stands in until then
            window = doc["state"]["testRunDurationMs"] / 1000.0 if spec.requests else max(1, math.ceil(spec.duration_s))
            result = parse_summary(doc, cpu_s, window)
        except (ValueError, KeyError) as e:
            raise DriverFailed(f"k6 wrote an unreadable summary ({e}): {out_json}") from None
        # setup() runs just before the scenario starts and returns its clock (ms): k6's own start-up
        # (parsing, VU set-up) is not in the window
        result.started_at = (doc.get("setup_data") or {}).get("t0", started * 1000) / 1000.0
        result.loadgen_wall_s = wall_s
        if spec.requests:
            burst_figures(result, per_request, spec.requests)
        if spec.rate and (result.dropped or result.rps < 0.95 * spec.rate):
            result.flags.append("rate-not-met")
        return result
