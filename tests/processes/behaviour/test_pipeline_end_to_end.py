"""The pipeline end to end on the fixture framework: a real JVM, real Redis and MariaDB, real wrk; a
target that dies, and Ctrl-C with resume."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pandas as pd
import psutil
from conftest import FIXTURES, IDLE, PORTS, ROOT, SIX_CELLS, bench, owned_by

from orchestrator.results import store as results


def test_verify_passes_and_fails_with_clear_reasons():
    r = bench("verify", "-f", "fixture", "-v", "ok,wrong-primes,wrong-thread,lenient-params,fan-out-sequential", *PORTS)
    assert r.returncode == 1, r.stdout + r.stderr
    out = " ".join(r.stdout.split())
    assert "1 passed, 4 failed" in out
    assert "[1/5] fixture:ok: ok (" in out and "[2/5] fixture:wrong-primes: FAILED (" in out   # each as it comes
    # the right body from calls made one after the other: the downstream saw them never overlap
    assert ("fixture:fan-out-sequential: verification failed: fan-out: GET /fan-out?calls=3: the downstream saw at "
            "most 1 of its 3 calls in flight at once") in out
    # the contract's one parameter rule: a sign is not ASCII digits, whatever Integer.parseInt accepts
    assert "fixture:lenient-params: verification failed: sleep: GET /sleep?ms=%2B5 gave 200, expected 400" in out
    assert ('fixture:wrong-primes: verification failed: cpu: GET /cpu?n=20000: body {"n": 20000, "primes": 2263}, '
            'expected {"n": 20000, "primes": 2262}') in out
    assert "fixture:wrong-thread: verification failed: plaintext: GET /plaintext: served by thread 'VirtualThread" in out
    assert "does not match the variant's thread model" in out


def test_run_writes_a_parquet_that_pandas_reads(results_dir):
    r = bench("run", "-f", "fixture:ok", "-s", "json,sleep", "-c", "8", "--warmup", "1s", "--warmup-max", "1s", "-d", "2s",
              "--fresh-jvm-per-scenario", "--results-dir", str(results_dir), *PORTS)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "fixture:ok" in r.stdout and "rps" in r.stdout
    # a JVM of its own for each scenario, as the presets that crown RSS or threads ask
    assert r.stdout.count("started fixture:ok in") == 2, r.stdout
    run_dir = next(results_dir.iterdir())
    df = pd.read_parquet(run_dir / "measurements.parquet")
    assert list(df.columns) == results.COLUMNS
    assert list(df["scenario"]) == ["json", "sleep"] and (df["status"] == "ok").all()
    assert (df["rps"] > 0).all() and (df["requests"] > 0).all()
    sleep = df[df["scenario"] == "sleep"].iloc[0]
    # 8 connections each waiting 100 ms: about 80 rps, and a p50 just above 100 ms.
    assert 100 <= sleep["latency_p50_ms"] < 200 and 40 < sleep["rps"] <= 80.5
    assert (df["startup_s"] > 0).all() and (df["rss_after_start_mb"] > 10).all()
    assert (df["server_cpu_s"] > 0).all() and (df["server_peak_threads"] > 5).all()
    assert df["gc_count"].notna().all() and (df["server_peak_rss_mb"] > 10).all()
    assert set(df["server_cpus"]) == {"1"} and set(df["loadgen_cpus"]) == {"0"} and set(df["heap"]) == {"512m"}
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["status"] == "finished" and meta["jdk"]["version"] and meta["host"]["cores"] >= 1
    assert (run_dir / "logs" / "fixture-ok-" f"{run_dir.name}.log").exists()
    # without --jfr nothing is recorded, and its evidence is null (not measured), never zero
    jfr = [c for c in results.COLUMNS if c.startswith("jfr_")]
    assert df[jfr].isna().all().all(), df[jfr].notna().sum()
    assert not (run_dir / "logs" / "jfr").exists()


def test_a_target_that_dies_fails_its_cells_and_the_run_goes_on(results_dir):
    r = bench("run", "-f", "fixture", "-v", "dies,ok", "-s", "json", "-c", "4", "--warmup", "0s", "-d", "5s",
              "--results-dir", str(results_dir), *PORTS)
    assert r.returncode == 1
    df = results.load(next(results_dir.iterdir()))
    dies = df[df["variant"] == "dies"].iloc[0]
    # the reason's first line, the one the console shows, names what the log says killed it
    first = dies["reason"].splitlines()[0]
    assert dies["status"] == "failed" and first.startswith("target exited with 3 during the cell: "), first
    assert "java.lang.OutOfMemoryError: Cannot reserve 16384 bytes of direct buffer memory" in first, first
    assert "OutOfMemoryError: Cannot reserve" in " ".join(r.stdout.split())
    assert df[df["variant"] == "ok"].iloc[0]["status"] == "ok"


def test_ctrl_c_keeps_finished_cells_leaves_nothing_running_and_resume_finishes(results_dir):
    argv = [sys.executable, "-m", "orchestrator.cli", "run", "-f", "fixture:ok", "-s", IDLE, "-c", SIX_CELLS,
            "--warmup", "0s", "-d", "2s", "--results-dir", str(results_dir), *PORTS]
    env = {**__import__("os").environ, "BENCH_FRAMEWORKS_DIR": str(FIXTURES)}
    proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 240
    parquet = None
    while time.monotonic() < deadline:
        found = list(results_dir.glob("*/measurements.parquet"))
        if found:
            parquet = found[0]
            break
        time.sleep(0.2)
    assert parquet, "no cell finished"
    children = [p.pid for p in psutil.Process(proc.pid).children(recursive=True)]
    assert children, "the run should have started a target and the infrastructure"
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode != 0, out
    assert "interrupted" in out, out
    time.sleep(0.5)
    assert not owned_by(proc.pid), "processes of the run are still running"
    assert not [p for p in children if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
    run_dir = parquet.parent
    kept = pd.read_parquet(parquet)
    assert 1 <= len(kept) < 6 and (kept["status"] == "ok").all()
    assert json.loads((run_dir / "run.json").read_text())["status"] == "interrupted"

    r = bench("run", "--resume", run_dir.name, "--results-dir", str(results_dir))
    assert r.returncode == 0, r.stdout + r.stderr
    df = pd.read_parquet(parquet)
    assert len(df) == 6 and not df.duplicated(["scenario", "concurrency", "repeat"]).any()
    assert (df["status"] == "ok").all()
    # the cells measured before the interruption are the very same rows
    before = kept.set_index(["scenario", "concurrency"])["requests"]
    after = df.set_index(["scenario", "concurrency"])["requests"]
    assert (after[before.index] == before).all()
