"""k6's driver without k6: a burst its max duration ended, and a rate cell's latencies of answered requests only."""
from __future__ import annotations

from orchestrator.config.load import LoadResult
from orchestrator.drivers import k6
from orchestrator.drivers.k6 import burst_figures


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
