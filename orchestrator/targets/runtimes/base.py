"""The runtime interface: start a target from a LaunchSpec, get back a Server to probe and stop."""
from __future__ import annotations

import abc
import time
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.config.catalog import Target
from orchestrator.infra.procs import listening_beyond
from orchestrator.targets.jvm import JvmCounters, read_counters


@dataclass(frozen=True)
class Mount:
    """A file or folder of the run's that the JVM reads, or writes: a container sees it at `inside`
    (its JVM's options name that path), a local process where it is."""
    host: Path
    inside: str
    writable: bool = False


@dataclass(frozen=True)
class LaunchSpec:
    target: Target
    artifact: Path
    jvm_opts: list[str]
    env: dict[str, str]
    port: int
    cpus: str
    heap: str
    log_path: Path
    labels: dict[str, str] = field(default_factory=dict)
    netns: str | None = None    # a network namespace of network.py (process runtime only)
    mounts: tuple[Mount, ...] = ()


@dataclass(frozen=True)
class Usage:
    """Cumulative CPU seconds, current RSS bytes and OS threads of a server at one instant, and for
    a container the memory its limit counts (stats API), which includes page cache."""
    cpu_s: float
    rss_bytes: int
    threads: int
    container_mem_bytes: int | None = None
    at: float | None = None   # the epoch second it was read at, when not the moment of asking
    switches: int | None = None   # times its live threads were put on a CPU (procs.scheduled_in)


class Server(abc.ABC):
    """A started target."""

    log_path: Path

    @property
    @abc.abstractmethod
    def pid(self) -> int | None:
        """The JVM's PID as this host sees it (for attaching: JFR, thread dumps, its namespace's TCP
        counters); None when it runs on another machine."""

    @abc.abstractmethod
    def exit_code(self) -> int | None:
        """None while running."""

    @abc.abstractmethod
    def usage(self) -> Usage | None:
        """None when the server can no longer be read (it exited)."""

    def usage_after(self, t: float, wait_s: float = 2.5) -> Usage | None:
        """A reading taken at or after epoch t: for a server read at intervals of its own (a remote
        engine's, once a second), the next one is waited for, up to wait_s."""
        u, deadline = self.usage(), time.time() + wait_s
        while time.time() < deadline and (u.at is not None and u.at < t if u else self.exit_code() is None):
            time.sleep(0.1)
            u = self.usage()
        return u

    def counters(self) -> JvmCounters | None:
        """The JVM's own counters (hsperfdata: GC, JIT, threads); None when unreadable."""
        return read_counters(self.pid)

    def listeners_beyond(self, allowed: list[str], own_namespace: bool) -> list[str]:
        """Its listening sockets bound to neither loopback nor an allowed address."""
        return listening_beyond(self.pid, allowed, own_namespace)

    def move_to(self, cpus: str) -> None:
        """Pin every thread of the running server to cpus (a local process only)."""
        raise NotImplementedError(f"{type(self).__name__} cannot move to other CPUs")

    def cpus(self) -> set[int] | None:
        """The CPUs its threads may run on, all of them together (None: not known here)."""
        return None

    @abc.abstractmethod
    def stop(self, grace_s: float = 15.0) -> None:
        """SIGTERM, then SIGKILL after grace_s; idempotent."""


class Runtime(abc.ABC):
    name: str
    host: str | None = None   # the other machine's address the targets run on; None: this one

    @abc.abstractmethod
    def start(self, spec: LaunchSpec, java: str) -> Server:
        """Start the target; readiness is polled by the caller. `java` is the host JDK's launcher
        (a container uses its image's own)."""

    def path(self, mount: Mount) -> str:
        """Where the runtime's JVM finds a mount, for its options: a local process, at the file itself."""
        return str(mount.host)

    def check(self) -> None:  # noqa: B027 (a runtime that needs nothing checks nothing)
        """MissingTool with the way out when what this runtime needs is absent."""

    def cleanup_leftovers(self) -> list[str]:
        """Remove what an earlier, crashed run of this runtime left; returns what was removed."""
        return []
