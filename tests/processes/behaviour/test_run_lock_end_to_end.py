"""One run at a time, with real runs: a second run beside a measuring one stops and the first keeps every
row; `bench clean` in one checkout leaves another's infrastructure alone."""
from __future__ import annotations

import json
import socket
from pathlib import Path

import psutil
from conftest import IDLE, PORTS, ROOT, bench, bench_env, owned, start_bench, wait_for

from orchestrator import REPO_ROOT
from orchestrator.results import store as results

OTHER_PORTS = ["--port", "29180", "--redis-port", "29479", "--db-port", "29406", "--downstream-port", "29481"]


def test_a_second_run_beside_a_measuring_one_stops_and_the_first_keeps_every_row(results_dir, tmp_path):
    first = start_bench("run", "-f", "fixture:ok", "-s", IDLE, "-c", "4", "--warmup", "0s", "-d", "3s",
                        "--results-dir", str(results_dir), *PORTS)
    wait_for(lambda: owned(first.pid, "wrk"), what="the first run's load")
    run_id = next(results_dir.iterdir()).name
    others = tmp_path / "other-results"
    second = bench("run", "-f", "fixture:ok", "-s", IDLE, "-c", "4", "--warmup", "0s", "-d", "3s",
                   "--results-dir", str(others), *OTHER_PORTS, timeout=120)
    resumed = bench("run", "--resume", run_id, "--results-dir", str(results_dir), timeout=120)
    out, _ = first.communicate(timeout=300)
    assert first.returncode == 0, out
    for r in (second, resumed):
        line = " ".join(r.stderr.split())
        assert r.returncode == 2 and f"pid {first.pid} " in line and f"run {run_id}" in line, r.stdout + r.stderr
    assert not others.exists() or not list(others.iterdir())
    df = results.load(results_dir / run_id)
    assert len(df) == 1 and (df["status"] == "ok").all() and (df["requests"] > 0).all(), df


def test_clean_in_one_checkout_leaves_another_checkouts_infrastructure_alone(tmp_path):
    home = tmp_path / "checkout-2"
    (home / ".bench-state").mkdir(parents=True)
    (home / "compose").symlink_to(ROOT / "compose")
    if (REPO_ROOT / ".bench-state" / "tools").is_dir():   # MariaDB's empty data directory, made once
        (home / ".bench-state" / "tools").symlink_to(REPO_ROOT / ".bench-state" / "tools")
    env2 = bench_env(BENCH_HOME=str(home))
    up = bench("infra", "up", "--redis-port", "29479", "--db-port", "29406", "--downstream-port", "29481", env=env2, timeout=180)
    assert up.returncode == 0, up.stdout + up.stderr
    try:
        state = json.loads((home / ".bench-state" / "infra.json").read_text())
        servers = [psutil.Process(pid) for pid in state["pids"].values()]
        clean = bench("clean", timeout=120)   # this checkout's: the other's servers are not its to judge
        assert clean.returncode == 0, clean.stdout + clean.stderr
        assert all(p.is_running() for p in servers) and Path(state["data_dir"]).is_dir(), clean.stdout
        assert state["data_dir"] not in clean.stdout
        with socket.create_connection(("127.0.0.1", 29479), timeout=5):
            pass
    finally:
        down = bench("infra", "down", env=env2, timeout=120)
    assert down.returncode == 0 and "stopped" in down.stdout, down.stdout + down.stderr
    wait_for(lambda: not any(p.is_running() for p in servers), 30, "the other checkout's servers to stop")
    assert not Path(state["data_dir"]).exists()
