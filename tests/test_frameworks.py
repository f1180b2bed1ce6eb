"""Every target of every framework in the repo starts, passes verification against real Redis and
MariaDB (every scenario's answer and its thread model, the `threads` patterns of its
framework.toml), and survives the load the studies put on a target: a short window at 1,000
connections on every scenario it declares (the load smoke).

One run does it all, as a user's `bench run` would: each target's JVM is verified as the run starts
it (the same check as `bench verify`; a target that fails it fails its cells), and then loaded on
each of its scenarios in that JVM. The windows are short and cold: this proves survival, the
contract under load and the pools' limits, not a figure."""
from __future__ import annotations

import pandas as pd
import pytest

from orchestrator import results
from orchestrator.catalog import discover

from conftest import PORTS, ROOT, bench

CATALOG = discover(ROOT / "frameworks")
CONNECTIONS = 1000   # the studies load targets with 500 to 2,000 connections
SOCKET_ERRORS = ["errors_connect", "errors_read", "errors_write", "errors_timeout"]


@pytest.fixture(scope="module")
def smoke(tmp_path_factory) -> tuple[pd.DataFrame, str]:
    results_dir = tmp_path_factory.mktemp("results")
    r = bench("run", "-c", str(CONNECTIONS), "--warmup", "0s", "-d", "1s", "--results-dir", str(results_dir),
              *PORTS, frameworks=None, timeout=2400)
    return results.load(results.find_run(None, results_dir)), r.stdout[-3000:] + r.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("framework", sorted(CATALOG))
def test_every_target_survives_a_thousand_connections_on_every_scenario_it_declares(smoke, framework):
    df, output = smoke
    fw = CATALOG[framework]
    rows = df[df["framework"] == framework]
    assert set(zip(rows["target"], rows["scenario"])) == \
        {(f"{framework}:{v}", s) for v in fw.variants for s in fw.scenarios}, output
    failed = rows[rows["status"] != "ok"]
    # a failed cell's reason leads with what the server's log says (procs.server_failure)
    assert failed.empty, "\n".join(f"{t} {s}: {why[:2000]}" for t, s, why in
                                   zip(failed["target"], failed["scenario"], failed["reason"]))
    assert (rows["requests"] > 0).all(), rows[["target", "scenario", "requests"]]
    broken = rows[(rows["errors_status"] > 0) | (rows[SOCKET_ERRORS].sum(axis=1) > 0)]
    assert broken.empty, broken[["target", "scenario", "requests", "errors_status", *SOCKET_ERRORS]]
    # 1,000 connections of load, DB_POOL_SIZE = 16: never more connections to MariaDB than the pool
    db = rows[rows["scenario"].isin(["db-read", "db-write"])]
    assert (db["db_peak_connections"] <= 16).all(), db[["target", "scenario", "db_peak_connections"]]


def test_every_variant_declares_its_thread_model():
    for fw in discover().values():   # a gateway's patterns match its own thread (X-Gateway-Thread)
        for v in fw.variants.values():
            assert v.threads.get("*") or all(v.threads.get(s) for s in fw.scenarios), \
                f"{fw.name}:{v.name} does not say which threads serve it"


def test_every_target_declares_its_limits_for_the_parity_table():
    from orchestrator.catalog import PARITY_FIELDS
    for fw in discover().values():
        for v in fw.variants.values():
            declared = {**fw.parity, **v.parity}
            assert set(declared) == set(PARITY_FIELDS), f"{fw.name}:{v.name} declares {sorted(declared)}"
