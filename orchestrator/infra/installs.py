"""Load generators made on first use: a registry `Tool` with `build="module:function"` names one of
these functions, which returns the executable's path and builds it first when it is missing, so that
a run whose profile never drives it never waits for it (`python3 -m orchestrator run` on a fresh
clone used to spend a minute building k6 for a throughput run that drives wrk).

What is built goes into the bin folder of the environment bench runs in (.venv/bin, which
procs.require_tool searches first; .bench-state/bin outside a virtualenv), with a stamp beside it
naming what it was built from: a new version in the registry builds anew, nothing else does. The
build prints one line saying what it does and where its output goes, and writes that output to a log
beside the stamp; a lock keeps two commands started at once from building it twice.
"""
from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from orchestrator import STATE_DIR
from orchestrator.config.driver_registry import K6_MODULE
from orchestrator.errors import MissingTool

GO_DL = "https://go.dev/dl"


def bin_dir() -> Path:
    """Where a generator built on first use goes: this virtualenv's bin folder (.venv/bin), else
    .bench-state/bin."""
    return Path(sys.prefix) / "bin" if sys.prefix != sys.base_prefix else STATE_DIR / "bin"


def _shown(path: Path) -> str:
    """path relative to the current folder when it is under it (.venv/k6-build.log), else in full."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _go() -> str | None:
    return shutil.which("go") or shutil.which("go", path="/usr/local/go/bin")


def go_install(name: str, module: str, into: Path | None = None, duration: str = "about a minute") -> str:
    """The path of `name`, built with `go install module` (GOBIN=into, CGO_ENABLED=0) when neither
    `into` holds one built from `module` nor PATH has one; MissingTool, naming the log and how to
    install it by hand, when it cannot be built."""
    into = into or bin_dir()
    exe, stamp = into / name, into.parent / f".{name}-from"
    log = into.parent / f"{name}-build.log"

    def current() -> bool:
        return exe.exists() and stamp.exists() and stamp.read_text() == module

    if current():
        return str(exe)
    elsewhere = shutil.which(name)
    if elsewhere and Path(elsewhere).resolve() != exe.resolve():
        return elsewhere
    by_hand = f"`GOBIN={into} CGO_ENABLED=0 go install {module}`, or put a {name} on PATH"
    go = _go()
    if not go:
        if exe.exists():
            return str(exe)   # built from another version, and no Go to build this one: better than none
        raise MissingTool(f"'{name}' not found, and no Go toolchain to build it with: install Go from {GO_DL} "
                          f"(bench then builds {name} on first use), or install it by hand: {by_hand}")
    into.mkdir(parents=True, exist_ok=True)
    with open(into.parent / f".{name}-build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)   # another command building it: wait for its build
        if current():
            return str(exe)
        print(f"building {name} into {_shown(into)} (go install {module}, {duration}, once; log: {_shown(log)})",
              file=sys.stderr, flush=True)
        started = time.monotonic()
        env = {**os.environ, "GOBIN": str(into), "CGO_ENABLED": "0"}
        with open(log, "w") as out:
            out.write(f"$ GOBIN={into} CGO_ENABLED=0 {go} install {module}\n")
            out.flush()
            code = subprocess.run([go, "install", module], env=env, stdout=out, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL).returncode
            out.write(f"exit code {code} after {time.monotonic() - started:.0f} s\n")
        if code != 0 or not exe.exists():
            why = f"exited with {code}" if code else f"left no {exe}"
            said = log.read_text(errors="replace").splitlines()[1:-1]   # go's own lines: no command, no exit code
            raise MissingTool(f"could not build {name}: `go install {module}` {why}; its output is in {log} "
                              f"(last line: {said[-1].strip() if said else 'none'}); install it by hand: {by_hand}")
        stamp.write_text(module)
    return str(exe)


def k6() -> str:
    """k6, built from the Go module proxy on first use (K6_MODULE: the version, named once)."""
    return go_install("k6", K6_MODULE)
