"""The Docker runtime: the target's image run with host networking, a cpuset and a memory limit.

CPU seconds, RSS and threads come from the container's JVM process as the host sees it (the same
counters as the process runtime, so the two runtimes' figures compare); the container's memory as
its limit counts it (usage less inactive page cache) comes from the stats API.
"""
from __future__ import annotations

import os
import threading
from pathlib import Path

import psutil

from ..docker_engine import LABEL_OWNER, LABEL_RUN, LABEL_TARGET, client, run_container
from ..jvm import command_line
from .base import LaunchSpec, Runtime, Server, Usage

APP_DIR = "/app"


def memory_bytes(limit: str) -> int:
    units = {"k": 2**10, "m": 2**20, "g": 2**30}
    return int(limit[:-1]) * units[limit[-1].lower()]


class DockerServer(Server):
    def __init__(self, container, log_path: Path):
        self.container = container
        self.log_path = log_path
        container.reload()
        self._pid = container.attrs["State"]["Pid"]
        self._memory: int | None = None
        self._stop = threading.Event()
        self._stats = threading.Thread(target=self._follow_stats, daemon=True)
        self._stats.start()

    def _follow_stats(self) -> None:
        try:
            for s in self.container.stats(stream=True, decode=True):
                m = s.get("memory_stats") or {}
                usage = m.get("usage", 0)
                stats = m.get("stats") or {}
                # cgroup v1 names, and v2's where an engine has it
                self._memory = usage - stats.get("total_inactive_file", stats.get("inactive_file", 0))
                if self._stop.is_set():
                    return
        except Exception:  # noqa: BLE001 - the stream ends when the container stops
            return

    @property
    def pid(self) -> int:
        return self._pid

    def exit_code(self) -> int | None:
        try:
            self.container.reload()
        except Exception:  # noqa: BLE001 - removed: treat as exited
            return -1
        state = self.container.attrs["State"]
        return None if state.get("Running") else int(state.get("ExitCode", -1))

    def usage(self) -> Usage | None:
        try:
            p = psutil.Process(self._pid)
            with p.oneshot():
                t = p.cpu_times()
                return Usage(cpu_s=t.user + t.system, rss_bytes=p.memory_info().rss, threads=p.num_threads(),
                             container_mem_bytes=self._memory)
        except psutil.Error:
            return None

    def stop(self) -> None:
        self._stop.set()
        try:
            self.container.stop(timeout=15)
        except Exception:  # noqa: BLE001 - already gone
            pass
        try:
            self.log_path.write_bytes(self.container.logs())
        except Exception:  # noqa: BLE001
            pass
        try:
            self.container.remove(force=True)
        except Exception:  # noqa: BLE001
            pass


class DockerRuntime(Runtime):
    name = "docker"

    def __init__(self, memory: str = "1g"):
        self.memory = memory
        self.images: dict[str, str] = {}   # framework -> image tag, set by the pipeline after building

    def check(self) -> None:
        client()

    def start(self, spec: LaunchSpec, java: str) -> Server:
        fw = spec.target.framework
        artifact = f"{APP_DIR}/{fw.artifact}"
        argv = command_line(spec.target, "java", spec.jvm_opts, artifact)
        limit = memory_bytes(self.memory)
        spec.log_path.parent.mkdir(parents=True, exist_ok=True)
        container = run_container(
            self.images[fw.name], argv, cpus=spec.cpus, labels={**spec.labels, LABEL_OWNER: str(os.getpid())},
            working_dir=APP_DIR, environment=spec.env, mem_limit=limit, memswap_limit=limit,
            name=f"bench-{spec.labels.get(LABEL_RUN, 'x')}-{spec.target.id.replace(':', '-')}-{os.getpid()}")
        return DockerServer(container, spec.log_path)

    def cleanup_leftovers(self) -> list[str]:
        return remove_orphans()


def remove_orphans() -> list[str]:
    """Containers labelled by a bench process that is gone (killed, crashed)."""
    from ..infra import load_state
    shared = load_state()
    keep = set(shared.containers.values()) if shared else set()
    removed = []
    for c in client().containers.list(all=True, filters={"label": LABEL_OWNER}):
        owner = c.labels.get(LABEL_OWNER, "")
        if c.id in keep:
            continue
        if owner.isdigit() and psutil.pid_exists(int(owner)) and int(owner) != os.getpid():
            continue
        if owner == str(os.getpid()):
            continue
        c.remove(force=True)
        removed.append(f"container {c.name} ({c.labels.get(LABEL_TARGET, c.labels.get(LABEL_RUN, ''))})")
    return removed
