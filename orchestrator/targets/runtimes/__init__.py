"""Where a target lives: a local process or a Docker container, behind one interface."""
from __future__ import annotations

from orchestrator.errors import UsageError
from orchestrator.targets.runtimes.base import LaunchSpec, Runtime, Server, Usage
from orchestrator.targets.runtimes.docker import DockerRuntime
from orchestrator.targets.runtimes.process import ProcessRuntime

RUNTIMES = ("process", "docker")


def get(name: str, memory: str = "1g") -> Runtime:
    if name == "process":
        return ProcessRuntime()
    if name == "docker":
        return DockerRuntime(memory)
    raise UsageError(f"unknown runtime '{name}'; valid: {', '.join(RUNTIMES)}")


__all__ = ["LaunchSpec", "Runtime", "Server", "Usage", "RUNTIMES", "get"]
