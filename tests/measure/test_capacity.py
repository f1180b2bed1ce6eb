"""Capacity at a latency objective on made-up probes: the search (bracket, bisect, retries), the verdict
over the scenario's wait, the budget and the generator, overload and recovery."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest

from orchestrator.config import profiles
from orchestrator.config.kinds.capacity_search import FAIL, LIMIT, PASS, Search, Verdict, judge, vus_for
from orchestrator.config.load import LoadResult
from orchestrator.config.objective import Objective, parse_slo
from orchestrator.config.scenarios import SCENARIOS, Scenario
from orchestrator.errors import UsageError
from orchestrator.infra.hostinfo import host_info
from orchestrator.measure import calibrate, ceilings, checks
from orchestrator.report import capacity as capacity_report
from orchestrator.results import store as results


def search_against(capacity: float, **kw) -> Search:
    """Run a search where every rate up to capacity passes."""
    s = Search(start=500, resolution=0.05, max_probes=20, **kw)
    while (rate := s.next_rate()) is not None:
        limit = kw.get("max_rate")
        s.record(rate, Verdict(LIMIT, "") if limit and rate >= limit and capacity > limit else
                 Verdict(PASS if rate <= capacity else FAIL, ""))
    return s


@pytest.mark.parametrize("capacity", [37, 160, 499, 500, 2000, 17_333])
def test_the_search_brackets_then_bisects_to_an_interval_within_the_resolution(capacity):
    s = search_against(capacity)
    assert s.outcome() == "found" and s.low <= capacity < s.high and (s.high - s.low) / s.low <= 0.05
    assert len(s.probes) <= 12


def test_a_rate_the_generator_cannot_offer_ends_the_search_with_a_lower_bound_only():
    s = search_against(50_000, max_rate=18_000)
    # it bisects up to the generator's limit: "at least" as high as this machine can offer
    assert s.outcome() == "above-generator" and 17_000 <= s.low < 18_000 and s.limit == 18_000


def test_a_close_pass_is_probed_again_and_counts_only_if_both_pass():
    s = Search(start=100, resolution=0.05, max_probes=10)
    s.record(s.next_rate(), Verdict(PASS, "", close=True))
    assert s.next_rate() == 100 and s.low == 0
    s.record(100, Verdict(FAIL, "", close=True))
    assert s.high == 100 and s.low == 0 and s.next_rate() == 50


def test_with_retries_a_failed_rate_is_probed_again_and_passes_if_either_probe_passed():
    s = Search(start=2000, resolution=0.05, max_probes=16, retry_failures=True)
    s.record(s.next_rate(), Verdict(FAIL, ""))    # a spoiled window: not yet a failure
    assert s.high is None and s.next_rate() == 2000
    s.record(2000, Verdict(PASS, ""))
    assert s.low == 2000 and s.next_rate() == 4000
    s.record(4000, Verdict(FAIL, ""))
    s.record(s.next_rate(), Verdict(FAIL, ""))    # failed twice: the ceiling is below it
    assert s.high == 4000 and s.next_rate() == 3000
    s.record(3000, Verdict(PASS, "", close=True))  # best of two: a close pass is not probed again
    assert s.low == 3000 and s.next_rate() == 3500


def test_the_verdict_reads_the_objective_over_the_scenarios_wait_the_budget_and_the_generator():
    sleep, json = SCENARIOS["sleep"], SCENARIOS["json"]
    objective = Objective("p99", 50.0, 0.001)
    ok = LoadResult(requests=8000, duration_s=8.0, latency_p99=140.0)
    assert objective.bound_for(sleep) == 150 and objective.bound_for(json) == 50
    assert judge(1000, ok, [], objective, sleep, None).state == PASS
    assert judge(1000, ok, [], objective, json, None).state == FAIL
    assert judge(1000, LoadResult(requests=8000, duration_s=8.0, latency_p99=10.0, dropped=20), [], objective,
                 sleep, None).why.startswith("0.25 % of arrivals failed or dropped")
    assert judge(1000, ok, ["loadgen-cpus-busy"], objective, sleep, None).state == LIMIT
    assert judge(20_000, ok, [], objective, sleep, 19_000).state == LIMIT   # above what k6 can offer here
    assert judge(1000, ok, [], objective, sleep, 19_000).state == PASS


def test_a_probe_has_the_vus_littles_law_needs_at_the_objective_and_drops_with_idle_vus_are_the_generators():
    sleep, json = SCENARIOS["sleep"], SCENARIOS["json"]
    objective = Objective("p99", 50.0, 0.001)
    assert vus_for(2000, objective, sleep, 2000) == 300 and vus_for(6000, objective, json, 2000) == 300
    assert vus_for(100, objective, json, 2000) == 50 and vus_for(100_000, objective, json, 2000) == 2000
    fast_but_dropped = LoadResult(requests=95_000, duration_s=8.0, latency_p99=6.9, latency_max=20.0, dropped=1000)
    assert judge(12_000, fast_but_dropped, [], objective, json, None, vus=600).state == LIMIT
    slow_and_dropped = LoadResult(requests=40_000, duration_s=8.0, latency_p99=48.0, latency_max=90.0, dropped=1000)
    assert judge(12_000, slow_and_dropped, [], objective, json, None, vus=600).state == FAIL


def test_a_stall_that_p99_cannot_see_is_the_targets_not_the_generators():
    # A 0.3-s pause at 4,000 req/s holds all 200 VUs and drops about 1,000 arrivals; the other
    # 39,000 answers are fast, so p99 stays at 3 ms. The pause shows in the window's max.
    objective, json = Objective("p99", 50.0, 0.001), SCENARIOS["json"]
    stalled = LoadResult(requests=39_000, duration_s=10.0, latency_p99=3.0, latency_max=300.0, dropped=1000)
    verdict = judge(4000, stalled, [], objective, json, None, vus=200)
    assert verdict.state == FAIL and "dropped" in verdict.why


def test_an_objective_is_written_percentile_equals_bound():
    assert parse_slo("p99=50ms") == ("p99", 50.0) and parse_slo("p99.9=200ms") == ("p999", 200.0)
    for bad in ("p98=50ms", "p99=50", "50ms"):
        with pytest.raises(UsageError, match="is not PERCENTILE=BOUNDms"):
            parse_slo(bad)


def test_an_arrival_rate_cell_is_held_against_the_open_model_ceiling(tmp_path):
    # k6 keeps 3,000 arrivals a second here but answers 30,000 in a closed loop: a --rate 4000 cell
    # (rps about 4,000) is near the generator's limit, which only the open-model ceiling shows
    ceilings.store(tmp_path, host_info(), {"k6": {"ceiling_rps": 30_000, "open_ceiling_rps": 3_000,
                                              "loadgen_cpus": "0"}})
    bar = ceilings.cell_ceiling("k6", True, tmp_path, "0")
    assert bar == 3_000 and checks.near_ceiling(4_000, bar)
    assert ceilings.cell_ceiling("k6", False, tmp_path, "0") == 30_000 and not checks.near_ceiling(4_000, 30_000)


def test_a_search_that_passed_no_probe_prints_its_capacity_row_without_figures():
    # run 20261125-151746 of a .ci/run rehearsal: every probe of ktor db-read failed, so its capacity row had no
    # window's figures, and printing the run's table crashed on NaN after every cell was measured
    from orchestrator.cli.common import console
    from orchestrator.cli.results_table import print_results
    from orchestrator.results import analysis
    df = results.load(analysis.sample_run()).head(1).copy()
    nothing = ["rps", "latency_p50_ms", "latency_p99_ms", "errors_connect", "errors_status", "server_cpu_pct",
               "server_peak_rss_mb", "server_peak_threads", "gc_time_ms"]
    df[nothing] = float("nan")   # as results.load reads a capacity row with none
    with console.capture() as out:
        print_results(df)
    assert df["target"].iloc[0] in out.get() and "nan" not in out.get()


def test_capacity_across_fresh_jvms_is_the_interval_they_support_together_and_orders_only_without_overlap():
    def found(target, low, high, repeat, scenario="sleep"):
        return {"target": target, "scenario": scenario, "repeat": repeat, "status": "ok", "reason": "",
                "capacity_low_rps": low, "capacity_high_rps": high, "verdict": "found" if high else "above-generator"}
    # run 20261124-042333's shape, sleep and db-read: a break found in one JVM, the generator's limit in another
    rows = pd.DataFrame([found("mvc", 2000, 2125, 1), found("mvc", 2000, 2125, 2),
                         found("virtual", 5000, 5500, 1), found("virtual", 5250, 5500, 2),
                         found("webflux", 4750, 5000, 1), found("webflux", 6000, None, 2)])
    table = capacity_report.capacity_table(rows).set_index("target (capacity in req/s)")["sleep"]
    assert table["virtual"] == "5,000 – 5,500; 5,250 – 5,500 → across JVMs 5,000 – 5,500"
    assert table["webflux"].endswith("→ across JVMs ≥ 4,750")
    (line,) = capacity_report.ordering(rows)
    # virtual's worst JVM carried 5,000, above the 2,125 at which mvc failed in both; webflux's
    # 4,750 to unbounded overlaps virtual's interval, so neither is above the other, though its
    # better JVM carried more than virtual's did
    assert "virtual (5,000 – 5,500) above mvc (2,000 – 2,125)" in line and "webflux (≥ 4,750) above mvc" in line
    assert "above virtual" not in line and "above webflux" not in line
    apart = pd.DataFrame([found("a", 1000, 1100, 1), found("b", 1050, 1200, 1)])
    assert capacity_report.ordering(apart) == ["sleep: no target's capacity is above another's in every JVM"]
    # a search that met the host stealing the CPUs: shown flagged, its interval kept (a pass under steal
    # is a pass, and a failure under it was probed again)
    from orchestrator.config.kinds.capacity import capacity_flags
    flags = capacity_flags({"check_flags": "not-steady"}, [{"check_flags": "host-steal,littles-law"}], "found")
    assert flags == ["not-steady", "host-steal", "capacity-found"]
    stolen = rows.assign(check_flags=["", "", "", "", "", ""])
    stolen.loc[stolen["target"] == "virtual", "check_flags"] = ",".join(flags)
    assert capacity_report.capacity_table(stolen).set_index("target (capacity in req/s)")["sleep"]["virtual"] == \
        "5,000 – 5,500 ⚠ host-steal; 5,250 – 5,500 ⚠ host-steal → across JVMs 5,000 – 5,500"
    assert "virtual (5,000 – 5,500) above mvc" in capacity_report.ordering(stolen)[0]
    # ... unless the probe that decided a JVM's failure still met it: that JVM's ceiling is not known
    spoiled = stolen.copy()
    spoiled.loc[(spoiled["target"] == "virtual") & (spoiled["repeat"] == 2), "check_flags"] += ",capacity-failure-spoiled"
    assert capacity_report.capacity_table(spoiled).set_index("target (capacity in req/s)")["sleep"]["virtual"] == \
        "5,000 – 5,500 ⚠ host-steal; ≥ 5,250 ⚠ host-steal, its failure spoiled → across JVMs ≥ 5,000"
    assert "virtual (≥ 5,000) above mvc" in capacity_report.ordering(spoiled)[0]


def test_a_ceiling_measured_up_to_a_cap_serves_only_searches_below_it():
    full, capped = {"open_ceiling_rps": 80_000}, {"open_ceiling_rps": 8_000, "open_capped_at": 8_000}
    assert calibrate.enough(full, 2_048_000) == 80_000 and calibrate.enough(full, None) == 80_000
    assert calibrate.enough(capped, 8_000) == 8_000
    # a full search may offer more than the quick one measured: measured again, never capped by it
    assert calibrate.enough(capped, 2_048_000) is None and calibrate.enough(capped, None) is None
    assert calibrate.enough({}, 8_000) is None
    # twice what the search can offer (500/s doubled over 4 probes offers at most 4,000)
    quick = dataclasses.replace(profiles.load("capacity"), max_probes=4, common_rate=500)
    assert quick.rules.open_ceiling_needed(quick) == 8_000


def pacer_probe(p99: float, lag_p99: float, late: int = 0) -> LoadResult:
    return LoadResult(requests=40_000, duration_s=4.0, latency_p99=p99, latency_max=p99 * 2, late_sends=late,
                      send_lag_p99=lag_p99)


def test_pacers_own_lag_makes_a_failed_probe_the_generators_and_a_passed_one_stays_passed():
    o, json_ = Objective("p99", 50.0, 0.001), Scenario("json", "GET", "/json", 200, "application/json")
    # failed by 8 ms with pacer 12 ms behind its schedule at p99 (over a tenth of the 50-ms bound):
    # without that lag the objective may have held, so it is the generator's limit
    v = judge(10_000, pacer_probe(58.0, 12.0, late=900), [], o, json_, None, 500)
    assert v.state == LIMIT and "own send lag read p99 12.0 ms (900 arrivals" in v.why
    # failed by 30 ms with pacer 12 ms late: the target failed by itself; and with pacer on time
    assert judge(10_000, pacer_probe(80.0, 12.0, late=900), [], o, json_, None, 500).state == FAIL
    assert judge(10_000, pacer_probe(58.0, 0.4), [], o, json_, None, 500).state == FAIL
    # passed with its lag in every latency: a pass
    assert judge(10_000, pacer_probe(20.0, 12.0, late=900), [], o, json_, None, 500).state == PASS
    # the load CPUs busy (Redis, MariaDB) but pacer on time: the verdict is the target's
    assert judge(10_000, pacer_probe(80.0, 0.4), ["loadgen-cpus-busy"], o, json_, None, 500).state == FAIL
    # k6 says nothing of its lag: busy load CPUs end its search as before
    k6 = LoadResult(requests=40_000, duration_s=4.0, latency_p99=80.0, latency_max=90.0)
    assert judge(10_000, k6, ["loadgen-cpus-busy"], o, json_, None, 500).state == LIMIT


def test_a_probe_failed_by_the_generators_own_lag_is_probed_again_and_the_second_decides():
    s = Search(start=1000, resolution=0.05, max_probes=12)
    lagged = Verdict(LIMIT, "own send lag", again=True)
    assert s.next_rate() == 1000
    s.record(1000, Verdict(PASS, ""))
    assert s.next_rate() == 2000
    s.record(2000, lagged)
    assert s.next_rate() == 2000 and s.limit is None     # not believed yet
    s.record(2000, Verdict(PASS, ""))
    assert s.low == 2000 and s.next_rate() == 4000       # the second probe passed: the search goes on
    s.record(4000, lagged)
    s.record(4000, lagged)
    assert s.limit == 4000 and s.next_rate() == 3000     # lagged twice: the generator's limit


def test_a_failed_first_probe_is_probed_again_before_it_caps_the_search():
    s = Search(start=500, resolution=0.05, max_probes=12)
    s.record(s.next_rate(), Verdict(FAIL, "p99 66 ms > 50 ms"))   # a JVM still compiling
    assert s.next_rate() == 500 and s.high is None
    s.record(500, Verdict(PASS, ""))
    assert s.low == 500 and s.next_rate() == 1000
    s.record(1000, Verdict(FAIL, ""))                               # later failures count at once
    assert s.high == 1000
    again = Search(start=500, resolution=0.05, max_probes=12)
    again.record(500, Verdict(FAIL, ""))
    again.record(500, Verdict(FAIL, ""))
    assert again.high == 500 and again.next_rate() == 250


@pytest.mark.parametrize("flag", ["host-steal", "server-cpus-shared"])
def test_a_probe_that_failed_while_something_took_the_cpus_is_probed_again_and_the_second_decides(flag):
    o, json_ = Objective("p99", 50.0, 0.001), Scenario("json", "GET", "/json", 200, "application/json")
    # the host, or another process, held the server's CPU: p99 180 ms where the same rate later read 3 ms
    stolen = judge(8_000, pacer_probe(180.0, 0.3), [flag], o, json_, None, 500)
    assert stolen.state == FAIL and stolen.again and f"({flag})" in stolen.why
    assert not judge(8_000, pacer_probe(180.0, 0.3), [], o, json_, None, 500).again
    # a pass under steal stays a pass: it only ever took capacity away
    passed = judge(8_000, pacer_probe(3.0, 0.3), [flag], o, json_, None, 500)
    assert passed.state == PASS and not passed.again
    s = Search(start=2000, resolution=0.05, max_probes=12)
    s.record(s.next_rate(), Verdict(PASS, ""))
    s.record(s.next_rate(), stolen)
    assert s.next_rate() == 4000 and s.high is None       # not believed yet
    s.record(4000, Verdict(PASS, ""))
    assert s.low == 4000 and s.next_rate() == 8000


def test_past_the_knee_goodput_that_holds_is_graceful_and_one_that_does_not_collapses_with_its_evidence():
    from orchestrator.config.kinds.capacity import overload_verdict
    def probe(goodput, **kw):
        return {"overload_factor": 2.0, "rate": 2000.0, "goodput_rps": goodput, "rps": 1000.0, "latency_p50_ms": 3.0,
                "latency_p99_ms": 40.0, "errors_status": 1000, "dropped": 0, "server_cpu_pct": 99.0,
                "server_peak_threads": 220, "tcp_accept_queue_peak": 0, "gc_time_ms": 12.0, **kw}
    # a server that sheds what it cannot serve (1,000 fast 503s a second) keeps its 1,000/s within the objective
    shed = overload_verdict(1000.0, [probe(950.0)])
    assert shed.startswith("graceful: at 2x its capacity (2,000/s) goodput held 95 % of it (") and "1,000 errors" in shed
    # one that queues: answered late, or not at all
    queued = overload_verdict(1000.0, [probe(600.0, rate=1250.0, overload_factor=1.25),
                                       probe(80.0, errors_status=0, dropped=1500, tcp_accept_queue_peak=128)])
    assert queued.startswith("collapses: at 2x its capacity (2,000/s) goodput held 8 % of it")
    assert "1,500 dropped" in queued and "accept queue peak 128" in queued and "threads 220" in queued
    # no overload probes, or a generator that keeps no latencies (k6): no verdict rather than a guess
    assert overload_verdict(1000.0, []) is None and overload_verdict(1000.0, [probe(None)]) is None
    # goodput above the capacity is a tail-bound search (most answers in time, not the percentile);
    # an overload probe that met the objective above the rate that failed it puts the search in doubt
    from orchestrator.config.kinds.capacity import HELD, capacity_flags
    tail = [probe(1740.0, verdict="overload 2x: goodput 1,740 req/s, 174 % of capacity")]
    assert overload_verdict(1000.0, tail, 1100.0).startswith("graceful: at 2x its capacity (2,000/s) goodput held 174 %")
    assert "capacity-in-doubt" not in capacity_flags(None, [], "found", tail, 1100.0)
    held = [probe(1240.0, rate=1250.0, overload_factor=1.25, verdict="overload 1.25x: goodput" + HELD), *tail]
    doubt = overload_verdict(1000.0, held, 1100.0)
    assert doubt.startswith("capacity in doubt (at 1.25x, 1,250/s, the objective held, above the 1,100/s that "
                            "failed it in the search: repeat the search): at 2x its capacity"), doubt
    assert capacity_flags(None, [], "found", held, 1100.0) == ["capacity-found", "capacity-in-doubt"]
    assert overload_verdict(1000.0, held, 1300.0).startswith("graceful")   # held below the failing rate
    # the probe that decided the failure (the second at its rate) met steal: that JVM's ceiling is not
    # known; a first one under steal, probed again calm, or steal in a pass, leave it known
    fail = {"rate": 1100.0, "verdict": "fail: p99 61 ms > 50 ms"}
    spoiled = [{**fail, "check_flags": "host-steal"}, {**fail, "check_flags": "server-cpus-shared"}]
    assert capacity_flags(None, spoiled, "found", [], 1100.0) == ["host-steal", "capacity-found",
                                                                   "capacity-failure-spoiled"]
    calm = [{**fail, "check_flags": "host-steal"}, {**fail, "check_flags": ""},
            {"rate": 1000.0, "verdict": "pass: p99 9 ms <= 50 ms", "check_flags": "host-steal"}]
    assert capacity_flags(None, calm, "found", [], 1100.0) == ["host-steal", "capacity-found"]
    from orchestrator.config.load import ARRIVAL
    # within 50 ms and below 400: 3 of these 6 arrivals (a 503 and an arrival never sent are not), in 2 s
    arrivals = np.array([(0.1, 1.0, 200), (0.5, 20.0, 200), (1.0, 49.9, 200), (1.2, 300.0, 200), (1.5, 2.0, 503),
                         (1.9, 0.0, -4)], dtype=ARRIVAL)
    r = LoadResult(requests=5, duration_s=2.0, arrivals=arrivals)
    assert r.goodput(50.0) == 1.5 and math.isnan(LoadResult(requests=4, duration_s=2.0).goodput(50.0))


def test_recovery_counts_from_the_spikes_end_to_the_first_second_from_which_every_one_met_the_objective():
    from orchestrator.config.kinds.capacity import recovery_s
    from orchestrator.config.load import ARRIVAL
    # 1 s at 10/s answered in 5 ms, 1 s at 40/s of which the last 30 wait 2 s, then 10/s: the arrivals
    # of second 2 are answered in 900 ms (the backlog), of second 3 in 5 ms; one never sent in second 4
    rows = [(t + i / 10, 5.0, 200) for t in (0,) for i in range(10)]
    rows += [(1 + i / 40, 5.0 if i < 10 else 2000.0, 200) for i in range(40)]
    rows += [(2 + i / 10, 900.0, 200) for i in range(10)] + [(3 + i / 10, 5.0, 200) for i in range(10)]
    rows += [(4 + i / 10, 5.0, 200) for i in range(9)] + [(4.9, 0.0, -4)]
    r = LoadResult(requests=79, duration_s=5.0, arrivals=np.array(rows, dtype=ARRIVAL))
    seconds = r.per_second(50.0)
    assert [s["offered"] for s in seconds] == [10, 40, 10, 10, 10] and [s["goodput"] for s in seconds] == [10, 10, 0, 10, 9]
    assert seconds[4]["failed"] == seconds[4]["dropped"] == 1 and seconds[1]["p99_ms"] == 2000.0
    # spike over at 2 s: second 2 still drained the backlog, 3 met the objective, 4 lost 1 of 10 (budget 10 %)
    assert recovery_s(seconds, 2.0, 50.0, 0.1) == 1.0
    assert recovery_s(seconds, 2.0, 50.0, 0.001) is None          # a lost arrival at the end: not recovered
    assert recovery_s(seconds, 2.0, 1000.0, 0.1) == 0.0           # 900 ms met a 1-s objective at once
