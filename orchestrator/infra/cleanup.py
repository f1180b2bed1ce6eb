"""What a crashed or killed orchestrator left behind, found by its marks and removed: containers
labelled with their owner, processes whose owner is gone, temporary folders holding an owner file, and
network namespaces (infra/network.py). `bench clean` removes all of it; a run, before it starts, what
of it could be in its way.

Only this checkout's leftovers are removed, and only those whose owner process is gone: a mark
(procs.Owner) names the host, the boot, the pid and its start time, and the checkout. Another
checkout's servers (its `bench infra up`, its live run) share this machine's temp folder and process
table, and a container on a remote engine may belong to another load machine whose processes cannot
be seen from here: both are left alone. So is a mark of an older bench, which named no checkout.
"""
from __future__ import annotations

import re
import shutil
import socket
import tempfile
from pathlib import Path

import psutil

from orchestrator import REPO_ROOT
from orchestrator.infra import backends as infra_mod
from orchestrator.infra.docker_engine import LABEL_OWNER, LABEL_RUN, LABEL_TARGET, client, labelled_owner
from orchestrator.infra.network import stale_namespaces
from orchestrator.infra.procs import INFRA_UP, OWNER_VAR, Owner, stop_pid


def owner_of(p: psutil.Process) -> Owner | None:
    """The bench process that started p: BENCH_OWNER in its environment, or, for a server that
    rewrote its environment with its process title (Redis does), the owner file of the
    infrastructure data directory named on its command line."""
    try:
        owner = p.environ().get(OWNER_VAR)
        if owner:
            return Owner.parse(owner)
        m = re.search(r"(/\S*/bench-infra-[^/\s]+)/", " ".join(p.cmdline()))
    except (psutil.Error, OSError):
        return None
    if m:
        try:
            return Owner.parse((Path(m.group(1)) / infra_mod.OWNER_FILE).read_text())
        except OSError:
            return None
    return None


def owned_by(pid: int | str) -> list[psutil.Process]:
    """The processes bench process `pid` started (or "infra-up": those `bench infra up` left)."""
    found = []
    for p in psutil.process_iter():
        owner = owner_of(p)
        if owner is not None and owner.pid == str(pid):
            found.append(p)
    return found


def why_kept(owner: Owner | None, in_use: bool) -> str | None:
    """Why a leftover with this mark is not this checkout's to remove (None: it is). in_use: it is part of
    this checkout's live `bench infra up`."""
    if owner is None:
        return "no owner this bench can read"
    if owner.home != str(REPO_ROOT):
        return f"it belongs to the checkout {owner.home}"
    if owner.host != socket.gethostname():
        return f"its owner runs on host {owner.host}, which cannot be judged from here"
    if owner.pid == INFRA_UP:
        return "it is this checkout's `bench infra up`" if in_use else None
    return None if owner.gone() else f"its owner, pid {owner.pid}, is running"


def stray_processes() -> list[psutil.Process]:
    """Processes this checkout's bench commands started whose owner is gone (and not its live `bench
    infra up`)."""
    shared = infra_mod.load_state()
    kept = set(shared.pids.values()) if shared else set()
    stray = []
    for p in psutil.process_iter():
        owner = owner_of(p)
        if owner is not None and why_kept(owner, p.pid in kept) is None:
            stray.append(p)
    return stray


def remove_orphans(left: list[str] | None = None) -> list[str]:
    """Containers of this checkout labelled by a bench process that is gone (killed, crashed). Those
    whose owner is on another host go to `left`, with why: their owner's liveness cannot be seen here."""
    shared = infra_mod.load_state()
    keep = set(shared.containers.values()) if shared else set()
    removed = []
    for c in client().containers.list(all=True, filters={"label": LABEL_OWNER}):
        what = f"container {c.name} ({c.labels.get(LABEL_TARGET, c.labels.get(LABEL_RUN, ''))})"
        reason = why_kept(labelled_owner(c.labels), c.id in keep)
        if reason is None:
            c.remove(force=True)
            removed.append(what)
        elif left is not None and "host" in reason:
            left.append(f"{what}: {reason}")
    return removed


def clean_leftovers() -> tuple[list[str], list[str]]:
    """Remove this checkout's leftovers; returns what was removed and what was left alone, with why
    (containers of another host)."""
    removed, left = [], []
    try:
        removed += remove_orphans(left)
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
    return removed + stale_namespaces(), left


WORK_DIRS = ("bench-infra-*", "bench-calibrate-*", "bench-wire-*")   # temporary folders that hold an owner file


def stale_data_dirs() -> list[str]:
    """Remove this checkout's infrastructure and calibration folders whose bench process is gone (a live
    run's stay, and every other checkout's)."""
    shared = infra_mod.load_state()
    removed = []
    for d in (d for pattern in WORK_DIRS for d in Path(tempfile.gettempdir()).glob(pattern)):
        try:
            owner = Owner.parse((d / infra_mod.OWNER_FILE).read_text())
        except OSError:   # no owner file (yet, or a folder of another program): not ours to judge
            continue
        if why_kept(owner, shared is not None and str(d) == shared.data_dir) is None:
            shutil.rmtree(d, ignore_errors=True)
            removed.append(f"data directory {d}")
    return removed
