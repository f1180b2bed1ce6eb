"""The load smoke: does a target survive the load the studies put on it? (`bench verify --load N`)

After a target passes verification, each scenario it declares gets a burst of N requests on N
connections at once (the studies use 500 to 2,000), from k6, back to back in the same JVM; then every
scenario is verified again. The target survives when every request of every burst got a 2xx answer
within DRAIN_S (no socket error, no timeout), it is still running, and its answers still meet the
contract. No figure is kept: the JVM is cold and the burst short, so it proves survival, not speed.
A burst ends when its last answer comes, so a slow scenario's backlog (1,000 cpu-yield requests
behind one core take several seconds here) is part of its burst, not a wait after it. A target that
dies is named with the cause its log gives.

While one target takes its bursts, the next one starts on the load generator's CPUs (k6 leaves them
mostly idle, waiting on the server) and moves to the server's when its turn comes (in_turn): on 24
targets the smoke took 318-334 s this way, against 477 s one target after the other. Its startup figure is then marked
as taken beside that load, and each target's line names the CPUs its bursts were served on. A check that
reads timing (fan-out's calls in flight together) waits until it has moved: on the CPU k6 bursts from,
a target's three calls can start further apart than the downstream's delay.

k6 rather than pacer, though pacer starts in a tenth of the time (a burst of 1,000 GETs against nginx:
0.07-0.12 s against k6's 0.46-0.63 s): pacer sends every SYN of a burst within the same millisecond, and
Tomcat's accept queue (100) overflowed until TCP's backoff held the last connections. In one smoke of
24 targets (2026-11-30), 93 of spring-mvc:platform's 1,000 cpu requests waited 44.6 s, its sleep burst
took 17.9 s (2.1 s with k6), and spring-mvc:coroutines's sleep burst ended with 191 connections closed
unanswered, the JVM idle meanwhile (its threads dumped at 30 s: every worker waiting for work). k6's
bursts of the same targets, in some ten smokes, never showed it. On three targets (29 bursts) pacer
saved 4-11 s of 102-110.

Two lanes at once (a second lane's targets served on the load generator's CPU and loaded from the
server's) did not pay either: on 24 targets (2026-11-30) the smoke took 674 s against one lane's 698 s,
its bursts a third slower each (794 s against 582 s in all). One lane already keeps the load generator's
CPU busy with k6, the backends serving the bursts and the next target's start, so two cold JVMs at once
share the same two CPUs rather than doubling them.

A burst rather than a window of wrk: wrk runs whole seconds and leaves the backlog of its last
requests to drain after it (1.15 s plus 0.6 s a scenario, on average, on 24 targets here), and
within one second a slow scenario could answer nothing and still pass.
"""
from __future__ import annotations

import collections
import contextlib
import csv
import gzip
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from orchestrator.config import driver_registry
from orchestrator.config.catalog import Target
from orchestrator.config.load import LoadResult, LoadSpec
from orchestrator.config.scenarios import SCENARIOS
from orchestrator.core.cpus import parse_cpus
from orchestrator.drivers.base import DriverFailed
from orchestrator.errors import TargetFailed
from orchestrator.infra.procs import generator_failure, server_failure
from orchestrator.targets import parity
from orchestrator.targets.environment import Environment, Started, wait_ready
from orchestrator.targets.verify import Verification, verify

# Each request is answered within this long or fails the target (the slowest burst here, 1,000
# cpu-yield requests behind one core, took 9 s), and the health path after the burst too.
DRAIN_S = 120.0
# The smoke's generator: `bench verify --load` asks for it before any target starts (a build on first use)
GENERATOR = "k6"
# A burst still running this long (the slowest that passed here took 10 s) has its JVM's threads dumped,
# kept beside the burst's files and named in its failure: a hang (28 of 1,000 Redis MGETs unanswered for
# Lettuce's 60 s, twice in CI, never reproduced) leaves the stacks that say where it hung.
STUCK_S = 30.0
# A target started beside the load listens here above --port (--port + 1 is a gateway's backend's).
BESIDE_PORT_OFFSET = 2


