"""Where a target lives: a local process or a Docker container, behind one interface."""
from __future__ import annotations

from ..errors import UsageError
from .base import LaunchSpec, Runtime, Server, Usage

RUNTIMES = ("process", "docker")


def get(name: str, memory: str = "1g") -> Runtime:
    if name == "process":
        from .process import ProcessRuntime
        return ProcessRuntime()
    if name == "docker":
        from .docker import DockerRuntime
        return DockerRuntime(memory)
    raise UsageError(f"unknown runtime '{name}'; valid: {', '.join(RUNTIMES)}")


__all__ = ["LaunchSpec", "Runtime", "Server", "Usage", "RUNTIMES", "get"]
