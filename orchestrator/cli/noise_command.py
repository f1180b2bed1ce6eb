"""`bench noise`: one target run N times on one scenario and level (A/A), stored as this machine's noise
floor (results/noise.py keeps and reads it)."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from orchestrator import RESULTS_DIR
from orchestrator.cli import common as cli
from orchestrator.config import profiles
from orchestrator.config.catalog import discover, resolve
from orchestrator.config.plan import Plan
from orchestrator.config.scenarios import SCENARIOS, parse_list
from orchestrator.errors import UsageError
from orchestrator.infra import run_lock
from orchestrator.measure import runner
from orchestrator.results import store as results
from orchestrator.results.noise import FLOOR_FILE, describe, record
from orchestrator.results.store import machine_key


def noise_cmd(framework: str = typer.Option(..., "--framework", "-f", help="The target: framework or "
                                            "framework:variant (default variant: the framework's own)."),
              variant: Optional[str] = typer.Option(None, "--variant", "-v", help="Its variant."),
              scenario: str = typer.Option("json", "--scenario", "-s", help="One scenario."),
              concurrency: int = typer.Option(64, "--concurrency", "-c", help="Connections."),
              repeat: int = typer.Option(5, "--repeat", help="Repeats, each in a fresh JVM (2 or more)."),
              duration: str = typer.Option("10s", "--duration", "-d", help="Measured window per repeat."),
              warmup: Optional[str] = typer.Option(None, "--warmup", help="Warm-up window (as in `run`)."),
              warmup_max: Optional[str] = typer.Option(None, "--warmup-max", help="Give up warming up after."),
              server_cpus: Optional[str] = cli.ServerCpus, loadgen_cpus: Optional[str] = cli.LoadgenCpus,
              heap: Optional[str] = cli.HeapOpt, port: int = cli.PortOpt, redis_port: int = cli.RedisPortOpt,
              db_port: int = cli.DbPortOpt, downstream_port: int = cli.DownstreamPortOpt,
              start_timeout: str = cli.StartTimeoutOpt,
              results_dir: Path = typer.Option(RESULTS_DIR, "--results-dir")) -> None:
    """Run one target N times on one scenario and level (A/A) and store this machine's noise floor."""
    if repeat < 2:
        raise UsageError("--repeat must be 2 or more: one repeat has no spread")
    scenarios = parse_list(scenario, list(SCENARIOS), "scenario")
    if len(scenarios) != 1:
        raise UsageError("bench noise measures one scenario")
    target = resolve(discover(), f"{framework}:{variant}" if variant else framework)
    prof = cli.override_profile(profiles.load("throughput"), concurrency=str(concurrency), rate=None, requests=None,
                         workers=None, warmup=warmup, warmup_max=warmup_max, duration=duration, repeat=repeat)
    settings = cli.parse_settings(server_cpus, loadgen_cpus, heap, port, redis_port, db_port,
                             start_timeout=start_timeout, downstream_port=downstream_port)
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
