"""The runtime interface: start a target from a LaunchSpec, get back a Server to probe and stop."""
from __future__ import annotations

import abc
from dataclasses import dataclass, field
from pathlib import Path

from ..catalog import Target


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
    netns: str | None = None    # a network namespace of topology.py (process runtime only)


@dataclass(frozen=True)
class Usage:
    """Cumulative CPU seconds, current RSS bytes and OS threads of a server at one instant, and for
    a container the memory its limit counts (stats API), which includes page cache."""
    cpu_s: float
    rss_bytes: int
    threads: int
    container_mem_bytes: int | None = None


class Server(abc.ABC):
    """A started target."""

    log_path: Path

    @property
    @abc.abstractmethod
    def pid(self) -> int:
        """The JVM's PID as this host sees it (for its counters and for sampling)."""

    @abc.abstractmethod
    def exit_code(self) -> int | None:
        """None while running."""

    @abc.abstractmethod
    def usage(self) -> Usage | None:
        """None when the server can no longer be read (it exited)."""

    @abc.abstractmethod
    def stop(self) -> None:
        """SIGTERM, then SIGKILL after a grace period; idempotent."""


class Runtime(abc.ABC):
    name: str

    @abc.abstractmethod
    def start(self, spec: LaunchSpec, java: str) -> Server:
        """Start the target; readiness is polled by the caller. `java` is the host JDK's launcher
        (a container uses its image's own)."""

    def check(self) -> None:
        """MissingTool with the way out when what this runtime needs is absent."""

    def cleanup_leftovers(self) -> list[str]:
        """Remove what an earlier, crashed run of this runtime left; returns what was removed."""
        return []
