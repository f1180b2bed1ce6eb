"""The process runtime: the target's JVM as a local process pinned with taskset."""
from __future__ import annotations

import contextlib
import os

import psutil

from orchestrator.infra.procs import scheduled_in, spawn, stop
from orchestrator.targets.jvm import command_line, parse_cpus
from orchestrator.targets.runtimes.base import LaunchSpec, Runtime, Server, Usage


class ProcessServer(Server):
    def __init__(self, popen, log_path):
        self._popen = popen
        self.log_path = log_path
        self._ps = psutil.Process(popen.pid)

    @property
    def pid(self) -> int:
        return self._popen.pid

    def exit_code(self) -> int | None:
        return self._popen.poll()

    def usage(self) -> Usage | None:
        try:
            with self._ps.oneshot():
                t = self._ps.cpu_times()
                return Usage(cpu_s=t.user + t.system, rss_bytes=self._ps.memory_info().rss,
                             threads=self._ps.num_threads(), switches=scheduled_in(self._ps.pid))
        except psutil.Error:
            return None

    def move_to(self, cpus: str) -> None:
        # Thread by thread: a process's affinity is its threads'. Twice, for a thread started between
        # the listing and its move; threads started later inherit their starter's CPUs.
        allowed = parse_cpus(cpus)
        for _ in range(2):
            for tid in os.listdir(f"/proc/{self.pid}/task"):
                with contextlib.suppress(ProcessLookupError):
                    os.sched_setaffinity(int(tid), allowed)

    def cpus(self) -> set[int] | None:
        allowed: set[int] = set()
        try:
            for tid in os.listdir(f"/proc/{self.pid}/task"):
                with contextlib.suppress(ProcessLookupError):
                    allowed |= os.sched_getaffinity(int(tid))
        except FileNotFoundError:
            return None
        return allowed or None

    def stop(self, grace_s: float = 15.0) -> None:
        stop(self._popen, grace=grace_s)


class ProcessRuntime(Runtime):
    name = "process"

    def start(self, spec: LaunchSpec, java: str) -> Server:
        argv = command_line(spec.target, java, spec.jvm_opts, str(spec.artifact))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("JAVA_TOOL", "_JAVA", "JDK_JAVA"))}
        env.update(spec.env)
        spec.log_path.parent.mkdir(parents=True, exist_ok=True)
        popen = spawn(argv, log_path=spec.log_path, cwd=spec.target.framework.path, env=env, cpus=spec.cpus,
                      netns=spec.netns)
        return ProcessServer(popen, spec.log_path)
