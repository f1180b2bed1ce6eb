"""The pure parts: wrk's Lua and JSON, the Little's-law flag, option parsing, JSON comparison."""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from orchestrator.config import options
from orchestrator.config.load import LoadResult
from orchestrator.config.scenarios import SCENARIOS, same_json
from orchestrator.core.cpus import cpu_count
from orchestrator.drivers import k6
from orchestrator.drivers.k6 import burst_figures
from orchestrator.drivers.wrk import lua_string, parse_summary
from orchestrator.errors import UsageError
from orchestrator.measure.checks import cell_flags, littles_law_holds, littles_law_ratio
from orchestrator.measure.evidence import Evidence

WRK_DOC = {"requests": 123456, "duration_us": 10_000_000, "bytes": 9_876_543, "connect": 0, "read": 2,
           "write": 0, "timeout": 1, "status": 5, "min": 80, "max": 45_000, "mean": 2_070.5, "stdev": 900.25,
           "p50": 1_900, "p75": 2_400, "p90": 3_100, "p99": 8_000, "p99.9": 20_000}


def test_wrk_summary_is_parsed_into_milliseconds():
    r = parse_summary(WRK_DOC, loadgen_cpu_s=7.5)
    assert r.requests == 123456 and r.duration_s == 10.0 and r.rps == 12345.6
    assert (r.errors_read, r.errors_timeout, r.errors_status, r.errors) == (2, 1, 5, 3)
    assert r.latency_min == 0.08 and r.latency_max == 45.0 and r.latency_mean == 2.0705
    assert (r.latency_p50, r.latency_p90, r.latency_p99, r.latency_p999) == (1.9, 3.1, 8.0, 20.0)
    assert r.loadgen_cpu_s == 7.5


def test_wrk_summary_without_requests_has_no_latencies():
    doc = {k: WRK_DOC[k] for k in ("requests", "duration_us", "bytes", "connect", "read", "write", "timeout", "status")}
    doc["requests"] = 0
    r = parse_summary(doc, 0.1)
    assert r.rps == 0 and math.isnan(r.latency_p99)


def test_lua_string_escapes_everything_but_printable_ascii():
    assert lua_string('a"b\\c') == '"a\\034b\\092c"'
    assert lua_string("é\n") == '"\\195\\169\\010"'


def result(rps: float, mean_ms: float, **kw) -> LoadResult:
    return LoadResult(requests=int(rps * 10), duration_s=10.0, latency_mean=mean_ms, **kw)


def test_littles_law_holds_for_a_busy_closed_loop():
    r = result(2560, 100.0)
    assert littles_law_ratio(256, r) == pytest.approx(1.0)
    assert "littles-law" not in cell_flags(256, r, 1)


def test_littles_law_flags_idle_connections():
    r = result(1000, 100.0)  # 100 requests in flight, but 256 connections open
    assert littles_law_ratio(256, r) == pytest.approx(0.39, abs=0.01)
    assert "littles-law" in cell_flags(256, r, 1)


def test_littles_law_allows_for_requests_still_in_flight_at_the_window_end():
    # wrk, 3 s, 64 connections on a 1 s sleep, measured: 42.5 rps at 1,050 ms mean (ratio 0.70).
    slow = LoadResult(requests=128, duration_s=3.0, latency_mean=1050.0)
    assert littles_law_holds(64, slow) and "littles-law" not in cell_flags(64, slow, 1)
    # The same ratio at 10 ms in 3 s has no such excuse: connections sat idle.
    fast = LoadResult(requests=13440, duration_s=3.0, latency_mean=10.0)
    assert littles_law_ratio(64, fast) == pytest.approx(0.70, abs=0.01)
    assert not littles_law_holds(64, fast) and "littles-law" in cell_flags(64, fast, 1)


