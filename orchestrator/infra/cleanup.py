"""What a crashed or killed orchestrator left behind, found by its marks and removed: containers
labelled with its PID, processes whose owner is gone, temporary folders holding an owner file, and
network namespaces (infra/network.py). `bench clean` removes all of it; a run, before it starts, what
of it could be in its way."""
from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

import psutil

from orchestrator.infra import backends as infra_mod
from orchestrator.infra.docker_engine import LABEL_OWNER, LABEL_RUN, LABEL_TARGET, client
from orchestrator.infra.network import stale_namespaces
from orchestrator.infra.procs import OWNER_VAR, stop_pid


def owner_of(p: psutil.Process) -> str | None:
    """The bench process that started p: BENCH_OWNER in its environment, or, for a server that
    rewrote its environment with its process title (Redis does), the owner file of the
    infrastructure data directory named on its command line."""
    try:
        owner = p.environ().get(OWNER_VAR)
        if owner:
            return owner
        m = re.search(r"(/\S*/bench-infra-[^/\s]+)/", " ".join(p.cmdline()))
    except (psutil.Error, OSError):
        return None
    if m:
        try:
            return (Path(m.group(1)) / infra_mod.OWNER_FILE).read_text().strip()
        except OSError:
            return None
    return None


def owned_by(pid: int | str) -> list[psutil.Process]:
    """The processes bench process `pid` started (or "infra-up": those `bench infra up` left)."""
    return [p for p in psutil.process_iter() if owner_of(p) == str(pid)]


def stray_processes() -> list[psutil.Process]:
    """Processes a bench command started whose owner is gone (and not the live `bench infra up`)."""
    shared = infra_mod.load_state()
    kept = set(shared.pids.values()) if shared else set()
    stray = []
    for p in psutil.process_iter():
        owner = owner_of(p)
        if owner is None or p.pid in kept:
            continue
        if owner == "infra-up" or not owner.isdigit() or not psutil.pid_exists(int(owner)):
            stray.append(p)
    return stray


def remove_orphans() -> list[str]:
    """Containers labelled by a bench process that is gone (killed, crashed)."""
    shared = infra_mod.load_state()
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


def clean_leftovers() -> list[str]:
    removed = []
    try:
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
    removed += stale_data_dirs()
    return removed + stale_namespaces()


WORK_DIRS = ("bench-infra-*", "bench-calibrate-*", "bench-wire-*")   # temporary folders that hold an owner file


def stale_data_dirs() -> list[str]:
    """Remove infrastructure and calibration folders whose bench process is gone (a live run's stay)."""
    shared = infra_mod.load_state()
    removed = []
    for d in (d for pattern in WORK_DIRS for d in Path(tempfile.gettempdir()).glob(pattern)):
        owner_file = d / infra_mod.OWNER_FILE
        owner = owner_file.read_text().strip() if owner_file.exists() else ""
        in_use = (shared is not None and str(d) == shared.data_dir) or (
            owner.isdigit() and psutil.pid_exists(int(owner)) and int(owner) != 0)
        if not in_use:
            shutil.rmtree(d, ignore_errors=True)
            removed.append(f"data directory {d}")
    return removed
