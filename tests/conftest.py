"""Shared test helpers. Everything is real: JVMs, Redis, MariaDB, wrk."""
from __future__ import annotations

import glob
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "frameworks"
# Ports away from the defaults, so the tests never meet a user's own run or `bench infra up`.
PORTS = ["--port", "29080", "--redis-port", "29379", "--db-port", "29306", "--downstream-port", "29280"]


def bench_env(frameworks: Path | None = FIXTURES, **extra: str) -> dict[str, str]:
    env = {**os.environ, **extra}
    if "COLUMNS" not in extra:   # the CLI's piped width, which tests read tables at, not the caller's terminal's
        env.pop("COLUMNS", None)
    if frameworks:
        env["BENCH_FRAMEWORKS_DIR"] = str(frameworks)
    else:
        env.pop("BENCH_FRAMEWORKS_DIR", None)
    return env


def bench(*args: str, frameworks: Path | None = FIXTURES, timeout: float = 900, env: dict | None = None,
          **kw) -> subprocess.CompletedProcess:
    """Run the real `bench` CLI in a subprocess; output captured as text."""
    env = env or bench_env(frameworks)
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *args], cwd=ROOT, env=env, text=True,
                          capture_output=True, timeout=timeout, **kw)


def owned_by(pid: int) -> list[psutil.Process]:
    """Processes that bench process `pid` started (the orchestrator's own notion, as `bench clean` uses)."""
    from orchestrator.infra.cleanup import owned_by as owned
    return owned(pid)


def work_dirs_of(pid: int, pattern: str = "bench-infra-*") -> list[str]:
    """Temporary folders (infrastructure data, calibration) whose owner file names bench process `pid`."""
    from orchestrator.infra.procs import Owner
    found = []
    for d in glob.glob(f"/tmp/{pattern}"):
        try:
            owner = Owner.parse(Path(d, "owner").read_text())
        except OSError:
            continue
        if owner is not None and owner.pid == str(pid):
            found.append(d)
    return found


@pytest.fixture
def results_dir(tmp_path) -> Path:
    d = tmp_path / "results"
    d.mkdir()
    return d


def start_bench(*args: str, frameworks: Path | None = FIXTURES) -> subprocess.Popen:
    """Start `bench` in the background (output to a pipe), for tests that interfere with a run."""
    return subprocess.Popen([sys.executable, "-m", "orchestrator.cli", *args], cwd=ROOT, env=bench_env(frameworks),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def wait_for(predicate, timeout: float = 240, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def owned(pid: int, name: str) -> list[psutil.Process]:
    """Processes started by bench process `pid` whose command line mentions `name`."""
    out = []
    for p in owned_by(pid):
        try:
            if name in " ".join(p.cmdline()):
                out.append(p)
        except psutil.Error:
            pass
    return out


# One real framework under real load with its pools shrunk, as a user would shrink them (the database
# pool by option, the Redis pool by environment): test_evidence reads what the backends counted per
# request, test_parity the versions, pools and threads the run recorded. 32 connections want more
# than 2 Redis and 3 database connections, so both pools are full.
VERTX_LOAD = {"connections": 32, "db_pool": 3, "redis_pool": 2}


@pytest.fixture(scope="session")
def vertx_run(tmp_path_factory) -> Path:
    results_dir = tmp_path_factory.mktemp("vertx-results")
    r = bench("run", "-f", "vertx:eventloop", "-s", "json,redis,db-read,db-write",
              "-c", str(VERTX_LOAD["connections"]), "--warmup", "1s", "--warmup-max", "1s", "-d", "2s",
              "--db-pool-size", str(VERTX_LOAD["db_pool"]), "--results-dir", str(results_dir), *PORTS,
              frameworks=None, env=bench_env(None, REDIS_POOL_SIZE=str(VERTX_LOAD["redis_pool"])))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    return next(results_dir.iterdir())
