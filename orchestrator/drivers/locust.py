"""Locust, headless, with a stepped LoadTestShape (locustfile.py beside this file).

One process, or a master with `workers` worker processes so that a ramp can outgrow one core (the
same master/worker protocol spreads Locust over machines). Totals come from Locust's own JSON
output; the per-step rows and the per-second series from the locustfile's exact buckets, which
must add up to the same totals. The series has every second of the test, one in which nothing
completed too; a step's row covers the whole seconds in which its users, and only they, were
running (from a second or two after the step's nominal start), so its duration is that many
seconds, and a second in transition belongs to no step. A Locust process is one core at most: one
that is busier than LOADGEN_SATURATED of it in a step flags that step loadgen-saturated.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import socket
from collections import defaultdict
from pathlib import Path

from orchestrator.config.load import LoadResult, LoadSpec, latency_fields
from orchestrator.core.cpus import cpu_count
from orchestrator.core.schema import LOADGEN_SATURATED
from orchestrator.drivers.base import Driver, DriverFailed, run_generators
from orchestrator.infra.procs import log_tail

LOCUSTFILE = Path(__file__).with_name("locustfile.py")
# The exit code of a worker whose locustfile is not the master's (locustfile.py's configure()).
OTHER_LOCUSTFILE_EXIT = 3


def free_port(address: str) -> int:
    with socket.socket() as s:
        s.bind((address, 0))
        return s.getsockname()[1]


# Workers on other machines (`bench locust-worker`) come when they next ask for a master: give them
# longer than the ones started here, which connect within a second or two.
WAIT_FOR_WORKERS_S = {"here": 30, "elsewhere": 120}


def command_lines(locust: str, spec: LoadSpec, json_out: Path) -> list[list[str]]:
    """The master (or single process) first, then the workers started here. The master binds
    127.0.0.1, this machine's end of the link to the workers' host when a topology puts them on one,
    or the address and port that workers on other machines were told (--locust-master), and then
    starts no worker itself."""
    common = [locust, "-f", str(LOCUSTFILE), "--headless", "--only-summary", "--loglevel", "WARNING",
              "--stop-timeout", str(math.ceil(spec.timeout_s))]
    first = [*common, "--json-file", str(json_out.with_suffix(""))]
    workers = spec.ramp.workers
    if not workers:
        return [first]
    elsewhere = spec.workers_elsewhere
    port = str(spec.master_port or free_port(spec.master_host))
    master = [*first, "--master", "--master-bind-host", spec.master_host, "--master-bind-port", port,
              "--expect-workers", str(workers), "--expect-workers-max-wait",
              str(WAIT_FOR_WORKERS_S["elsewhere" if elsewhere else "here"])]
    if elsewhere:
        return [master]
    worker = [*common, "--worker", "--master-host", spec.master_host, "--master-port", port]
    return [master] + [worker] * workers


Timeline = list[tuple[float, float]]   # one process's (epoch s, CPU s so far), about once a second


def _cpu_in(timeline: Timeline, t0: float, t1: float) -> tuple[float, float] | None:
    """(CPU s, wall s) of one generator process between epoch t0 and t1, from its per-second samples."""
    inside = [(t, c) for t, c in timeline if t0 <= t <= t1 + 1]
    if len(inside) < 2 or inside[-1][0] <= inside[0][0]:
        return None
    return inside[-1][1] - inside[0][1], inside[-1][0] - inside[0][0]


def busiest_process_pct(timelines: list[Timeline], t0: float, t1: float) -> float:
    """The busiest generator process's CPU in [t0, t1), in % of one core."""
    pcts = [100.0 * cpu / wall for cpu, wall in filter(None, (_cpu_in(tl, t0, t1) for tl in timelines))]
    return max(pcts) if pcts else float("nan")


def sum_cpu(timelines: list[Timeline], t0: float, t1: float) -> float:
    """CPU seconds of all generator processes in [t0, t1)."""
    return sum(cpu for cpu, _ in filter(None, (_cpu_in(tl, t0, t1) for tl in timelines)))


def new_second() -> dict:
    return {"n": 0, "status": 0, "timeout": 0, "connect": 0, "other": 0, "bytes": 0, "hist": {}, "answered": []}


