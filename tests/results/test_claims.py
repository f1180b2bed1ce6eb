"""A study's claim re-tested: its sentence says the figure here and whether the evidence holds, and a
preset's claim that names no measured cell, or unknown evidence, is one clear error."""
import pandas as pd
import pytest

from orchestrator.config import claim_fields, presets
from orchestrator.config.catalog import discover
from orchestrator.errors import ManifestError
from orchestrator.results import claims
from orchestrator.results.store import COLUMNS

CLAIM = {"claim": "The 200 workers queue the sleeps.", "target": "spring-mvc:platform", "scenario": "sleep",
         "figure": "latency_mean_ms", "evidence": "asleep", "holds": ">= 190"}


def rows(sleep_ms: list[float]) -> pd.DataFrame:
    return pd.DataFrame([{"target": "spring-mvc:platform", "scenario": "sleep", "status": "ok", "concurrency": 1000,
                          "repeat": i + 1, "duration_s": 5.0, "latency_mean_ms": 500.0 + i, "jfr_sleep_ms": ms}
                         for i, ms in enumerate(sleep_ms)])


def said(df: pd.DataFrame, told: list[dict]) -> list[str]:
    return [claims.sentence(row) for row in claims.judged(df, told)]


def test_a_claim_holds_when_the_median_evidence_meets_its_condition():
    # 199.7 and 200.0 threads asleep on average: the thread-pool explanation holds
    (text,) = said(rows([998_500.0, 1_000_000.0, 400_000.0]), [CLAIM])
    assert text.startswith("The 200 workers queue the sleeps. Here: spring-mvc:platform on sleep at concurrency 1000")
    assert "latency_mean_ms 501.0" in text and "199.7" in text and "the explanation holds (3 repeat(s))" in text
    (text,) = said(rows([400_000.0]), [CLAIM])
    assert "80.0" in text and "does not hold" in text


def test_without_evidence_a_claim_says_so_rather_than_judging():
    (text,) = said(rows([float("nan")]), [CLAIM])   # null, as a row without --jfr loads
    assert "no evidence recorded" in text and "explanation holds" not in text and "does not hold" not in text
    (text,) = said(rows([1.0]).assign(scenario="json"), [CLAIM])
    assert "was not measured" in text
    # a claim about 2,000 connections is not judged on a run that measured 1,000
    (text,) = said(rows([1_000_000.0]), [{**CLAIM, "level": 2000}])
    assert text.endswith("on sleep at concurrency 2000 was not measured: not measured.")


def test_a_flagged_repeat_is_shown_but_never_judged_on():
    # the third repeat's generator CPU was busy: its 80 threads asleep do not count against the claim
    df = rows([998_500.0, 1_000_000.0, 400_000.0]).assign(check_flags=["", "", "loadgen-cpus-busy"])
    (text,) = said(df, [CLAIM])
    assert "latency_mean_ms 500.5" in text and "199.8 (it needs" in text   # the medians of the two clean ones
    assert "the explanation holds (2 repeat(s); 1 flagged left out)" in text
    (text,) = said(rows([1_000_000.0]).assign(check_flags="not-steady"), [CLAIM])
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
    assert problem in claim_fields.check({**CLAIM, **change})


def test_every_shipped_claim_is_about_a_cell_its_preset_measures():
    catalog = discover()
    told = [c for name in presets.names() for c in presets.load(name, catalog).claims]
    assert len(told) >= 4
    assert all(claim_fields.check(c) is None for c in told)


def test_a_preset_claim_about_an_unmeasured_cell_is_one_error(tmp_path, monkeypatch):
    text = presets.shipped()["cpu-and-io-bursts"].read_text().replace(
        'target = "spring-webflux:reactive"\nscenario = "cpu"', 'target = "spring-webflux:reactive"\nscenario = "redis"')
    (tmp_path / "bad.toml").write_text(text)
    monkeypatch.setattr(presets, "PRESETS_DIR", tmp_path)
    with pytest.raises(ManifestError, match=r"claims\[3\].*not among the preset's cells"):
        presets.load("bad", discover())


