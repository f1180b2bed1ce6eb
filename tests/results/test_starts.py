"""How targets start: modes in the target id, the cold form's time to the warm figure, and the AOT
cache against the default start, on made-up rows (no JVM; test_aot_cache.py runs real ones)."""
from __future__ import annotations

import dataclasses

import pandas as pd
import pytest
from conftest import FIXTURES, asked

from orchestrator.config.catalog import discover, resolve
from orchestrator.config.load import LoadResult
from orchestrator.config.modes import AOT_TRAINING, with_modes
from orchestrator.errors import UsageError
from orchestrator.infra.docker_engine import remote_address
from orchestrator.results import claims, starts
from orchestrator.targets import aot_cache
from orchestrator.targets.runtimes.base import Mount
from orchestrator.targets.runtimes.docker import DockerRuntime
from orchestrator.targets.runtimes.process import ProcessRuntime


def test_a_target_id_carries_its_modes_in_one_order():
    catalog = discover(FIXTURES)
    t = resolve(catalog, "fixture:ok+cold+aot-cache")
    assert (t.id, t.base_id, t.jvm_mode, t.cold, t.slug) == (
        "fixture:ok+aot-cache+cold", "fixture:ok", "aot-cache", True, "fixture-ok-aot-cache-cold")
    assert resolve(catalog, "fixture").id == "fixture:ok"
    with pytest.raises(UsageError, match="unknown mode 'hot' of target fixture:ok\\+hot; valid: aot-cache, cold"):
        resolve(catalog, "fixture:ok+hot")
    assert list(with_modes({"a:x": ["json"]}, ("default", "aot-cache"), ("warm", "cold"))) == [
        "a:x", "a:x+cold", "a:x+aot-cache", "a:x+aot-cache+cold"]


@pytest.mark.parametrize("given, message", [
    ({"start": "cold", "profile": "capacity"}, "--start cold meets one window .* not capacity"),
    ({"start": "tepid"}, "tepid"),
    ({"jvm_mode": "graal"}, "graal"),
])
def test_modes_a_run_cannot_measure_are_usage_errors(given, message, tmp_path):
    with pytest.raises(UsageError, match=message):
        asked(framework="fixture:ok", results_dir=tmp_path, **given).plan(discover(FIXTURES), print)


@pytest.mark.parametrize("docker_host", ["", "ssh://bench@198.18.255.254"])
def test_the_aot_cache_runs_in_containers_of_this_machine_s_engine_only(docker_host, tmp_path, monkeypatch):
    """The cache is trained into the run's folder and mounted from it: another machine's engine has neither."""
    monkeypatch.setenv("DOCKER_HOST", docker_host)
    remote_address.cache_clear()   # read once a process
    options = asked(framework="fixture:ok", jvm_mode="aot-cache", runtime="docker", results_dir=tmp_path)
    try:
        if docker_host:
            with pytest.raises(UsageError, match=r"aot-cache needs the Docker engine on this machine: .*\(198.18.255.254\)"):
                options.plan(discover(FIXTURES), print)
        else:
            assert list(options.plan(discover(FIXTURES), print).matrix) == ["fixture:ok+aot-cache"]
    finally:
        remote_address.cache_clear()


def test_a_run_of_both_modes_and_starts_measures_each_target_four_ways(tmp_path):
    plan = asked(framework="fixture:ok", scenario="json", profile="burst", jvm_mode="default,aot-cache",
                 start="warm,cold", results_dir=tmp_path).plan(discover(FIXTURES), print)
    assert list(plan.matrix) == ["fixture:ok", "fixture:ok+cold", "fixture:ok+aot-cache", "fixture:ok+aot-cache+cold"]
    assert (plan.settings.jvm_modes, plan.settings.starts) == (("default", "aot-cache"), ("warm", "cold"))


def test_answers_per_second_are_counted_by_when_they_ended():
    r = LoadResult(requests=5, duration_s=2.5, started_at=100.0, answered_at=[100.1, 100.9, 101.0, 102.2, 102.6])
    assert r.answered_per_second() == [2, 1, 2]   # the last one, past the window's 2.5 s, in its last second
    assert LoadResult(requests=1, duration_s=1.0).answered_per_second() is None


def _row(target, repeat, rps, **more):
    return {"run_id": "r", "target": target, "scenario": "cpu", "network": None, "concurrency": 200, "rate": None,
            "repeat": repeat, "status": "ok", "rps": rps, "latency_p99_ms": 50.0, "check_flags": "",
            "jvm_mode": "aot-cache" if "+aot-cache" in target else "default",
            "start": "cold" if "+cold" in target else "warm", **more}


