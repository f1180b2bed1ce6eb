"""Workload files (config/workload.py): the shipped ones read, and a bad one is one line naming the
file and the field."""
from __future__ import annotations

import pytest

from orchestrator.config import workload
from orchestrator.config.catalog import discover
from orchestrator.errors import UsageError

GOOD = '''description = "d"
targets = ["vertx:eventloop", "spring-mvc:virtual"]
objective = "p99=50ms"
[mix]
cache-aside = 70
db-read = 20
db-write = 10
'''


def read(tmp_path, text: str):
    path = tmp_path / "w.toml"
    path.write_text(text)
    return workload.load(path, discover())


def test_the_shipped_workloads_read_and_say_their_mix():
    for name, path in workload.shipped().items():
        w = workload.load(path, discover())
        assert w.name == name and sum(w.mix.shares.values()) == pytest.approx(1) and w.targets
    aggregator = workload.load(workload.find("aggregator"), discover())
    assert aggregator.mix.backend_work["downstream_calls"] == pytest.approx(0.8 * 3) and aggregator.mix.wait_ms == 20


def test_a_workload_s_parameters_change_its_scenarios_requests_and_their_contract(tmp_path):
    w = read(tmp_path, GOOD.replace("db-write = 10\n", "fan-out = 10\n") +
             "[parameters.cache-aside]\nmiss_share = 0.25\n[parameters.fan-out]\ncalls = 2\n")
    parts = {p.scenario.name: p.scenario for p in w.mix.parts}
    assert parts["cache-aside"].ids.every == 4 and parts["cache-aside"].backend_work["db_selects"] == 0.25
    assert "one request in 4" in parts["cache-aside"].contract
    assert parts["fan-out"].path == "/fan-out?calls=2" and parts["fan-out"].expected == [{"call": 1}, {"call": 2}]
    assert w.prices == workload.EXAMPLE_PRICES and w.prices_are_examples


@pytest.mark.parametrize("change, problem", [
    (("cache-aside = 70", "cach-aside = 70"), "field 'mix.cach-aside': unknown scenario"),
    (("db-read = 20", "db-read = 0"), "field 'mix': the weight of 'db-read' must be a number above 0, not 0"),
    (("db-read = 20", "db-read = -2"), "must be a number above 0, not -2"),
    (("db-read = 20", 'db-read = "20"'), "must be a number above 0, not '20'"),
    (("db-write = 10", "db-write = 10\ndb-read = 5"), "not valid TOML"),
    (("[mix]", '[objectives]\njson = "p99=5ms"\n[mix]'), "field 'objectives.json': unknown field; valid: cache-aside"),
    (("[mix]", '[objectives]\ndb-write = "fast"\n[mix]'), "field 'objectives.db-write': 'fast' is not PERCENTILE"),
    (("[mix]", "[prices]\ncore = -0.04\n[mix]"), "field 'prices.core': must be a price per hour of 0 or more, not -0.04"),
    (("[mix]", "[prices]\ncpu = 1\n[mix]"), "field 'prices.cpu': unknown field"),
    (("[mix]", 'heaps = ["12x"]\n[mix]'), "field 'heaps[0]': '12x' must look like 512m or 2g"),
    (("[mix]", 'heaps = ["256m", "8m"]\n[mix]'), "field 'heaps[1]': 8m is outside what a target can run with"),
    (("[mix]", 'heaps = ["4096g"]\n[mix]'), "field 'heaps[0]': 4096g is outside"),
    (('"vertx:eventloop"', '"vertx:nope"'), "field 'targets[0]': unknown variant 'nope' of vertx"),
    (('"vertx:eventloop", "spring-mvc:virtual"', '"gateway:webflux"'), "field 'targets[0]': gateway:webflux does "
                                                                         "not serve cache-aside, db-read, db-write"),
    (('"vertx:eventloop", "spring-mvc:virtual"', '"vertx:eventloop", "vertx:eventloop"'), "names a target twice"),
    (("[mix]", "[parameters.json]\nx = 1\n[mix]"), "field 'parameters.json': unknown field"),
    (("[mix]", "[parameters.cache-aside]\nmiss_share = 0.3\n[mix]"),
     "field 'parameters.cache-aside': cache-aside's miss_share must be one request in a whole number"),
    (("[mix]", "[parameters.db-read]\nids = 5\n[mix]"), "field 'parameters.db-read': db-read takes no parameters"),
    (("description", "descripton"), "field 'descripton': unknown field"),
])
def test_a_bad_workload_is_one_line_naming_its_field(tmp_path, change, problem):
    with pytest.raises(UsageError) as e:
        read(tmp_path, GOOD.replace(*change))
    said = str(e.value)
    assert problem in said and "\n" not in said and str(tmp_path / "w.toml") in said, said


