"""The Locust test the locust driver runs: one FastHttpUser, a stepped LoadTestShape, and exact
per-second buckets that it writes as JSON when Locust quits.

Locust's CSV files undercount (rewritten every second, not at shutdown) and its history holds only
sliding-window percentiles, so each process counts for itself: per second, the requests, failures by
kind, a latency histogram and the users that got an answer. Workers send theirs to the master with
each stats report; the master (or the single process) adds the users per second and each step's
timeline, and writes everything to the configuration's "out".

The timeline says which seconds measured a step: the shape's tick runs about once a second and users
spawn after it, so a step's users all run from a second or more after its nominal start. Per step,
"asked" is when the shape first asked for its users and "running" when they were all running
(spawning_complete; on a master, once the workers have reported them). Between the two the count is
in transition.

Each process also samples its own CPU time once a second and workers send theirs with their
reports, so the master's output holds every process's CPU, a worker's on another machine too, and
the host each worker ran on.

Configured by orchestrator/drivers/locust.py with the option --bench-locust (JSON), read from the
BENCH_LOCUST environment variable by the processes it starts. A worker started elsewhere
(`bench locust-worker`) runs its own checkout's copy of this file, never one the master sends, and
gets the option with the master's first spawn message, before its test starts; it exits with
OTHER_LOCUSTFILE_EXIT if its copy is not the master's.
"""
import hashlib
import itertools
import json
import logging
import os
import socket
import time
from collections import defaultdict

import gevent
from locust import FastHttpUser, LoadTestShape, constant, events, task
from locust.runners import WorkerRunner

from orchestrator.config.items import IdCycle

CFG: dict = {}
OTHER_LOCUSTFILE_EXIT = 3   # drivers/locust.py's


@events.init_command_line_parser.add_listener
def options(parser):
    parser.add_argument("--bench-locust", env_var="BENCH_LOCUST", default="", include_in_web_ui=False,
                        help="the bench driver's configuration (JSON)")


def configure(environment) -> None:
    """CFG and the user's settings from --bench-locust, once it is known (a remote worker's comes late)."""
    raw = getattr(environment.parsed_options, "bench_locust", "") if environment.parsed_options else ""
    if CFG or not raw:
        return
    CFG.update(json.loads(raw))
    with open(__file__, "rb") as f:
        mine = hashlib.sha256(f.read()).hexdigest()
    if CFG.get("locustfile", mine) != mine:
        logging.error("this machine's locustfile is not the master's: run the same bench version on both")
        os._exit(OTHER_LOCUSTFILE_EXIT)
    CFG["body_bytes"] = CFG["body"].encode() if CFG["body"] is not None else None
    BenchUser.host = CFG["host"]
    BenchUser.network_timeout = BenchUser.connection_timeout = CFG["timeout_s"]


def bucket_of(ms: float) -> float:
    """Histogram buckets with about 3 significant digits: 10 µs below 10 ms, 0.1 ms below 100 ms, ..."""
    if ms < 10:
        return round(ms, 2)
    if ms < 100:
        return round(ms, 1)
    if ms < 1000:
        return float(round(ms))
    return float(round(ms, -1))


def new_second() -> dict:
    # answered: the numbers of the users that got a response in the second (BenchUser.uid)
    return {"n": 0, "status": 0, "timeout": 0, "connect": 0, "other": 0, "bytes": 0, "hist": defaultdict(int),
            "answered": set()}


seconds: dict[int, dict] = defaultdict(new_second)
users_at: dict[int, int] = {}
cpu_samples: list[tuple[float, float]] = []              # this process's (epoch s, CPU s so far)
worker_cpu: dict[str, list] = defaultdict(list)          # the master's: per worker, its samples
worker_host: dict[str, str] = {}
started: dict[str, float] = {}
steps: list[dict] = []   # per step: {"users", "asked", "running"}, epoch seconds


def failure_kind(response, exception) -> str | None:
    if exception is None:
        return None
    code = getattr(response, "status_code", 0) or 0
    if code >= 400:
        return "status"
    if isinstance(exception, (socket.timeout, TimeoutError, gevent.Timeout)) or "timed out" in str(exception):
        return "timeout"
    if isinstance(exception, ConnectionRefusedError):
        return "connect"
    return "other"


@events.request.add_listener
def count(response_time, response_length, response=None, exception=None, context=None, **_):
    s = seconds[int(time.time())]
    s["n"] += 1
    s["bytes"] += response_length or 0
    kind = failure_kind(response, exception)
    if kind:
        s[kind] += 1
    if kind in (None, "status"):   # a response came back: its latency counts, and its user was answered
        s["hist"][bucket_of(response_time)] += 1
        s["answered"].add((context or {}).get("uid"))


