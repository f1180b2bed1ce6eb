"""`bench list`, `build`, `parity` and `verify`: the targets themselves, before any load is measured.
Each parses its options and calls the catalog, the build and the environment; what a target is and how
it starts lives in config/ and targets/, so these functions only choose and print."""
from __future__ import annotations

import datetime as dt
from typing import Optional

import typer
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.padding import Padding
from rich.table import Table

from orchestrator import RESULTS_DIR
from orchestrator.cli.common import console, parse_settings, select_targets
from orchestrator.cli.typer_options import takes
from orchestrator.config.catalog import discover
from orchestrator.config.option_table import Given
from orchestrator.config.plan import Settings, pool_env
from orchestrator.core.cpus import cpu_count
from orchestrator.errors import UsageError
from orchestrator.report import parity_table
from orchestrator.results import store as results
from orchestrator.targets import parity, verify_all
from orchestrator.targets.environment import Environment

PARITY_COLUMN = 28   # the narrowest a target's column of `bench parity` stays readable at


def list_targets() -> None:
    """Every target (framework:variant) with its concurrency model; a folder whose framework.toml does not
    load is named in one line after them, and the command exits 2."""
    catalog = discover()
    table = Table("target", "server", "scenarios", "concurrency model")
    for fw in catalog.values():
        for v in fw.variants.values():
            table.add_row(f"{fw.name}:{v.name}" + (" *" if v.default else ""), fw.server,
                          ",".join(fw.scenarios), v.description)
    console.print(table)
    console.print("* the default variant")
    for error in catalog.broken.values():
        Console(stderr=True).print(f"[red]error:[/] {escape(str(error))}", highlight=False, soft_wrap=True)
    if catalog.broken:
        raise typer.Exit(UsageError.exit_code)


@takes("build")
def build(force: bool = typer.Option(False, "--force", help="Rebuild even when the sources did not change."),
          *, given: Given) -> None:
    """Build the frameworks (skipped when their sources did not change)."""
    targets = select_targets(given.framework, None)
    logs = RESULTS_DIR / "builds"
    environment = Environment(Settings(), logs, console)
    environment.build_all(targets, force=force)
    if environment.build_failures:
        for name, reason in environment.build_failures.items():
            console.print(f"[red]{name}[/]: {reason}")
        raise typer.Exit(1)


@takes("parity")
def parity_cmd(run: Optional[str] = typer.Argument(None, help="A run id or folder: its targets, with their thread "
                                                    "pools after load (default: the targets, built as needed)."),
               *, given: Given) -> None:
    """What each target runs with: declared pools, keep-alive and backlog, resolved library versions; with a
    run, also its threads by pool after load and its GC. Columns that differ are marked ≠."""
    if run:
        meta = results.RunStore(results.find_run(run, given.results_dir)).meta()
        entries = meta.get("parity") or {}
        if not entries:
            raise UsageError(f"run {run} has no parity table (it was made before runs recorded one)")
    else:
        targets = select_targets(given.framework, given.variant)
        settings = parse_settings(given)
        environment = Environment(settings, RESULTS_DIR / "builds", console)
        environment.build_all(targets)
        entries = {t.id: parity.record(t, pool_env(settings, t)) for t in targets
                   if t.framework.name not in environment.build_failures}
    t = parity_table.table(entries)
    if len(t) * PARITY_COLUMN + PARITY_COLUMN > console.width:
        # more targets than columns of a readable width: one block per property, each value once
        for prop, values in parity_table.by_property(t):
            console.print(f"[bold]{escape(prop)}[/]", soft_wrap=False)
            for value, targets in values:
                console.print(Padding(f"{escape(value or '–')}\n[dim]{escape(', '.join(targets))}[/]", (0, 0, 0, 2)))
    else:
        m = parity_table.matrix(t)
        table = Table(*m.columns, box=box.SIMPLE_HEAD)
        for _, row in m.iterrows():
            table.add_row(*[str(v) for v in row])
        console.print(table)
    console.print("≠: the targets differ in this property")


@takes("verify")
def verify_cmd(load: Optional[int] = typer.Option(None, "--load", help="The load smoke: after verifying, send each "
                                                  "scenario this many requests at once, one per connection (the "
                                                  "studies use 500 to 2,000), each to be answered, then verify "
                                                  "again; no figure is kept."),
               *, given: Given) -> None:
    """Start each target and check every scenario against the contract (no load, unless --load)."""
    verify_all.check_load(load)
    settings = parse_settings(given)
    targets = select_targets(given.framework, given.variant)
    logs = RESULTS_DIR / "verify" / dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    environment = Environment(settings, logs, console)
    beside = verify_all.prepare(environment, targets, settings, load)
    table = Table("target", "result" + (f" (load {load:,})" if load else ""), "startup s", "RSS MiB", "threads seen")
    for leftover in environment.cleanup_leftovers():
        console.print(f"[yellow]removed a leftover of an earlier run:[/] {leftover}")
    outcomes = []
    for i, o in enumerate(verify_all.verify_all(environment, targets, settings, load, logs, beside), 1):
        outcomes.append(o)
        verdict = "[green]ok[/]" if o.ok else "[red]FAILED[/]"
        if not o.started:
            table.add_row(o.target.id, verdict, "", "", "")
            console.print(f"[{i}/{len(targets)}] {o.target.id}: [red]FAILED[/] to start", emoji=False)
            continue
        console.print(f"[{i}/{len(targets)}] {o.target.id}: {verdict}"
                      + (f" at {load:,} connections on {len(o.target.framework.scenarios)} scenarios" if o.loaded else "")
                      + (f", on CPU {','.join(map(str, sorted(o.ran_on)))}" if o.ran_on else "")
                      + (f" (started on CPU {settings.loadgen_cpus} beside the previous target's load)" if o.beside else "")
                      + f" ({o.seconds:.0f} s)", emoji=False)
        table.add_row(o.target.id, verdict, f"{o.startup_s:.2f}" + (" †" if o.beside else ""), f"{o.rss_mb:.0f}",
                      escape(o.threads))
    console.print(table)
    if any(o.beside for o in outcomes):
        console.print(f"† started on the load generator's CPU{'s' if cpu_count(settings.loadgen_cpus) > 1 else ''} "
                      f"({settings.loadgen_cpus}) while the target before it took its bursts, then moved to the "
                      f"server's: a start beside that load is slower than alone (`bench verify` without --load "
                      f"starts each target alone)", soft_wrap=True)
    failures = [o for o in outcomes if not o.ok]
    for o in failures:
        console.print(f"[red]{o.target.id}[/]: {escape(o.reason)}", soft_wrap=True)
    console.print(f"{len(targets) - len(failures)} passed, {len(failures)} failed")
    bursts = ", and the smoke's bursts" if load else ""
    console.print(f"each target's log and checks{bursts}: {logs}", soft_wrap=True, highlight=False)
    if failures:
        raise typer.Exit(1)
