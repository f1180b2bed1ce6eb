"""Sampling the server and the load-generator CPUs while a cell runs, and cutting out the measured window.

The sampler polls from a background thread for as long as it is open (the whole driver call: the
generator's start-up, its window, its drain), and keeps every poll. The figures stored with a cell
are then taken over exactly the generator's own window (its start and length, which each driver
reports), so that a generator's set-up, a warm-up's stragglers or a CSV being parsed never count:
CPU seconds interpolated at the window's edges, RSS and threads the peaks of the polls inside it,
GC and JIT compilation from the JVM's counters, the busy share of the load-generator CPUs from /proc/stat,
the share of the server's and the load generator's CPUs that the host stole (a virtual machine's vCPU
held by its hypervisor: a capacity probed while it stole 23-32 % read 3 to 40 times off), the share
of the server's CPUs that ran something other than the target (another JVM, a build: the processes
are named from their CPU times before and after the load), and, with a probe, what Redis, MariaDB and
the kernel counted (evidence.py).
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import psutil

from orchestrator.core.cpus import TICKS_PER_S, cpu_jiffies, cpu_ticks, parse_cpus, run_ticks, steal_ticks
from orchestrator.measure.evidence import COUNTERS, GAUGES, Evidence, Probe, Reading, at_time, miss_seconds
from orchestrator.targets.runtimes import Server

INTERVAL_S = 0.25
SHARED_BY_MIN = 0.01   # of the server CPUs' time: a process below it is not named (a kernel thread's tick)
SHARED_BY_MAX = 5      # processes named, the biggest first


@dataclass
class ServerSample:
    cpu_s: float = float("nan")
    wall_s: float = float("nan")      # how long the window lasted
    peak_rss_bytes: int = 0
    peak_threads: int = 0
    peak_container_mem_bytes: int | None = None
    gc_count: int | None = None
    gc_time_s: float | None = None
    collector: str = ""
    jit_time_s: float | None = None
    switches: float | None = None                # times the server's threads were put on a CPU
    loadgen_cpus_busy_pct: float | None = None   # everything that ran on the load-generator CPUs
    loadgen_cpus_steal_pct: float | None = None  # of their time, held by the host (steal)
    server_cpus_steal_pct: float | None = None   # of the server's CPUs' time (None: not on this machine)
    server_cpus_foreign_pct: float | None = None  # of the server's CPUs' time, run but not the target's
    server_cpus_shared_by: str | None = None     # the other processes that ran there, biggest first
    steal_peak_pct: float | None = None          # the most of either's time stolen in one poll interval
    evidence: Evidence | None = None             # the backends' and the kernel's counts (with a probe)


@dataclass(frozen=True)
class Point:
    """One poll: the server's counters, the load-generator CPUs' busy, stolen and total jiffies, and the
    server CPUs' stolen, run by processes and total ones."""
    epoch_s: float
    cpu_s: float
    rss_bytes: int
    threads: int
    container_mem_bytes: int | None
    gc_count: int | None
    gc_time_s: float | None
    jit_time_s: float | None
    cpus_busy: int
    cpus_total: int
    backends: Reading | None = None
    switches: int | None = None
    cpus_steal: int = 0
    server_steal: int = 0
    server_total: int = 0
    server_run: int = 0


def _at(points: list[Point], t: float, value) -> float:
    """A cumulative counter at epoch t, interpolated linearly between the polls around it."""
    return at_time([p.epoch_s for p in points], [value(p) for p in points], t)


def _inside(points: list[Point], t0: float, t1: float) -> list[Point]:
    """The polls within [t0, t1], or the one nearest its end when the window fell between two polls."""
    return [p for p in points if t0 <= p.epoch_s <= t1] or [min(points, key=lambda p: abs(p.epoch_s - t1))]


