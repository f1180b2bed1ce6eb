"""Small helper programs the orchestrator compiles from its own sources on first use (the Flight
Recorder reader, a link's delay wire), kept in .bench-state/tools/ under a hash of what they were
built from, so that a changed source or compiler builds anew and nothing else does."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import time
from pathlib import Path

from . import STATE_DIR
from .errors import BenchError


def compiled(name: str, source: Path, command: list[str], extra_key: str = "") -> Path:
    """The output of `command` (with "{out}" standing for the output path: a file or a folder) for
    source, built once per source and extra_key (e.g. the compiler's home)."""
    key = hashlib.sha256(source.read_bytes() + extra_key.encode()).hexdigest()[:16]
    out = STATE_DIR / "tools" / f"{name}-{key}"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f"{out.name}.tmp{os.getpid()}-{time.monotonic_ns()}")
    done = subprocess.run([str(tmp) if part == "{out}" else part for part in command],
                          capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise BenchError(f"could not compile {source}: {done.stderr.strip()[-500:]}")
    if out.exists():   # another run built it meanwhile
        shutil.rmtree(tmp, ignore_errors=True) if tmp.is_dir() else tmp.unlink(missing_ok=True)
    else:
        tmp.replace(out)
    return out