def test_other_flags():
    r = result(1000, 64.0, loadgen_cpu_s=9.5, errors_timeout=3, errors_status=1)
    assert set(cell_flags(64, r, 1, server_alive=False)) == {"loadgen-saturated", "socket-errors", "non-2xx",
                                                            "server-died"}
    assert cell_flags(64, result(1000, 64.0, loadgen_cpu_s=9.5), 2) == []
    assert "few-requests" in cell_flags(1, LoadResult(requests=5, duration_s=1, latency_mean=200), 1)


def test_a_bursts_generator_start_up_is_not_read_as_its_saturation():
    # k6 sets up 1,000 VUs (0.6 s of CPU here) before a burst that the server answers in 0.25 s: the
    # generator's CPU time is its whole run's, 0.7 s in a 0.95-s run, not 0.7 s in the 0.25-s window
    burst = LoadResult(requests=1000, duration_s=0.25, latency_mean=120.0, loadgen_cpu_s=0.7, loadgen_wall_s=0.95)
    assert burst.loadgen_cpus_used == pytest.approx(0.7 / 0.95)
    assert "loadgen-saturated" not in cell_flags(1000, burst, 1, closed_loop=False)
    # one that was busy for all of its run still is saturated, and one whose run is not known is
    # judged over its window as before
    busy = LoadResult(requests=1000, duration_s=0.25, loadgen_cpu_s=0.93, loadgen_wall_s=0.95)
    assert "loadgen-saturated" in cell_flags(1000, busy, 1, closed_loop=False)
    assert result(1000, 64.0, loadgen_cpu_s=9.5).loadgen_cpus_used == pytest.approx(0.95)


def test_a_k6_burst_that_its_max_duration_ended_is_flagged(tmp_path):
    # k6's per-request CSV (K6_CSV_TIME_FORMAT=unix_micro): two answers and one request with no
    # response; two more of the five asked were never sent before maxDuration ended the burst
    csv = tmp_path / "k6.requests.csv"
    csv.write_text("metric_name,timestamp,metric_value,status\n"
                   "http_reqs,1000000,1,200\n"
                   "http_req_duration,1000000,100.0,200\n"
                   "http_req_duration,1200000,250.0,503\n"
                   "http_req_duration,1500000,60000.0,0\n")
    cut = LoadResult(requests=0, duration_s=1.0)
    burst_figures(cut, csv, asked=5)
    assert (cut.requests, cut.errors_status, cut.errors_read) == (2, 1, 1) and cut.flags == ["burst-cut-short"]
    whole = LoadResult(requests=0, duration_s=1.0)
    burst_figures(whole, csv, asked=3)
    assert whole.flags == [] and whole.latency_max == 250.0


def test_a_k6_rate_cell_reads_the_latencies_of_the_answered_requests_only():
    # k6's summary of 1,000 requests, 20 of which timed out after 120 s: its http_req_duration times
    # them too, so its p99 is a timeout; the expected-response submetric holds the 980 answered
    trend = {"min": 1.0, "avg": 2.0, "max": 9.0, "p(50)": 2.0, "p(75)": 2.5, "p(90)": 3.0, "p(95)": 4.0,
             "p(99)": 8.0, "p(99.9)": 9.0}
    doc = {"metrics": {"http_reqs": {"values": {"count": 1000}}, "http_req_failed": {"values": {"passes": 20}},
                       "http_req_duration": {"values": {**trend, "max": 120000.0, "p(99)": 120000.0,
                                                        "p(99.9)": 120000.0, "avg": 2402.0}},
                       k6.ANSWERED: {"values": trend}}}
    r = k6.parse_summary(doc, loadgen_cpu_s=1.0, window_s=10)
    assert (r.requests, r.errors_status) == (1000, 20)
    assert (r.latency_p99, r.latency_max, r.latency_mean) == (8.0, 9.0, 2.0)


