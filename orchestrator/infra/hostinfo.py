"""What a run records about the machine and the software, so a figure can be traced to its setup."""
from __future__ import annotations

import json
import os
import platform
import subprocess

import psutil

from orchestrator import REPO_ROOT, STATE_DIR
from orchestrator.config.driver_registry import tools
from orchestrator.errors import MissingTool
from orchestrator.infra.procs import require_tool
from orchestrator.infra.tools import build_of

# Version lines kept per executable (path, size and modification time): asking Locust for its
# version starts Python and imports it, about a second on this machine kind, in every run.
VERSIONS_FILE = STATE_DIR / "tool-versions.json"


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


# the tools other than load drivers (each driver declares its own: config/driver_registry.py) -> the
# arguments that make it print its version (first line kept)
VERSION_ARGS = {"nginx": ("-v",), "redis-server": ("--version",), "mariadbd": ("--version",)}


def version_args() -> dict[str, tuple[str, ...]]:
    """Every tool a figure may depend on -> the arguments that make it print its version: each load
    driver's executables, then Redis, MariaDB and nginx (`bench calibrate`)."""
    return {**{t.executable: t.version_args for t in tools()}, **VERSION_ARGS}


def tool_version(path: str, tool: str) -> str:
    """The first line a tool prints about its version ("" when it prints none); asked again only
    when the executable changed."""
    try:
        key = build_of(path)
        known = json.loads(VERSIONS_FILE.read_text()) if VERSIONS_FILE.exists() else {}
    except (OSError, ValueError):
        key, known = None, {}
    if key in known:
        return known[key]
    lines = _run([path, *version_args()[tool]]).splitlines()
    line = lines[0] if lines else ""
    if key and line:
        try:
            STATE_DIR.mkdir(exist_ok=True)
            tmp = VERSIONS_FILE.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps({**known, key: line}, indent=1))
            os.replace(tmp, VERSIONS_FILE)
        except OSError:
            pass   # a read-only checkout asks again next time
    return line


def tool_versions() -> dict:
    """The version line of every tool a figure may depend on (version_args; "" where it is not installed).
    Only looked up, never built: a generator made on first use (k6) that no run has needed yet is
    recorded as absent, and the run that needs it has built it before this (runner.py)."""
    out = {}
    for tool in version_args():
        try:
            out[tool] = tool_version(require_tool(tool, ""), tool)
        except MissingTool:
            out[tool] = ""
    return out


def git_commit() -> str:
    commit = _run(["git", "rev-parse", "HEAD"])
    dirty = _run(["git", "status", "--porcelain", "--untracked-files=no"])
    return commit + ("-dirty" if dirty and commit else "")