def cell(target: str, figures, metric: str = "rps", level: int = 500, flags="", scenario: str = "redis",
         steal_pct=None):
    """Made-up repeats of one cell (one row each), in the result columns; steal_pct: the share of the
    server's CPU the host took in each repeat's 15-s window (not measured when None)."""
    flags = flags if isinstance(flags, list) else [flags] * len(figures)
    steal = steal_pct or [None] * len(figures)
    return pd.DataFrame([{"run_id": "made-up", "target": target, "scenario": scenario, "concurrency": level,
                          "repeat": i + 1, "status": "ok", "reason": "", "check_flags": f, metric: v,
                          "requests": 10_000, "server_cpu_s": 1.0, "duration_s": 15.0, "server_cpus_steal_pct": s,
                          "loadgen_cpus_steal_pct": 0.0 if s is not None else None}
                         for i, (v, f, s) in enumerate(zip(figures, flags, steal))]).reindex(columns=COLUMNS)


ORDER = {"form": "order", "claim": "Study 002: Quarkus 56.2k > Ktor 52.5k > WebFlux 39.1k req/s.", "scenario": "redis",
         "metric": "rps", "targets": ["quarkus:reactive", "ktor:coroutines", "spring-webflux:reactive"],
         "study": [56_200, 52_500, 39_100], "differs": "The study: 2 CPUs a server; here 1."}


def judged(*frames, claim=ORDER) -> dict:
    (row,) = claims.judged(pd.concat(frames), [claim])
    return row


def test_an_order_holds_when_each_adjacent_pair_is_decided_the_study_s_way():
    row = judged(cell("quarkus:reactive", [30_000, 30_300, 29_800]), cell("ktor:coroutines", [25_000, 25_200, 24_900]),
                 cell("spring-webflux:reactive", [10_000, 10_100, 9_900]))
    assert row["verdict"] == "holds" and row["differs"] == "The study: 2 CPUs a server; here 1."
    assert row["here"].startswith("redis at concurrency 500: quarkus:reactive 30,000 req/s (29,800-30,300, 3 of 3)")
    assert "quarkus:reactive ahead of ktor:coroutines: ×1.20 here (95% CI ×1." in row["evidence"]
    assert "the study ×1.07" in row["evidence"]


def test_an_order_with_one_pair_reversed_beyond_the_noise_does_not_hold_and_names_it():
    row = judged(cell("quarkus:reactive", [25_000, 25_200, 24_900]), cell("ktor:coroutines", [30_000, 30_300, 29_800]),
                 cell("spring-webflux:reactive", [10_000, 10_100, 9_900]))
    assert row["verdict"] == "does not hold: quarkus:reactive ahead of ktor:coroutines"


def test_a_pair_within_the_noise_leaves_the_order_untold_with_the_repeats_it_needs():
    # 11 % noise a repeat (this machine's), 5 % apart: 3 + 3 repeats cannot tell
    row = judged(cell("quarkus:reactive", [30_000 * f for f in (0.88, 1.0, 1.12)]),
                 cell("ktor:coroutines", [28_500 * f for f in (0.89, 1.0, 1.11)]),
                 cell("spring-webflux:reactive", [10_000, 10_100, 9_900]))
    assert row["verdict"].startswith("cannot tell at these repeats: quarkus:reactive ahead of ktor:coroutines: "
                                     "within noise (a lead of 5% needs ")
    assert int(row["verdict"].split("needs ")[1].split(" ")[0]) > 3
    # a target not measured leaves it untold too, and says so
    row = judged(cell("quarkus:reactive", [30_000, 30_300, 29_800]), cell("ktor:coroutines", [25_000, 25_200, 24_900]))
    assert "spring-webflux:reactive not measured" in row["here"] and row["verdict"].startswith("cannot tell")


def test_a_slowed_cell_counts_where_its_bias_cannot_have_made_the_pair():
    fast, slow = [30_000, 30_300, 29_800], [25_000, 25_200, 24_900]
    webflux = cell("spring-webflux:reactive", [10_000, 10_100, 9_900])
    # the leader's generator was busy: its throughput is at least what it shows, and it still leads
    assert judged(cell("quarkus:reactive", fast, flags="loadgen-cpus-busy"), cell("ktor:coroutines", slow),
                  webflux)["verdict"] == "holds"
    # the runner-up's was: it may have been as fast, so that pair is withheld
    row = judged(cell("quarkus:reactive", fast), cell("ktor:coroutines", slow, flags="loadgen-cpus-busy"), webflux)
    assert row["verdict"] == ("cannot tell at these repeats: quarkus:reactive ahead of ktor:coroutines: withheld "
                              "(ktor:coroutines flagged loadgen-cpus-busy in 3 of its 3 repeats; 2 clean ones would "
                              "be judged alone)")
    # a flag of unknown direction withholds on either side
    row = judged(cell("quarkus:reactive", fast, flags="littles-law"), cell("ktor:coroutines", slow), webflux)
    assert "withheld (quarkus:reactive flagged littles-law in 3 of its 3 repeats" in row["verdict"]
    # against the study, a slowed leader proves nothing: the slowed side might have been ahead
    row = judged(cell("quarkus:reactive", slow, flags="host-steal"), cell("ktor:coroutines", fast), webflux)
    assert row["verdict"].startswith("cannot tell") and "withheld (quarkus:reactive flagged host-steal" in row["verdict"]


