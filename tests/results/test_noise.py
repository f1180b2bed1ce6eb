"""The noise floor: the CV of a metric over A/A repeats, the floor file, and `bench noise`'s usage rule."""
from __future__ import annotations

import json
import math

import pandas as pd
import pytest
from conftest import PORTS, bench

from orchestrator.results import analysis, judge, noise
from orchestrator.results import store as results

HOST = {"hostname": "vm", "cpu_model": "AMD EPYC", "cores": 2}


def repeats(rps, threads=20, status=None) -> pd.DataFrame:
    """Made-up repeats of one cell, in the columns of schema.ROW_TYPES."""
    return pd.DataFrame([{"run_id": "aa", "target": "fixture:ok", "scenario": "json", "concurrency": 64,
                          "repeat": i + 1, "status": (status or {}).get(i, "ok"), "reason": "", "check_flags": "",
                          "driver": "wrk", "duration_s": 10.0, "rps": v, "latency_p99_ms": 640_000 / v,
                          "server_peak_threads": threads, "requests": int(v * 10), "server_cpu_s": 5.0}
                         for i, v in enumerate(rps)]).reindex(columns=results.COLUMNS)


def test_the_cv_is_the_sample_standard_deviation_over_the_mean_of_the_repeats_that_ran():
    cv = noise.cvs(repeats([100, 110, 90, 5], status={3: "failed"}))
    assert cv["rps"] == pytest.approx(0.1)                      # std (n - 1) 10 over mean 100
    assert cv["server_peak_threads"] == 0                       # it does not vary: no noise
    assert cv["cpu_ms_per_req"] == pytest.approx(analysis.cv([5000 / 1000, 5000 / 1100, 5000 / 900]), abs=1e-5)
    assert "latency_p50_ms" not in cv and "gc_time_ms" not in cv  # never measured here
    assert math.isnan(analysis.cv([100])) and math.isnan(analysis.cv([0, 0]))


def test_the_floor_is_the_newest_entry_of_the_machine_kept_per_scenario_and_metric(tmp_path):
    assert noise.floors(HOST, tmp_path) == {}
    meta = {"host": HOST, "plan": {"settings": {"server_cpus": "1", "loadgen_cpus": "0", "heap": "512m"}}}
    noise.record(repeats([100, 110, 90]), {**meta, "run_id": "old"}, tmp_path)
    newest = noise.record(repeats([100, 130, 70]), {**meta, "run_id": "new"}, tmp_path)
    noise.record(repeats([100, 101, 99]), {**meta, "run_id": "other", "host": {**HOST, "cores": 8}}, tmp_path)
    assert noise.entry(HOST, tmp_path)["run_id"] == "new" and newest["n"] == 3 and newest["heap"] == "512m"
    assert noise.floors(HOST, tmp_path)[("json", "rps")].cv == pytest.approx(0.3)
    assert noise.floors(HOST, tmp_path)[("json", "rps")].n == 3
    assert noise.floors({**HOST, "cores": 8}, tmp_path)[("json", "rps")].cv == pytest.approx(0.01)
    # a floor of another scenario is kept beside json's, never instead of it
    noise.record(repeats([100, 150, 50]).assign(scenario="db-read"), {**meta, "run_id": "db"}, tmp_path)
    floors = noise.floors(HOST, tmp_path)
    assert floors[("json", "rps")].cv == pytest.approx(0.3) and floors[("db-read", "rps")].cv == pytest.approx(0.5)
    assert ("fortunes", "rps") not in floors
    stored = json.loads((tmp_path / noise.FLOOR_FILE).read_text())
    assert [len(v) for v in stored.values()] == [3, 1]
    assert noise.describe(newest).startswith("rps CV 30.0%, p99 CV ")


def test_a_floor_file_written_before_floors_per_metric_is_still_read(tmp_path):
    old = {"date": "2026-01-01T00:00:00", "run_id": "old", **HOST, "target": "fixture:ok", "scenario": "json",
           "concurrency": 64, "driver": "wrk", "duration_s": 10.0, "n": 4, "flagged": 0, "cv": {"rps": 0.12}}
    (tmp_path / noise.FLOOR_FILE).write_text(json.dumps({noise.machine_key(HOST): [old]}))
    assert noise.floors(HOST, tmp_path)[("json", "rps")] == judge.Floor(0.12, 4, "json at 64, run old")


def test_bench_noise_needs_two_repeats(results_dir):
    r = bench("noise", "-f", "fixture:ok", "--repeat", "1", "--results-dir", str(results_dir), *PORTS)
    assert r.returncode == 2 and "--repeat must be 2 or more" in r.stderr
