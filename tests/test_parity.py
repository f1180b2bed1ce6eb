"""The parity table: thread pools counted from a real JVM's thread dump, library versions as Maven
resolved them for a real build, and the columns in which targets differ."""
from __future__ import annotations

import json

import pandas as pd

from orchestrator import parity
from orchestrator.catalog import discover

from conftest import PORTS, bench

DUMP = '''"main" #1 [1234] prio=5 os_prio=0 cpu=1.00ms elapsed=1.00s tid=0x1 nid=1 waiting on condition
"http-nio-29080-exec-1" #40 [1300] daemon prio=5
"http-nio-29080-exec-2" #41 [1301] daemon prio=5
"http-nio-29080-exec-13" #52 [1312] daemon prio=5
"http-nio-29080-Poller" #60 [1320] daemon prio=5
'''


def test_threads_are_counted_by_pool_largest_first():
    assert parity.thread_pools(DUMP) == {"http-nio-N-exec-N": 3, "main": 1, "http-nio-N-Poller": 1}
    assert parity.merge_pools({"a": 2, "b": 5}, {"a": 4}) == {"b": 5, "a": 4}


def test_the_columns_that_differ_are_named():
    t = parity.table({"x:a": {"server": "Tomcat", "declared": {"backlog": "100"}, "heap": "512m", "gc": "Serial"},
                      "y:b": {"server": "Netty", "declared": {"backlog": "100"}, "heap": "512m", "gc": "Serial"}})
    assert list(t["target"]) == ["x:a", "y:b"]
    assert parity.differing(t) == ["server"]


def test_a_run_records_versions_maven_resolved_and_the_threads_after_load(results_dir):
    r = bench("run", "-f", "vertx:eventloop", "-s", "json", "-c", "8", "--warmup", "0s", "-d", "2s",
              "--results-dir", str(results_dir), *PORTS, frameworks=None)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    run_dir = next(results_dir.iterdir())
    entry = json.loads((run_dir / "run.json").read_text())["parity"]["vertx:eventloop"]
    fw = discover()["vertx"]
    # the version in the table is the one Maven resolved for this build
    resolved = parity.resolved(fw)
    assert entry["libraries"]["http server"] == f"vertx-core {resolved['vertx-core']}"
    assert entry["libraries"]["redis client"].startswith("vertx-redis-client ")
    assert entry["declared"]["redis"] == fw.parity["redis"]
    # two event loops at one CPU (VertxOptions' default: 2 x CPUs), counted in the JVM itself
    assert entry["threads"]["vert.x-eventloop-thread-N"] == 2 and entry["gc"]
    out = bench("parity", run_dir.name, "--results-dir", str(results_dir), frameworks=None)
    assert out.returncode == 0 and "vertx:eventloop" in out.stdout, out.stdout + out.stderr
