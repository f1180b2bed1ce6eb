"""The docker runtime end to end: the fixture target and Redis/MariaDB in containers, real limits."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import pandas as pd
from rich.console import Console
import pytest

from orchestrator.environment import Environment
from orchestrator.plan import Settings
from orchestrator.catalog import discover, resolve
from orchestrator.docker_engine import LABEL_OWNER, client

from conftest import FIXTURES, PORTS, ROOT, bench

pytestmark = pytest.mark.slow   # JVMs, Redis, MariaDB, load generators, Docker

DOCKER = ["--runtime", "docker", "--offline"]


def test_run_in_containers_writes_the_same_rows(results_dir):
    r = bench("run", "-f", "fixture:ok", "-s", "json,sleep", "-c", "8", "--warmup", "1s", "-d", "2s",
              "--memory", "768m", "--results-dir", str(results_dir), *DOCKER, *PORTS)
    assert r.returncode == 0, r.stdout + r.stderr
    df = pd.read_parquet(next(results_dir.iterdir()) / "measurements.parquet")
    assert set(df["runtime"]) == {"docker"} and (df["status"] == "ok").all()
    assert (df["rps"] > 0).all() and (df["server_cpu_s"] > 0).all() and (df["server_peak_threads"] > 5).all()
    assert (df["container_peak_mem_mb"] > 10).all() and df["gc_count"].notna().all()
    sleep = df[df["scenario"] == "sleep"].iloc[0]
    assert 100 <= sleep["latency_p50_ms"] < 200
    assert not client().containers.list(all=True, filters={"label": LABEL_OWNER})


def test_the_jvm_in_the_container_sees_its_cpu_and_memory_limits(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCH_FRAMEWORKS_DIR", str(FIXTURES))
    settings = Settings(runtime="docker", offline=True, memory="768m", server_cpus="1", port=29080)
    environment = Environment(settings, tmp_path, Console(quiet=True))
    environment.catalog = discover(FIXTURES)
    target = resolve(environment.catalog, "fixture:ok")
    environment.build_all([target])
    started = environment.start(target, {}, "limits")
    try:
        c = started.server.container
        c.reload()
        host = c.attrs["HostConfig"]
        assert host["CpusetCpus"] == "1" and host["NetworkMode"] == "host"
        assert host["Memory"] == host["MemorySwap"] == 768 * 2**20
        assert c.attrs["Config"]["User"] == "10001:10001"
        assert "-XX:ActiveProcessorCount=1" in c.attrs["Config"]["Cmd"]
        # A JVM in the same container reports the limits the container gives it.
        code, out = c.exec_run(["java", "-XshowSettings:system", "-version"])
        text = out.decode()
        assert code == 0, text
        assert re.search(r"Effective CPU Count: 1\b", text), text
        assert re.search(r"Memory Limit: 768\.00M", text), text
        whoami = c.exec_run(["id", "-u"]).output.decode().strip()
        assert whoami == "10001"
    finally:
        started.stop()


def test_sigkill_mid_run_then_clean_leaves_no_container(results_dir):
    argv = [sys.executable, "-m", "orchestrator.cli", "run", "-f", "fixture:ok", "-s", "plaintext,json,cpu",
            "-c", "4,8", "--warmup", "0s", "-d", "3s", "--results-dir", str(results_dir), *DOCKER, *PORTS]
    env = {**os.environ, "BENCH_FRAMEWORKS_DIR": str(FIXTURES)}
    proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not list(results_dir.glob("*/measurements.parquet")):
        time.sleep(0.2)
    mine = {"label": f"{LABEL_OWNER}={proc.pid}"}
    assert client().containers.list(filters=mine), "the run should have a target and infrastructure in containers"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    # Containers are not children of the orchestrator: they outlive it until `bench clean`.
    assert client().containers.list(all=True, filters=mine)
    r = bench("clean")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "removed container" in r.stdout
    assert not client().containers.list(all=True, filters=mine)
    kept = pd.read_parquet(next(results_dir.glob("*/measurements.parquet")))
    assert len(kept) >= 1 and (kept["status"] == "ok").all()