def test_a_full_accept_queue_leaves_a_latency_that_can_only_lose():
    """Study 001's case (run 20261127-171059): Tomcat at 2,000 connections overflowed its accept
    queue; k6 times a request from its first byte on an open connection, so the clients' SYN retries
    are in no latency it reports. Its true latency is at least the figure: slower even so, it is
    slower; faster, it proves nothing. On throughput the flag's direction is not known: withheld."""
    slowest = {"form": "order", "claim": "Study 001: at 2,000 connections WebFlux's mean 145 ms, MVC's 941 ms.",
               "scenario": "sleep", "metric": "latency_mean_ms",
               "targets": ["spring-webflux:reactive", "spring-mvc:platform"], "study": [145, 941]}
    fast, slow = [150, 152, 149], [900, 930, 910]

    def latency(target, means, flags=""):
        return cell(target, means, "latency_mean_ms", 2000, flags, scenario="sleep")
    row = judged(latency("spring-mvc:platform", slow, "listen-queue-overflow"),
                 latency("spring-webflux:reactive", fast), claim=slowest)
    assert row["verdict"] == "holds", row
    row = judged(latency("spring-mvc:platform", fast, "listen-queue-overflow"),
                 latency("spring-webflux:reactive", slow), claim=slowest)
    assert row["verdict"].startswith("cannot tell") and "flagged listen-queue-overflow" in row["verdict"], row
    throughput = judged(cell("quarkus:reactive", [30_000, 30_300, 29_800], flags="listen-queue-overflow"),
                        cell("ktor:coroutines", [25_000, 25_200, 24_900]),
                        cell("spring-webflux:reactive", [10_000, 10_100, 9_900]))
    assert "withheld (quarkus:reactive flagged listen-queue-overflow" in throughput["verdict"], throughput


def test_a_side_s_slowed_repeats_are_left_out_where_two_clean_ones_remain():
    """The gateway study's case (run 20261127-141240): the side behind has one repeat of three flagged
    host-steal, which could have put it behind; its two clean repeats are judged alone, and say so."""
    webflux = cell("spring-webflux:reactive", [10_000, 10_100, 9_900])
    behind = cell("ktor:coroutines", [25_000, 25_200, 20_000], flags=["", "", "host-steal"])
    row = judged(cell("quarkus:reactive", [30_000, 30_300, 29_800], flags="loadgen-cpus-busy"), behind, webflux)
    assert row["verdict"] == "holds"
    assert "(1 flagged repeat(s) of ktor:coroutines left out (host-steal))" in row["evidence"]
    # with one clean repeat left, the pair stays withheld and says what it would take
    behind = cell("ktor:coroutines", [25_000, 22_000, 20_000], flags=["", "host-steal", "host-steal"])
    row = judged(cell("quarkus:reactive", [30_000, 30_300, 29_800]), behind, webflux)
    assert "withheld (ktor:coroutines flagged host-steal in 2 of its 3 repeats; 2 clean ones" in row["verdict"]


