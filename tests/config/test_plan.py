"""The fast tier's view of a run, without a JVM: the plan and its cells, what is left to measure on
resume, options over a profile, the rows a cell writes, and the order in which the loop's events
reach the store and the console."""
from __future__ import annotations

import io
import json
from dataclasses import fields

import pyarrow.parquet as pq
import pytest
from conftest import FIXTURES
from rich.console import Console

from orchestrator.config import profiles
from orchestrator.config.catalog import discover, resolve
from orchestrator.config.load import LoadResult
from orchestrator.config.plan import Plan, Settings
from orchestrator.core.schema import CELL_KEY, COLUMNS, LATENCY_STATS, latency_column
from orchestrator.errors import UsageError
from orchestrator.measure import rows
from orchestrator.measure.console import ConsoleView
from orchestrator.measure.events import Events
from orchestrator.measure.runner import Run
from orchestrator.measure.sampling import ServerSample
from orchestrator.results.store import MEASUREMENTS, RunStore


@pytest.fixture
def target():
    return resolve(discover(FIXTURES), "fixture:ok")


def plan_of(target, profile="throughput", scenarios=("plaintext",), **changes) -> Plan:
    return Plan(matrix={target.id: list(scenarios)}, profile=profiles.load(profile).with_overrides(**changes))


def test_cells_run_every_scenario_at_every_level_and_a_ramp_writes_a_row_per_step(target):
    plan = plan_of(target, scenarios=("json", "db-read", "plaintext"), concurrency=(8, 64))
    # in the order asked, a scenario the target does not serve left out
    assert plan.cells(target) == [("json", 8, None, None), ("json", 64, None, None), ("plaintext", 8, None, None),
                                  ("plaintext", 64, None, None)]
    assert len(plan_of(target, scenarios=()).cells(target)) == 6   # none asked: every one it serves
    ramp = plan_of(target, "ramp")
    (cell,) = ramp.cells(target)
    keys = ramp.row_keys(target, 1, cell)
    assert len(keys) == ramp.profile.ramp.steps and [k[5] for k in keys] == list(range(1, len(keys) + 1))


def test_resume_measures_only_what_is_missing_with_repeats_interleaved(target):
    plan = plan_of(target, concurrency=(8, 64), repeat=2)
    every = plan.todo([target], done=set())
    assert [(r, cell[1]) for r, _, cell in every] == [(1, 8), (1, 64), (2, 8), (2, 64)]
    done = set(plan.row_keys(target, 1, ("plaintext", 64, None, None)))
    assert [(r, cell[1]) for r, _, cell in plan.todo([target], done)] == [(1, 8), (2, 8), (2, 64)]


def test_repeats_run_in_rounds_in_a_fresh_seeded_order_that_survives_run_json_and_resume():
    catalog = discover(FIXTURES)
    targets = [t for t in catalog_targets(catalog)]
    ids = [t.id for t in targets]
    plan = Plan(matrix={t: ["plaintext"] for t in ids}, profile=profiles.load("throughput").with_overrides(repeat=8),
                seed=7)
    assert len(ids) >= 3 and len(plan.rounds) == 8 and all(sorted(r) == sorted(ids) for r in plan.rounds)
    assert len({tuple(r) for r in plan.rounds}) > 1                     # a fresh order per round
    assert plan.rounds == plan.draw_rounds(7) != plan.draw_rounds(8)   # reproducible from the seed
    order = [(r, t.id) for r, t, _ in plan.todo(targets, done=set())]
    assert order == [(r, tid) for r, rnd in enumerate(plan.rounds, 1) for tid in rnd]
    again = Plan.from_dict(json.loads(json.dumps(plan.to_dict())))   # run.json, read back by --resume
    assert (again.seed, again.rounds) == (7, plan.rounds)
    assert [(r, t.id) for r, t, _ in again.todo(targets, done=set())] == order
    # a run.json written before rounds: the plan's order, round after round
    old = {k: v for k, v in plan.to_dict().items() if k not in ("seed", "rounds")}
    assert Plan.from_dict(old).rounds == [ids] * 8


def catalog_targets(catalog) -> list:
    """Every variant of the fixture catalog, as targets: enough for an order to shuffle."""
    return [resolve(catalog, f"{name}:{v}") for name, fw in catalog.items() for v in fw.variants]