def test_a_fan_out_of_more_calls_than_the_contract_allows_is_named(tmp_path):
    with pytest.raises(UsageError, match="fan-out's calls must be a whole number from 1 to 16, not 17"):
        read(tmp_path, GOOD.replace("db-write = 10", "fan-out = 10") + "[parameters.fan-out]\ncalls = 17\n")


@pytest.mark.parametrize("make, problem", [
    (lambda p: p.write_bytes(b"description = \"\xff\"\n"), "not UTF-8"),
    (lambda p: p.mkdir(), "a folder, not a file"),
])
def test_a_workload_that_is_not_a_text_file_is_named(tmp_path, make, problem):
    path = tmp_path / "w.toml"
    make(path)
    with pytest.raises(UsageError, match=problem):
        workload.load(path, discover())


def capacity_rows(target, lows, highs, cpu_ms=0.5, rss_mb=512.0, rps_per_core=2000.0):
    import pandas as pd

    from orchestrator.results import store as results
    return pd.DataFrame([{"run_id": "made-up", "target": target, "scenario": "read-mostly", "mix": "read-mostly",
                          "repeat": i + 1, "status": "ok", "reason": "", "rate": None, "verdict": "found",
                          "check_flags": "", "capacity_low_rps": lo, "capacity_high_rps": hi,
                          "cpu_ms_per_request": cpu_ms, "server_peak_rss_mb": rss_mb, "rps_per_core": rps_per_core,
                          "server_cpu_pct": 90.0, "heap": "512m", "slo": "p99 <= 70 ms, errors <= 0.1 %"}
                         for i, (lo, hi) in enumerate(zip(lows, highs))]).reindex(columns=results.COLUMNS)


def test_the_answer_costs_a_million_requests_at_the_prices_and_ranks_only_what_the_repeats_tell_apart():
    import pandas as pd

    from orchestrator.results.workload_answer import answer
    df = pd.concat([capacity_rows("a:x", [2000, 2100, 2050], [2200, 2300, 2250]),
                    capacity_rows("b:y", [1000, 1050, 1020], [1100, 1150, 1120], cpu_ms=1.0, rss_mb=256.0),
                    capacity_rows("c:z", [1080, 1000, 1040], [1200, 1100, 1140], cpu_ms=0.9)])
    table = answer(df, "read-mostly", {"core": 0.04, "gib": 0.005}).set_index("target")
    a = table.loc["a:x"]
    # 1,000,000 requests: 0.5 ms of CPU each at 0.04 a core-hour, plus 0.5 GiB held for 1e6 / 2,050 s
    assert a["cost_per_million"] == pytest.approx(1e6 * (0.0005 * 0.04 / 3600 + 0.5 * 0.005 / 3600 / 2050))
    assert (a["capacity_low_rps"], a["capacity_high_rps"], a["rps_per_gib"]) == (2000, 2300, 2050 / 0.5)
    # a:x reached 2,000 in every JVM, where b:y and c:z failed at 1,200 at most: first; their intervals
    # overlap (c:z failed at 1,100 in one JVM, b:y reached 1,000 in all): they share the second place
    assert list(table["place"]) == ["1", "2", "=2"] and list(table.index) == ["a:x", "c:z", "b:y"]


