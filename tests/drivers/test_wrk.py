"""wrk's driver without wrk: its JSON summary read into milliseconds, and Lua strings escaped."""
from __future__ import annotations

import math

from orchestrator.drivers.wrk import lua_string, parse_summary

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
