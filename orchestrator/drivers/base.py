"""The driver interface: a LoadSpec in, a LoadResult out, whatever generator runs in between."""
from __future__ import annotations

import abc
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from orchestrator.config.driver_registry import info, made
from orchestrator.config.load import LoadResult, LoadSpec
from orchestrator.config.mix import Mix
from orchestrator.infra.procs import require_tool, spawn


class DriverFailed(Exception):
    pass


class Driver(abc.ABC):
    """A load generator. What it needs and runs (its executables, their packages, its process names,
    the profile kinds it runs) is declared by its entry in config/driver_registry.py, under its `name`."""
    name: str
    walks_ids = True   # it can send a different item per request (IdCycle: cache-aside's misses)
    mixes = False      # it can send a mix of scenarios in one load and tell each one's results apart

    def can_send(self, spec: LoadSpec) -> None:
        """DriverFailed, saying which generators can, when this one cannot send spec's requests."""
        if isinstance(spec.scenario, Mix) and not self.mixes:
            raise DriverFailed(f"{self.name} sends one scenario a load, and {spec.scenario.name} is a mix of "
                               f"{len(spec.scenario.parts)}: load it with pacer")
        if spec.scenario.ids and not self.walks_ids:
            raise DriverFailed(f"{self.name} sends the same path every time, and {spec.scenario.name} asks for a "
                               f"different item per request (its misses): load it with wrk, k6, pacer or Locust")

    def executable(self) -> str:
        """The generator's path (the first tool of its registry entry); MissingTool, saying how to
        install it, when it is absent. A tool made on first use (its entry's `build`: k6) is built
        here when it is missing, so callers ask for it before anything is measured (runner.py)."""
        tool = info(self.name).tools[0]
        return made(tool) if tool.build else require_tool(tool.executable, tool.how)

    def files(self, spec: LoadSpec, *suffixes: str) -> list[Path]:
        """This load's files in spec.out_dir, one per suffix, with any left by an earlier cell removed: a
        generator that writes nothing must not be read as having written what the last cell did."""
        spec.out_dir.mkdir(parents=True, exist_ok=True)
        paths = [spec.out_dir / f"{self.name}-{spec.stem}.{suffix}" for suffix in suffixes]
        for p in paths:
            p.unlink(missing_ok=True)
        return paths

    @abc.abstractmethod
    def run(self, spec: LoadSpec) -> LoadResult:
        """Drive load for spec.duration_s and return the measured window; DriverFailed on failure."""


@dataclass
class Finished:
    """One generator process that ran to its end."""
    argv: list[str]
    exit_code: int
    wall_s: float
    cpu_s: float


def run_generator(argv: list[str], log_path: Path, deadline_s: float, cpus: str | None,
                  env: dict[str, str] | None = None) -> tuple[int, float, float]:
    """Run a load generator to completion, bounded in time, and return (exit code, wall s, CPU s)."""
    f = run_generators([argv], [log_path], deadline_s, cpus, env)[0]
    return f.exit_code, f.wall_s, f.cpu_s


def run_generators(argvs: list[list[str]], log_paths: list[Path], deadline_s: float, cpus: str | list[str] | None,
                   env: dict[str, str] | None = None, netns: list[str | None] | None = None) -> list[Finished]:
    """Run generator processes side by side (a Locust master and its workers, pacer's processes) until
    every one has ended, bounded in time; one Finished each, in order. cpus: all of them on these, or
    a list, one process on each.

    CPU time comes from wait4's rusage of each finished child, so it is exact and costs nothing
    while the generators run. Past the deadline, or on any exception, all of them are killed. netns: a
    network namespace per process (None: this machine's own).
    """
    started = time.monotonic()
    each = cpus if isinstance(cpus, list) else [cpus] * len(argvs)
    procs = [spawn(argv, log_path=log, cpus=on, env=None if env is None else {**os.environ, **env}, netns=ns)
             for argv, log, ns, on in zip(argvs, log_paths, netns or [None] * len(argvs), each)]
    done: dict[int, Finished] = {}
    try:
        while len(done) < len(procs):
            for i, proc in enumerate(procs):
                if i in done:
                    continue
                pid, status, rusage = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    proc.returncode = os.waitstatus_to_exitcode(status)
                    done[i] = Finished(argvs[i], proc.returncode, time.monotonic() - started,
                                       rusage.ru_utime + rusage.ru_stime)
            if time.monotonic() - started > deadline_s:
                raise DriverFailed(f"{argvs[0][0]} did not finish within {deadline_s:.0f} s and was killed")
            time.sleep(0.05)
        return [done[i] for i in range(len(procs))]
    finally:
        for proc in procs:
            if proc.returncode is None:
                proc.kill()
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    pass
