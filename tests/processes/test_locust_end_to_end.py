"""Real Locust against a small HTTP server in this process whose answers can stall: every second of the
test is there, a second in which nothing completed too, and a step's row covers the seconds its users ran."""
from __future__ import annotations

import json
import math
import socket

import pytest
from locust_server import check_every_second_and_step, run, seconds_of, serving

from orchestrator.config.load import Ramp
from orchestrator.measure.checks import cell_flags


@pytest.fixture
def server():
    yield from serving()


def test_a_stall_is_a_zero_second_that_its_step_counts(server, tmp_path):
    # No answer from 2 s after the first request for 2.5 s: at least one whole second, inside step 1.
    server.stall = (2.0, 2.5)
    ramp = Ramp(start_users=2, step_users=2, step_s=6, steps=2, workers=0)
    result = run(server, tmp_path, ramp)
    check_every_second_and_step(result, ramp)
    begin = server.first + server.stall[0]
    stalled = range(math.ceil(begin), math.floor(begin + server.stall[1]))
    assert len(stalled) >= 1
    for rec in result.timeseries:
        if rec["epoch_s"] in stalled:
            assert rec["rps"] == 0 and rec["step"] == 1 and rec["failures_per_s"] == 0 and rec["users"] == 2, rec
            assert all(math.isnan(rec[k]) for k in ("p50_ms", "p95_ms", "p99_ms")), rec
    first = result.steps[0]
    busy = [rec["rps"] for rec in seconds_of(result.timeseries, 1) if rec["rps"]]
    # The step's rate is over all its seconds, the stalled ones too: below the mean of its busy ones.
    assert first.duration_s >= 4 and first.rps < sum(busy) / len(busy), (first, busy)


@pytest.mark.parametrize("workers", [0, 2])
def test_a_step_covers_the_seconds_its_users_ran(server, tmp_path, workers):
    # 20 users more per step at a spawn rate of the step's users: each spawn takes about a second.
    server.delay_s = 0.1
    ramp = Ramp(start_users=2, step_users=20, step_s=4, steps=3, workers=workers)
    result = run(server, tmp_path, ramp)
    check_every_second_and_step(result, ramp)
    series = result.timeseries
    for step, r in enumerate(result.steps, start=1):
        mine = seconds_of(series, step)
        assert mine and all(rec["users"] == ramp.users(step) for rec in mine), (step, series)
        # every user answered: no false users-unanswered where nobody starved (its test's other half)
        assert r.users_answered == ramp.users(step) and "users-unanswered" not in cell_flags(ramp.users(step), r, 1)
        # Not before the series first saw its users, and after a second in transition.
        assert r.started_at >= min(rec["epoch_s"] for rec in series if rec["users"] == ramp.users(step))
        before = next(rec for rec in series if rec["epoch_s"] == r.started_at - 1)
        assert before["step"] is None, (step, series)
        # About 10 req/s per user on a 100 ms answer, in every second of the step.
        assert all(6 * ramp.users(step) <= rec["rps"] <= 11 * ramp.users(step) for rec in mine), \
            (step, [(rec["t_s"], rec["users"], rec["step"], rec["rps"]) for rec in series])   # short: not cut off
        # Each process's CPU, from the samples every process sends (a worker's with its reports)
        assert 0 < r.loadgen_cpu_s < r.duration_s * (1 + workers), (step, r.loadgen_cpu_s)
        assert all(0 < rec["loadgen_cpu_pct"] <= 110 for rec in mine), (step, series)
    doc = json.loads(next(tmp_path.glob("*buckets.json")).read_text())
    # the master's own samples, and every worker's, each on the host it ran on
    assert len(doc["cpu"]) == 1 + workers and len(doc["workers"]) == workers
    assert set(doc["workers"].values()) <= {socket.gethostname()}