def merge(into: dict, sent: dict) -> None:
    for sec, s in sent.items():
        target = into[int(sec)]
        for k in ("n", "status", "timeout", "connect", "other", "bytes"):
            target[k] += s[k]
        for b, c in s["hist"].items():
            target["hist"][float(b)] += c
        target["answered"].update(s["answered"])


def portable(second: dict) -> dict:
    """A second's bucket as JSON has it."""
    return {**second, "hist": {str(b): c for b, c in second["hist"].items()}, "answered": sorted(second["answered"])}


@events.report_to_master.add_listener
def send(client_id, data):
    data["bench_seconds"] = {str(k): portable(v) for k, v in seconds.items()}
    seconds.clear()
    data["bench_cpu"], data["bench_host"] = list(cpu_samples), socket.gethostname()
    cpu_samples.clear()


@events.worker_report.add_listener
def receive(client_id, data):
    merge(seconds, data.get("bench_seconds", {}))
    worker_cpu[client_id].extend(data.get("bench_cpu", []))
    if "bench_host" in data:
        worker_host[client_id] = data["bench_host"]


def every_second(record) -> None:
    """record(now) as each second begins: woken just past the boundary, so that a wake-up that comes a
    hair early or late still lands on the right second."""
    while True:
        now = time.time()
        record(now)
        gevent.sleep(1.0 - now % 1.0 + 0.005)


@events.init.add_listener
def watch_cpu(environment, **_):
    configure(environment)
    gevent.spawn(every_second, lambda now: cpu_samples.append((now, time.process_time())))


@events.test_start.add_listener
def watch_users(environment, **_):
    configure(environment)
    if isinstance(environment.runner, WorkerRunner):
        return
    started["t"] = time.time()
    gevent.spawn(every_second, lambda now: users_at.__setitem__(int(now), environment.runner.user_count))


@events.spawning_complete.add_listener
def all_running(user_count, **_):
    # Workers hear it too (from the master), but only the process that ticks the shape has steps.
    if steps and steps[-1]["running"] is None and user_count == steps[-1]["users"]:
        steps[-1]["running"] = time.time()


@events.quitting.add_listener
def write(environment, **_):
    if isinstance(environment.runner, WorkerRunner):
        return
    out = {"start": started.get("t"), "end": started.get("end"), "steps": steps, "users": users_at,
           "seconds": {k: portable(v) for k, v in seconds.items()},
           "cpu": {"main": cpu_samples, **worker_cpu}, "workers": worker_host}
    with open(CFG["out"] + ".tmp", "w") as f:
        json.dump(out, f)
    os.replace(CFG["out"] + ".tmp", CFG["out"])


SPAWN_RATE = 10_000   # users per second


class StepShape(LoadTestShape):
    """start_users, then step_users more every step_s, for steps steps; each step's users all at once."""

    def tick(self):
        step = int(self.get_run_time() // CFG["step_s"])
        if step >= CFG["steps"]:
            started.setdefault("end", time.time())
            return None
        users = CFG["start_users"] + step * CFG["step_users"]
        while len(steps) <= step:   # a tick that came a whole step late skips one: it never ran
            now, want = time.time(), CFG["start_users"] + len(steps) * CFG["step_users"]
            # The same users as the step before, all running: Locust spawns nothing and reports nothing.
            same = bool(steps) and steps[-1]["users"] == want and steps[-1]["running"] is not None
            steps.append({"users": want, "asked": now, "running": now if same else None})
        # Spawned at once: at a rate of `users` per second a step's users took a whole second to start,
        # which a short step could not spare (Locust only warns that the rate is high).
        return users, SPAWN_RATE


USER_NUMBERS = itertools.count()


class BenchUser(FastHttpUser):
    """A closed loop: the next request leaves when the last one is answered (no think time)."""
    wait_time = constant(0)   # host and timeouts: configure()

    def __init__(self, environment):
        super().__init__(environment)
        # a number no other user of the test has, on any worker: which users were answered, per second
        number = next(USER_NUMBERS)
        self.uid = getattr(environment.runner, "worker_index", 0) * 1_000_000 + number
        # a scenario that walks ids: each user its own stream, from its offset in the cycle
        self.ids, self.k = None, 0
        if CFG.get("ids"):
            self.ids = IdCycle(**CFG["ids"])
            workers = max(1, CFG.get("workers", 1))
            stream = number * workers + getattr(environment.runner, "worker_index", 0)
            self.k = self.ids.offset(stream % CFG["users"], CFG["users"])

    def context(self):
        return {"uid": self.uid}

    @task
    def hit(self):
        path = CFG["path"]
        if self.ids:
            path, self.k = self.ids.path(self.k), self.k + 1
        self.client.request(CFG["method"], path, data=CFG["body_bytes"], headers=CFG["headers"], name=CFG["name"])
