"""Sampling the server during a measured window: CPU seconds, peak RSS, peak threads, GC."""
from __future__ import annotations

import threading
from dataclasses import dataclass

from .jvm import read_counters
from .runtimes import Server

INTERVAL_S = 0.25


@dataclass
class ServerSample:
    cpu_s: float = float("nan")
    peak_rss_bytes: int = 0
    peak_threads: int = 0
    peak_container_mem_bytes: int | None = None
    gc_count: int | None = None
    gc_time_s: float | None = None
    collector: str = ""


class Sampler:
    """Context manager: polls the server from a background thread for the window it encloses."""

    def __init__(self, server: Server):
        self.server = server
        self.result = ServerSample()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _poll(self) -> None:
        u = self.server.usage()
        if u is None:
            return
        self._last_cpu = u.cpu_s
        self.result.peak_rss_bytes = max(self.result.peak_rss_bytes, u.rss_bytes)
        self.result.peak_threads = max(self.result.peak_threads, u.threads)
        if u.container_mem_bytes is not None:
            self.result.peak_container_mem_bytes = max(self.result.peak_container_mem_bytes or 0, u.container_mem_bytes)

    def _loop(self) -> None:
        while not self._stop.wait(INTERVAL_S):
            self._poll()

    def __enter__(self) -> "Sampler":
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
        self.result.cpu_s = self._last_cpu - self._cpu0
        gc1 = read_counters(self.server.pid)
        if self._gc0 and gc1:
            self.result.gc_count = gc1.gc_count - self._gc0.gc_count
            self.result.gc_time_s = gc1.gc_time_s - self._gc0.gc_time_s
            self.result.collector = gc1.collector
            self.result.peak_threads = max(self.result.peak_threads, gc1.threads)
