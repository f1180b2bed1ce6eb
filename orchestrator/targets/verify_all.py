"""`bench verify`'s loop: every chosen target started in turn, verified against the contract and, with
a load, put through the load smoke (smoke.py), each one's outcome handed back as it comes (a smoke of
every target takes many minutes). The command chooses the targets and prints; what is checked, and in
what order, is here."""
from __future__ import annotations

import contextlib
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from orchestrator.config import driver_registry
from orchestrator.config.catalog import Target
from orchestrator.config.plan import Settings
from orchestrator.core.cpus import parse_cpus
from orchestrator.errors import UsageError
from orchestrator.infra import backends as infra_mod
from orchestrator.infra import interrupts, run_lock
from orchestrator.infra.procs import ensure_port_free
from orchestrator.targets import smoke
from orchestrator.targets.environment import Environment

MAX_LOAD = 20_000


@dataclass
class Outcome:
    """One target's verdict: reason '' when it passed; the figures of its start where it started."""
    target: Target
    reason: str
    started: bool
    seconds: float                       # since the last outcome: its start, verification and smoke
    startup_s: float = float("nan")
    rss_mb: float = float("nan")
    threads: str = ""                    # its thread pools, as X-Thread named them (thread_kinds)
    beside: bool = False                 # started beside the load on the target before it
    loaded: bool = False                 # verified, then put through the load smoke
    ran_on: set[int] = field(default_factory=set)   # the CPUs its bursts were served on

    @property
    def ok(self) -> bool:
        return not self.reason


def check_load(load: int | None) -> None:
    if load is not None and not 1 <= load <= MAX_LOAD:
        raise UsageError(f"--load must be 1 to {MAX_LOAD:,} connections, not {load}")


def prepare(environment: Environment, targets: list[Target], settings: Settings, load: int | None) -> bool:
    """Everything that can fail before a target starts: no run beside, the ports free (the next
    target's too, where the smoke starts it beside the load on the one before), the smoke's generator
    there (or built), the frameworks built. Returns whether targets start beside the load."""
    run_lock.ensure_free()   # it starts targets and servers: not beside a run
    environment.check_ports(targets, shared_infra=infra_mod.load_state() is not None)
    beside = bool(load) and len(targets) > 1 and environment.starts_beside
    if beside:
        second = settings.port + smoke.BESIDE_PORT_OFFSET
        if second in (settings.redis_port, settings.db_port):
            raise UsageError(f"--port {settings.port}: the load smoke starts the next target on port {second}, "
                             f"which is Redis's or MariaDB's here; choose another --port")
        ensure_port_free(second, f"the next target, started beside the load (--port + {smoke.BESIDE_PORT_OFFSET})")
    if load:
        driver_registry.get(smoke.GENERATOR).executable()   # missing, or built on first use, before any target starts
    environment.build_all(targets)
    return beside


def verify_all(environment: Environment, targets: list[Target], settings: Settings, load: int | None,
               logs: Path, beside: bool) -> Iterator[Outcome]:
    """Each target's outcome, in turn; every target and server stopped when the loop ends, however."""
    if load:
        os.sched_setaffinity(0, parse_cpus(settings.loadgen_cpus))   # the smoke's k6 and parsing off the server's CPU
    with interrupts.quiet_sigterm(), environment.infra() as infra, environment.keep_backends(), \
            contextlib.closing(smoke.in_turn(environment, targets, infra[0].env(), "verify", beside)) as turns:
        since = time.monotonic()
        for turn in turns:
            t, started, v = turn.target, turn.started, turn.verification
            if started is None:
                yield Outcome(t, turn.failure, False, time.monotonic() - since)
                since = time.monotonic()
                continue
            survived, ran_on = "", started.server.cpus()
            try:
                if v.ok and load:
                    survived = smoke.survives(t, started, settings, load, logs, turn.port, environment.server_host,
                                              environment.jdk.home / "bin" / "jcmd")
            finally:
                started.stop()
            yield Outcome(t, v.reason if not v.ok else survived, True, time.monotonic() - since,
                          started.startup_s, started.rss_after_start_mb, thread_kinds(v.threads.values()),
                          turn.beside, bool(v.ok and load), set(ran_on or ()) if v.ok and load else set())
            since = time.monotonic()


def thread_kinds(names) -> str:
    """Distinct thread pools from X-Thread values: numbers dropped, so 'exec-1' and 'exec-7' are one."""
    return ", ".join(sorted({re.sub(r"\d+", "N", n) for n in names}))