def test_a_side_the_host_stole_from_is_judged_given_back_every_stolen_moment():
    """Study 002's case (run 20261127-134644): Quarkus, every repeat flagged host-steal, read 40 %
    behind Ktor where the study put it ahead. Steal could only have slowed it, and by at most the share
    it took: given back all of it (rps / (1 - stolen)), Quarkus is still behind, so the study's order
    does not hold. A gap the steal could close stays withheld."""
    ktor, webflux = cell("ktor:coroutines", [13_778, 13_999, 11_963]), cell("spring-webflux:reactive", [4_784, 5_023, 4_675])
    quarkus = cell("quarkus:reactive", [8_378, 8_904, 6_590], flags="host-steal", steal_pct=[10.3, 6.0, 8.0])
    row = judged(quarkus, ktor, webflux)
    assert row["verdict"] == "does not hold: quarkus:reactive ahead of ktor:coroutines", row
    assert "quarkus:reactive ahead of ktor:coroutines: ×0.6" in row["evidence"]
    assert "(quarkus:reactive given back the host's steal)" in row["evidence"]
    # Ktor 5 % ahead, Quarkus robbed of 10 % of its CPU: Quarkus could have led, so nothing is said
    quarkus = cell("quarkus:reactive", [13_100, 13_300, 11_400], flags="host-steal", steal_pct=[10.0, 10.0, 10.0])
    row = judged(quarkus, ktor, webflux)
    assert "withheld (quarkus:reactive flagged host-steal in 3 of its 3 repeats" in row["verdict"], row
    # the study's way: Ktor behind by more than all its stolen time could explain, and the order holds
    ktor = cell("ktor:coroutines", [9_000, 9_100, 8_900], flags="host-steal", steal_pct=[5.0, 4.0, 6.0])
    row = judged(cell("quarkus:reactive", [13_778, 13_999, 13_600]), ktor, webflux)
    assert row["verdict"] == "holds", row
    # a busy generator's share is not measured: it cannot be given back
    ktor = cell("ktor:coroutines", [9_000, 9_100, 8_900], flags="host-steal,loadgen-cpus-busy", steal_pct=[5.0, 4.0, 6.0])
    row = judged(cell("quarkus:reactive", [13_778, 13_999, 13_600]), ktor, webflux)
    assert "withheld (ktor:coroutines flagged host-steal,loadgen-cpus-busy" in row["verdict"], row


TREND = {"form": "trend", "claim": "Study 001: MVC mean 256 / 496 / 941 ms at 500 / 1,000 / 2,000 connections.",
         "target": "spring-mvc:platform", "scenario": "sleep", "metric": "latency_mean_ms", "levels": [500, 1000, 2000],
         "study": [256, 496, 941], "shape": "linear"}


def test_a_linear_trend_holds_in_proportion_to_the_load_and_not_when_it_only_grows():
    def mvc(means):
        return pd.concat(cell("spring-mvc:platform", [m * 0.99, m, m * 1.01], "latency_mean_ms", lv, scenario="sleep")
                         for m, lv in zip(means, (500, 1000, 2000)))
    row = judged(mvc([255, 505, 1010]), claim=TREND)
    assert row["verdict"] == "holds"
    assert "spring-mvc:platform at concurrency 1000 above spring-mvc:platform at concurrency 500: ×1.98 here" in \
        row["evidence"] and "levels ×2" in row["evidence"] and "the study ×1.94" in row["evidence"]
    row = judged(mvc([255, 300, 350]), claim=TREND)
    assert row["verdict"].startswith("does not hold: spring-mvc:platform at concurrency 1000 above spring-mvc:platform "
                                     "at concurrency 500 (not in proportion to the levels)")
    assert judged(mvc([255, 300, 350]), claim={**TREND, "shape": "grows"})["verdict"] == "holds"
    assert judged(mvc([255, 200, 350]), claim={**TREND, "shape": "grows"})["verdict"].startswith("does not hold")


@pytest.mark.parametrize("change, problem", [
    ({"form": "ranking"}, "form 'ranking' is not one of explanation, order, lead, trend"),
    ({"targets": ["quarkus:reactive"]}, "targets must list two or more"),
    ({"study": [1, 2]}, "study must list the study's figure for each of the 3 targets"),
    ({"metric": "server_cpu_pct"}, "metric 'server_cpu_pct' is not one of"),
    ({"shape": "linear"}, "unknown field(s) shape"),
])
def test_a_malformed_order_is_named(change, problem):
    assert problem in claim_fields.check({**ORDER, **change})


def test_targets_level_at_a_closed_loop_s_own_ceiling_cannot_be_told_at_this_load_not_at_these_repeats():
    # study 003's 1-s sleep at 500 users (run 20261129-041556): 500 users each waiting 1 s send at most 500 req/s
    lead = {"form": "lead", "claim": "Study 003: with a 1-s blocking sleep, virtual threads reach the highest "
            "throughput.", "scenario": "sleep-1s", "metric": "rps", "targets": ["spring-mvc:virtual"],
            "over": ["spring-mvc:platform", "spring-webflux:reactive"], "level": 500}

    def ramp(target, figures, kind="ramp"):
        return cell(target, figures, scenario="sleep-1s").assign(kind=kind)
    frames = [ramp("spring-mvc:virtual", [500, 497, 500]), ramp("spring-mvc:platform", [200, 200, 200]),
              ramp("spring-webflux:reactive", [499, 481, 496])]
    row = judged(*frames, claim=lead)
    assert row["verdict"] == ("cannot tell at this load: spring-mvc:virtual ahead of spring-webflux:reactive: both at "
                              "the load's own ceiling of 500 req/s (its clients each waiting the scenario's wait), "
                              "which no number of repeats parts"), row["verdict"]
    assert "spring-mvc:virtual ahead of spring-mvc:platform: ×2.4" in row["evidence"]
    # an open model's rate is no ceiling of its clients: the same figures are within its noise
    row = judged(*[f.assign(kind="rate") for f in frames], claim=lead)
    assert row["verdict"].startswith("cannot tell at these repeats: spring-mvc:virtual ahead of spring-webflux:reactive: "
                                     "within noise"), row["verdict"]
    # below the ceiling a pair is judged as any: 480 and 400 of 500 are apart beyond the noise
    row = judged(ramp("spring-mvc:virtual", [480, 482, 479]), ramp("spring-mvc:platform", [200, 200, 200]),
                 ramp("spring-webflux:reactive", [400, 401, 399]), claim=lead)
    assert row["verdict"] == "holds", row["verdict"]


