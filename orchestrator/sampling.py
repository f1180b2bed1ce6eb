"""Sampling the server during a measured window: CPU seconds, peak RSS, peak threads, GC."""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from .jvm import read_counters
from .runtimes import Server

INTERVAL_S = 0.25


@dataclass
class ServerSample:
    cpu_s: float = float("nan")
    wall_s: float = float("nan")      # how long the sampled window lasted
    peak_rss_bytes: int = 0
    peak_threads: int = 0
    peak_container_mem_bytes: int | None = None
    gc_count: int | None = None
    gc_time_s: float | None = None
    collector: str = ""


@dataclass(frozen=True)
class Point:
    """One poll of the server, for windows inside the sampled one (ramp steps, seconds)."""
    epoch_s: float
    cpu_s: float
    rss_bytes: int
    threads: int
    gc_count: int | None
    gc_time_s: float | None


class Sampler:
    """Context manager: polls the server from a background thread for the window it encloses.

    With timeline=True it also keeps every poll (with the GC counters), so that window() can tell
    the resources of any part of it."""

    def __init__(self, server: Server, timeline: bool = False):
        self.server = server
        self.result = ServerSample()
        self.timeline: list[Point] | None = [] if timeline else None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _poll(self) -> None:
        u = self.server.usage()
        if u is None:
            return
        if self.timeline is not None:
            gc = read_counters(self.server.pid)
            self.timeline.append(Point(time.time(), u.cpu_s, u.rss_bytes, u.threads,
                                       gc.gc_count if gc else None, gc.gc_time_s if gc else None))
        self._last_cpu = u.cpu_s
        self.result.peak_rss_bytes = max(self.result.peak_rss_bytes, u.rss_bytes)
        self.result.peak_threads = max(self.result.peak_threads, u.threads)
        if u.container_mem_bytes is not None:
            self.result.peak_container_mem_bytes = max(self.result.peak_container_mem_bytes or 0, u.container_mem_bytes)

    def _loop(self) -> None:
        while not self._stop.wait(INTERVAL_S):
            self._poll()

    def __enter__(self) -> "Sampler":
        self._t0 = time.monotonic()
        self._gc0 = read_counters(self.server.pid)
        u = self.server.usage()
        self._cpu0 = u.cpu_s if u else float("nan")
        self._last_cpu = self._cpu0
        self._poll()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._poll()
        self.result.wall_s = time.monotonic() - self._t0
        self.result.cpu_s = self._last_cpu - self._cpu0
        gc1 = read_counters(self.server.pid)
        if self._gc0 and gc1:
            self.result.gc_count = gc1.gc_count - self._gc0.gc_count
            self.result.gc_time_s = gc1.gc_time_s - self._gc0.gc_time_s
            self.result.collector = gc1.collector
            self.result.peak_threads = max(self.result.peak_threads, gc1.threads)

    def window(self, t0: float, t1: float) -> ServerSample:
        """The server's resources between epoch seconds t0 and t1, from the timeline's polls."""
        inside = [p for p in self.timeline or [] if t0 <= p.epoch_s <= t1]
        out = ServerSample(collector=self.result.collector, wall_s=t1 - t0)
        if not inside:
            return out
        before = [p for p in self.timeline if p.epoch_s < t0]
        first = before[-1] if before else inside[0]
        last = inside[-1]
        out.cpu_s = last.cpu_s - first.cpu_s
        out.peak_rss_bytes = max(p.rss_bytes for p in inside)
        out.peak_threads = max(p.threads for p in inside)
        if first.gc_count is not None and last.gc_count is not None:
            out.gc_count = last.gc_count - first.gc_count
            out.gc_time_s = last.gc_time_s - first.gc_time_s
        return out
