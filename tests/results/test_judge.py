"""The judge, calibrated by simulation through the project's own verdict functions.

Two identical targets (A/A) with a run-to-run CV anywhere from 5 % to 20 % must be crowned by the
report (analysis.leaders) or called a regression by `bench compare` (compare.compare_runs and
regressions) in at most 5 % of trials, at 2, 3 and 5 repeats a side, with no noise floor, with a
correct one and with one that understates the cell's noise three times; and a true 20 % difference
at CV 10 % must be found in at least 80 % of trials at 5 + 5 repeats.

Every trial is a scenario of its own in one made-up run, so that one call judges thousands of
trials: the noise floors are keyed by scenario, and each trial's floor is its setting's.
"""
import math

import numpy as np
import pandas as pd
import pytest

from orchestrator.results import analysis, compare, judge
from orchestrator.results import store as results

TRIALS = 400
REPEATS = (2, 3, 5)
FLOORS = {"no floor": None, "a correct floor": 1.0, "a floor 3x too low": 1 / 3}


def _rows(target: str, values: np.ndarray, scenarios: list[str]) -> pd.DataFrame:
    return pd.DataFrame({"run_id": "sim", "target": target, "scenario": np.repeat(scenarios, values.shape[1]),
                         "concurrency": 64, "repeat": np.tile(np.arange(1, values.shape[1] + 1), len(scenarios)),
                         "status": "ok", "reason": "", "check_flags": "", "rps": values.ravel(),
                         "requests": 100_000, "server_cpu_s": 1.0}).reindex(columns=results.COLUMNS)


def _draw(rng, n: int, cv, ratio: float = 1.0) -> np.ndarray:
    """TRIALS x n log-normal repeats around 10,000 req/s times ratio, each trial with its own CV."""
    sigma = np.sqrt(np.log1p(np.asarray(cv) ** 2)).reshape(-1, 1)
    return 10_000 * ratio * np.exp(rng.normal(0, 1, (TRIALS, n)) * sigma)


def _settings(seed: int, ratio: float = 1.0, repeats=REPEATS, floors=FLOORS, cv=None):
    """Two targets' repeats (a run each) and the floors, for every setting; trial scenario names
    say the setting: '<n>|<floor>|<trial>'."""
    rng = np.random.default_rng(seed)
    a, b, noise, names = [], [], {}, []
    for n in repeats:
        for floor, factor in floors.items():
            cvs = rng.uniform(0.05, 0.20, TRIALS) if cv is None else np.full(TRIALS, cv)
            scenarios = [f"{n}|{floor}|{i}" for i in range(TRIALS)]
            a.append(_rows("a", _draw(rng, n, cvs, ratio), scenarios))
            b.append(_rows("b", _draw(rng, n, cvs), scenarios))
            if factor is not None:
                noise.update({(s, "rps"): judge.Floor(c * factor, 5) for s, c in zip(scenarios, cvs)})
            names += scenarios
    return pd.concat(a), pd.concat(b), noise


def _rate(verdicts: pd.Series) -> dict:
    """Share of trials per setting where the verdict is True."""
    setting = verdicts.index.str.rsplit("|", n=1).str[0]
    return verdicts.groupby(setting).mean().to_dict()


def crowns(a, b, noise) -> dict:
    leads = analysis.leaders(analysis.summary(pd.concat([a, b]), metrics=["rps"]), ["rps"], noise=noise)
    return _rate(leads.set_index("scenario")["verdict"] == "crowned")


def regressions(a, b, noise) -> pd.Series:
    """Each trial compared alone, as `bench compare --fail-on-regression 0` would: one comparison, so
    Holm leaves its p as it is. Which trials would fail the job."""
    cmp = compare.compare_runs(b.assign(target="t"), a.assign(target="t"), metrics=("rps",), noise=noise)
    alone = cmp.assign(significant=(cmp["p_value"] < compare.ALPHA) & (cmp["note"] == ""))
    return pd.Series(cmp["scenario"].isin(compare.regressions(alone, pct=0)["scenario"]).to_numpy(),
                     index=cmp["scenario"])


def test_identical_targets_are_crowned_in_at_most_five_percent_of_trials():
    rates = crowns(*_settings(seed=1))
    assert len(rates) == len(REPEATS) * len(FLOORS)
    assert all(r <= 0.05 for r in rates.values()), rates


