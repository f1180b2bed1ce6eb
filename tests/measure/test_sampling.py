"""The sampler's polls cut to a window: the server's figures, the backends' evidence (interpolated at a
step's edges, exact over the whole load) and the accept queue."""
from __future__ import annotations

from dataclasses import replace

import pytest

from orchestrator.config.load import LoadResult
from orchestrator.config.scenarios import SCENARIOS
from orchestrator.measure.checks import cell_flags
from orchestrator.measure.evidence import Evidence


def result(rps: float, mean_ms: float, **kw) -> LoadResult:
    return LoadResult(requests=int(rps * 10), duration_s=10.0, latency_mean=mean_ms, **kw)


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
