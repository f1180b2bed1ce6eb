"""The statistics of `bench compare`, on made-up samples: they test the functions, not a benchmark."""
from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import bench

from orchestrator.results import analysis, compare, judge


def rows(run_id: str, rps_values, target="a:x", scenario="json", concurrency=256, status="ok", flags=""):
    """Made-up cells, one per repeat, with latency that mirrors throughput as in a closed loop."""
    return pd.DataFrame([{"run_id": run_id, "target": target, "scenario": scenario, "concurrency": concurrency,
                          "repeat": i + 1, "status": status, "reason": "" if status == "ok" else "boom",
                          "rps": v, "latency_p99_ms": 256_000 / v if v else np.nan, "check_flags": flags,
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


def test_one_repeat_says_the_noise_is_unknown_and_names_the_repeats_it_needs():
    cmp = compare.compare_runs(rows("A", [10_000]), rows("B", [5_000]))
    assert one(cmp)["note"].startswith("needs 3 repeats a side (1+1 here") and one(cmp)["verdict"] == "?"
    assert compare.regressions(cmp, pct=5).empty


def test_three_repeats_each_tell_a_halving_that_no_repeat_overlaps():
    # Mann-Whitney could never reach p < 0.05 at 3 + 3; the judge's t on logs does, when the spread is small
    cmp = compare.compare_runs(rows("A", [10_000, 10_010, 10_020]), rows("B", [5_000, 5_010, 5_020]))
    assert one(cmp)["verdict"] == "worse" and len(compare.regressions(cmp, pct=10)) == 2


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
    assert one(cmp)["check_flags"] == "littles-law"


def test_bench_compare_of_the_sample_with_itself_finds_no_regression():
    sample = analysis.sample_run()
    r = bench("compare", str(sample), str(sample), "--fail-on-regression", "5", frameworks=None, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "no regression beyond 5%" in r.stdout
    assert "worse" not in r.stdout.split("comparisons:")[0]


def test_holm_adjusts_the_smallest_p_by_the_number_of_tests_and_keeps_the_order():
    p = pd.Series([0.01, 0.04, 0.03, np.nan])
    assert judge.holm(p).tolist()[:3] == pytest.approx([0.03, 0.06, 0.06]) and math.isnan(judge.holm(p)[3])


def test_a_marginal_p_is_not_significant_among_many_cells():
    # One cell moved by 5 % with 5 + 5 repeats in 3 % noise (p about 0.02); nine others did not move.
    base = [10_000, 10_300, 9_700, 10_150, 9_850]
    a = pd.concat([rows("A", base, target=f"t{i}:x") for i in range(10)])
    b = pd.concat([rows("B", [v * 0.95 for v in base], target="t0:x")] +
                  [rows("B", base, target=f"t{i}:x") for i in range(1, 10)])
    moved = one(compare.compare_runs(a, b))
    assert moved["p_value"] < 0.05
    assert moved["p_adjusted"] == pytest.approx(min(1, 20 * moved["p_value"]))  # rps and p99 of ten cells
    assert not moved["significant"] and moved["verdict"] == "~"
    assert compare.regressions(compare.compare_runs(a, b), pct=0).empty
    alone = one(compare.compare_runs(a[a["target"] == "t0:x"], b[b["target"] == "t0:x"]))
    assert alone["significant"] and alone["verdict"] == "worse"  # 2 tests


def test_a_flagged_cell_is_never_a_regression():
    a, b = rows("A", [10_000, 10_050, 9_950, 10_020, 9_980]), rows("B", [8_000, 8_050, 7_950, 8_020, 7_980])
    cmp = compare.compare_runs(a, b.assign(check_flags="loadgen-saturated"))
    assert one(cmp)["verdict"] == "worse" and one(cmp)["check_flags"] == "loadgen-saturated"
    assert compare.regressions(cmp, pct=5).empty
    assert len(compare.regressions(compare.compare_runs(a, b), pct=5)) == 2


def test_every_comparison_states_its_minimum_detectable_effect_and_the_repeats_it_needs():
    a, b = rows("A", [9_000, 11_000]), rows("B", [9_000, 11_000])
    own = one(compare.compare_runs(a, b))
    lead = judge.lead([9_000, 11_000], [9_000, 11_000])
    assert own["mde_pct"] == pytest.approx(lead.mde_pct(compare.ALPHA / 2))   # rps and p99: 2 comparisons
    # a floor of this scenario and metric widens 2 repeats; one of another scenario is not applied
    floor = one(compare.compare_runs(a, b, noise={("json", "rps"): judge.Floor(0.5, 5)}))
    other = one(compare.compare_runs(a, b, noise={("db-read", "rps"): judge.Floor(0.5, 5)}))
    assert floor["mde_pct"] > own["mde_pct"] == other["mde_pct"]
    assert own["needs"] == lead.repeats_for(compare.NEEDS_PCT, compare.ALPHA / 2) > 2


def runs_differing_in_driver(root: Path) -> tuple[str, str]:
    """Two copies of the sample run, the second made (its run.json says) with k6 instead of wrk."""
    sample = analysis.sample_run()
    for name in ("A", "B"):
        shutil.copytree(sample, root / name, ignore=shutil.ignore_patterns("report*", "logs"))
    meta = json.loads((root / "B" / "run.json").read_text())
    meta["plan"]["settings"]["driver"] = "k6"
    (root / "B" / "run.json").write_text(json.dumps(meta))
    return "A", "B"


def test_bench_compare_refuses_runs_made_with_different_drivers_unless_forced(tmp_path):
    a, b = runs_differing_in_driver(tmp_path)
    r = bench("compare", a, b, "--results-dir", str(tmp_path), frameworks=None, timeout=120)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip().count("\n") == 0 and "differ in driver wrk vs k6" in r.stderr and "--force" in r.stderr
    r = bench("compare", a, b, "--force", "--results-dir", str(tmp_path), frameworks=None, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "compared anyway (--force), although they differ in driver wrk vs k6" in r.stdout
    assert "Holm-Bonferroni" in r.stdout


def test_setup_differences_names_pinning_heap_runtime_and_machine():
    meta = json.loads((analysis.sample_run() / "run.json").read_text())
    other = json.loads(json.dumps(meta))
    other["plan"]["settings"].update(server_cpus="1-2", heap="128m", runtime="docker")
    other["host"]["hostname"] = "elsewhere"
    assert compare.setup_differences(meta, meta) == []
    assert compare.setup_differences(meta, other) == [
        "pinning server CPUs 1, load generator CPUs 0 vs server CPUs 1-2, load generator CPUs 0",
        "heap 512m vs 128m", "runtime process vs docker",
        "host vm, AMD EPYC, 2 cores vs elsewhere, AMD EPYC, 2 cores"]


def test_more_comparisons_need_more_repeats_for_the_same_change():
    # 8 targets x 3 levels x rps and p99: 48 comparisons; Holm's first step tests at 0.05 / 48
    assert judge.repeats_needed(10, 0.10, 0.05 / 48) > judge.repeats_needed(10, 0.10, 0.05) >= 3


def test_a_cell_that_newly_answers_errors_is_a_regression_though_flagged():
    a = rows("A", [10_000, 10_050, 9_950, 10_020, 9_980])
    b = rows("B", [5_000, 5_050, 4_950, 5_020, 4_980], flags="non-2xx")
    cmp = compare.compare_runs(a, b)
    assert one(cmp)["verdict"] == "broke" and "newly non-2xx in B" in one(cmp)["note"]
    assert len(compare.regressions(cmp, pct=10)) == 2
    # errors in both runs are not new: the flag keeps the cell out, as any flag does
    assert compare.regressions(compare.compare_runs(a.assign(check_flags="non-2xx"), b), pct=10).empty


def test_a_baseline_the_host_slowed_still_shows_a_regression_and_a_slowed_b_does_not():
    # the host stole the CPU in three repeats of A: A can only have read worse, so B's halving stands
    a = rows("A", [10_000, 10_050, 9_950, 10_020, 9_980]).assign(check_flags=["", "host-steal", "host-steal",
                                                                              "host-steal", "host-steal"])
    b = rows("B", [5_000, 5_050, 4_950, 5_020, 4_980])
    cmp = compare.compare_runs(a, b)
    assert one(cmp)["check_flags"] == "host-steal" and len(compare.regressions(cmp, pct=10)) == 2
    # in B it may be the host's doing: no regression, as for any other flag
    slowed_b = b.assign(check_flags=["host-steal", "host-steal", "host-steal", "host-steal", ""])
    assert compare.regressions(compare.compare_runs(a, slowed_b), pct=10).empty
    assert compare.regressions(compare.compare_runs(a.assign(check_flags="littles-law"), b), pct=10).empty
    # a busy generator on A only slowed it too: the regression stands, at least as large
    busy_a = a.assign(check_flags="loadgen-cpus-busy")
    cmp = compare.compare_runs(busy_a, b)
    assert list(compare.regressions(cmp, pct=10)["metric"]) == ["rps", "latency_p99_ms"]
    assert set(cmp.loc[cmp["verdict"] == "worse", "bound"]) == {"at least"}
    # on B it has no measured size, unlike steal: withheld
    assert compare.regressions(compare.compare_runs(a, b.assign(check_flags="loadgen-cpus-busy")), pct=10).empty
    # B better though its generator was busy: better by at least that
    cmp = compare.compare_runs(b, a.assign(check_flags="loadgen-cpus-busy"))
    assert (one(cmp)["verdict"], one(cmp)["bound"]) == ("better", "at least")


def test_a_b_whose_accept_queue_overflowed_still_regresses_on_latency_and_is_withheld_on_throughput():
    # k6 leaves the clients' SYN retries out of every latency (bias.py): B's p99, slower even so, is slower
    a, b = rows("A", [10_000, 10_050, 9_950, 10_020, 9_980]), rows("B", [5_000, 5_050, 4_950, 5_020, 4_980])
    cmp = compare.compare_runs(a, b.assign(check_flags="listen-queue-overflow"))
    assert list(compare.regressions(cmp, pct=10)["metric"]) == ["latency_p99_ms"]
    assert (one(cmp, "latency_p99_ms")["bound"], one(cmp, "rps")["withheld_by"]) == ("at least", "listen-queue-overflow")
    # on A it may have flattered A's latency: withheld
    assert compare.regressions(compare.compare_runs(a.assign(check_flags="listen-queue-overflow"), b), pct=10).empty


def test_a_side_s_slowed_repeats_are_left_out_where_two_clean_ones_remain():
    # one repeat of B ran while the host stole its CPU: its four clean repeats show the halving alone
    a = rows("A", [10_000, 10_050, 9_950, 10_020, 9_980])
    b = rows("B", [5_000, 5_050, 4_950, 5_020, 2_000]).assign(check_flags=["", "", "", "", "host-steal"])
    cmp = compare.compare_runs(a, b)
    assert (one(cmp)["b_n"], one(cmp)["check_flags"], one(cmp)["verdict"]) == (4, "", "worse")
    assert one(cmp)["left_out"] == "B: 1 of 5 repeats left out (host-steal: only slowed)"
    assert len(compare.regressions(cmp, pct=10)) == 2
    # a flag of unknown direction is never left out, and one clean repeat is too few to judge alone
    assert compare.regressions(compare.compare_runs(a, b.assign(check_flags=["", "", "", "", "littles-law"])),
                               pct=10).empty
    few = b.assign(check_flags=["", "host-steal", "host-steal", "host-steal", "host-steal"])
    assert one(compare.compare_runs(a, few))["left_out"] == ""


def test_a_slowed_b_is_a_regression_when_its_stolen_time_cannot_explain_the_loss():
    a = rows("A", [10_000, 10_050, 9_950, 10_020, 9_980]).assign(server_cpus_steal_pct=0.0, duration_s=1.0)
    halved = rows("B", [5_000, 5_050, 4_950, 5_020, 4_980]).assign(duration_s=1.0, check_flags="host-steal")
    # 10 % stolen leaves B at most 5,556/s had the host taken nothing: still 44 % below A
    cmp = compare.compare_runs(a, halved.assign(server_cpus_steal_pct=10.0, loadgen_cpus_steal_pct=0.0))
    assert one(cmp)["withheld_by"] == "" and one(cmp)["given_back_worse_pct"] == pytest.approx(44.4, abs=0.5)
    assert list(compare.regressions(cmp, pct=10)["metric"]) == ["rps"]
    # p99 (51 ms) less the 100 ms stolen in the 1-s window may be anything: withheld
    assert one(cmp, "latency_p99_ms")["withheld_by"] == "host-steal"
    # beyond 40 % of the regression pct: given back, B's loss (10,000/s at best) is no regression of 10 %
    assert compare.regressions(compare.compare_runs(a, halved.assign(server_cpus_steal_pct=50.0,
                                                                     loadgen_cpus_steal_pct=0.0)), pct=10).empty
    # the load generator's CPU stolen counts as much as the server's, and the two add up (the host need not
    # have held both at once): 30 % and 25 % leave B's best at 11,111/s
    both = halved.assign(server_cpus_steal_pct=30.0, loadgen_cpus_steal_pct=25.0)
    assert compare.regressions(compare.compare_runs(a, both), pct=10).empty
    # a side whose steal was not measured gives nothing back: the loss stays withheld
    assert one(compare.compare_runs(a, halved.assign(server_cpus_steal_pct=10.0)))["withheld_by"] == "host-steal"
    stolen_loadgen = halved.assign(server_cpus_steal_pct=0.0, loadgen_cpus_steal_pct=55.0)
    assert compare.regressions(compare.compare_runs(a, stolen_loadgen), pct=10).empty


def test_repeats_that_crashed_in_b_are_a_regression_not_missing_noise():
    a = rows("A", [10_000, 10_050, 9_950])
    b = pd.concat([rows("B", [10_000]), rows("B", [0.0, 0.0], status="failed").assign(repeat=[2, 3])])
    cmp = compare.compare_runs(a, b)
    assert one(cmp)["verdict"] == "broke" and one(cmp)["note"] == "2 of 3 repeats failed in B"
    assert len(compare.regressions(cmp, pct=10)) == 2


def test_one_rate_at_two_vu_counts_is_two_cells_not_two_repeats():
    # issue 30: p99 2 ms at 100 VUs and 40 ms at 1,000 were "2 repeats" with a median of 21 ms
    def rate_rows(run_id):
        out = pd.concat([rows(run_id, [1000.0] * 3, concurrency=vus) for vus in (100, 1000)], ignore_index=True)
        out["latency_p99_ms"] = np.where(out["concurrency"] == 100, 2.0, 40.0)
        return out.assign(kind="rate", rate=1000.0)
    summ = analysis.summary(rate_rows("A"), x="rate")
    assert sorted(zip(summ["scenario"], summ["latency_p99_ms"], summ["repeats"])) == \
        [("json · 100 VUs", 2.0, 3), ("json · 1000 VUs", 40.0, 3)]
    cmp = compare.compare_runs(rate_rows("A"), rate_rows("B"), x="rate")
    assert set(cmp["scenario"]) == {"json · 100 VUs", "json · 1000 VUs"} and not cmp["significant"].any()
    # a closed loop's concurrency is already its level: nothing is renamed
    assert set(analysis.summary(rows("A", [1000.0] * 3).assign(kind="throughput", rate=np.nan))["scenario"]) == {"json"}