def test_a_plan_survives_run_json_and_an_old_run_json_is_a_throughput_plan(target):
    plan = plan_of(target, "rate", rates=(100, 200))
    plan.settings = Settings(heap="128m", db_pool_size=4)
    again = Plan.from_dict(plan.to_dict())
    assert again == plan
    old = Plan.from_dict({"targets": [target.id], "concurrency": [16], "duration_s": 3, "warmup_s": 1,
                          "repeat": 2, "settings": {"heap": "256m", "gone": 1}})
    assert old.profile.kind == "throughput" and old.profile.concurrency == (16,) and old.settings.heap == "256m"


def test_options_override_a_profile_and_those_its_kind_has_no_use_for_are_refused():
    burst = profiles.load("burst")
    assert burst.with_overrides(concurrency=(10,), requests=50).requests == 50
    with pytest.raises(UsageError, match="--requests 5 is fewer than the largest concurrency 10"):
        burst.with_overrides(concurrency=(10,), requests=5)
    with pytest.raises(UsageError, match="--rate does not apply to the burst profile 'burst'"):
        burst.with_overrides(rates=(100,))
    ramp = profiles.load("ramp").with_overrides(workers=2, warmup_s=0.0)
    assert ramp.ramp.workers == 2 and ramp.warmup_s == 0.0
    with pytest.raises(UsageError, match="--duration does not apply to the ramp profile"):
        ramp.with_overrides(duration_s=3.0)


def test_every_latency_statistic_of_the_schema_is_a_field_of_a_load_result():
    assert {f"latency_{k}" for k in LATENCY_STATS} <= {f.name for f in fields(LoadResult)}


def test_a_measured_row_fills_the_schema_from_the_window_and_a_failed_row_says_why(target):
    plan = plan_of(target, concurrency=(8,))
    base = rows.identity(plan, "run-1", target, 1, "plaintext")
    r = LoadResult(requests=3000, duration_s=3.0, latency_mean=8.0, latency_p99=20.0, loadgen_cpu_s=1.5)
    smp = ServerSample(cpu_s=1.5, wall_s=3.0, peak_rss_bytes=100 * 2**20, peak_threads=20, collector="Serial")
    row = rows.measured({**base, "concurrency": 8, "rate": None, "warmup_s": 4.0}, r, smp, ["not-steady"])
    assert set(row) <= set(COLUMNS)
    assert row["rps"] == 1000 and row["server_cpu_pct"] == 50 and row["server_peak_rss_mb"] == 100
    assert row[latency_column("p99")] == 20.0 and row["littles_ratio"] == pytest.approx(1.0)
    assert row["loadgen_cpu_pct"] == 50 and row["check_flags"] == "not-steady" and row["warmup_s"] == 4.0
    (failed,) = rows.failed(plan, base, ("plaintext", 8, None, None), "target exited with 1")
    assert failed["status"] == "failed" and failed["reason"] == "target exited with 1" and failed["requests"] == 0
    assert failed.get("warmup_s") is None   # no warm-up ran


def test_a_cell_is_on_disk_before_the_console_shows_it_and_failed_cells_are_counted(target, tmp_path):
    plan = plan_of(target, concurrency=(8, 64))
    store = RunStore(tmp_path / "run-1")
    store.create({"run_id": "run-1"})
    events, out = Events(), io.StringIO()
    seen_on_disk = []
    events.cell_failed.add_listener(lambda rows: store.add(rows))
    events.cell_failed.add_listener(lambda rows: seen_on_disk.append(pq.read_table(store.dir / MEASUREMENTS).num_rows))
    with ConsoleView(Console(file=out, width=200), events) as view:
        events.run_started.fire(cells=2)
        failed = Run(plan, store, None, events)._fail(target, 1, plan.cells(target), "no 200 on /health")
        assert view.progress.tasks[0].completed == 2
    assert failed == 2 and seen_on_disk == [1, 2]
    assert {tuple(r[k] for k in CELL_KEY) for r in store.rows} == set(
        k for cell in plan.cells(target) for k in plan.row_keys(target, 1, cell))
    assert out.getvalue().count("FAILED fixture:ok plaintext") == 2