def test_near_generator_ceiling_is_above_80_percent_of_the_calibrated_bar():
    r = result(1000, 64.0)
    assert "near-generator-ceiling" in cell_flags(64, r, 1, ceiling=1240)
    assert "near-generator-ceiling" not in cell_flags(64, r, 1, ceiling=1260)
    assert "near-generator-ceiling" not in cell_flags(64, r, 1, ceiling=None)   # not calibrated here


@pytest.mark.parametrize("value,seconds", [("10s", 10), ("500ms", 0.5), ("2m", 120), ("3", 3), ("1.5s", 1.5)])
def test_durations(value, seconds):
    assert options.duration(value, "--duration") == seconds


@pytest.mark.parametrize("call", [
    lambda: options.duration("0s", "--duration"), lambda: options.duration("-1s", "--duration"),
    lambda: options.duration("ten", "--duration"), lambda: options.positive_ints("0", "-c"),
    lambda: options.positive_ints("64,x", "-c"), lambda: options.positive_ints("-5", "-c"),
    lambda: options.cpu_list("7", "--server-cpus"), lambda: options.cpu_list("1-0", "--server-cpus"),
    lambda: options.cpu_list("a", "--server-cpus"), lambda: options.heap("512"), lambda: options.port(80, "--port"),
    lambda: options.port(40000, "--port"),
])
def test_bad_values_are_usage_errors(call):
    with pytest.raises(UsageError):
        call()


def test_zero_warmup_is_allowed():
    assert options.duration("0s", "--warmup", allow_zero=True) == 0


def test_cpu_count():
    assert cpu_count("1") == 1 and cpu_count("0-1") == 2 and cpu_count("0,2-3") == 3


def test_json_comparison_treats_numbers_as_numbers():
    assert same_json({"price": 10.50, "id": 42}, {"id": 42, "price": 10.5})
    assert same_json([1, 2.0], [1.0, 2])
    assert not same_json({"price": 10.51}, {"price": 10.5})
    assert not same_json({"a": 1, "b": 2}, {"a": 1})
    assert not same_json(["1"], [1])
    assert not same_json(True, 1)


def _windows(*rps, jit=0.0, littles=True):
    from orchestrator.measure.warmup import Window
    return [Window(rps=r, littles_ok=littles, jit_s=jit, duration_s=5.0) for r in rps]


def test_warm_up_is_steady_on_four_windows_that_no_longer_climb_with_a_quiet_jit():
    from orchestrator.measure.warmup import steady
    assert steady(_windows(900, 1000, 1010, 1000, 990))
    assert not steady(_windows(1000, 1010, 1000))                  # three windows are not enough
    # a warmed-up JVM's windows scatter (measured here: 16.4k, 18.4k, 18.1k, 16.1k): noise, not a climb
    assert steady(_windows(16402, 18442, 18064, 16090))
    assert steady(_windows(1000, 950, 900, 850))                   # a fall is not a warm-up


def test_a_slow_climb_is_not_steady_though_each_pair_agrees_within_5_percent():
    from orchestrator.measure.warmup import steady
    # +4 % a window: a two-window rule within 5 % called this steady
    assert not steady(_windows(1000, 1040, 1082, 1125))
    # a JIT at work, measured: Spring WebFlux on redis, 128 MB heap
    assert not steady(_windows(3399, 3839, 4591, 6271))


def test_a_jvm_still_compiling_is_not_steady():
    from orchestrator.measure.warmup import steady
    assert not steady(_windows(1000, 1000, 1000, 1000, jit=0.5))        # 10 % of the window compiling
    # connections that wait to be accepted are the server's design, not a warm-up: the cell's own check shows them
    assert steady(_windows(1000, 1000, 1000, 1000, littles=False))


