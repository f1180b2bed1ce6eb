"""A child's log file kept under a size: its head and its tail, with a line saying how much was cut.

A target that logs every request (an access log, a warning per request) writes without limit into
the run folder; what anyone reads of a log is its start (the banner, the options it took) and its
end (why it failed: procs.log_tail and last_cause read the last 16 KiB, the AOT cache's training its
last line). A watcher thread per spawned process looks at the file's size once a second and, past
LIMIT, keeps its first HEAD bytes and its last TAIL bytes in place. The child writes with O_APPEND
(procs.spawn opens the log "ab"), so it goes on writing at the file's new end; the bytes it wrote
between the watcher's read of the tail and its truncation are lost, a second's worth at most, and
never after the child has exited (the watcher trims one last time then).
"""
from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path

LIMIT = 8 << 20          # a log past this is cut down to its head and tail
HEAD = 1 << 20
TAIL = 4 << 20
CHECK_S = 1.0


def cut_line(cut: int) -> bytes:
    return f"\n[bench: {cut:,} bytes of this log cut here, to keep it under {LIMIT >> 20} MiB]\n".encode()


def trim(path: Path, cut_before: int = 0, limit: int = LIMIT, head: int = HEAD, tail: int = TAIL) -> int:
    """Cut path down to its first `head` and last `tail` bytes when it is over `limit`, in place (the
    same file, which a child may still be appending to); returns the bytes cut in all, cut_before
    (what earlier trims cut) included."""
    try:
        f = open(path, "r+b")
    except OSError:
        return cut_before
    with f:
        size = os.fstat(f.fileno()).st_size
        if size <= limit:
            return cut_before
        # an earlier trim's line sits right after the head: its count is replaced by the new total
        f.seek(head + len(cut_line(cut_before)) if cut_before else head)
        start = f.tell()
        f.seek(size - tail)
        kept = f.read(tail)
        cut = cut_before + (size - tail - start)
        f.seek(head)
        f.write(cut_line(cut) + kept)
        f.truncate()
        return cut


class Watch(threading.Thread):
    """Trims a running child's log once a second, and once more when it has exited."""

    def __init__(self, popen: subprocess.Popen, path: Path):
        super().__init__(name=f"log-cap {path.name}", daemon=True)
        self.popen, self.path, self.cut = popen, path, 0

    def run(self) -> None:
        while True:
            alive = running(self.popen)
            self.cut = trim(self.path, self.cut)
            if not alive:
                return
            time.sleep(CHECK_S)


def running(popen: subprocess.Popen) -> bool:
    """Whether the child still runs, without reaping it: poll() would, and callers wait4 it for its
    exact CPU time (drivers/base.py). An exited child not yet reaped is a zombie ("Z")."""
    if popen.returncode is not None:
        return False
    try:
        with open(f"/proc/{popen.pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


def watch(popen: subprocess.Popen, path: Path) -> Watch:
    w = Watch(popen, path)
    w.start()
    return w
