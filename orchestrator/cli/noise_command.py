"""`bench noise`: one target run N times on one scenario and level (A/A), stored as this machine's noise
floor (results/noise.py keeps and reads it)."""
from __future__ import annotations

from pathlib import Path

import typer

from orchestrator.cli import common as cli
from orchestrator.cli.typer_options import takes
from orchestrator.config import profiles
from orchestrator.config.catalog import discover, resolve
from orchestrator.config.option_table import Given
from orchestrator.config.plan import Plan
from orchestrator.config.scenarios import SCENARIOS, parse_list
from orchestrator.errors import UsageError
from orchestrator.infra import run_lock
from orchestrator.measure import runner
from orchestrator.results import store as results
from orchestrator.results.noise import FLOOR_FILE, describe, record
from orchestrator.results.store import machine_key


@takes("noise")
def noise_cmd(*, given: Given) -> None:
    """Run one target N times on one scenario and level (A/A) and store this machine's noise floor."""
    framework, variant, scenario, concurrency = given.framework, given.variant, given.scenario, given.concurrency
    repeat, results_dir = given.repeat, given.results_dir
    if repeat < 2:
        raise UsageError("--repeat must be 2 or more: one repeat has no spread")
    scenarios = parse_list(scenario, list(SCENARIOS), "scenario")
    if len(scenarios) != 1:
        raise UsageError("bench noise measures one scenario")
    target = resolve(discover(), f"{framework}:{variant}" if variant else framework)
    prof = cli.override_profile(profiles.load("throughput"), given)
    settings = cli.parse_settings(given)
    plan = Plan(matrix={target.id: scenarios}, profile=prof, settings=settings)
    if not plan.scenarios_of(target):
        raise UsageError(f"{target.id} does not serve {scenario} "
                         f"(it serves {', '.join(target.framework.scenarios)})")
    cli.check_writable(results_dir)
    with run_lock.held():
        store = runner.new_store(root=results_dir)
        cli.console.print(f"noise: {target.id} on {scenario} at {concurrency} connections, {repeat} fresh JVMs, "
                          f"{prof.duration_s:g} s windows")
        if runner.execute(plan, store, cli.console):
            cli.console.print(f"[red]failed repeats in run {store.run_id}: no noise floor stored[/]")
            raise typer.Exit(1)
        e = record(results.load(store.dir), store.meta(), results_dir)
    cli.console.print(f"noise floor of {machine_key(e)}: {describe(e)}" +
                      (f"; {e['flagged']} flagged repeat(s) included" if e["flagged"] else ""), soft_wrap=True)
    cli.console.print("CV per metric: " + ", ".join(f"{m} {100 * c:.1f}%" for m, c in e["cv"].items()) +
                      f" -> {Path(results_dir) / FLOOR_FILE}", soft_wrap=True)
