"""The parity table of a real run: library versions as Maven resolved them, threads after load.

It asserts no figure, but runs with the tests that measure rather than beside the load smoke: it reads
the Vert.x run that test_evidence reads (conftest's vertx_run, made once per pytest process), which
beside the smoke was made a second time, 17 s of the server's CPU."""
from __future__ import annotations

import json

import pandas as pd
from conftest import bench

from orchestrator.config.catalog import discover
from orchestrator.targets import parity


def test_a_run_records_versions_maven_resolved_and_the_threads_after_load(vertx_run):
    # pools shrunk as a user would, one by option and one by environment (conftest's vertx_run): both
    # show in the parity table and are obeyed under load, as the backends themselves count connections
    run_dir, results_dir = vertx_run, vertx_run.parent
    meta = json.loads((run_dir / "run.json").read_text())
    entry = meta["parity"]["vertx:eventloop"]
    fw = discover()["vertx"]
    # the version in the table is the one Maven resolved for this build
    resolved = parity.resolved(fw)
    assert entry["libraries"]["http server"] == f"vertx-core {resolved['vertx-core']}"
    assert entry["libraries"]["redis client"].startswith("vertx-redis-client ")
    assert "{REDIS_POOL_SIZE}" in fw.parity["redis"] and "{DB_POOL_SIZE}" in fw.parity["db"]
    assert entry["declared"]["redis"] == fw.parity["redis"].replace("{REDIS_POOL_SIZE}", "2")
    assert entry["declared"]["db"] == fw.parity["db"].replace("{DB_POOL_SIZE}", "3")
    assert (meta["plan"]["settings"]["db_pool_size"], meta["plan"]["settings"]["redis_pool_size"]) == (3, 2)
    # two event loops at one CPU (VertxOptions' default: 2 x CPUs), counted in the JVM itself
    assert entry["threads"]["vert.x-eventloop-thread-N"] == 2 and entry["gc"]
    df = pd.read_parquet(run_dir / "measurements.parquet").set_index("scenario")
    # 32 connections want more than 2 Redis and 3 database connections: the pools are full, never larger
    assert df.loc["redis", "redis_peak_clients"] == 2, df.loc["redis", "redis_peak_clients"]
    assert df.loc["db-read", "db_peak_connections"] == 3, df.loc["db-read", "db_peak_connections"]
    assert df.loc["db-read", "db_peak_running"] <= 3
    out = bench("parity", run_dir.name, "--results-dir", str(results_dir), frameworks=None)
    assert out.returncode == 0 and "vertx:eventloop" in out.stdout, out.stdout + out.stderr