def test_an_unchanged_target_is_a_regression_in_at_most_five_percent_of_trials():
    rates = _rate(regressions(*_settings(seed=2)))
    assert len(rates) == len(REPEATS) * len(FLOORS)
    assert all(r <= 0.05 for r in rates.values()), rates


def test_a_trial_judged_in_the_batch_is_judged_alike_by_a_compare_of_its_own():
    a, b, noise = _settings(seed=3, ratio=0.85, repeats=(3,), floors={"no floor": None})
    batch = regressions(a, b, noise)
    assert batch.any() and not batch.all()
    for s in batch.index[:12]:
        own = compare.compare_runs(b[b["scenario"] == s].assign(target="t"), a[a["scenario"] == s].assign(target="t"),
                                   metrics=("rps",))
        assert (len(compare.regressions(own, pct=0)) == 1) == batch[s], s


def test_a_twenty_percent_drop_at_cv_ten_percent_is_found_eight_times_in_ten_at_five_repeats():
    # the slower target at 80 % of the faster, as a drop of 20 % in `bench compare`
    a, b, noise = _settings(seed=4, ratio=1.25, repeats=(5,), cv=0.10)
    assert all(r >= 0.8 for r in crowns(a, b, noise).values())
    drop, _, _ = _settings(seed=5, ratio=0.8, repeats=(5,), cv=0.10)
    b = _settings(seed=6, repeats=(5,), cv=0.10)[1]
    assert regressions(drop, b, {}).mean() >= 0.8


def test_the_t_distribution_matches_its_tables():
    assert judge.t_quantile(0.05, 1) == pytest.approx(12.706, abs=1e-3)
    assert judge.t_quantile(0.05, 8) == pytest.approx(2.306, abs=1e-3)
    assert judge.t_quantile(0.05, 1e6) == pytest.approx(1.960, abs=1e-3)
    assert judge.t_p_value(2.306, 8) == pytest.approx(0.05, abs=1e-4)


def test_too_few_repeats_name_the_repeats_they_need():
    one = judge.lead([10_000], [9_000])
    assert one.why.startswith("needs 3 repeats a side (1+1 here, and no noise floor")
    assert not judge.lead([10_000], [9_000], judge.Floor(0.05, 5)).why
    assert judge.repeats_needed(10, cv=0.10) > judge.repeats_needed(20, cv=0.10) >= 3
    notice = judge.plan_notice(3, comparisons=12)
    assert notice.startswith("judge: with 3 repeats a side") and "repeats a side to be crowned" in notice
    assert judge.plan_notice(1).startswith("judge: 1 repeat a side crowns nothing")


def test_a_floor_widens_a_cell_of_two_repeats_and_never_narrows_it():
    a, b = [10_000, 10_400], [9_000, 9_100]
    own, low, high = (judge.lead(a, b, f) for f in (None, judge.Floor(0.001, 5), judge.Floor(0.2, 5)))
    assert (low.low, low.high) == (own.low, own.high)
    assert high.high - high.low > own.high - own.low
    # with 3 repeats a side the cell's noise is its own: a floor changes nothing
    a3, b3 = a + [10_200], b + [9_050]
    assert judge.lead(a3, b3, judge.Floor(0.3, 5)) == judge.lead(a3, b3)
    assert math.isnan(judge.lead([], b).p)


def test_bench_run_tells_what_the_plan_s_repeats_can_judge_before_it_measures(tmp_path):
    from conftest import FIXTURES

    from orchestrator.cli.run_command import judge_notice
    from orchestrator.config import profiles
    from orchestrator.config.catalog import discover
    from orchestrator.config.plan import Plan
    catalog = discover(FIXTURES)
    plan = Plan(matrix={"fixture:ok": ["json"], "fixture:pool-16": ["json"]},
                profile=profiles.load("throughput").with_overrides(concurrency=(64, 256), repeat=3))
    notice = judge_notice(plan, catalog, tmp_path)
    # 2 targets x 2 levels x rps and p99: 8 comparisons in a `bench compare` of two such runs
    assert notice == judge.plan_notice(3, 8, judge.TYPICAL_CV)
    assert "over 8 comparisons" in notice and "needs" in notice
