"""`bench run`'s usage rules, checked on RunOptions directly: no command line is started, nothing runs."""
from __future__ import annotations

import inspect
import json

import pytest
from conftest import FIXTURES, asked

from orchestrator import REPO_ROOT
from orchestrator.cli.run_command import run
from orchestrator.config import option_table
from orchestrator.config.catalog import discover, resolve
from orchestrator.errors import UsageError


def test_the_options_are_the_run_command_s_parameters():
    assert {o.name for o in option_table.of("run")} == set(inspect.signature(run).parameters)


@pytest.mark.parametrize("given, message", [
    ({"quick": True}, "--quick goes with --preset"),
    ({"repeat": 0}, "--repeat must be 1 or more"),
    ({"preset": "redis-frameworks", "scenario": "json"}, "--preset chooses the targets, scenarios and profile"),
    ({"preset": "redis-frameworks", "profile": "rate"}, "--preset chooses the targets, scenarios and profile"),
])
def test_options_that_do_not_go_together_are_refused_before_anything_is_read(given, message, tmp_path):
    said = []
    with pytest.raises(UsageError, match=message):
        asked(framework=None, results_dir=tmp_path, **given).plan(discover(FIXTURES), said.append)
    assert not said and not list(tmp_path.iterdir())


def test_a_plan_of_the_targets_and_scenarios_asked_for(tmp_path):
    plan = asked(framework="fixture:ok", scenario="json,plaintext", concurrency="8,16", repeat=2,
                 results_dir=tmp_path).plan(discover(FIXTURES), print)
    assert plan.matrix == {"fixture:ok": ["json", "plaintext"]}
    assert (plan.profile.name, plan.profile.concurrency, plan.repeat) == ("throughput", (8, 16), 2)
    assert not list(tmp_path.iterdir())   # the results folder is only checked to be writable


def test_a_preset_s_quick_form_says_how_much_of_the_study_it_runs(tmp_path):
    said = []
    plan = asked(preset="redis-frameworks", quick=True, results_dir=tmp_path).plan(discover(REPO_ROOT / "frameworks"),
                                                                                  said.append)
    assert plan.preset == "redis-frameworks"
    assert said[0].startswith("preset redis-frameworks: ") and "quick form, a smoke of the preset" in said[-1]


def test_a_preset_of_parts_is_a_run_per_part_each_with_its_own_profile(tmp_path):
    said = []
    cold, overload = asked(preset="cold-start-and-spike", results_dir=tmp_path).plans(
        discover(REPO_ROOT / "frameworks"), said.append)
    assert (cold.preset, overload.preset) == ("cold-start-and-spike:cold", "cold-start-and-spike:overload")
    assert (cold.profile.kind, overload.profile.kind) == ("burst", "capacity")
    # the preset's settings under each part's own: both JVM modes in each, the cold start in the bursts only
    assert cold.settings.jvm_modes == overload.settings.jvm_modes == ("default", "aot-cache")
    assert (cold.settings.starts, overload.settings.starts) == (("warm", "cold"), ("warm",))
    assert "spring-webflux:reactive-parallel+aot-cache+cold" in cold.matrix
    assert (overload.profile.overload, overload.profile.spike_s) == ((1.25, 1.5, 2.0), 10.0)
    assert sum("cold bursts beside warmed ones" in line for line in said) == 1
    assert sum("Studies 001 and 004" in line for line in said) == 1   # how it was scaled: once, not per part
    # one part by name; the quick form's own settings over the part's
    (quick,) = asked(preset="cold-start-and-spike:overload", quick=True, results_dir=tmp_path).plans(
        discover(REPO_ROOT / "frameworks"), said.append)
    assert quick.matrix == {"spring-mvc:platform": ["sleep"]} and quick.settings.jvm_modes == ("default",)
    assert (quick.profile.overload, quick.profile.spike_s, quick.profile.recovery_window_s) == ((2.0,), 2.0, 6.0)
    with pytest.raises(UsageError, match="preset 'cold-start-and-spike' has no part 'warm'; valid: cold, overload"):
        asked(preset="cold-start-and-spike:warm", results_dir=tmp_path).plans(discover(REPO_ROOT / "frameworks"), print)


