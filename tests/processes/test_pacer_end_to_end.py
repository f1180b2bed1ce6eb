"""pacer on schedule, timed: every arrival answered on time over kept-alive connections, a stalled
server's queue counted in full (no coordinated omission), a schedule of segments inside one window."""
from __future__ import annotations

import time

import numpy as np
import pytest
from pacer_server import length, pace

from orchestrator.core.cpus import steal_since
from orchestrator.core.schema import HOST_STEAL
from orchestrator.drivers.pacer import WAITED

CPU0 = {0}   # pacer's CPU in these tests








def on_time(r, steal_since_start, late_at_most: int | None = None) -> bool:
    """pacer's own send lag p99 within 5 ms, this machine's timer's slack (and at most `late_at_most`
    arrivals later than its 1-ms tolerance); unless the host stole its CPU meanwhile (a hypervisor that
    holds the vCPU for tens of ms makes any sender late: 19.7 ms read so, and a rehearsal with the host
    stealing read 15 of 200 arrivals late, lag p99 6.5 ms)."""
    kept = r.send_lag_p99 < 5 and (late_at_most is None or r.late_sends <= late_at_most)
    if kept or steal_since(CPU0, steal_since_start)[1] > 100 * HOST_STEAL:
        return True
    late = _sleeper_late_p99_ms()
    if late > 1.0:   # any sender is late here, not pacer alone: its schedule cannot be judged on this host
        pytest.skip(f"this host's timer wakes a sleeper p99 {late:.1f} ms late (0.1-0.5 ms when calm): "
                    f"pacer's lag p99 {r.send_lag_p99:.1f} ms, {r.late_sends} late, is not judged")
    return False


def _sleeper_late_p99_ms() -> float:
    """How late this host wakes a process sleeping 5 ms (this test's), at p99 over 200 sleeps."""
    lates = []
    for _ in range(200):
        t = time.perf_counter()
        time.sleep(0.005)
        lates.append((time.perf_counter() - t - 0.005) * 1000)
    return float(np.percentile(lates, 99))




# Timing on a quiet machine: the fast tier runs beside the slow tier's builds (Maven on both CPUs), under
# which one CI rehearsal read pacer's first arrivals 6-22 ms late; the slow tier runs alone.
def test_every_arrival_is_answered_on_schedule_over_kept_alive_connections(serve, tmp_path):
    server = serve(lambda n: length())
    stolen = steal_since(CPU0)[0]
    r, rec = pace(tmp_path, server.port)
    assert r.requests == len(rec) == 200 and r.rps == 200 and r.dropped == 0 and not r.errors, r
    assert "rate-not-met" not in r.flags, r
    # sent on time, give or take this machine's timer (it wakes a sleeper 0.1-0.5 ms late, at p99)
    assert on_time(r, stolen, late_at_most=10), r
    assert server.connections <= 16 and server.count == 200
    # arrival i was due at i / rate, and that is where its latency starts
    assert rec["intended_ns"][10] == 50_000_000 and rec["intended_ns"][-1] == 995_000_000
    assert 0 < r.latency_p50 < 5 and r.bytes >= 200 * len(length())


# Timing on a quiet machine: the fast tier runs beside the slow tier's builds (Maven on both CPUs), under
# which one CI rehearsal read pacer's first arrivals 6-22 ms late; the slow tier runs alone.
def test_a_stalled_server_queues_arrivals_and_their_wait_counts_in_full(serve, tmp_path):
    """One connection at 100/s; every 10th request takes 50 ms. The arrivals due during the stall wait
    for the connection and are then answered at once: measured from their intended send times they
    took about 40, 30, 20 and 10 ms. So the mean is about (50 + 40 + 30 + 20 + 10) / 10 = 15 ms and
    3 in 10 took at least 25 ms; a generator that timed from the send (coordinated omission) would
    read a mean of 5 ms and 1 in 10."""
    server = serve(lambda n: length(), delay=lambda n: 0.05 if n % 10 == 0 else 0.0)
    stolen = steal_since(CPU0)[0]
    r, rec = pace(tmp_path, server.port, rate=100, duration_s=1.0, concurrency=1)
    lat_ms = rec["latency_ns"] / 1e6
    assert r.requests == 100 and r.dropped == 0, r
    assert 12 <= r.latency_mean <= 20, r
    assert 0.2 <= (lat_ms >= 25).mean() <= 0.4, sorted(lat_ms)[-35:]
    # 4 or 5 in 10 waited for the one connection (about 40, 30, 20, 10 and 0 ms): their lag is the
    # server's doing, not pacer's own
    waited = rec["flags"] & WAITED != 0
    assert 30 <= waited.sum() <= 55 and np.median(rec["lag_us"][waited]) >= 10_000, rec["lag_us"][waited]
    assert on_time(r, stolen), r


# Timing on a quiet machine: the fast tier runs beside the slow tier's builds (Maven on both CPUs), under
# which one CI rehearsal read pacer's first arrivals 6-22 ms late; the slow tier runs alone.
def test_a_schedule_of_segments_changes_rate_inside_one_window(serve, tmp_path):
    # a spike's shape: 100/s for 0.5 s, 400/s for 0.5 s, 100/s for 1 s, each arrival due on its segment's clock
    server = serve(lambda n: length())
    r, rec = pace(tmp_path, server.port, rate=100, duration_s=0.5, then=((400, 0.5), (100, 1.0)))
    assert len(rec) == 50 + 200 + 100 and r.duration_s == 2.0 and r.requests == 350 and "rate-not-met" not in r.flags, r
    assert rec["intended_ns"][49] == 490_000_000 and rec["intended_ns"][50] == 500_000_000
    assert rec["intended_ns"][51] == 502_500_000 and rec["intended_ns"][250] == 1_000_000_000
    seconds = r.per_second(50.0)
    assert [s["offered"] for s in seconds] == [250, 100] and [s["goodput"] for s in seconds] == [250, 100]
    assert r.goodput(50.0) == 175.0
