"""The process runtime: the target's JVM as a local process pinned with taskset, in an environment of
its own (`environment`)."""
from __future__ import annotations

import contextlib
import os
import pwd
from pathlib import Path

import psutil

from orchestrator.core.cpus import parse_cpus
from orchestrator.infra.procs import scheduled_in, spawn, stop
from orchestrator.targets.jvm import command_line
from orchestrator.targets.runtimes.base import LaunchSpec, Runtime, Server, Usage


def environment(contract: dict[str, str], java: str) -> dict[str, str]:
    """What a target's JVM starts with: the contract's variables (the infrastructure's, the pools', the
    variant's own) and what a JVM needs, never bench's own environment, which holds the user's
    credentials and settings and which the target may write into the run's folder (Flight Recorder, a
    crash report, its log). A PATH of the run's JDK and the system's programs, a UTF-8 locale alike for
    every user, and HOME as the user's account gives it, which the JVM reads from there anyway
    (user.home): it tells nothing new."""
    return {"PATH": os.pathsep.join([str(Path(java).parent), "/usr/local/bin", "/usr/bin", "/bin"]),
            "LANG": "C.UTF-8", "HOME": pwd.getpwuid(os.geteuid()).pw_dir, **contract}


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
        spec.log_path.parent.mkdir(parents=True, exist_ok=True)
        popen = spawn(argv, log_path=spec.log_path, cwd=spec.target.framework.path, env=environment(spec.env, java),
                      cpus=spec.cpus, netns=spec.netns)
        return ProcessServer(popen, spec.log_path)
