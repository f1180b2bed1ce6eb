"""Figures that are what happened, on real generators against the real fixture JVM: raw wrk
latencies (its coordinated-omission correction undone), the CPU-level saturation flags (the load
generator's CPUs busy, the server's CPU shared), k6's rate window, per-target generator files, and the
console showing flags."""
from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest
from conftest import FIXTURES, start_bench

from orchestrator.config import driver_registry
from orchestrator.config.load import LoadSpec
from orchestrator.config.scenarios import Scenario
from orchestrator.drivers.pacer import read_records
from orchestrator.targets.jdk import find_jdk

PORT = 29480
# Every 20th request sleeps 200 ms, the others answer at once: a heavy tail of known shape.
TAIL = Scenario("tail", "GET", "/sleep?ms=200&every=20", 200, "application/json", None)


@pytest.fixture(scope="module")
def fixture_server(tmp_path_factory):
    """The fixture JVM on CPU 1 (as a target runs), compiled into a temporary folder."""
    jdk = find_jdk()
    classes = tmp_path_factory.mktemp("fixture")
    subprocess.run([str(Path(jdk.java).with_name("javac")), "-d", str(classes),
                    str(FIXTURES / "fixture" / "src" / "Fixture.java")], check=True)
    env = {**os.environ, "PORT": str(PORT), "BIND_ADDRESS": "127.0.0.1"}
    proc = subprocess.Popen(["taskset", "-c", "1", jdk.java, "-XX:ActiveProcessorCount=1", "-cp", str(classes),
                             "Fixture"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        from orchestrator.core.httpclient import request
        deadline = time.monotonic() + 30
        while True:
            try:
                if request(PORT, "GET", "/json", timeout=1).status == 200:
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        yield PORT
    finally:
        proc.kill()
        proc.wait()


def load(port, scenario, tmp_path, driver="wrk", **kw):
    spec = dict(port=port, scenario=scenario, concurrency=8, duration_s=4, cpus="0", timeout_s=10, out_dir=tmp_path)
    return driver_registry.get(driver).run(LoadSpec(**{**spec, **kw}))


def test_wrk_latencies_are_raw_and_its_correction_is_kept_apart(fixture_server, tmp_path):
    load(fixture_server, TAIL, tmp_path, duration_s=2)     # the JIT's first pass, not measured
    r = load(fixture_server, TAIL, tmp_path)
    doc = __import__("json").loads((tmp_path / "wrk-tail-c8.json").read_text())
    # Undoing wrk's correction leaves exactly one sample per answered request.
    assert abs(doc["samples"] - r.requests) <= 8, doc
    # 1 in 20 slept 200 ms: the raw p90 is a fast request, the p99 a slow one ...
    assert r.latency_p90 < 100 and 200 <= r.latency_p99 < 400, r
    # ... and the raw mean is what Little's law needs: 8 connections = rps x mean latency.
    assert 0.9 <= r.rps * r.latency_mean / 1000 / 8 <= 1.1, r
    # wrk's own figures add synthetic samples under every slow one: its mean is far above the raw one
    # (its p99 can even fall below the raw p99: the synthetic samples all lie under the slow ones).
    assert r.co_corrected_mean > 1.5 * r.latency_mean and r.co_corrected_p99 > 0, r


def test_wrk_agrees_with_per_request_latencies_of_another_generator(fixture_server, tmp_path):
    """h2load logs every request's own latency: an independent measure of the same distribution."""
    load(fixture_server, TAIL, tmp_path, duration_s=2)
    w = load(fixture_server, TAIL, tmp_path)
    h = load(fixture_server, TAIL, tmp_path, driver="h2load", requests=max(400, w.requests))
    for key in ("latency_p50", "latency_p99", "latency_mean"):
        a, b = getattr(w, key), getattr(h, key)
        # the mean is 95 % fast requests and 5 % at 200 ms: both must see ~10 ms, not wrk's ~50
        assert b / 2.5 <= a <= b * 2.5 or abs(a - b) < 3, (key, a, b)


def test_pacer_reads_the_heavy_tail_of_known_shape_from_each_intended_send_time(fixture_server, tmp_path):
    """An open model at 200/s on the fixture where 1 request in 20 sleeps 200 ms (on a virtual thread
    of its own, so nothing queues behind it): 5 % of the latencies are 200 ms, the rest fast."""
    load(fixture_server, TAIL, tmp_path, driver="pacer", rate=200, concurrency=100, duration_s=1)   # the JIT's first pass
    r = load(fixture_server, TAIL, tmp_path, driver="pacer", rate=200, concurrency=100, duration_s=4)
    records = read_records(tmp_path / "pacer-tail-r200.records.parquet")
    slow = (records["latency_ns"] >= 200e6).mean()
    assert r.requests == 800 and r.dropped == 0 and not r.errors, r
    assert 0.045 <= slow <= 0.055, slow                     # the shape, request by request
    assert r.latency_p90 < 20 and 200 <= r.latency_p99 < 230, r
    assert 9.5 <= r.latency_mean <= 14, r                   # 5 % x 200 ms, plus the fast ones


def test_a_k6_rate_cell_that_dropped_nothing_is_not_flagged(fixture_server, tmp_path):
    json_ = Scenario("json", "GET", "/json", 200, "application/json", None)
    r = load(fixture_server, json_, tmp_path, driver="k6", rate=200, concurrency=50, duration_s=3)
    assert r.dropped == 0 and "rate-not-met" not in r.flags, r
    # the window is the scenario's, not the drain after it: 200/s for 3 s
    assert r.duration_s == 3 and 0.97 * 200 <= r.rps <= 1.03 * 200, r


def redis_benchmark_on_cpu0(port: int, data: Path):
    """A Redis and a redis-benchmark hammering it, both on CPU 0 (the generator's CPU); data: its folder."""
    server = subprocess.Popen(["taskset", "-c", "0", shutil.which("redis-server") or "/usr/bin/redis-server",
                               "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                               "--dir", str(data)], stdout=subprocess.DEVNULL)
    time.sleep(0.5)
    client = subprocess.Popen(["taskset", "-c", "0", "redis-benchmark", "-p", str(port), "-c", "50",
                               "-n", "100000000", "-q", "-t", "get,set"], stdout=subprocess.DEVNULL)
    return server, client


def test_a_busy_loadgen_cpu_flags_the_cell_and_files_are_kept_per_target(results_dir, tmp_path):
    # ports of its own: other tests' runs may hold the shared ones. The calm control of this cell is the
    # next test's (its load generator's CPU idle), as this cell is that one's (its server's CPU the target's
    # alone): with a calm run of its own the test took 58 s in a rehearsal, without it 17 s.
    args = ["run", "--port", "29580", "--redis-port", "29579", "--db-port", "29506",
            "--downstream-port", "29581", "-f", "fixture:ok", "-s", "sleep",
            "-c", "8", "-d", "2s", "--warmup", "1s",
            "--warmup-max", "1s", "--results-dir", str(results_dir)]
    # CPU 0 gets busy once the target is up (Redis and MariaDB must start on it first)
    run = start_bench(*args)
    out = []
    for line in run.stdout:
        out.append(line)
        if line.startswith("started fixture:ok"):
            break
    server, client = redis_benchmark_on_cpu0(29390, tmp_path)
    try:
        out.append(run.communicate(timeout=300)[0])
    finally:
        client.kill()
        server.kill()
        client.wait()
        server.wait()
    busy = "".join(out)
    assert run.returncode == 0, busy
    loaded = pd.read_parquet(next(results_dir.glob("*/measurements.parquet"))).iloc[0]
    assert loaded["loadgen_cpus_busy_pct"] > 90 and "loadgen-cpus-busy" in loaded["check_flags"], loaded.to_dict()
    # nothing but the target ran on its CPU: the hog test's other half
    assert loaded["server_cpus_foreign_pct"] < 5 and "server-cpus-shared" not in loaded["check_flags"], loaded.to_dict()
    # the console shows the flag (Rich once swallowed "[...]" as markup)
    assert "loadgen-cpus-busy" in busy
    # the generator's files are kept per target and repeat, apart from the warm-up's
    run_dir = next(results_dir.glob("*/measurements.parquet")).parent
    assert (run_dir / "logs" / "load" / "fixture-ok-r1" / "wrk-sleep-c8.json").exists()
    assert (run_dir / "logs" / "load" / "fixture-ok-r1" / "warmup" / "wrk-sleep-c8.json").exists()


def test_a_process_on_the_server_cpu_flags_the_cell_and_is_named(results_dir):
    """A busy loop pinned to the target's CPU (as another run's JVM or a build would be) takes the
    CPU time the target's own does not cover: the row is flagged and names it."""
    run = start_bench("run", "--port", "29581", "--redis-port", "29582", "--db-port", "29507",
                      "--downstream-port", "29583", "-f", "fixture:ok",
                      "-s", "sleep", "-c", "8", "-d", "2s", "--warmup", "1s", "--warmup-max", "1s",
                      "--results-dir", str(results_dir))
    out = []
    for line in run.stdout:
        out.append(line)
        if line.startswith("started fixture:ok"):
            break
    hog = subprocess.Popen(["taskset", "-c", "1", "sh", "-c", "while :; do :; done"])
    try:
        out.append(run.communicate(timeout=300)[0])
    finally:
        hog.kill()
        hog.wait()
    assert run.returncode == 0, "".join(out)
    row = pd.read_parquet(next(results_dir.glob("*/measurements.parquet"))).iloc[0]
    # the sleep scenario leaves the CPU to the loop: most of the window is someone else's
    seen = row[["server_cpus_foreign_pct", "server_cpus_shared_by", "check_flags", "server_cpu_pct"]].to_dict()
    assert row["server_cpus_foreign_pct"] > 50 and "server-cpus-shared" in row["check_flags"], seen
    assert row["server_cpus_shared_by"].startswith(f"sh pid {hog.pid} ("), (hog.pid, seen)
    # and the load generator's CPU calm: the busy-loadgen test's other half
    assert row["loadgen_cpus_busy_pct"] < 60 and "loadgen-cpus-busy" not in row["check_flags"], row.to_dict()
