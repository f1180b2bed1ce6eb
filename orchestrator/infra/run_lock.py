"""One measuring command at a time on this machine: the run lock.

Two runs on one machine measure each other (they share its CPUs, its memory bandwidth and, whatever
their ports, the load generator's cores), and both would store their figures as if alone. So `bench
run` (`--resume` too), `bench noise` and `bench calibrate` hold this lock for their whole life, and
`bench infra up` and `bench verify`, which start servers, refuse to start beside a holder. The second
command fails at once, naming the holder, rather than waiting: a user who started it by mistake
learns why, and one who meant it can wait for the first.

The lock is `flock` on a file every local user can open (in /run/lock, a tmpfs emptied at boot, else
the system temp folder), whatever the checkout, the user or the ports: the machine is what two runs
share. The kernel releases it when the holder exits, however it ends (SIGKILL too), so it never goes
stale. The holder writes who it is into the file (pid, run id, command, checkout, since when) for the
next one's message. BENCH_RUN_LOCK points it elsewhere; only tests that need isolation from a user's
own run set it.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import errno
import fcntl
import json
import os
import stat
import sys
import tempfile
from pathlib import Path

from orchestrator import REPO_ROOT
from orchestrator.errors import UsageError

LOCK_VAR = "BENCH_RUN_LOCK"
LOCK_NAME = "bench-run.lock"

_held: dict = {}   # this process's hold: {"fd": ..., "info": {...}}; a hold is re-entered, never taken twice


def lock_path() -> Path:
    if os.environ.get(LOCK_VAR):
        return Path(os.environ[LOCK_VAR])
    shared = Path("/run/lock")
    return (shared if shared.is_dir() and os.access(shared, os.W_OK) else Path(tempfile.gettempdir())) / LOCK_NAME


def _open(path: Path) -> int:
    """The lock file, or UsageError. Never through a symlink (another user could plant one in a shared
    folder to make a root bench truncate a file of its choosing), never a FIFO or a device (opened
    without blocking, then refused)."""
    try:
        fd = _open_or_create(path)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise UsageError(f"the run lock {path} is a symbolic link: remove it (bench never follows one there)") from None
        raise UsageError(f"cannot open the run lock {path}: {e.strerror}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UsageError(f"the run lock {path} is not a regular file: remove it")
    return fd


def _open_or_create(path: Path) -> int:
    """Open the lock file, or create it open to every local user."""
    flags = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        return os.open(path, os.O_RDWR | flags)
    except PermissionError:
        return os.open(path, os.O_RDONLY | flags)   # another user's file without write for us: lock only
    except FileNotFoundError:
        pass
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | flags, 0o666)
    except FileExistsError:   # another bench created it meanwhile
        return os.open(path, os.O_RDWR | flags)
    os.fchmod(fd, 0o666)   # whatever the umask: another user's bench must be able to lock it too
    return fd


def _holder_text(fd: int, path: Path) -> str:
    """Who holds the lock, from what it wrote, as one clause."""
    try:
        info = json.loads(os.pread(fd, 65536, 0).decode())
        since = dt.datetime.fromisoformat(info["since"])
    except (OSError, ValueError, KeyError, TypeError):
        return f"another bench command holds the run lock {path}"
    ago = dt.datetime.now(dt.timezone.utc) - since
    minutes = int(ago.total_seconds() // 60)
    run = f", run {info['run_id']}" if info.get("run_id") else ""
    return (f"another bench command is running on this machine: pid {info.get('pid')} (`{info.get('command', '?')}`{run}, "
            f"checkout {info.get('checkout', '?')}) since {since.astimezone():%Y-%m-%d %H:%M:%S} ({minutes} min ago)")


def _write(fd: int, info: dict) -> None:
    try:
        data = (json.dumps(info) + "\n").encode()
        os.ftruncate(fd, 0)
        os.pwrite(fd, data, 0)
    except OSError:
        pass   # opened read-only (another user's file): the lock holds, only the next message is vaguer


def _refuse(fd: int, path: Path) -> None:
    text = _holder_text(fd, path)
    os.close(fd)
    raise UsageError(f"{text}; one run at a time: start this once it has ended")


@contextlib.contextmanager
def held(run_id: str | None = None):
    """Hold the run lock for the block, or UsageError (exit 2) naming the holder. Re-entered by the
    same process (a run inside `bench noise`, a preset's parts): then only the run id it shows changes."""
    if _held:
        previous = _held["info"].get("run_id")
        if run_id:
            _note(run_id)
        try:
            yield
        finally:
            if run_id:
                _note(previous)
        return
    path = lock_path()
    fd = _open(path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        _refuse(fd, path)
    except OSError as e:   # a file system without flock
        os.close(fd)
        raise UsageError(f"cannot lock the run lock {path}: {e.strerror}") from None
    info = {"pid": os.getpid(), "run_id": run_id, "command": " ".join(["bench", *sys.argv[1:]])[:300],
            "checkout": str(REPO_ROOT), "since": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
    _held.update(fd=fd, info=info)
    _write(fd, info)
    try:
        yield
    finally:
        _held.clear()
        _write(fd, {})
        os.close(fd)   # closing the last descriptor releases the flock


def _note(run_id: str | None) -> None:
    _held["info"]["run_id"] = run_id
    _write(_held["fd"], _held["info"])


def ensure_free() -> None:
    """UsageError naming the holder when a run holds the lock; for commands that start servers (`bench
    infra up`, `bench verify`) without measuring, which take it for a moment only."""
    if _held:
        return
    with held():
        pass
