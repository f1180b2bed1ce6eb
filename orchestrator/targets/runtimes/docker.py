"""The Docker runtime: the target's image run with host networking, a cpuset and a memory limit.

CPU seconds, RSS and threads come from the container's JVM process as the host sees it (the same
counters as the process runtime, so the two runtimes' figures compare); the container's memory as
its limit counts it (usage less inactive page cache) comes from the stats API.

On a remote engine (DOCKER_HOST naming another machine) the JVM is out of this machine's sight:
CPU seconds, RSS (the cgroup's) and threads (its tasks) come from the stats API, which reports once
a second; GC and JIT counters from the JVM's hsperfdata file, fetched through the API; the listener
check reads the container's socket table through it. What needs attaching to the JVM (JFR, thread
dumps) and its kernel's TCP counters are not available there, and the rows say so.

Files of the run a JVM reads or writes (its AOT cache, its class loading log) are bind-mounted at the
paths its options name: on this machine's engine only, since a remote one would mount its own machine's.
"""
from __future__ import annotations

import io
import os
import tarfile
import threading
import time
from pathlib import Path

import psutil

from orchestrator.config.options import byte_size
from orchestrator.infra.cleanup import remove_orphans
from orchestrator.infra.docker_engine import LABEL_RUN, USER, USER_ID, client, owner_labels, remote_address, run_container
from orchestrator.infra.procs import beyond, scheduled_in, table_listeners
from orchestrator.targets.jvm import JvmCounters, command_line, counters_of
from orchestrator.targets.runtimes.base import LaunchSpec, Mount, Runtime, Server, Usage

APP_DIR = "/app"


class DockerServer(Server):
    def __init__(self, container, log_path: Path, remote: bool = False):
        self.container = container
        self.log_path = log_path
        self.remote = remote
        container.reload()
        self._pid = container.attrs["State"]["Pid"]
        self._memory: int | None = None
        self._reading: Usage | None = None   # remote: the stats API's latest
        self._perf_path: str | None = None
        self._stop = threading.Event()
        self._stats = threading.Thread(target=self._follow_stats, daemon=True)
        self._stats.start()

    def _follow_stats(self) -> None:
        try:
            for s in self.container.stats(stream=True, decode=True):
                at = time.time()   # this machine's clock: the engine's may differ
                m = s.get("memory_stats") or {}
                usage = m.get("usage", 0)
                stats = m.get("stats") or {}
                # cgroup v1 names, and v2's where an engine has it
                self._memory = usage - stats.get("total_inactive_file", stats.get("inactive_file", 0))
                cpu_ns = ((s.get("cpu_stats") or {}).get("cpu_usage") or {}).get("total_usage")
                if self.remote and cpu_ns:
                    self._reading = Usage(cpu_s=cpu_ns / 1e9, rss_bytes=stats.get("rss", stats.get("anon", 0)),
                                          threads=(s.get("pids_stats") or {}).get("current", 0),
                                          container_mem_bytes=self._memory, at=at)
                if self._stop.is_set():
                    return
        except Exception:  # noqa: BLE001 - the stream ends when the container stops
            return

    @property
    def pid(self) -> int | None:
        return None if self.remote else self._pid

    def exit_code(self) -> int | None:
        try:
            self.container.reload()
        except Exception:  # noqa: BLE001 - removed: treat as exited
            return -1
        state = self.container.attrs["State"]
        return None if state.get("Running") else int(state.get("ExitCode", -1))

    def usage(self) -> Usage | None:
        if self.remote:
            return self._reading if self.exit_code() is None else None
        try:
            p = psutil.Process(self._pid)
            with p.oneshot():
                t = p.cpu_times()
                return Usage(cpu_s=t.user + t.system, rss_bytes=p.memory_info().rss, threads=p.num_threads(),
                             container_mem_bytes=self._memory, switches=scheduled_in(self._pid))
        except psutil.Error:
            return None

    def _inside(self, script: str) -> str:
        code, out = self.container.exec_run(["sh", "-c", script], user=USER)   # the JVM's user may read its /proc/1/fd
        return out.decode(errors="replace") if code == 0 else ""

    def counters(self) -> JvmCounters | None:
        if not self.remote:
            return super().counters()
        try:
            if self._perf_path is None:   # the JVM is the container's first process
                self._perf_path = self._inside("ls -d /tmp/hsperfdata_*/1").strip() or None
            if self._perf_path is None:
                return None
            chunks, _ = self.container.get_archive(self._perf_path)
            with tarfile.open(fileobj=io.BytesIO(b"".join(chunks))) as tar:
                member = tar.next()
                return counters_of(tar.extractfile(member).read()) if member else None
        except Exception:  # noqa: BLE001 - exited or torn: no reading
            return None

    def listeners_beyond(self, allowed: list[str], own_namespace: bool) -> list[str]:
        if not self.remote:
            return super().listeners_beyond(allowed, own_namespace)
        # The host network's table holds that machine's every listener: keep the JVM's sockets.
        fds = self._inside("ls -l /proc/1/fd")
        inodes = {part[len("socket:["):-1] for part in fds.split() if part.startswith("socket:[")}
        return beyond(table_listeners(self._inside("cat /proc/net/tcp /proc/net/tcp6"), inodes), allowed)

    def stop(self, grace_s: float = 15.0) -> None:
        self._stop.set()
        try:
            self.container.stop(timeout=int(grace_s))
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
        self.host = remote_address()

    def check(self) -> None:
        client()

    def path(self, mount: Mount) -> str:
        return mount.inside

    def start(self, spec: LaunchSpec, java: str) -> Server:
        fw = spec.target.framework
        artifact = f"{APP_DIR}/{fw.artifact}"
        argv = command_line(spec.target, "java", spec.jvm_opts, artifact)
        limit = byte_size(self.memory, "--memory")
        spec.log_path.parent.mkdir(parents=True, exist_ok=True)
        for m in spec.mounts:
            if m.writable:
                os.chown(m.host, USER_ID, USER_ID)   # the container's user writes it
        container = run_container(
            self.images[fw.name], argv, cpus=spec.cpus, labels={**spec.labels, **owner_labels()},
            # the contract's variables alone (process.environment's reasons); the image gives PATH and the rest
            working_dir=APP_DIR, environment=spec.env, mem_limit=limit, memswap_limit=limit,
            volumes={str(m.host): {"bind": m.inside, "mode": "rw" if m.writable else "ro"} for m in spec.mounts},
            name=f"bench-{spec.labels.get(LABEL_RUN, 'x')}-{spec.target.slug}-{os.getpid()}")
        return DockerServer(container, spec.log_path, remote=bool(self.host))

    def cleanup_leftovers(self) -> list[str]:
        return remove_orphans()