def test_an_open_model_warm_up_is_steady_when_its_latency_no_longer_falls():
    from orchestrator.measure.warmup import Window, steady

    def at_rate(*p50_ms):   # k6 kept its 500/s in every window: rps is the rate whatever the JVM does
        return [Window(rps=500.0, littles_ok=True, jit_s=0.0, duration_s=3.0, latency_p50_ms=p) for p in p50_ms]
    # a JVM whose JIT is still at work answers sooner each window: not steady, though rps never moved
    assert not steady(at_rate(9.0, 6.0, 4.0, 3.0))
    assert steady(at_rate(3.1, 3.0, 3.1, 3.0))


def test_the_measured_window_is_cut_out_of_the_polls():
    from orchestrator.measure.sampling import Point, Sampler
    s = Sampler.__new__(Sampler)
    s.collector, s.probe, s.server_cpus = "Serial", None, set()
    # CPU grows 0.5 s per s; GC count steps once; CPU 0 busy 50 of 100 ticks per s, 3 of them stolen;
    # the host steals the server's CPU from t=5 on, 40 of its 100 ticks a second
    s.timeline = [Point(t, 0.5 * t, 100 + t, 10 + t, None, t // 2, 0.01 * (t // 2), 0.0, 50 * t, 100 * t,
                        cpus_steal=3 * t, server_steal=40 * max(0, t - 5), server_total=100 * t)
                  for t in range(0, 11)]
    w = s.window(2.5, 7.5)
    assert abs(w.cpu_s - 2.5) < 1e-9 and w.wall_s == 5
    assert w.peak_rss_bytes == 107 and w.peak_threads == 17     # the polls inside, not the lifetime
    assert w.gc_count == 4 - 1 and abs(w.loadgen_cpus_busy_pct - 50) < 1e-9
    assert w.loadgen_cpus_steal_pct == pytest.approx(3) and w.server_cpus_steal_pct == pytest.approx(20)
    assert w.steal_peak_pct == pytest.approx(40)     # the worst poll interval, not the window's mean
    # a server on another machine: none of its CPUs is this machine's, and their steal is unknown
    s.timeline = [replace(p, server_steal=0, server_total=0) for p in s.timeline]
    assert s.window(2.5, 7.5).server_cpus_steal_pct is None
    # above HOST_STEAL of either CPU set's time the window is flagged: it measured the host's neighbours too
    ok = result(1000, 64.0)
    assert "host-steal" in cell_flags(64, ok, 1, steal_pct=20.0) and "host-steal" not in cell_flags(64, ok, 1, steal_pct=3.0)
    # or one hold of 60 ms or more in a 0.25-s poll, though it is a few % of the window
    assert "host-steal" in cell_flags(64, ok, 1, steal_pct=4.8, steal_peak_pct=76.0)
    assert "host-steal" not in cell_flags(64, ok, 1, steal_pct=1.0, steal_peak_pct=12.0)


def test_backend_evidence_is_cut_out_of_the_polls_and_checked_against_the_contract():
    from orchestrator.measure.evidence import Reading, off_contract
    from orchestrator.measure.sampling import Point, Sampler
    s = Sampler.__new__(Sampler)
    s.collector, s.probe, s.server_cpus = "Serial", object(), set()
    # 1,000 MGETs and 2,000 SELECTs per s; 3 clients, then 9 at t=5; one listen overflow at t=6
    s.timeline = [Point(t, 0, 0, 0, None, None, None, None, 0, 0,
                        Reading({"redis_commands": 1000.0 * t, "db_selects": 2000.0 * t, "db_inserts": 0.0,
                                 "db_prepares": 0.0, "tcp_listen_overflows": float(t >= 6),
                                 "tcp_listen_drops": 0.0, "tcp_retransmits": 0.0},
                                redis_clients=9 if t == 5 else 3, db_connections=16, db_running=2))
                  for t in range(0, 11)]
    e = s.window(2.5, 7.5).evidence
    assert e.redis_commands == pytest.approx(5000) and e.db_selects == pytest.approx(10000)
    assert e.redis_peak_clients == 9 and e.db_peak_connections == 16 and e.db_peak_running == 2
    row = e.per_request(5000)
    assert row["redis_commands_per_request"] == pytest.approx(1.0) and row["db_selects_per_request"] == pytest.approx(2.0)
    assert row["tcp_listen_overflows"] == 1
    # one MGET per request is the redis contract; the SELECTs and the overflow are not
    assert off_contract(SCENARIOS["redis"], row) == ["db-statements-off-contract", "listen-queue-overflow"]
    assert off_contract(SCENARIOS["db-read"], {**row, "redis_commands_per_request": 0.0,
                                               "db_selects_per_request": 1.1, "tcp_listen_overflows": 0}) == []
    # a backend the probe could not read has no figure, and no flag
    assert off_contract(SCENARIOS["db-write"], Evidence().per_request(5000)) == []