def test_the_report_shows_the_answer_and_capacity_against_cost():
    import pandas as pd

    from orchestrator.report import workload as workload_report
    df = pd.concat([capacity_rows("a:x", [2000, 2100, 2050], [2200, 2300, 2250]),
                    capacity_rows("b:y", [1000, 1050, 1020], [1100, 1150, 1120], cpu_ms=1.0)])
    served = {"name": "read-mostly", "description": "d", "objective": "p99=50ms",
              "prices": {"core": 0.04, "gib": 0.005}, "prices_are_examples": True}
    table = workload_report.answer_table(df, served)
    assert list(table["target"]) == ["a:x", "b:y"] and list(table["across JVMs"]) == ["2,000 – 2,300", "1,000 – 1,150"]
    assert table.loc[0, "cost of 1M requests"] == f"{1e6 * (0.0005 * 0.04 / 3600 + 0.5 * 0.005 / 3600 / 2050):.4f}"
    fig = workload_report.cost_chart(df, served, {"a:x": "r", "b:y": "b"})
    (ax,) = fig.axes
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["a:x", "b:y"]
    said = workload_report.text(df, served)
    assert "(examples: the file set no prices)" in said
    # the file's objective and the bound its searches applied over the mix's wait, as its rows record it
    assert "at p99=50ms over the mix's wait (p99 <= 70 ms, errors <= 0.1 %)" in said


def test_the_answer_names_the_smallest_heap_that_holds_the_capacity():
    import pandas as pd

    from orchestrator.results.workload_answer import answer
    df = pd.concat([capacity_rows("a:x+heap-128m", [1000, 1050, 1020], [1100, 1150, 1120]).assign(heap="128m"),
                    capacity_rows("a:x+heap-256m", [2000, 2100, 2050], [2200, 2300, 2250]).assign(heap="256m"),
                    capacity_rows("a:x+heap-1g", [2040, 2110, 2060], [2240, 2310, 2260]).assign(heap="1g"),
                    capacity_rows("b:y", [900, 950, 920], [1000, 1050, 1020])])
    table = answer(df, "read-mostly", {"core": 0.04, "gib": 0.005}).set_index("target")
    # 128m failed below what every JVM at 1g reached; 256m's and 1g's capacities overlap: 256m holds it
    assert set(table.loc[["a:x+heap-128m", "a:x+heap-256m", "a:x+heap-1g"], "smallest_heap"]) == {"256m"}
    assert table.loc["b:y", "smallest_heap"] == ""


def test_an_a_a_pair_on_a_mix_shares_its_place():
    # the same target twice: 2-s probes of a cold JVM spread its capacity by a probe's resolution, and
    # the intervals overlap, so neither is above the other
    import pandas as pd

    from orchestrator.results.workload_answer import answer
    df = pd.concat([capacity_rows("a:x", [2000, 2150, 2050], [2150, 2300, 2200]),
                    capacity_rows("a:x+heap-512m", [2100, 2000, 2050], [2250, 2150, 2200])])
    assert list(answer(df, "read-mostly", {"core": 0.04, "gib": 0.005})["place"]) == ["1", "=1"]


def test_steal_in_a_search_keeps_its_interval_and_a_failure_it_spoiled_leaves_no_ceiling():
    # run 20261129-204336: Vert.x on half json, half primes, against a copy with 1 ms more CPU on json;
    # every search met the host stealing in some probe, and the answer placed the copy "=1" at half the capacity
    import pandas as pd

    from orchestrator.results.workload_answer import answer
    fast = capacity_rows("a:x", [1938, 2438, 1938], [2000, 2500, 2000]).assign(check_flags="host-steal,capacity-found")
    slow = capacity_rows("b:y", [969, 1062, 844], [1000, 1094, 875]).assign(
        check_flags=["host-steal,capacity-found", "capacity-found", "capacity-found"])
    table = answer(pd.concat([fast, slow]), "read-mostly", {"core": 0.04, "gib": 0.005})
    assert list(table["place"]) == ["1", "2"] and table.loc[1, "capacity_high_rps"] == 1094
    # a JVM whose deciding failure met steal (or whose overload held above it) has no known ceiling:
    # the copy can then not be placed below
    for flag in ("capacity-failure-spoiled", "capacity-in-doubt"):
        doubted = slow.assign(check_flags=["host-steal,capacity-found", f"capacity-found,{flag}", "capacity-found"])
        table = answer(pd.concat([fast, doubted]), "read-mostly", {"core": 0.04, "gib": 0.005})
        assert list(table["place"]) == ["1", "=1"] and table.loc[1, "capacity_high_rps"] == float("inf"), flag
