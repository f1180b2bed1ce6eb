"""The statistics of `bench compare`, on made-up samples: they test the functions, not a benchmark."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from conftest import bench
from orchestrator import analysis, compare


def test_mann_whitney_exact_matches_the_textbook():
    # Complete separation of 3 + 3: 2 of the 20 splits are as extreme, so p = 0.1 (scipy gives the same).
    assert compare.mann_whitney([1, 2, 3], [4, 5, 6]) == pytest.approx(0.1)
    assert compare.mann_whitney([1, 2, 3, 4, 5], [6, 7, 8, 9, 10]) == pytest.approx(2 / 252)
    assert compare.mann_whitney([5, 5, 5], [5, 5, 5]) == pytest.approx(1.0)
    assert math.isnan(compare.mann_whitney([], [1.0]))


def test_the_normal_approximation_agrees_with_the_exact_test(monkeypatch):
    rng = np.random.default_rng(7)
    a, b = rng.normal(100, 5, 7), rng.normal(106, 5, 7)
    exact = compare.mann_whitney(a, b)
    monkeypatch.setattr(compare, "EXACT_LIMIT", 0)
    assert compare.mann_whitney(a, b) == pytest.approx(exact, abs=0.02)


def test_the_smallest_p_value_says_how_many_repeats_are_needed():
    assert compare.min_p_value(3, 3) == pytest.approx(0.1)
    assert compare.min_p_value(4, 4) < 0.05 and compare.min_p_value(3, 5) < 0.05
    assert compare.min_p_value(1, 9) > 0.05


def rows(run_id: str, rps_values, target="a:x", scenario="json", concurrency=256, status="ok", flags=""):
    """Made-up cells, one per repeat, with latency that mirrors throughput as in a closed loop."""
    return pd.DataFrame([{"run_id": run_id, "target": target, "scenario": scenario, "concurrency": concurrency,
                          "repeat": i + 1, "status": status, "reason": "" if status == "ok" else "boom",
                          "rps": v, "latency_p99_ms": 256_000 / v if v else np.nan, "flags": flags,
                          "requests": int(v * 10), "server_cpu_s": 1.0} for i, v in enumerate(rps_values)])


def one(cmp: pd.DataFrame, metric: str = "rps") -> pd.Series:
    return cmp[cmp["metric"] == metric].iloc[0]


def test_identical_distributions_are_within_the_noise():
    rng = np.random.default_rng(1)
    a, b = rows("A", rng.normal(10_000, 300, 6)), rows("B", rng.normal(10_000, 300, 6))
    cmp = compare.compare_runs(a, b)
    assert not cmp["significant"].any()
    assert set(cmp["verdict"]) == {"~"}
    assert compare.regressions(cmp, pct=0).empty


def test_a_ten_percent_drop_with_small_noise_is_a_significant_regression():
    rng = np.random.default_rng(2)
    a, b = rows("A", rng.normal(10_000, 150, 5)), rows("B", rng.normal(9_000, 150, 5))
    cmp = compare.compare_runs(a, b)
    rps, p99 = one(cmp, "rps"), one(cmp, "latency_p99_ms")
    assert rps["significant"] and rps["verdict"] == "worse" and rps["p_value"] < 0.01
    assert rps["delta_pct"] == pytest.approx(-10, abs=3)
    assert p99["verdict"] == "worse" and p99["delta_pct"] > 0  # more latency is worse too
    assert len(compare.regressions(cmp, pct=5)) == 2
    assert compare.regressions(cmp, pct=20).empty  # significant, but smaller than the gate


def test_an_improvement_is_never_a_regression():
    a, b = rows("A", [9000, 9100, 8950, 9050, 9020]), rows("B", [10000, 10100, 9950, 10050, 10020])
    cmp = compare.compare_runs(a, b)
    assert one(cmp)["verdict"] == "better"
    assert compare.regressions(cmp, pct=0).empty


def test_a_ten_percent_drop_within_large_noise_is_not_significant():
    a = rows("A", [10_000, 7_000, 13_000, 8_000, 12_000])
    b = rows("B", [9_000, 12_500, 6_500, 11_000, 7_500])
    assert not one(compare.compare_runs(a, b))["significant"]


def test_one_repeat_says_the_noise_is_unknown():
    cmp = compare.compare_runs(rows("A", [10_000]), rows("B", [5_000]))
    assert one(cmp)["note"] == "no repeats: noise unknown" and one(cmp)["verdict"] == "?"
    assert compare.regressions(cmp, pct=5).empty


def test_three_repeats_each_are_too_few_to_tell():
    cmp = compare.compare_runs(rows("A", [10_000, 10_010, 10_020]), rows("B", [5_000, 5_010, 5_020]))
    assert one(cmp)["verdict"] == "?" and "too few repeats" in one(cmp)["note"]


def test_a_cell_that_failed_in_b_is_a_regression_and_one_missing_is_not():
    a = pd.concat([rows("A", [10_000] * 4), rows("A", [500] * 4, scenario="sleep")])
    b = pd.concat([rows("B", [0.0] * 4, status="failed"), rows("B", [500] * 4, target="b:y", scenario="sleep")])
    cmp = compare.compare_runs(a, b)
    notes = dict(zip(zip(cmp["scenario"], cmp["target"], cmp["metric"]), cmp["note"]))
    assert notes[("json", "a:x", "rps")] == "failed in B"
    assert notes[("sleep", "a:x", "rps")] == "missing in B" and notes[("sleep", "b:y", "rps")] == "missing in A"
    assert set(compare.regressions(cmp, pct=5)["scenario"]) == {"json"}


def test_flags_are_carried_to_the_comparison():
    cmp = compare.compare_runs(rows("A", [10_000] * 4, flags="littles-law"), rows("B", [10_000] * 4))
    assert one(cmp)["flags"] == "littles-law"


def test_bench_compare_of_the_sample_with_itself_finds_no_regression():
    sample = analysis.sample_run()
    r = bench("compare", str(sample), str(sample), "--fail-on-regression", "5", frameworks=None, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "no regression beyond 5%" in r.stdout
    assert "worse" not in r.stdout.split("comparisons:")[0]
