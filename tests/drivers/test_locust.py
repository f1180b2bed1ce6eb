"""The Locust driver without Locust running: splitting its per-second series into steps, its CPU reading,
and a worker restarted at a cell boundary."""
from __future__ import annotations

import math

import pytest

from orchestrator.config.load import LoadSpec, Ramp
from orchestrator.config.scenarios import Scenario
from orchestrator.drivers.locust import free_port, split
from orchestrator.measure.checks import cell_flags

SCENARIO = Scenario("stall", "GET", "/", 200, "text/plain")


# split() on hand-made locustfile output: the same rules, second by second.

def bucket(n: int, ms: float = 5.0) -> dict:
    """n requests answered in a second, one each by users 0 to n - 1."""
    return {"n": n, "status": 0, "timeout": 0, "connect": 0, "other": 0, "bytes": 2 * n, "hist": {str(ms): n},
            "answered": list(range(n))}


def spec_of(ramp: Ramp, tmp_path) -> LoadSpec:
    return LoadSpec(port=1, scenario=SCENARIO, concurrency=ramp.start_users, duration_s=ramp.duration_s, cpus="0",
                    timeout_s=10, out_dir=tmp_path, ramp=ramp)


def test_split_counts_a_stall_and_leaves_transitions_out(tmp_path):
    ramp = Ramp(start_users=2, step_users=2, step_s=5, steps=2)
    t0 = 1000.3
    doc = {"start": t0, "end": 1010.4,
           "steps": [{"users": 2, "asked": 1000.3, "running": 1000.5},
                     {"users": 4, "asked": 1005.6, "running": 1006.2}],
           # the sampling loop overslept 1008: the count it saw last stands
           "users": {str(s): 2 if s < 1006 else 4 for s in range(1000, 1011) if s != 1008},
           # nothing completed in 1003 (step 1) nor in 1008 (step 2)
           "seconds": {str(s): bucket(20 if s < 1006 else 40) for s in range(1000, 1011) if s not in (1003, 1008)}}
    steps, series = split(doc, spec_of(ramp, tmp_path), t0, [])
    assert [rec["epoch_s"] for rec in series] == list(range(1000, 1011))
    assert [rec["step"] for rec in series] == [None, 1, 1, 1, 1, None, None, 2, 2, 2, None]
    assert [rec["users"] for rec in series] == [2] * 6 + [4] * 5
    stalled = [rec for rec in series if rec["epoch_s"] in (1003, 1008)]
    assert all(rec["rps"] == 0 and rec["failures_per_s"] == 0 and math.isnan(rec["p95_ms"]) for rec in stalled)
    assert [(r.started_at, r.duration_s, r.requests) for r in steps] == [(1001.0, 4.0, 60), (1007.0, 3.0, 80)]
    assert steps[0].latency_p50 == 5.0 and steps[0].rps == 15.0
    # the same users answered second after second count once
    assert [r.users_answered for r in steps] == [20, 40]


def test_split_gives_a_step_whose_users_never_all_ran_no_seconds(tmp_path):
    ramp = Ramp(start_users=5, step_users=0, step_s=3, steps=3)
    doc = {"start": 1000.0, "end": 1009.1,
           "steps": [{"users": 5, "asked": 1000.0, "running": 1000.4},
                     {"users": 5, "asked": 1003.0, "running": 1003.0},   # the same users: nothing to spawn
                     {"users": 5, "asked": 1006.5, "running": None}],    # say its spawn never completed
           "users": {str(s): 5 for s in range(1000, 1010)},
           "seconds": {str(s): bucket(10) for s in range(1000, 1010)}}
    steps, series = split(doc, spec_of(ramp, tmp_path), 1000.0, [])
    assert [rec["step"] for rec in series] == [None, 1, 1, 2, 2, 2, None, None, None, None]
    assert [(r.started_at, r.duration_s, r.requests) for r in steps] == \
        [(1001.0, 2.0, 20), (1003.0, 3.0, 30), (1006.5, 0.0, 0)]
    assert steps[2].rps == 0.0


def test_eight_workers_at_sixty_percent_are_not_a_saturated_generator(tmp_path):
    # issue 30: the row summed the 8 workers' CPU (481 %) against one load CPU and flagged every step
    # loadgen-saturated, and compared the rate with one process's calibrated ceiling
    ramp = Ramp(start_users=8, step_users=8, step_s=5, steps=1, workers=8)
    doc = {"start": 1000.0, "end": 1006.0, "steps": [{"users": 8, "asked": 1000.0, "running": 1000.2}],
           "users": {str(s): 8 for s in range(1000, 1006)}, "seconds": {str(s): bucket(3000) for s in range(1000, 1006)}}
    timelines = [[(1000.0 + t, 0.6 * t) for t in range(7)] for _ in range(8)]   # each process 60 % of a core
    spec = LoadSpec(port=1, scenario=SCENARIO, concurrency=8, duration_s=ramp.duration_s, cpus="0", timeout_s=10,
                    out_dir=tmp_path, ramp=ramp, workers_elsewhere=True)
    (step,), _ = split(doc, spec, 1000.0, timelines)
    assert step.loadgen_cpu_s == pytest.approx(8 * 0.6 * step.duration_s) and step.loadgen_busiest_pct == pytest.approx(60)
    assert step.rps == 3000 and step.loadgen_processes == 8
    # one Locust process was calibrated to 1,000 req/s here: eight of them at 3,000 are far from theirs
    flags = cell_flags(16, step, loadgen_cpus=1, closed_loop=False, ceiling=1000.0)
    assert "loadgen-saturated" not in flags and "near-generator-ceiling" not in flags, flags
    from orchestrator.measure import rows
    from orchestrator.measure.sampling import ServerSample
    row = rows.measured({"concurrency": 8}, step, ServerSample(cpu_s=1.0, wall_s=5.0), flags)
    assert row["loadgen_cpu_pct"] == pytest.approx(60)   # the busiest process, as the README says
    # eight workers on this machine's one load CPU share it: one core's worth of senders
    local = split(doc, LoadSpec(port=1, scenario=SCENARIO, concurrency=8, duration_s=5, cpus="0", timeout_s=10,
                                out_dir=tmp_path, ramp=ramp), 1000.0, timelines)[0][0]
    assert local.loadgen_processes == 1 and "near-generator-ceiling" in cell_flags(16, local, 1, False, ceiling=3100.0)


def test_a_worker_that_fails_once_at_a_cell_boundary_is_started_again(tmp_path, monkeypatch):
    # CI: a worker restarted as one cell's master quit printed "No User class found!" and exited 1;
    # the agent stopped at once and the next cell's master waited 120 s for workers. A real
    # executable in locust's place fails every start: the agent gives up only after FAILED_STARTS.
    from orchestrator.drivers import locust_worker
    from orchestrator.errors import BenchError
    calls = tmp_path / "calls"
    fake = tmp_path / "bin" / "locust"
    fake.parent.mkdir()
    fake.write_text(f"#!/bin/sh\necho x >> {calls}\necho 'vm/ERROR/locust.main: No User class found!'\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setattr(locust_worker.LocustDriver, "executable", lambda _: str(fake))   # not .venv's own locust
    with pytest.raises(BenchError, match="3 times in a row: .*No User class found!"):
        locust_worker.serve("127.0.0.1", free_port("127.0.0.1"), 1, None, 30.0, tmp_path / "logs", lambda _: None)
    assert calls.read_text().count("x") == locust_worker.FAILED_STARTS
