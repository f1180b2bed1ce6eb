"""The load smoke: does a target survive the load the studies put on it? (`bench verify --load N`)

After a target passes verification, each scenario it declares gets a burst of N requests on N
connections at once (the studies use 500 to 2,000), from pacer, back to back in the same JVM; then every
scenario is verified again. The target survives when every request of every burst got a 2xx answer
within DRAIN_S (no socket error, no timeout), it is still running, and its answers still meet the
contract. No figure is kept: the JVM is cold and the burst short, so it proves survival, not speed.
A burst ends when its last answer comes, so a slow scenario's backlog (1,000 cpu-yield requests
behind one core take several seconds here) is part of its burst, not a wait after it. A target that
dies is named with the cause its log gives.

While one target takes its bursts, the next one starts on the load generator's CPUs (pacer leaves them
mostly idle, waiting on the server) and moves to the server's when its turn comes (in_turn): on 24
targets the smoke took 318-334 s this way, against 477 s one target after the other. Its startup figure is then marked
as taken beside that load, and each target's line names the CPUs its bursts were served on.

pacer rather than k6: on three targets (29 bursts), A B A B, `bench verify --load 1000` took 98-99 s
with pacer against 102-110 s with k6. The bursts took as long (the cold JVMs' work); the gaps
between them went from 5.2-5.7 s to 1.3-1.4 s (k6's start, and reading its summary and per-request
CSV). Each arrival is due within the same millisecond and opens a connection of its own when none
is idle, so a connection is reused only once the server has answered on it before the last ones
were accepted: 986-1,000 were open at once in those bursts (each burst's summary, beside its files,
has `max_connections_open`).

A burst rather than a window of wrk: wrk runs whole seconds and leaves the backlog of its last
requests to drain after it (1.15 s plus 0.6 s a scenario, on average, on 24 targets here), and
within one second a slow scenario could answer nothing and still pass.
"""
from __future__ import annotations

import collections
import contextlib
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
GENERATOR = "pacer"
# A burst's arrivals are all due within this long (pacer's window: connections / it is the rate)
BURST_S = 0.001
# A burst still running this long (the slowest that passed here took 10 s) has its JVM's threads dumped,
# kept beside the burst's files and named in its failure: a hang (28 of 1,000 Redis MGETs unanswered for
# Lettuce's 60 s, twice in CI, never reproduced) leaves the stacks that say where it hung.
STUCK_S = 30.0
# A target started beside the load listens here above --port (--port + 1 is a gateway's backend's).
BESIDE_PORT_OFFSET = 2


# What a downstream scenario answers when its calls did not finish in the contract's 5 s (CONTRACT.md):
# under a burst into a fresh JVM on one CPU, calls can queue past it. The target survived and answered.
DOWNSTREAM_ANSWERS = {"502", "504"}


def statuses(r: LoadResult) -> collections.Counter:
    """The HTTP status of each answered request of a burst, as text, from its arrivals."""
    status = r.arrivals["status"]
    return collections.Counter(str(code) for code in status[status > 0].tolist())


def _downstream_answers_only(scenario, r: LoadResult, spec_dir: Path) -> str:
    """For a scenario that calls the downstream: '' unless every failure was a contract answer (502/504),
    then those answers in words, kept beside the burst's files; else ''."""
    if not scenario.backend_work.get("downstream_calls") or r.errors or r.dropped:
        return ""
    failed = {code: n for code, n in statuses(r).items() if not code.startswith("2")}
    if not failed or set(failed) - DOWNSTREAM_ANSWERS:
        return ""
    said = ", ".join(f"{n} answered {code}" for code, n in sorted(failed.items()))
    (spec_dir / f"{scenario.name}-downstream-answers.txt").write_text(
        f"{said} of {len(r.arrivals)}: the contract's answer when a downstream call takes more than 5 s\n")
    return said


def _failures(r: LoadResult) -> str:
    """What went wrong with a burst's requests, counted by kind ('' when every one was answered 2xx)."""
    non_2xx = sum(n for code, n in statuses(r).items() if not code.startswith("2"))
    counts = {"non-2xx": non_2xx, "connect": r.errors_connect, "no answer": r.errors_read,
              "write": r.errors_write, "timeout": r.errors_timeout,
              f"never sent (no connection within {DRAIN_S:.0f} s)": r.dropped}
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
        spec = LoadSpec(port=port, scenario=scenario, concurrency=connections, rate=connections / BURST_S,
                        duration_s=BURST_S, cpus=settings.loadgen_cpus, timeout_s=DRAIN_S, host=host,
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
        if len(r.arrivals) != connections:
            return f"{burst}: {GENERATOR} scheduled {len(r.arrivals)} requests, not {connections}"
        failed = _failures(r)
        if failed and not _downstream_answers_only(scenario, r, spec.out_dir):
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
                    turn = Turn(t, started, v, "", port, True)
                    ran_on = started.server.cpus() if v.ok else None
                    if v.ok and ran_on != parse_cpus(s.server_cpus):
                        started.stop()
                        turn = Turn(t, None, None, f"could not move it to the server's CPUs ({s.server_cpus}) "
                                    f"from the load generator's: its threads may run on {ran_on}", port, True)
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
