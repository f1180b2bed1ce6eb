"""Shared test helpers. Everything is real: JVMs, Redis, MariaDB, wrk."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "frameworks"
# Ports away from the defaults, so the tests never meet a user's own run or `bench infra up`.
PORTS = ["--port", "29080", "--redis-port", "29379", "--db-port", "29306"]


def bench(*args: str, frameworks: Path | None = FIXTURES, timeout: float = 900, **kw) -> subprocess.CompletedProcess:
    """Run the real `bench` CLI in a subprocess; output captured as text."""
    env = {**os.environ, **({"BENCH_FRAMEWORKS_DIR": str(frameworks)} if frameworks else {})}
    env.pop("BENCH_FRAMEWORKS_DIR", None) if frameworks is None else None
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *args], cwd=ROOT, env=env, text=True,
                          capture_output=True, timeout=timeout, **kw)


def owned_by(pid: int) -> list[psutil.Process]:
    """Processes whose environment says that `pid` started them (BENCH_OWNER)."""
    found = []
    for p in psutil.process_iter():
        try:
            if p.environ().get("BENCH_OWNER") == str(pid):
                found.append(p)
        except (psutil.Error, OSError):
            pass
    return found


@pytest.fixture
def results_dir(tmp_path) -> Path:
    d = tmp_path / "results"
    d.mkdir()
    return d