def summarise(seconds: list[dict], duration_s: float) -> LoadResult:
    """One LoadResult from per-second buckets (requests, failures by kind, latency histogram, the users
    that got an answer)."""
    hist: dict[float, int] = defaultdict(int)
    for s in seconds:
        for b, c in s["hist"].items():
            hist[float(b)] += c
    answered_ok = sum(s["n"] - s["status"] - s["timeout"] - s["connect"] - s["other"] for s in seconds)
    return LoadResult(
        requests=answered_ok + sum(s["status"] for s in seconds), duration_s=duration_s,
        bytes=sum(s["bytes"] for s in seconds), errors_connect=sum(s["connect"] for s in seconds),
        errors_read=sum(s["other"] for s in seconds), errors_timeout=sum(s["timeout"] for s in seconds),
        errors_status=sum(s["status"] for s in seconds),
        users_answered=len(set().union(*(s["answered"] for s in seconds))),
        **latency_fields(list(hist), list(hist.values())))


def steady_seconds(timeline: list[dict], end: float) -> dict[int, int]:
    """Second -> step (1-based) for the whole seconds in which only that step's users ran: from the
    second after all of them were running to the last before the next step was asked for (or the
    test ended). A second with a spawn in it belongs to no step."""
    step_of = {}
    for i, st in enumerate(timeline):
        until = timeline[i + 1]["asked"] if i + 1 < len(timeline) else end
        if st["running"] is not None:
            step_of.update({sec: i + 1 for sec in range(math.ceil(st["running"]), math.floor(until))})
    return step_of


def split(doc: dict, spec: LoadSpec, t0: float, timelines: list[Timeline]) -> tuple[list[LoadResult], list[dict]]:
    """Per-step results and per-second records from the locustfile's output; t0 is the test's start,
    timelines each Locust process's CPU samples."""
    ramp = spec.ramp
    users = {int(k): v for k, v in doc["users"].items()}
    seconds = {int(k): v for k, v in doc["seconds"].items()}
    end = doc.get("end") or t0 + ramp.duration_s
    timeline = doc.get("steps", [])
    step_of = steady_seconds(timeline, end)
    # Every second of the test, those in which nothing completed too (a stall), and the tail of
    # requests that completed after the end.
    every = range(min([int(t0), *seconds, *step_of]), max([math.ceil(end) - 1, *seconds, *step_of]) + 1)
    zero = new_second()
    # the processes that send: the workers (the master only coordinates), else the one process
    senders = ramp.workers if spec.workers_elsewhere else min(max(1, ramp.workers), cpu_count(spec.cpus))
    steps = []
    for step in range(1, ramp.steps + 1):
        secs = [sec for sec in every if step_of.get(sec) == step]
        r = summarise([seconds.get(sec, zero) for sec in secs], float(len(secs)))
        if secs:
            r.started_at = float(secs[0])
        else:   # its users never all ran (a spawn that outlasted the step): it measured nothing
            r.started_at = timeline[step - 1]["asked"] if step <= len(timeline) else end
        t1 = r.started_at + len(secs)
        busiest = busiest_process_pct(timelines, r.started_at, t1)
        r.loadgen_cpu_s = sum_cpu(timelines, r.started_at, t1)
        r.loadgen_busiest_pct, r.loadgen_processes = (busiest if busiest == busiest else None), senders
        if busiest == busiest and busiest > 100 * LOADGEN_SATURATED:
            r.flags.append("loadgen-saturated")
        steps.append(r)
    series = []
    last_users = 0
    for sec in every:
        one = summarise([seconds.get(sec, zero)], 1.0)
        last_users = users.get(sec, last_users)   # a second the loop overslept: the count it saw last
        # A second in transition has step None, not the step it moves to: its users were neither
        # count, and grouping the series by step then gives exactly the seconds of each step's row.
        series.append({"t_s": sec - int(t0), "epoch_s": sec, "users": last_users, "step": step_of.get(sec),
                       "rps": one.requests, "failures_per_s": one.errors + one.errors_status,
                       "p50_ms": one.latency_p50, "p95_ms": one.latency_p95, "p99_ms": one.latency_p99,
                       "loadgen_cpu_pct": busiest_process_pct(timelines, sec, sec + 1)})
    return steps, series


