"""What a run records about the machine and the software, so a figure can be traced to its setup."""
from __future__ import annotations

import platform
import subprocess

import psutil

from . import REPO_ROOT


def _run(argv: list[str]) -> str:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=10, cwd=REPO_ROOT)
        return (out.stdout or out.stderr).strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def cpu_model() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def host_info() -> dict:
    return {
        "hostname": platform.node(), "cpu_model": cpu_model(), "cores": psutil.cpu_count(),
        "memory_gib": round(psutil.virtual_memory().total / 2**30, 1), "kernel": platform.release(),
        "os": platform.platform(), "python": platform.python_version(),
    }


def tool_versions() -> dict:
    return {
        "wrk": _run(["wrk", "--version"]).splitlines()[0] if _run(["wrk", "--version"]) else "",
        "redis": _run(["redis-server", "--version"]),
        "mariadb": _run(["/usr/sbin/mariadbd", "--version"]),
    }


def git_commit() -> str:
    commit = _run(["git", "rev-parse", "HEAD"])
    dirty = _run(["git", "status", "--porcelain", "--untracked-files=no"])
    return commit + ("-dirty" if dirty and commit else "")
