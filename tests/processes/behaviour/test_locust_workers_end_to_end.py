"""Real Locust's behaviour, never a figure: a POST's body, a user left unanswered counted, and workers
elsewhere that get their test from each cell's master, never run the master's file, and stop by
themselves."""
from __future__ import annotations

import json
import subprocess

import psutil
import pytest
from locust_server import SCENARIO, check_every_second_and_step, run, serving, start_workers

from orchestrator.config import driver_registry
from orchestrator.config.load import LoadSpec, Ramp
from orchestrator.config.scenarios import SCENARIOS
from orchestrator.drivers.locust import LocustDriver, free_port
from orchestrator.measure.checks import cell_flags


@pytest.fixture
def server():
    yield from serving()


def test_a_post_goes_out_with_its_body_and_its_status_counts_as_answered(server, tmp_path):
    # db-write's POST, as a ramp of Locust sends it (mvc-vs-reactive-ramp:db's cells, on real targets)
    write = SCENARIOS["db-write"]
    ramp = Ramp(start_users=2, step_users=0, step_s=2, steps=1, workers=0)
    result = driver_registry.get("locust").run(LoadSpec(
        port=server.server_address[1], scenario=write, concurrency=2, duration_s=ramp.duration_s, cpus="0",
        timeout_s=10, out_dir=tmp_path, ramp=ramp))
    assert result.requests >= 20 and result.errors == 0 and result.errors_status == 0, result
    assert len(server.posts) >= result.requests
    assert set(server.posts) == {(write.path, "application/json", write.body)}, server.posts[:3]


def test_a_user_left_without_an_answer_for_a_whole_step_is_counted(server, tmp_path):
    # One user's first request waits 12 s, through both 5-s steps; every other user is answered. On two
    # workers, whose users' numbers must not meet in the master's count; a master alone counts its own
    # users the same way (each user's number in each second it was answered), and
    # test_a_step_covers_the_seconds_its_users_ran checks that count on both: 11 s of the suite saved.
    server.starve = 12.0
    ramp = Ramp(start_users=4, step_users=4, step_s=5, steps=2, workers=2)
    result = run(server, tmp_path, ramp)
    for step, r in enumerate(result.steps, start=1):
        assert r.users_answered == ramp.users(step) - 1, (step, r.users_answered)
        assert "users-unanswered" in cell_flags(ramp.users(step), r, 1), step
    # every user answered counts as such: test_a_step_covers_the_seconds_its_users_ran


def test_workers_elsewhere_get_the_test_from_each_cells_master(server, tmp_path):
    """`bench locust-worker` as on a load machine of its own: nothing of the test but the master's
    address; each cell's master sends the configuration (the workers run their own locustfile), and
    quits the workers, which then wait for the next cell's."""
    port = free_port("127.0.0.1")
    agent = start_workers(tmp_path, f"127.0.0.1:{port}", "--processes", "2", "--cpus", "0", "--idle", "60s")
    try:
        ramp = Ramp(start_users=2, step_users=4, step_s=3, steps=2, workers=2)
        for cell in ("a", "b"):
            out = tmp_path / cell
            result = driver_registry.get("locust").run(LoadSpec(
                port=server.server_address[1], scenario=SCENARIO, concurrency=2, duration_s=ramp.duration_s,
                cpus="0", timeout_s=10, out_dir=out, ramp=ramp, workers_elsewhere=True, master_port=port))
            check_every_second_and_step(result, ramp)
            # each step's figures in the failure: once in a rehearsal (2026-11-29) one of cell a's was not, 3 reruns passed
            assert all(r.requests > 0 and r.loadgen_cpu_s > 0 for r in result.steps), \
                (cell, [(r.requests, r.loadgen_cpu_s) for r in result.steps])
            doc = json.loads(next(out.glob("*buckets.json")).read_text())
            assert len(doc["workers"]) == 2 and len(doc["cpu"]) == 3, cell
            # the master started no worker of its own: only it has a log
            assert [p.name for p in out.glob("*.log")] == [next(out.glob("*.log")).name], cell
    finally:
        # the agent's own processes only: the test session may have started a Docker engine
        workers = psutil.Process(agent.pid).children(recursive=True)
        agent.terminate()
        said, _ = agent.communicate(timeout=30)
    assert said.count("its master quit it") == 4, said
    assert len(workers) >= 2, workers
    assert not [w for w in workers if w.is_running()], "a worker outlived its agent"


def test_a_worker_never_runs_the_masters_locustfile(tmp_path):
    """Locust runs whatever file the master sends to a worker started with `-f -`, and checks nothing
    about the master: a master of anyone's making, whose file would leave a mark in any worker that
    ran it, finds workers that run their own file and leave none."""
    mark = tmp_path / "ran-the-masters-file"
    theirs = tmp_path / "theirs.py"
    theirs.write_text(f"import sys\nfrom locust import User, task\nif '--worker' in sys.argv:\n"
                      f"    open({str(mark)!r}, 'w').close()\n\n\nclass Theirs(User):\n    @task\n"
                      f"    def nothing(self):\n        pass\n")
    port = free_port("127.0.0.1")
    agent = start_workers(tmp_path, f"127.0.0.1:{port}", "--cpus", "0", "--idle", "3s")
    master = subprocess.run([LocustDriver().executable(), "-f", str(theirs), "--headless",
                             "--master", "--master-bind-host", "127.0.0.1", "--master-bind-port", str(port),
                             "--expect-workers", "1", "--expect-workers-max-wait", "30", "-u", "1", "-t", "2s",
                             "--loglevel", "WARNING"], cwd=tmp_path, capture_output=True, text=True, timeout=90)
    said, _ = agent.communicate(timeout=90)
    assert "its master quit it" in said, (said, master.stderr)   # the worker did serve this master
    assert not mark.exists()


def test_workers_elsewhere_stop_by_themselves_without_a_master(tmp_path):
    agent = start_workers(tmp_path, f"127.0.0.1:{free_port('127.0.0.1')}", "--idle", "3s")
    said, _ = agent.communicate(timeout=60)
    assert agent.returncode == 0 and "no master for 3 s: stopping" in said, said