def test_a_cold_cell_reaches_the_warm_figure_at_the_end_of_its_first_second_above_ninety_percent():
    df = pd.DataFrame([_row("a:x", 1, 1000.0, startup_s=2.0), _row("a:x", 2, 1040.0, startup_s=2.0),
                       _row("a:x+cold", 1, 600.0, startup_s=2.1, since_launch_s=3.0, jit_time_ms=900.0, duration_s=3.5),
                       _row("a:x+cold", 2, 500.0, startup_s=2.2, since_launch_s=3.5, jit_time_ms=950.0, duration_s=4.0)])
    ts = pd.DataFrame([{"target": "a:x+cold", "scenario": "cpu", "repeat": rep, "t_s": t, "rps": v}
                       for rep, series in ((1, [200, 600, 950, 990]), (2, [100, 300, 500, 700]))
                       for t, v in enumerate(series)])
    cold = starts.cold_starts(df, ts).set_index("repeat")
    # warm: the median of 1,000 and 1,040; 90 % of it is 918, first reached in second 2 of repeat 1
    assert cold.loc[1, "warm_rps"] == 1020.0 and cold.loc[1, "time_to_share_s"] == 3.0 + 2 + 1
    assert cold.loc[1, "best_share"] == pytest.approx(990 / 1020)
    # repeat 2 never got there: no time, and how close it came
    assert pd.isna(cold.loc[2, "time_to_share_s"]) and cold.loc[2, "best_share"] == pytest.approx(700 / 1020)
    assert starts.jvm_modes(df, ts).empty   # one JVM mode: nothing to compare
    # a window that ends inside the second that got there: the time runs to the window's end
    short = starts.cold_starts(df.assign(duration_s=2.5), ts).set_index("repeat")
    assert short.loc[1, "time_to_share_s"] == 3.0 + 2.5


def test_the_aot_cache_is_judged_against_the_default_start_by_the_repeats_noise():
    rows = [_row("a:x", i, 1000.0 + 10 * i, startup_s=s, rss_after_start_mb=300.0)
            for i, s in enumerate([8.0, 8.2, 7.9], 1)]
    rows += [_row("a:x+aot-cache", i, rps, startup_s=s, rss_after_start_mb=330.0 + i)
             for i, (s, rps) in enumerate([(4.0, 1035.0), (4.1, 995.0), (3.9, 1015.0)], 1)]
    modes = starts.jvm_modes(pd.DataFrame(rows), None).set_index("figure")
    assert modes.loc["startup_s", "verdict"] == "better"
    assert modes.loc["startup_s", "change_pct"] == pytest.approx(100 * (4.0 / 8.0 - 1))
    assert modes.loc["rps", "verdict"] == "within noise" and modes.loc["rss_after_start_mb", "verdict"] == "worse"
    assert "time_to_share_s" not in modes.index   # no cold cells


def test_a_claim_is_judged_in_each_mode_of_its_target():
    df = pd.DataFrame([_row("a:x", 1, 1000.0, jfr_platform_threads_busy=200),
                       _row("a:x+cold", 1, 400.0, jfr_platform_threads_busy=220)])
    claim = {"claim": "It uses many threads.", "target": "a:x", "scenario": "cpu", "figure": "rps",
             "evidence": "threads-on-cpu", "holds": ">= 100"}
    said = [claims.sentence(row) for row in claims.judged(df, [claim])]
    assert [s.split(" Here: ")[1].split(" on ")[0] for s in said] == ["a:x", "a:x+cold"]


def test_a_container_s_jvm_is_given_the_cache_and_its_class_log_where_they_are_mounted(tmp_path):
    target, log = resolve(discover(FIXTURES), "fixture:ok+aot-cache"), tmp_path / "logs" / "t.classes.log"
    trains, written = aot_cache.jvm_options(dataclasses.replace(target, modes=(AOT_TRAINING,)), tmp_path, log,
                                            DockerRuntime().path)
    opts, mounts = aot_cache.jvm_options(target, tmp_path, log, DockerRuntime().path)
    assert trains[1:] == ["-XX:AOTCacheOutput=/aot/fixture-ok.aot"] and written[1] == Mount(tmp_path / "aot", "/aot", True)
    assert opts == ["-Xlog:class+load=info:file=/logs/classes.log::filecount=0", "-XX:AOTCache=/aot/fixture-ok.aot",
                    "-XX:AOTMode=on"]
    # the class log written, the cache only read once trained
    assert mounts == (Mount(log, "/logs/classes.log", writable=True), Mount(tmp_path / "aot", "/aot", writable=False))
    # a local JVM is given the files themselves
    opts, _ = aot_cache.jvm_options(target, tmp_path, None, ProcessRuntime().path)
    assert opts[0] == f"-XX:AOTCache={tmp_path}/aot/fixture-ok.aot"


def test_a_class_loading_log_is_counted_by_where_each_class_came_from(tmp_path):
    log = tmp_path / "t.classes.log"
    log.write_text("[0.050s][info][class,load] java.lang.Object source: shared objects file\n"
                   "[0.161s][info][class,load] org.Foo source: shared objects file (top)\n"
                   "[0.2s][info][class,load] org.Bar source: file:/app/lib/bar.jar\n"
                   "[0.3s][info][class,load] jdk.proxy1.$Proxy8 source: __dynamic_proxy__\n")
    assert aot_cache.class_counts(log) == {"classes_loaded": 4, "classes_from_cache": 2}
    assert aot_cache.class_counts(tmp_path / "none.log") == {}
