"""Real Locust against a small HTTP server in this process whose answers can stall: every second of the
test is there, a second in which nothing completed too, a step's row covers the seconds its users ran,
and workers elsewhere get their test from each cell's master."""
from __future__ import annotations

import gc
import json
import math
import os
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import psutil
import pytest
from conftest import ROOT

from orchestrator.config import driver_registry
from orchestrator.config.load import LoadResult, LoadSpec, Ramp
from orchestrator.config.scenarios import SCENARIOS, Scenario
from orchestrator.drivers.locust import LocustDriver, free_port
from orchestrator.measure.checks import cell_flags

SCENARIO = Scenario("stall", "GET", "/", 200, "text/plain")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True   # headers and body go out in two writes: no 40 ms delayed ACK

    def log_message(self, *_):
        pass

    def do_GET(self):
        server = self.server
        with server.lock:
            if server.first is None:
                server.first = time.time()
            if server.starve is not None and server.starved is None:
                server.starved = self.client_address   # the first connection
        if self.client_address == server.starved:   # its requests wait starve seconds
            time.sleep(server.starve)
        time.sleep(server.delay_s)
        if server.stall:   # nothing is answered from stall_after_s after the first request for stall_s
            begin = server.first + server.stall[0]
            if begin <= time.time() < begin + server.stall[1]:
                time.sleep(begin + server.stall[1] - time.time())
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        with self.server.lock:
            self.server.posts.append((self.path, self.headers["Content-Type"], body))
        self.send_response(201)
        self.send_header("Content-Length", "8")
        self.end_headers()
        self.wfile.write(b'{"id":1}')


class Server(ThreadingHTTPServer):
    request_queue_size = 128   # a step's users connect at once: the default backlog of 5 drops their SYNs

    def serve_forever(self, *args):
        # As a target would: on the server CPU, away from Locust's processes on CPU 0 (the thread of
        # each connection inherits this). Unpinned, late in the slow tier of one CI run, a second of
        # 42 users (a master and two workers) fell outside 6-11 req/s per user.
        if len(os.sched_getaffinity(0)) > 1:
            os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})
        super().serve_forever(*args)


@pytest.fixture
def server():
    # the objects of every earlier test in this process out of the collector's way: a full collection
    # holds the GIL that every handler thread needs
    gc.freeze()
    s = Server(("127.0.0.1", 0), Handler)
    s.daemon_threads, s.lock, s.first, s.delay_s, s.stall = True, threading.Lock(), None, 0.02, None
    s.starve, s.starved, s.posts = None, None, []
    thread = threading.Thread(target=s.serve_forever, daemon=True)
    thread.start()
    yield s
    s.shutdown()
    s.server_close()
    thread.join(timeout=5)
    gc.unfreeze()


def run(server, tmp_path, ramp: Ramp) -> LoadResult:
    return driver_registry.get("locust").run(LoadSpec(
        port=server.server_address[1], scenario=SCENARIO, concurrency=ramp.start_users, duration_s=ramp.duration_s,
        cpus="0", timeout_s=10, out_dir=tmp_path, ramp=ramp))


def seconds_of(series: list[dict], step: int) -> list[dict]:
    return [rec for rec in series if rec["step"] == step]


def check_every_second_and_step(result: LoadResult, ramp: Ramp):
    """Every second from the start to the end is in the series, and each step's row is exactly its
    seconds there: consecutive, from started_at, as many as its duration, adding up to its requests."""
    epochs = [rec["epoch_s"] for rec in result.timeseries]
    assert epochs == list(range(epochs[0], epochs[-1] + 1))
    assert epochs[0] <= result.started_at and epochs[-1] >= int(result.started_at + ramp.duration_s) - 1
    assert sum(rec["rps"] for rec in result.timeseries) == result.requests
    assert len(result.steps) == ramp.steps
    for step, r in enumerate(result.steps, start=1):
        mine = seconds_of(result.timeseries, step)
        assert [rec["epoch_s"] for rec in mine] == [r.started_at + i for i in range(len(mine))], step
        assert r.duration_s == len(mine) and r.requests == sum(rec["rps"] for rec in mine), step


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


def start_workers(tmp_path, master: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "orchestrator.cli", "locust-worker", "--master", master,
                             "--results-dir", str(tmp_path / "results"), *args], cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


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