# What a downstream scenario answers when its calls did not finish in the contract's 5 s (CONTRACT.md):
# under a burst into a fresh JVM on one CPU, calls can queue past it. The target survived and answered.
DOWNSTREAM_ANSWERS = {"502", "504"}


def statuses(per_request: Path) -> collections.Counter:
    """The status of each request of a k6 burst, from its per-request CSV (one http_reqs row each)."""
    with gzip.open(per_request, "rt", newline="") as f:
        return collections.Counter(row["status"] for row in csv.DictReader(f) if row["metric_name"] == "http_reqs")


def _downstream_answers_only(scenario, r: LoadResult, spec_dir: Path, connections: int) -> str:
    """For a scenario that calls the downstream: '' unless every failure was a contract answer (502/504),
    then those answers in words, kept beside the burst's files; else ''."""
    if not scenario.backend_work.get("downstream_calls") or r.errors or not r.errors_status or r.requests < connections:
        return ""
    path = spec_dir / f"{GENERATOR}-{scenario.name}-c{connections}.requests.csv.gz"
    seen = statuses(path) if path.exists() else collections.Counter()
    failed = {code: n for code, n in seen.items() if not code.startswith("2")}
    if not failed or set(failed) - DOWNSTREAM_ANSWERS or sum(failed.values()) != r.errors_status:
        return ""
    said = ", ".join(f"{n} answered {code}" for code, n in sorted(failed.items()))
    (spec_dir / f"{scenario.name}-downstream-answers.txt").write_text(
        f"{said} of {r.requests}: the contract's answer when a downstream call takes more than 5 s\n")
    return said


def _failures(r: LoadResult, asked: int) -> str:
    counts = {"non-2xx": r.errors_status, "connect": r.errors_connect, "no answer": r.errors_read,
              "write": r.errors_write, "timeout": r.errors_timeout,
              "never sent (k6 stopped the burst at its max duration)": max(0, asked - r.requests - r.errors)}
    return ", ".join(f"{n} {what}" for what, n in counts.items() if n)


@contextlib.contextmanager
def _threads_if_stuck(jcmd: Path | None, pid: int | None, path: Path) -> Iterator[Path]:
    """Within the block, the JVM's threads are written to path once the block has run STUCK_S (when
    jcmd can attach to pid); yields path, which exists afterwards only if the block ran that long."""
    def dump() -> None:
        text = parity.thread_dump(jcmd, pid)
        if text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    timer = threading.Timer(STUCK_S, dump)
    timer.daemon = True
    if jcmd and pid:
        timer.start()
    try:
        yield path
    finally:
        timer.cancel()
        if timer.is_alive():
            timer.join()


def _with_threads(reason: str, dump: Path) -> str:
    """A failure's reason (server_failure's), with where the threads of a burst that ran past STUCK_S
    are after its cause, before the log's last lines."""
    if not dump.exists():
        return reason
    cause, tail, log = reason.partition("; last lines of ")
    return f"{cause}; its threads {STUCK_S:g} s into the burst: {dump}{tail}{log}"


def survives(target: Target, started, settings, connections: int, logs: Path, port: int,
             host: str = "127.0.0.1", jcmd: Path | None = None) -> str:
    """'' when the target started on port survived a burst at `connections` on each of its scenarios
    and still answers by the contract afterwards; else why not, naming the scenario (with jcmd, a burst
    that runs past STUCK_S leaves the JVM's threads, named in the failure)."""
    for name in target.framework.scenarios:
        scenario = SCENARIOS[name]
        burst = f"{name} ({scenario.method} {scenario.path}) at {connections} connections"
        spec = LoadSpec(port=port, scenario=scenario, concurrency=connections, requests=connections,
                        duration_s=0, cpus=settings.loadgen_cpus, timeout_s=DRAIN_S, host=host,
                        out_dir=logs / "smoke" / target.slug)
        try:
            with _threads_if_stuck(jcmd, started.server.pid, spec.out_dir / f"{name}-threads.txt") as dump:
                r = driver_registry.get(GENERATOR).run(spec)
        except DriverFailed as e:
            return f"{burst}: {generator_failure(e, started.server.log_path)[0]}"
        try:   # the same wait as a start's
            wait_ready(started.server, port, target.framework.health_path, DRAIN_S, time.monotonic(), host)
            answered = True
        except TargetFailed:
            answered = False
        code = started.server.exit_code()
        if code is not None:
            return server_failure(f"{burst}: target exited with {code}",
                                  started.server.log_path)
        failed = _failures(r, connections)
        if failed and not _downstream_answers_only(scenario, r, spec.out_dir, connections):
            return _with_threads(server_failure(f"{burst}: {failed} of {connections} requests failed",
                                                started.server.log_path), dump)
        if not answered:
            return server_failure(f"{burst}: no answer to GET "
                                  f"{target.framework.health_path} within {DRAIN_S:.0f} s after the burst",
                                  started.server.log_path)
    after = verify(target, port, host)
    if not after.ok:
        code = started.server.exit_code()
        what = f"after {connections} connections, {after.reason}"
        return server_failure(f"{what} (target exited with {code})", started.server.log_path) if code is not None \
            else what
    return ""