def test_a_lead_holds_when_each_leader_is_ahead_of_each_target_it_leads():
    # study 001 at 2,000 connections: Netty + virtual threads the lowest mean of the Tomcat variants
    lead = {"form": "lead", "claim": "Netty + VT the most stable (145 ms at 2,000).", "scenario": "sleep",
            "metric": "latency_mean_ms", "targets": ["spring-webflux:virtual"],
            "over": ["spring-mvc:virtual", "spring-mvc:coroutines"], "study": [144.55, 333.35, 323.72], "level": 2000}

    def at(target, mean):
        return cell(target, [mean * 0.98, mean, mean * 1.02], "latency_mean_ms", 2000, scenario="sleep")
    row = judged(at("spring-webflux:virtual", 120), at("spring-mvc:virtual", 300), at("spring-mvc:coroutines", 280),
                 claim=lead)
    assert row["verdict"] == "holds" and row["here"].startswith("sleep at concurrency 2000: spring-webflux:virtual 120 ms")
    assert "spring-webflux:virtual ahead of spring-mvc:virtual: ×2.50 here" in row["evidence"]
    assert "the study ×2.31" in row["evidence"]
    row = judged(at("spring-webflux:virtual", 120), at("spring-mvc:virtual", 300), at("spring-mvc:coroutines", 100),
                 claim=lead)
    assert row["verdict"] == "does not hold: spring-webflux:virtual ahead of spring-mvc:coroutines"


def test_far_more_holds_only_where_the_lead_clears_the_ratio_the_study_s_words_claim():
    # study 003 at 170 ms: "R2DBC serves far more than JDBC"; here both at the pool's bound, 2 % apart
    far_more = {"form": "lead", "claim": "Study 003: R2DBC reads serve far more than JDBC.", "scenario": "db-read",
                "metric": "rps", "targets": ["spring-webflux:reactive"], "over": ["spring-webflux:jdbc-elastic"],
                "by": 1.5}

    def pair(r2dbc, jdbc):
        return judged(cell("spring-webflux:reactive", r2dbc, scenario="db-read"),
                      cell("spring-webflux:jdbc-elastic", jdbc, scenario="db-read"), claim=far_more)
    bound = [92.2, 92.2, 92.3], [90.7, 90.7, 90.6]
    row = pair(*bound)
    assert row["verdict"].startswith("does not hold: spring-webflux:reactive ahead of spring-webflux:jdbc-elastic "
                                     "(×1.0"), row["verdict"]
    assert "less than the ×1.5 the study's words claim" in row["verdict"]
    # the same pool's bound, no lead at all: not far more either, though its direction is within the noise
    assert pair([90.8, 90.7, 90.8], [90.8, 90.8, 90.7])["verdict"].startswith("does not hold")
    assert judged(cell("spring-webflux:reactive", bound[0], scenario="db-read"),
                  cell("spring-webflux:jdbc-elastic", bound[1], scenario="db-read"),
                  claim={k: v for k, v in far_more.items() if k != "by"})["verdict"] == "holds"   # ahead, by any margin
    assert pair([300, 303, 297], [100, 101, 99])["verdict"] == "holds"   # ×3: far more
    row = pair([150, 170, 190], [100, 101, 99])   # ×1.5 to ×1.9 within the noise of three repeats
    assert row["verdict"].startswith("cannot tell at these repeats: spring-webflux:reactive ahead of "
                                     "spring-webflux:jdbc-elastic: ahead, but by ×1.5 as the study's words claim"), row
    assert claim_fields.check({**far_more, "by": 0.9}).startswith("by is an order's or a lead's least ratio")
    assert claim_fields.check({**far_more, "by": True}).startswith("by is")
