"""A study's claim re-tested: its sentence says the figure here and whether the evidence holds, and a
preset's claim that names no measured cell, or unknown evidence, is one clear error."""
import pandas as pd
import pytest

from orchestrator.config import presets
from orchestrator.config.catalog import discover
from orchestrator.errors import ManifestError
from orchestrator.results import claims

CLAIM = {"claim": "The 200 workers queue the sleeps.", "target": "spring-mvc:platform", "scenario": "sleep",
         "figure": "latency_mean_ms", "evidence": "asleep", "holds": ">= 190"}


def rows(sleep_ms: list[float]) -> pd.DataFrame:
    return pd.DataFrame([{"target": "spring-mvc:platform", "scenario": "sleep", "status": "ok", "concurrency": 1000,
                          "repeat": i + 1, "duration_s": 5.0, "latency_mean_ms": 500.0 + i, "jfr_sleep_ms": ms}
                         for i, ms in enumerate(sleep_ms)])


def test_a_claim_holds_when_the_median_evidence_meets_its_condition():
    # 199.7 and 200.0 threads asleep on average: the thread-pool explanation holds
    (text,) = claims.sentences(rows([998_500.0, 1_000_000.0, 400_000.0]), [CLAIM])
    assert text.startswith("The 200 workers queue the sleeps. Here: spring-mvc:platform on sleep at concurrency 1000")
    assert "latency_mean_ms 501.0" in text and "199.7" in text and "the explanation holds (3 repeat(s))" in text
    (text,) = claims.sentences(rows([400_000.0]), [CLAIM])
    assert "80.0" in text and "does not hold" in text


def test_without_evidence_a_claim_says_so_rather_than_judging():
    (text,) = claims.sentences(rows([float("nan")]), [CLAIM])   # null, as a row without --jfr loads
    assert "no evidence recorded" in text and "explanation holds" not in text and "does not hold" not in text
    (text,) = claims.sentences(rows([1.0]).assign(scenario="json"), [CLAIM])
    assert "was not measured" in text
    # a claim about 2,000 connections is not judged on a run that measured 1,000
    (text,) = claims.sentences(rows([1_000_000.0]), [{**CLAIM, "level": 2000}])
    assert text.endswith("on sleep at concurrency 2000 was not measured.")


def test_a_flagged_repeat_is_shown_but_never_judged_on():
    # the third repeat's generator CPU was busy: its 80 threads asleep do not count against the claim
    df = rows([998_500.0, 1_000_000.0, 400_000.0]).assign(check_flags=["", "", "loadgen-cpus-busy"])
    (text,) = claims.sentences(df, [CLAIM])
    assert "latency_mean_ms 500.5" in text and "199.8 (it needs" in text   # the medians of the two clean ones
    assert "the explanation holds (2 repeat(s); 1 flagged left out)" in text
    (text,) = claims.sentences(rows([1_000_000.0]).assign(check_flags="not-steady"), [CLAIM])
    assert "not judged: every repeat was flagged (not-steady)" in text and "holds" not in text


@pytest.mark.parametrize("change, problem", [
    ({"evidence": "vibes"}, "evidence 'vibes' is not one of"),
    ({"holds": "about 190"}, "is not a comparison"),
    ({"figure": "speed"}, "is not a column"),
    ({"claim": ""}, "needs claim"),
    ({"level": "high"}, "level must be a number"),
    ({"when": "always"}, "unknown field(s) when"),
])
def test_a_malformed_claim_is_named(change, problem):
    assert problem in claims.check({**CLAIM, **change})


def test_every_shipped_claim_is_about_a_cell_its_preset_measures():
    catalog = discover()
    told = [c for name in presets.names() for c in presets.load(name, catalog).claims]
    assert len(told) >= 4
    assert all(claims.check(c) is None for c in told)


def test_a_preset_claim_about_an_unmeasured_cell_is_one_error(tmp_path, monkeypatch):
    text = presets.shipped()["cpu-and-io-bursts"].read_text().replace(
        'target = "spring-webflux:reactive"\nscenario = "cpu"', 'target = "spring-webflux:reactive"\nscenario = "redis"')
    (tmp_path / "bad.toml").write_text(text)
    monkeypatch.setattr(presets, "PRESETS_DIR", tmp_path)
    with pytest.raises(ManifestError, match=r"claims\[0\].*not among the preset's cells"):
        presets.load("bad", discover())