@dataclass
class Turn:
    """A target in its turn: started and verified (failure says why not), on port."""
    target: Target
    started: Started | None
    verification: Verification | None
    failure: str
    port: int
    beside: bool   # started on the load generator's CPUs while the target before it was loaded


def in_turn(environment: Environment, targets: list[Target], env: dict[str, str], run_id: str,
            beside: bool) -> Iterator[Turn]:
    """Each target started and verified in its turn, yielded for the caller to load and stop before
    it asks for the next. With beside, the next target starts on the load generator's CPUs while the
    caller loads the one before, on the other of two ports, and moves to the server's CPUs when its
    turn comes: the smoke's JVM starts (8-10 s each for the Spring targets here, about 145 s of its 477)
    then cost no time of the server's CPU, whose bursts take 7-16 s a target."""
    s = environment.settings
    pool = ThreadPoolExecutor(1, thread_name_prefix="start-beside") if beside else None
    pending: tuple[Target, object, Future, int] | None = None   # the next target, its server, readiness, port
    try:
        for i, t in enumerate(targets):
            if pending and pending[0] is t:
                _, _, ready, port = pending
                pending = None
                try:
                    started, v = ready.result()
                    if v.ok:
                        started.server.move_to(s.server_cpus)
                    ran_on = started.server.cpus() if v.ok else None
                    if v.ok and ran_on != parse_cpus(s.server_cpus):
                        started.stop()
                        turn = Turn(t, None, None, f"could not move it to the server's CPUs ({s.server_cpus}) "
                                    f"from the load generator's: its threads may run on {ran_on}", port, True)
                    else:
                        if v.ok:   # what the check beside left out: its timing, now on its own CPUs
                            moved = environment.verified_moved(t, started, port, "verify")
                            v = v if moved.ok else moved
                        turn = Turn(t, started, v, "", port, True)
                except TargetFailed as e:
                    turn = Turn(t, None, None, e.reason, port, True)
            else:
                port = s.port
                try:
                    started, v = environment.start_verified(t, env, run_id, "verify")
                    turn = Turn(t, started, v, "", port, False)
                except TargetFailed as e:
                    turn = Turn(t, None, None, e.reason, port, False)
            following = targets[i + 1] if i + 1 < len(targets) else None
            if pool and following and turn.verification and turn.verification.ok \
                    and environment.can_start_beside(following):
                other = s.port + BESIDE_PORT_OFFSET if port == s.port else s.port
                ready = Future()
                try:
                    server, t0 = environment.spawn_beside(following, env, run_id, other)
                    ready = pool.submit(environment.ready_beside, following, server, other, t0, "verify")
                except TargetFailed as e:
                    server = None
                    ready.set_exception(e)
                pending = (following, server, ready, other)
            yield turn
    finally:
        if pending:   # interrupted: the next target, spawned already, goes too
            _, server, ready, _ = pending
            if server:
                server.stop()
        if pool:
            pool.shutdown(wait=True)
        if pending and pending[2].done() and not pending[2].exception():
            pending[2].result()[0].stop()
