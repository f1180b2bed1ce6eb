"""A cell's flags from its figures: Little's law in a closed loop, a generator near its ceiling or busy,
and the other checks of measure/checks.py."""
from __future__ import annotations

import pytest

from orchestrator.config.load import LoadResult
from orchestrator.measure.checks import cell_flags, littles_law_holds, littles_law_ratio


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


def test_near_generator_ceiling_is_above_80_percent_of_the_calibrated_bar():
    r = result(1000, 64.0)
    assert "near-generator-ceiling" in cell_flags(64, r, 1, ceiling=1240)
    assert "near-generator-ceiling" not in cell_flags(64, r, 1, ceiling=1260)
    assert "near-generator-ceiling" not in cell_flags(64, r, 1, ceiling=None)   # not calibrated here


def test_a_busy_process_is_named_but_not_one_the_run_started_itself():
    import os
    import signal
    import subprocess
    import sys

    import psutil
    from conftest import wait_for

    from orchestrator.measure.checks import BusyProcesses
    spin = f"{sys.executable} -c 'while True: pass'"
    # not a child of this process (the shell that started it is gone): somebody else's busy process
    other = int(subprocess.run(["sh", "-c", f"{spin} >/dev/null 2>&1 & echo $!"], capture_output=True,
                               text=True).stdout)
    mine = None
    try:
        # spinning before the window opens: beside the test command's Maven builds its interpreter once
        # spent the whole window starting (reading its modules), under the threshold
        wait_for(lambda: psutil.Process(other).cpu_times().user >= 0.2, timeout=60, what="the busy process spinning")
        watch = BusyProcesses(window_s=0.5)
        mine = subprocess.Popen(["sh", "-c", f"exec {spin}"])   # what a run starts after: its Redis, its MariaDB
        # a run looks at processes with other attributes meanwhile (a build's Kotlin daemons), and
        # psutil hands out the same Process objects
        list(psutil.process_iter(["pid", "cmdline"]))
        found = watch.found()
        assert any(w.startswith(f"pid {other} ") for w in found), found
        assert not any(w.startswith(f"pid {mine.pid} ") for w in found), found
    finally:
        os.kill(other, signal.SIGKILL)
        if mine:
            mine.kill()
            mine.wait()
