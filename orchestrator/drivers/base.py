"""The driver interface: a LoadSpec in, a LoadResult out, whatever generator runs in between."""
from __future__ import annotations

import abc
import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..scenarios import Scenario


@dataclass(frozen=True)
class LoadSpec:
    port: int
    scenario: Scenario
    concurrency: int
    duration_s: float
    cpus: str                 # where the generator runs (taskset list)
    timeout_s: float          # per request; far above the worst expected latency
    out_dir: Path             # for the generator's own files


@dataclass
class LoadResult:
    """What every driver reports for one measured window. Latencies in milliseconds."""
    requests: int
    duration_s: float
    bytes: int = 0
    errors_connect: int = 0
    errors_read: int = 0
    errors_write: int = 0
    errors_timeout: int = 0
    errors_status: int = 0    # responses with a status >= 400
    latency_min: float = float("nan")
    latency_mean: float = float("nan")
    latency_stdev: float = float("nan")
    latency_p50: float = float("nan")
    latency_p75: float = float("nan")
    latency_p90: float = float("nan")
    latency_p99: float = float("nan")
    latency_p999: float = float("nan")
    latency_max: float = float("nan")
    loadgen_cpu_s: float = float("nan")
    extra: dict = field(default_factory=dict)

    @property
    def rps(self) -> float:
        return self.requests / self.duration_s if self.duration_s > 0 else 0.0

    @property
    def errors(self) -> int:
        return self.errors_connect + self.errors_read + self.errors_write + self.errors_timeout


class DriverFailed(Exception):
    pass


class Driver(abc.ABC):
    name: str

    @abc.abstractmethod
    def check_installed(self) -> None:
        """MissingTool with the install line when the generator is absent."""

    @abc.abstractmethod
    def run(self, spec: LoadSpec) -> LoadResult:
        """Drive load for spec.duration_s and return the measured window; DriverFailed on failure."""


def run_generator(argv: list[str], log_path: Path, deadline_s: float, cpus: str | None) -> tuple[int, float, float]:
    """Run a load generator to completion, bounded in time, and return (exit code, wall s, CPU s).

    CPU time comes from wait4's rusage of the finished child, so it is exact and costs nothing
    while the generator runs. A generator that overruns its deadline is killed.
    """
    from ..procs import spawn
    started = time.monotonic()
    proc = spawn(argv, log_path=log_path, cpus=cpus)
    try:
        while True:
            pid, status, rusage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                proc.returncode = os.waitstatus_to_exitcode(status)
                return proc.returncode, time.monotonic() - started, rusage.ru_utime + rusage.ru_stime
            if time.monotonic() - started > deadline_s:
                proc.kill()
                raise DriverFailed(f"{argv[0]} did not finish within {deadline_s:.0f} s and was killed")
            time.sleep(0.05)
    except BaseException:
        if proc.returncode is None:
            proc.kill()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        raise