class Sampler:
    """Context manager: polls the server and the load-generator CPUs for as long as it is open;
    window(t0, t1) gives the figures of any part of that time."""

    def __init__(self, server: Server, loadgen_cpus: str = "0", probe: Probe | None = None,
                 server_cpus: str | None = None):
        self.server = server
        self.probe = probe
        self.cpus = parse_cpus(loadgen_cpus)
        self.server_cpus = parse_cpus(server_cpus) if server_cpus else set()   # empty: not on this machine
        self.timeline: list[Point] = []
        self.collector = ""
        # other processes that may run on the server's CPUs, read before and after the load:
        # (pid, started at) -> (name, CPU seconds, pinned there alone)
        self.edges: list[dict[tuple[int, float], tuple[str, float, bool]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _poll(self) -> None:
        u = self.server.usage()
        if u is None or (u.at is not None and self.timeline and u.at <= self.timeline[-1].epoch_s):
            return   # exited, or a server read at intervals of its own (a remote engine) has nothing new
        gc = self.server.counters()
        if gc:
            self.collector = gc.collector
        jiffies = cpu_jiffies()
        busy, total = cpu_ticks(self.cpus, jiffies)
        server_steal, server_total = steal_ticks(self.server_cpus, jiffies)
        self.timeline.append(Point(u.at or time.time(), u.cpu_s, u.rss_bytes, max(u.threads, gc.threads if gc else 0),
                                   u.container_mem_bytes, gc.gc_count if gc else None,
                                   gc.gc_time_s if gc else None, gc.jit_time_s if gc else None, busy, total,
                                   self.probe.read() if self.probe else None, u.switches,
                                   steal_ticks(self.cpus, jiffies)[0], server_steal, server_total,
                                   run_ticks(self.server_cpus, jiffies)))

    def _loop(self) -> None:
        while not self._stop.wait(INTERVAL_S):
            self._poll()

    def __enter__(self) -> "Sampler":
        self._read_edge()
        self._poll()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.server.usage_after(time.time())   # the last window's edge needs a reading taken after it
        self._poll()
        self._read_edge()
        if self.probe:
            self.probe.close()

    def window(self, t0: float, t1: float, whole_load: bool = False) -> ServerSample:
        """The figures between epoch seconds t0 and t1. Counters (CPU, GC, CPU ticks) are differences
        at the edges; RSS and threads are the peaks of the polls inside (or the nearest one).

        whole_load says the window holds all the load this sampler saw (one generator run, no ramp).
        The backends then count only that load's work, and their counters are read at the first and
        last polls, taken before the generator started and after it ended: exact. Interpolating them
        at the window's edges would undercount, as a counter that rises only while load runs is not
        linear across a poll interval in which the load starts or stops (by 2-5 % in 3 s windows)."""
        out = ServerSample(collector=self.collector, wall_s=t1 - t0)
        points = self.timeline
        if not points:
            return out
        out.cpu_s = _at(points, t1, lambda p: p.cpu_s) - _at(points, t0, lambda p: p.cpu_s)
        inside = _inside(points, t0, t1)
        out.peak_rss_bytes = max(p.rss_bytes for p in inside)
        out.peak_threads = max(p.threads for p in inside)
        mem = [p.container_mem_bytes for p in inside if p.container_mem_bytes is not None]
        out.peak_container_mem_bytes = max(mem) if mem else None
        # GC counters step at a pause, not smoothly: take the polls that enclose the window.
        first = ([p for p in points if p.epoch_s <= t0] or points[:1])[-1]
        last = ([p for p in points if p.epoch_s >= t1] or points[-1:])[0]
        if first.gc_count is not None and last.gc_count is not None:
            out.gc_count = last.gc_count - first.gc_count
            out.gc_time_s = last.gc_time_s - first.gc_time_s
            out.jit_time_s = last.jit_time_s - first.jit_time_s
        if all(p.switches is not None for p in points):
            # of live threads: one that ended takes its count along, hence never below zero
            out.switches = max(0.0, _at(points, t1, lambda p: p.switches) - _at(points, t0, lambda p: p.switches))
        def share(part, whole) -> float | None:
            total = _at(points, t1, whole) - _at(points, t0, whole)
            return 100.0 * (_at(points, t1, part) - _at(points, t0, part)) / total if total > 0 else None
        out.loadgen_cpus_busy_pct = share(lambda p: p.cpus_busy, lambda p: p.cpus_total)
        out.loadgen_cpus_steal_pct = share(lambda p: p.cpus_steal, lambda p: p.cpus_total)
        out.server_cpus_steal_pct = share(lambda p: p.server_steal, lambda p: p.server_total)
        if self.server_cpus:
            # what ran there that the target's own CPU time does not cover: another process, or the
            # kernel's threads; the two clocks differ by a tick or two, and the target's time may hold
            # softirq ticks (run_ticks), so a quiet window may read below zero
            foreign = share(lambda p: p.server_run - p.cpu_s * TICKS_PER_S, lambda p: p.server_total)
            out.server_cpus_foreign_pct = None if foreign is None else max(0.0, foreign)
            out.server_cpus_shared_by = self._shared_by()
        out.steal_peak_pct = _steal_peak([p for p in points if t0 - INTERVAL_S <= p.epoch_s <= t1 + INTERVAL_S])
        if self.probe:
            out.evidence = _evidence([p for p in points if p.backends], t0, t1, whole_load)
        return out

    def _read_edge(self) -> None:
        """Every other process that may run on the server's CPUs, with its CPU time so far: read before
        the load and after it, the processes whose time grew are named (not every poll: listing every
        process takes the orchestrator's CPU, and a name needs no finer time)."""
        if not self.server_cpus:
            return
        target = self.server.pid
        try:
            own = {target, *(c.pid for c in psutil.Process(target).children(recursive=True))} if target else set()
        except psutil.Error:
            own = {target}
        edge = {}
        for p in psutil.process_iter(["name", "cpu_times", "cpu_affinity", "create_time"]):
            allowed, times = p.info["cpu_affinity"], p.info["cpu_times"]
            if p.pid in own or not times or not allowed or not self.server_cpus & set(allowed):
                continue
            edge[p.pid, p.info["create_time"]] = (p.info["name"] or "?", times.user + times.system,
                                                  set(allowed) <= self.server_cpus)
        self.edges.append(edge)

    def _shared_by(self) -> str:
        """The processes whose CPU time grew between the edges, in % of the server CPUs' time over the
        load: "java pid 1234 (31 %)". One started meanwhile counts whole; one that ended meanwhile (a
        compiler's short run) is out of sight. A process also allowed elsewhere may have run there
        instead: its share reads "up to"."""
        if len(self.edges) < 2 or len(self.timeline) < 2:
            return ""
        span = self.timeline[-1].server_total - self.timeline[0].server_total
        before, after = self.edges[0], self.edges[-1]
        grew = sorted(((cpu_s - before.get(key, (name, 0.0, pinned))[1]) * TICKS_PER_S / span, key)
                      for key, (name, cpu_s, pinned) in after.items()) if span > 0 else []
        return ", ".join(f"{after[key][0]} pid {key[0]} ({'' if after[key][2] else 'up to '}{100 * share:.0f} %)"
                         for share, key in reversed(grew[-SHARED_BY_MAX:]) if share >= SHARED_BY_MIN)


def _steal_peak(points: list[Point]) -> float | None:
    """The largest share of the load-generator or the server CPUs' time the host stole between two
    consecutive polls: a hold of 190 ms is 4.8 % of a 4-s window, below any threshold on the mean,
    and yet the p99 of a 50-ms objective (the host held the server's vCPU; its slowest answer took 196 ms)."""
    peaks = [100.0 * (b_steal - a_steal) / (b_total - a_total)
             for a, b in zip(points, points[1:])
             for a_steal, b_steal, a_total, b_total in ((a.cpus_steal, b.cpus_steal, a.cpus_total, b.cpus_total),
                                                        (a.server_steal, b.server_steal, a.server_total, b.server_total))
             if b_total > a_total]
    return max(peaks) if peaks else None


def _evidence(points: list[Point], t0: float, t1: float, whole_load: bool) -> Evidence:
    """Counters as differences at the window's edges (or, for the whole load, at the first and last
    polls); gauges as the peaks of the polls inside it. A counter some poll could not read (its
    backend was down) has no figure."""
    out = Evidence()
    if not points:
        return out
    for name in COUNTERS:
        if all(name in p.backends.counters for p in points):
            def value(p, name=name):
                return p.backends.counters[name]
            rise = (value(points[-1]) - value(points[0]) if whole_load
                    else _at(points, t1, value) - _at(points, t0, value))
            setattr(out, name, max(0.0, rise))
    if out.cache_hits is not None and out.cache_misses is not None:
        out.cache_miss_seconds = miss_seconds([p.epoch_s for p in points],
                                              [p.backends.counters["cache_hits"] for p in points],
                                              [p.backends.counters["cache_misses"] for p in points], t0, t1)
    inside = _inside(points, t0, t1)
    for field, gauge in GAUGES.items():
        values = [getattr(p.backends, gauge) for p in inside if getattr(p.backends, gauge) is not None]
        setattr(out, field, max(values) if values else None)
    return out