def test_the_whole_load_s_backend_work_is_counted_exactly_not_interpolated_across_its_edges():
    from orchestrator.measure.evidence import Reading
    from orchestrator.measure.sampling import Point, Sampler
    s = Sampler.__new__(Sampler)
    s.collector, s.probe, s.server_cpus = "Serial", object(), set()
    # 1,000 MGETs per s from t=0.1 to t=3.1 only; polls every 0.25 s from before the start to after the end
    def mgets(t):
        return 1000.0 * min(max(t - 0.1, 0.0), 3.0)
    s.timeline = [Point(t, 0, 0, 0, None, None, None, None, 0, 0, Reading({"redis_commands": mgets(t)}))
                  for t in [0.0, *(0.25 * i for i in range(1, 13)), 3.2]]
    assert s.window(0.1, 3.1, whole_load=True).evidence.redis_commands == pytest.approx(3000)
    # interpolated at edges between polls, a counter that only rises under load comes out short
    assert s.window(0.1, 3.1).evidence.redis_commands < 2950


def test_the_seed_file_seeds_the_rows_the_scenarios_expect():
    from orchestrator.config.items import SEED_ROWS
    from orchestrator.infra.backends import seed_statements
    statements = seed_statements()
    assert statements[0] == "CREATE DATABASE IF NOT EXISTS bench"
    assert any(f"FROM seq_1_to_{SEED_ROWS}" in st for st in statements)
    assert not any("--" in st for st in statements)


def test_the_accept_queue_is_the_connections_the_server_has_not_taken():
    import os
    import socket

    from orchestrator.measure.evidence import accept_queue
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    port = listener.getsockname()[1]
    clients, taken = [socket.create_connection(("127.0.0.1", port)) for _ in range(5)], []
    try:
        assert accept_queue(os.getpid(), port) == 5   # the kernel completed them; nobody accepted
        taken = [listener.accept()[0] for _ in range(2)]
        assert accept_queue(os.getpid(), port) == 3
        assert accept_queue(os.getpid(), port + 1 if port < 65535 else port - 1) == 0
    finally:
        for s in clients + taken:
            s.close()
        listener.close()


def test_nearest_rank_percentiles_land_on_their_rank_when_n_is_a_multiple_of_1000():
    from orchestrator.config.load import latency_fields
    for n in (1000, 3000):
        out = latency_fields(np.arange(1, n + 1, dtype=float))
        assert out["latency_p999"] == 0.999 * n and out["latency_p99"] == 0.99 * n and out["latency_p50"] == n / 2


def test_a_busy_process_is_named_but_not_one_the_run_started_itself():
    import os
    import signal
    import subprocess
    import sys

    from orchestrator.measure.checks import BusyProcesses
    spin = f"{sys.executable} -c 'while True: pass'"
    # not a child of this process (the shell that started it is gone): somebody else's busy process
    other = int(subprocess.run(["sh", "-c", f"{spin} >/dev/null 2>&1 & echo $!"], capture_output=True,
                               text=True).stdout)
    mine = None
    try:
        watch = BusyProcesses(window_s=0.5)
        mine = subprocess.Popen(["sh", "-c", f"exec {spin}"])   # what a run starts after: its Redis, its MariaDB
        # a run looks at processes with other attributes meanwhile (a build's Kotlin daemons), and
        # psutil hands out the same Process objects
        import psutil
        list(psutil.process_iter(["pid", "cmdline"]))
        found = watch.found()
        assert any(w.startswith(f"pid {other} ") for w in found), found
        assert not any(w.startswith(f"pid {mine.pid} ") for w in found), found
    finally:
        os.kill(other, signal.SIGKILL)
        if mine:
            mine.kill()
            mine.wait()


