"""`bench clean`: remove what a crashed or killed orchestrator left behind."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import psutil

from . import infra as infra_mod
from .procs import OWNER_VAR, stop_pid


def _owner(p: psutil.Process) -> str | None:
    try:
        return p.environ().get(OWNER_VAR)
    except (psutil.Error, OSError):
        return None


def stray_processes() -> list[psutil.Process]:
    """Processes a bench command started whose owner is gone (and not the live `bench infra up`)."""
    shared = infra_mod.load_state()
    kept = set(shared.pids.values()) if shared else set()
    stray = []
    for p in psutil.process_iter():
        owner = _owner(p)
        if owner is None or p.pid in kept:
            continue
        if owner == "infra-up" or not owner.isdigit() or not psutil.pid_exists(int(owner)):
            stray.append(p)
    return stray


def clean_leftovers() -> list[str]:
    removed = []
    try:
        from .runtimes.docker import remove_orphans
        removed += remove_orphans()
    except Exception:  # noqa: BLE001 - no engine or no SDK: there are no containers to remove
        pass
    for p in stray_processes():
        try:
            desc = f"process {p.pid} ({' '.join(p.cmdline())[:80]})"
        except psutil.Error:
            continue
        stop_pid(p.pid, grace=5)
        removed.append(desc)
    shared = infra_mod.load_state()
    for d in Path(tempfile.gettempdir()).glob("bench-infra-*"):
        if shared is None or str(d) != shared.data_dir:
            shutil.rmtree(d, ignore_errors=True)
            removed.append(f"data directory {d}")
    return removed