def locust_totals(path: Path) -> tuple[int, int]:
    """(requests, failures) from Locust's --json-file: its stats entries, one per request name."""
    entries = json.loads(path.read_text())
    return sum(e["num_requests"] for e in entries), sum(e["num_failures"] for e in entries)


class LocustDriver(Driver):
    name = "locust"

    def run(self, spec: LoadSpec) -> LoadResult:
        self.can_send(spec)
        locust = self.executable()
        if spec.ramp is None:
            raise DriverFailed("the locust driver runs ramp profiles only")
        out, json_out = self.files(spec, "buckets.json", "json")
        s, ramp = spec.scenario, spec.ramp
        cfg = {"host": f"http://{spec.host}:{spec.port}", "method": s.method, "path": s.path, "name": s.name,
               "headers": s.headers, "body": s.body.decode() if s.body is not None else None,
               "timeout_s": spec.timeout_s, "start_users": ramp.start_users, "step_users": ramp.step_users,
               "step_s": ramp.step_s, "steps": ramp.steps, "out": str(out),
               "ids": dataclasses.asdict(s.ids) if s.ids else None, "users": ramp.users(ramp.steps),
               "workers": ramp.workers,
               # workers elsewhere run their own checkout's file: they stop if it is not this one
               "locustfile": hashlib.sha256(LOCUSTFILE.read_bytes()).hexdigest()}
        argvs = command_lines(locust, spec, json_out)
        logs = self.files(spec, *(f"{'master' if i == 0 and ramp.workers else f'worker{i}' if i else 'main'}.log"
                                  for i in range(len(argvs))))
        wait_s = WAIT_FOR_WORKERS_S["elsewhere" if spec.workers_elsewhere else "here"]
        finished = run_generators(argvs, logs, deadline_s=ramp.duration_s + 2 * spec.timeout_s + 90 + wait_s,
                                  cpus=spec.cpus, env={"BENCH_LOCUST": json.dumps(cfg)},
                                  netns=[None] + [spec.workers_netns] * (len(argvs) - 1))
        bad = [(f, log) for f, log in zip(finished, logs) if f.exit_code not in (0, 1)]
        if bad or not out.exists() or not json_out.exists():
            f, log = (bad or list(zip(finished, logs)))[0]
            tail = log_tail(log, 5) or "no output"
            if spec.workers_elsewhere and "waiting for workers" in tail:
                tail = (f"{ramp.workers} Locust workers were expected at {spec.master_host}:{spec.master_port} and "
                        f"fewer connected within {WAIT_FOR_WORKERS_S['elsewhere']} s: start `bench locust-worker "
                        f"--master {spec.master_host}:{spec.master_port}` on the load machines")
            raise DriverFailed(f"locust exited with {f.exit_code}: {tail}")
        doc = json.loads(out.read_text())
        users = {int(k): v for k, v in doc["users"].items()}
        if not users:
            raise DriverFailed(f"locust ran no users: {log_tail(logs[0], 5)}")
        if len(doc["workers"]) != ramp.workers:
            raise DriverFailed(f"{ramp.workers} Locust workers were expected, {len(doc['workers'])} reported")
        t0 = doc.get("start") or min(users)
        timelines = [[tuple(x) for x in tl] for tl in doc["cpu"].values()]
        steps, series = split(doc, spec, t0, timelines)
        total = summarise(list(doc["seconds"].values()), ramp.duration_s)
        # exact for the processes started here (their rusage); a worker elsewhere's last sample
        total.loadgen_cpu_s = sum(f.cpu_s for f in finished) + (
            sum(tl[-1][1] for key, tl in doc["cpu"].items() if key != "main" and tl) if spec.workers_elsewhere else 0)
        total.started_at, total.steps, total.timeseries = t0, steps, series
        requests, failures = locust_totals(json_out)
        counted = total.requests + total.errors
        if counted != requests:
            raise DriverFailed(f"locust counted {requests} requests, its per-second buckets {counted}: "
                               f"a worker's report was lost")
        return total
