"""The server's CPUs shared with another process: the share of their time that was neither the
target's nor stolen, the flag above SERVER_CPUS_SHARED, and the processes named from their CPU times
at the load's edges."""
from __future__ import annotations

import subprocess
import time
from types import SimpleNamespace

import psutil
import pytest

from orchestrator.config.load import LoadResult
from orchestrator.core.cpus import TICKS_PER_S
from orchestrator.core.schema import SERVER_CPUS_SHARED
from orchestrator.measure.checks import cell_flags
from orchestrator.measure.sampling import Point, Sampler


def polls(target_cpu_per_s: float, run_per_s: float) -> list[Point]:
    """Ten seconds of polls of one server CPU (TICKS_PER_S ticks a second) that ran run_per_s of each
    second, the target's process target_cpu_per_s of it."""
    return [Point(t, target_cpu_per_s * t, 0, 0, None, None, None, None, 0, 0,
                  server_total=TICKS_PER_S * t, server_run=round(run_per_s * TICKS_PER_S * t))
            for t in range(11)]


def sampler(server_cpus: str | None, timeline: list[Point]) -> Sampler:
    s = Sampler(SimpleNamespace(pid=None), "0", None, server_cpus)
    s.timeline = timeline
    return s


def test_the_foreign_share_is_what_ran_on_the_server_cpus_less_the_target():
    # the CPU ran 90 % of the time, the target 60 %: 30 % was someone else's
    assert sampler("1", polls(0.6, 0.9)).window(2.5, 7.5).server_cpus_foreign_pct == pytest.approx(30, abs=0.5)
    # the two clocks differ by a tick: a quiet window that reads below zero is zero
    assert sampler("1", polls(0.6, 0.59)).window(2.5, 7.5).server_cpus_foreign_pct == 0
    # a server on another machine: its CPUs are out of sight, no figure and no names
    remote = sampler(None, polls(0.6, 0.9)).window(2.5, 7.5)
    assert remote.server_cpus_foreign_pct is None and remote.server_cpus_shared_by is None


def test_a_cell_is_flagged_above_the_threshold_only():
    ok = LoadResult(requests=1000, duration_s=1, latency_mean=64.0)
    assert "server-cpus-shared" in cell_flags(64, ok, 1, foreign_pct=30.0)
    assert "server-cpus-shared" not in cell_flags(64, ok, 1, foreign_pct=100 * SERVER_CPUS_SHARED * 0.9)
    assert "server-cpus-shared" not in cell_flags(64, ok, 1, foreign_pct=None)


def test_the_processes_whose_cpu_time_grew_are_named_biggest_first():
    s = sampler("1", polls(0.1, 0.9))   # 10 s of one CPU: 1,000 ticks at 100 a second
    before = {(5, 1.0): ("sh", 10.0, True), (6, 2.0): ("python", 0.0, False), (7, 3.0): ("kworker/1:1", 5.0, True),
              (9, 4.0): ("java", 7.0, True)}
    after = {(5, 1.0): ("sh", 14.0, True), (6, 2.0): ("python", 0.5, False), (7, 3.0): ("kworker/1:1", 5.01, True),
             (8, 9.0): ("cc1", 0.6, True),    # started during the load: all of its time counts
             (9, 9.5): ("java", 0.2, True)}   # pid 9 reused by a new process: its time since it started
    s.edges = [before, after]
    # a process also allowed elsewhere may have run there: "up to"; below 1 % (a kernel thread) unnamed
    assert s._shared_by() == "sh pid 5 (40 %), cc1 pid 8 (6 %), python pid 6 (up to 5 %), java pid 9 (2 %)"


def test_an_edge_reads_the_other_processes_that_may_run_on_the_server_cpus():
    """Real processes: the target's own are left out, and so is one pinned to the load generator's CPU."""
    procs = [subprocess.Popen(["taskset", "-c", cpus, "sleep", "30"]) for cpus in ("1", "1", "0")]
    target, other, loadgen = procs
    try:
        for p in procs:   # taskset pins itself, then becomes sleep
            while psutil.Process(p.pid).name() != "sleep":
                time.sleep(0.01)
        s = Sampler(SimpleNamespace(pid=target.pid), "0", None, "1")
        s._read_edge()
        pids = {pid: pinned for (pid, _), (_, _, pinned) in s.edges[0].items()}
        assert pids.get(other.pid) is True and target.pid not in pids and loadgen.pid not in pids
    finally:
        for p in procs:
            p.kill()
            p.wait()