UNDERTOW_OOM = """INFO: undertow variant=virtual listening on 127.0.0.1:29080
Nov 24, 2026 9:14:02 PM io.undertow.server.Connectors executeRootHandler
ERROR: UT005071: Undertow request failed HttpServerExchange{ GET /sleep}
java.lang.OutOfMemoryError: Cannot reserve 16364 bytes of direct buffer memory (allocated: 518967897, limit: 518979584)
\tat java.base/java.nio.Bits.reserveMemory(Bits.java:178)
\tat io.undertow.server.DefaultByteBufferPool.allocate(DefaultByteBufferPool.java:154)
Nov 24, 2026 9:14:03 PM org.xnio.nio.WorkerThread run
ERROR: XNIO000011: Task io.undertow.server.Connectors$1@5b2 failed with an exception
java.lang.IllegalStateException: UT000024: Connection closed
\tat io.undertow.server.HttpServerExchange.endExchange(HttpServerExchange.java:1870)
"""
BIND = """Application run failed
org.springframework.context.ApplicationContextException: Failed to start bean 'webServerStartStop'
\tat org.springframework.context.support.DefaultLifecycleProcessor.doStart(DefaultLifecycleProcessor.java:405)
Caused by: java.net.BindException: Address already in use
\tat java.base/sun.nio.ch.Net.bind0(Native Method)
"""
CRASH = """#
# A fatal error has been detected by the Java Runtime Environment:
#
#  SIGSEGV (0xb) at pc=0x00007f3c, pid=4242, tid=4243
"""


@pytest.mark.parametrize("log,cause", [
    (UNDERTOW_OOM, "java.lang.OutOfMemoryError: Cannot reserve 16364 bytes of direct buffer memory"),
    (BIND, "Caused by: java.net.BindException: Address already in use"),
    (CRASH, "# A fatal error has been detected by the Java Runtime Environment:"),
    ("INFO: started in 1.2 s\nINFO: ErrorHandler registered\n", "")])
def test_a_failed_targets_reason_leads_with_the_cause_its_log_names(tmp_path, log, cause):
    from orchestrator.infra.procs import server_failure
    path = tmp_path / "server.log"
    path.write_text(log)
    first = server_failure("target exited with 1 during the cell", path).splitlines()[0]
    assert first.startswith(f"target exited with 1 during the cell{': ' + cause if cause else '; last lines of'}"), first


def test_a_tool_is_asked_its_version_once_until_it_changes(tmp_path, monkeypatch):
    from orchestrator.infra import hostinfo
    monkeypatch.setattr(hostinfo, "VERSIONS_FILE", tmp_path / "versions.json")
    calls, tool = tmp_path / "calls", tmp_path / "wrk"
    tool.write_text(f"#!/bin/sh\necho x >> {calls}\necho 'wrk 4.2.0 [epoll]'\necho second line\n")
    tool.chmod(0o755)
    assert [hostinfo.tool_version(str(tool), "wrk") for _ in range(3)] == ["wrk 4.2.0 [epoll]"] * 3
    assert calls.read_text().count("x") == 1
    tool.write_text(f"#!/bin/sh\necho x >> {calls}\necho 'wrk 4.3.0 [epoll]'\n")   # reinstalled
    assert hostinfo.tool_version(str(tool), "wrk") == "wrk 4.3.0 [epoll]" and calls.read_text().count("x") == 2
