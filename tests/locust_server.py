"""Real Locust's counterpart in the test process: a small HTTP server whose answers can be delayed,
stalled or starved for one user, and the helpers the Locust tests share."""
from __future__ import annotations

import gc
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from conftest import ROOT

from orchestrator.config import driver_registry
from orchestrator.config.load import LoadResult, LoadSpec, Ramp
from orchestrator.config.scenarios import Scenario

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


def serving():
    """A fixture's body: the server, started on its own thread, stopped after."""
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


def start_workers(tmp_path, master: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "orchestrator.cli", "locust-worker", "--master", master,
                             "--results-dir", str(tmp_path / "results"), *args], cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
