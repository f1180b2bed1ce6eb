"""Self-checks of a cell and of the machine: suspect figures are flagged, never silently kept."""
from __future__ import annotations

import os
import time

import psutil

from orchestrator.config.driver_registry import processes
from orchestrator.config.load import LoadResult
from orchestrator.core.schema import (
    HOST_STEAL,
    HOST_STEAL_PEAK,
    LITTLE_HIGH,
    LITTLE_LOW,
    LOADGEN_SATURATED,
    MIN_REQUESTS,
    NEAR_CEILING,
    SERVER_CPUS_SHARED,
)


def littles_law_ratio(concurrency: int, r: LoadResult) -> float:
    """In-flight requests implied by Little's law (rps x mean latency) over the connections held open.

    A closed loop keeps every connection busy, so the ratio is ~1; well below 1 means connections
    sat idle (errors, refused or reset connections, a generator too slow to keep up).
    """
    if r.requests == 0 or r.latency_mean != r.latency_mean:
        return float("nan")
    return r.rps * (r.latency_mean / 1000.0) / concurrency


def littles_law_holds(concurrency: int, r: LoadResult) -> bool:
    """Whether the ratio above is ~1, allowing for the window's edges: a window that stops counting
    at its end misses up to one request per connection (those still in flight), so the ratio can
    fall short by up to mean latency / window. That is nothing at 10 ms in 15 s, but a third at 1 s
    in 3 s, where wrk counts 2 of every 3 requests (42.5 rps at 64 connections on a 1 s sleep)."""
    ratio = littles_law_ratio(concurrency, r)
    if ratio != ratio:
        return True
    edge = r.latency_mean / 1000.0 / r.duration_s if r.duration_s else 0.0
    return LITTLE_LOW - edge <= ratio <= LITTLE_HIGH


def cell_flags(concurrency: int, r: LoadResult, loadgen_cpus: int, server_alive: bool = True,
               closed_loop: bool = True, loadgen_cpus_busy_pct: float | None = None,
               ceiling: float | None = None, steal_pct: float | None = None,
               steal_peak_pct: float | None = None, foreign_pct: float | None = None) -> list[str]:
    """The flags of a measured window. Little's law is checked in a closed loop only: there the
    clients are the requests in flight; in a burst's tail or at an open rate they are not.

    Two saturation checks: the generator's own processes (`loadgen-saturated`), and everything that
    ran on the load-generator CPUs (`loadgen-cpus-busy`: Redis, MariaDB, a gateway's backend,
    softirq and the orchestrator share them; a full CPU there measured that CPU, not the server).
    `near-generator-ceiling`: above NEAR_CEILING of `ceiling`, what `bench calibrate` measured this
    generator to reach on this machine, with the same CPUs, against a server faster than any target.
    `host-steal`: the host held the server's or the generator's vCPUs for more than HOST_STEAL of the
    window (steal_pct, the larger of the two), or more than HOST_STEAL_PEAK of one poll interval
    (steal_peak_pct): the window measured the host's neighbours too.
    `server-cpus-shared`: what ran on the server's CPUs that was neither the target nor steal
    (foreign_pct) took more than SERVER_CPUS_SHARED of their time: another process shared them."""
    flags = []
    if closed_loop and not littles_law_holds(concurrency, r):
        flags.append("littles-law")
    if r.users_answered is not None and r.duration_s > 0 and r.users_answered < concurrency:
        flags.append("users-unanswered")
    # A generator of several processes (Locust's workers) judged its busiest one itself: their sum
    # says nothing of whether one of them ran out of its core.
    if r.loadgen_busiest_pct is None and r.loadgen_cpus_used > LOADGEN_SATURATED * loadgen_cpus \
            and "loadgen-saturated" not in r.flags:
        flags.append("loadgen-saturated")
    if loadgen_cpus_busy_pct is not None and loadgen_cpus_busy_pct > 100 * LOADGEN_SATURATED:
        flags.append("loadgen-cpus-busy")
    if (steal_pct or 0) > 100 * HOST_STEAL or (steal_peak_pct or 0) > 100 * HOST_STEAL_PEAK:
        flags.append("host-steal")
    if (foreign_pct or 0) > 100 * SERVER_CPUS_SHARED:
        flags.append("server-cpus-shared")
    # the calibrated ceiling is one process's: workers that send at once reach as many times it
    if near_ceiling(r.rps, ceiling * r.loadgen_processes if ceiling else ceiling):
        flags.append("near-generator-ceiling")
    if r.errors:
        flags.append("socket-errors")
    if r.errors_status:
        flags.append("non-2xx")
    if r.requests < MIN_REQUESTS:
        flags.append("few-requests")
    if not server_alive:
        flags.append("server-died")
    return flags


def near_ceiling(rps: float, ceiling: float | None) -> bool:
    """True when rps is above NEAR_CEILING of a generator's calibrated ceiling (False when uncalibrated)."""
    return bool(ceiling) and rps > NEAR_CEILING * ceiling


def suspects() -> tuple[str, ...]:
    """Process names that spoil figures whenever they run: a JVM, Maven, and every load driver's
    processes (their registry entries name them)."""
    return ("java", "mvn", *processes())


class BusyProcesses:
    """Other processes that burn CPU over a window of at least window_s from now, or that are known
    to ruin figures (a JVM, a compile daemon). Only processes that exist now are watched, so what
    this process starts meanwhile (its infrastructure) is not among them: a run opens the window
    before it starts Redis and MariaDB and reads it after, rather than waiting a second apart."""

    def __init__(self, threshold_pct: float = 10.0, window_s: float = 1.0):
        self.threshold_pct, self.until = threshold_pct, time.monotonic() + window_s
        me = {os.getpid(), *(p.pid for p in psutil.Process().children(recursive=True))}
        self.procs = []
        for p in psutil.process_iter(["pid", "name", "cmdline"]):
            if p.pid in me or p.pid == 0:
                continue
            try:
                p.cpu_percent(None)
                # read now: psutil reuses its Process objects, and a process_iter of other attributes
                # elsewhere in the run (cleanup, ownership) replaces their `info`
                self.procs.append((p, p.info["name"], " ".join(p.info["cmdline"] or [p.info["name"] or ""])))
            except psutil.Error:
                pass

    def found(self) -> list[str]:
        time.sleep(max(0.0, self.until - time.monotonic()))
        known = suspects()
        found = []
        for p, name, cmd in self.procs:
            try:
                pct = p.cpu_percent(None)
                suspect = name in known or "KotlinCompileDaemon" in cmd
                if pct >= self.threshold_pct or suspect:
                    found.append(f"pid {p.pid} {name} ({pct:.0f}% CPU): {cmd[:100]}")
            except psutil.Error:
                pass
        return found


def busy_processes(threshold_pct: float = 10.0, window_s: float = 1.0) -> list[str]:
    return BusyProcesses(threshold_pct, window_s).found()