def test_a_workload_chooses_the_targets_the_mix_and_a_capacity_search_at_its_objective(tmp_path):
    said = []
    plan = asked(workload="read-mostly", results_dir=tmp_path).plan(discover(REPO_ROOT / "frameworks"), said.append)
    assert set(plan.matrix) == {"spring-mvc:platform", "spring-mvc:virtual", "spring-webflux:reactive",
                                "quarkus:reactive", "vertx:eventloop"}
    assert set(map(tuple, plan.matrix.values())) == {("read-mostly",)}
    assert (plan.profile.kind, plan.profile.slo_percentile, plan.profile.slo_ms) == ("capacity", "p99", 50.0)
    mix = plan.scenario("read-mostly")
    assert mix.shares == {"cache-aside": 0.7, "db-read": 0.2, "db-write": 0.1}
    assert [p.objective for p in mix.parts] == [None, None, ("p99", 100.0)]
    assert said[0].startswith("workload read-mostly: A catalogue service") and "70 % cache-aside" in said[1]
    # run.json keeps the mix, and a resumed run makes the same one
    from orchestrator.config.plan import Plan
    again = Plan.from_dict(json.loads(json.dumps(plan.to_dict())))
    vertx = resolve(discover(REPO_ROOT / "frameworks"), "vertx:eventloop")
    assert again.scenario("read-mostly") == mix and again.scenarios_of(vertx) == ["read-mostly"]
    # --slo and --heap stay the user's
    plan = asked(workload="read-mostly", slo="p99=20ms", results_dir=tmp_path).plan(discover(REPO_ROOT / "frameworks"),
                                                                                    said.append)
    assert plan.profile.slo_ms == 20.0


@pytest.mark.parametrize("given, message", [
    ({"workload": "read-mostly", "scenario": "json"}, "--workload chooses the targets, the mix and the profile"),
    ({"workload": "read-mostly", "preset": "redis-frameworks"}, "--workload and --preset each choose"),
    ({"workload": "nope"}, "unknown workload 'nope': neither a shipped one \\(aggregator, read-mostly\\) nor a file"),
])
def test_a_workload_is_refused_with_what_it_replaces(given, message, tmp_path):
    with pytest.raises(UsageError, match=message):
        asked(results_dir=tmp_path, **given).plan(discover(REPO_ROOT / "frameworks"), lambda _: None)


def test_several_heaps_make_each_target_one_per_heap(tmp_path):
    plan = asked(framework="fixture:ok,fixture:pool-16", scenario="json", heap="128m,256m",
                 results_dir=tmp_path).plan(discover(FIXTURES), lambda _: None)
    assert list(plan.matrix) == ["fixture:ok+heap-128m", "fixture:ok+heap-256m", "fixture:pool-16+heap-128m",
                                 "fixture:pool-16+heap-256m"]
    target = resolve(discover(FIXTURES), "fixture:ok+cold+heap-256m")
    assert (target.id, target.heap("512m"), target.cold) == ("fixture:ok+cold+heap-256m", "256m", True)
    assert resolve(discover(FIXTURES), "fixture:ok").heap("512m") == "512m"
    # one heap is the run's, as before: no mode in the ids
    one = asked(framework="fixture:ok", scenario="json", heap="256m", results_dir=tmp_path).plan(discover(FIXTURES),
                                                                                                lambda _: None)
    assert list(one.matrix) == ["fixture:ok"] and one.settings.heap == "256m"
    with pytest.raises(UsageError, match="--heap 256m,256m names a heap twice"):
        asked(framework="fixture:ok", heap="256m,256m", results_dir=tmp_path).plan(discover(FIXTURES), lambda _: None)
    with pytest.raises(UsageError, match="--heap '256' must look like 512m or 2g"):
        asked(framework="fixture:ok", heap="128m,256", results_dir=tmp_path).plan(discover(FIXTURES), lambda _: None)
    with pytest.raises(UsageError, match="unknown mode 'heap-256' of target fixture:ok\\+heap-256"):
        resolve(discover(FIXTURES), "fixture:ok+heap-256")
