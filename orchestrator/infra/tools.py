"""Small helper programs the orchestrator compiles from its own sources on first use (the Flight
Recorder reader, a link's delay wire), and MariaDB's empty data directory, kept in
.bench-state/tools/ under a hash of what they were made from, so that a changed source, compiler or
MariaDB makes them anew and nothing else does."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import time
from pathlib import Path

from orchestrator import STATE_DIR
from orchestrator.errors import BenchError


def build_of(executable: str) -> str:
    """What tells one build of an installed program from another: where it really is, its size and
    its time (raises OSError when it is not there)."""
    real = os.path.realpath(executable)
    st = os.stat(real)
    return f"{real} {st.st_size} {st.st_mtime_ns}"


def compiled(name: str, source: Path, command: list[str], extra_key: str = "") -> Path:
    """The output of `command` ("{out}" in it standing for the output path: a file or a folder) for
    source, built once per source and extra_key (e.g. the compiler's home)."""
    key = hashlib.sha256(source.read_bytes() + extra_key.encode()).hexdigest()[:16]
    out = STATE_DIR / "tools" / f"{name}-{key}"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f"{out.name}.tmp{os.getpid()}-{time.monotonic_ns()}")
    done = subprocess.run([part.replace("{out}", str(tmp)) for part in command],
                          capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise BenchError(f"could not make {name} from {source}: {done.stderr.strip()[-500:]}")
    if out.exists():   # another run built it meanwhile
        shutil.rmtree(tmp, ignore_errors=True) if tmp.is_dir() else tmp.unlink(missing_ok=True)
    else:
        tmp.replace(out)
    return out
