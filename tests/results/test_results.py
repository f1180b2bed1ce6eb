"""The results store and the pandas API."""
from __future__ import annotations

import json

import pandas as pd
import pytest
from conftest import ROOT

from orchestrator.errors import BadFile
from orchestrator.results import store as results


def row(**kw):
    base = {"run_id": "r1", "target": "a:b", "framework": "a", "variant": "b", "scenario": "json",
            "concurrency": 64, "repeat": 1, "status": "ok", "reason": "", "requests": 1000, "rps": 100.0,
            "latency_p99_ms": 3.5, "check_flags": ""}
    return {**base, **kw}


def make_run(root, run_id, rows):
    store = results.RunStore(root / run_id)
    store.create({"run_id": run_id, "started_at": f"2026-01-01T00:00:0{run_id[-1]}"})
    for r in rows:
        store.add(r)
    return store


def test_each_cell_is_on_disk_with_the_full_schema(tmp_path):
    store = make_run(tmp_path, "run1", [row()])
    df = pd.read_parquet(store.dir / results.MEASUREMENTS)
    assert list(df.columns) == results.COLUMNS
    assert len(df) == 1 and df.loc[0, "rps"] == 100.0
    store.add(row(scenario="plaintext"))
    assert len(pd.read_parquet(store.dir / results.MEASUREMENTS)) == 2
    assert not list(store.dir.glob(".*.tmp"))


def test_a_cell_measured_again_replaces_the_old_row(tmp_path):
    store = make_run(tmp_path, "run1", [row(status="failed", reason="x"), row(status="ok")])
    df = results.load("run1", root=tmp_path)
    assert len(df) == 1 and df.loc[0, "status"] == "ok"
    assert results.RunStore(store.dir).done() == {("a:b", "json", None, 64, None, None, 1)}


def test_unknown_columns_are_refused(tmp_path):
    store = make_run(tmp_path, "run1", [])
    with pytest.raises(ValueError, match="not in the results schema"):
        store.add(row(speed=3))


def test_load_many_runs_and_the_newest(tmp_path):
    make_run(tmp_path, "run1", [row()])
    make_run(tmp_path, "run2", [row(run_id="r2"), row(run_id="r2", scenario="cpu")])
    assert len(results.load(["run1", "run2"], root=tmp_path)) == 3
    assert set(results.load(root=tmp_path)["run_id"]) == {"r2"}
    assert results.load_meta(root=tmp_path)["run_id"] == "run2"


def test_a_corrupt_parquet_file_raises_one_error_naming_it(tmp_path):
    make_run(tmp_path, "run1", [row()])
    bad = make_run(tmp_path, "run2", [row()])
    data = (bad.dir / results.MEASUREMENTS).read_bytes()
    (bad.dir / results.MEASUREMENTS).write_bytes(data[: len(data) // 2])
    with pytest.raises(BadFile, match=r"run2/measurements.parquet: not a readable Parquet file"):
        results.load(["run1", "run2"], root=tmp_path)
    assert len(results.load("run1", root=tmp_path)) == 1


def test_unknown_run_lists_the_runs(tmp_path):
    make_run(tmp_path, "run1", [row()])
    from orchestrator.errors import UsageError
    with pytest.raises(UsageError, match="runs: run1"):
        results.load("nope", root=tmp_path)


def test_run_json_is_written_atomically(tmp_path):
    store = make_run(tmp_path, "run1", [])
    store.write_meta({"a": 1})
    assert json.loads((store.dir / "run.json").read_text()) == {"a": 1}


def test_no_column_is_a_pandas_attribute():
    """`df.check_flags` must reach the column: a column named like a DataFrame attribute (`flags`, `size`,
    `T`...) is shadowed by it when read as an attribute."""
    import pandas as pd

    from orchestrator.core.schema import COLUMNS, TIMESERIES_TYPES
    from orchestrator.results.analysis import summary
    names = set(COLUMNS) | {n for n, _ in TIMESERIES_TYPES} | set(summary(results.load(ROOT / "results" / "sample")).columns)
    assert not sorted(n for n in names if n in dir(pd.DataFrame))


def test_a_run_stored_before_a_rename_loads_under_the_new_name(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq
    run = tmp_path / "old"
    run.mkdir()
    (run / results.RUN_JSON).write_text('{"run_id": "old"}')
    pq.write_table(pa.table({"target": ["a:b"], "repeat": [1], "flags": ["littles-law"]}), run / results.MEASUREMENTS)
    df = results.load("old", tmp_path)
    assert df.check_flags.tolist() == ["littles-law"] and "flags" not in df.columns
    store = results.RunStore(run)
    assert store.rows[0]["check_flags"] == "littles-law"
