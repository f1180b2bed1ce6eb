"""`bench run`: build, verify and measure targets under a load profile. The options become a Plan by the
rules in run_options.py (or come from the run folder with --resume); this module prints what the plan
will load and what its repeats can judge, hands it to the runner and prints the rows it stored."""
from __future__ import annotations

import datetime as dt
from pathlib import Path

import typer
from rich.markup import escape

from orchestrator.cli.common import console
from orchestrator.cli.results_table import print_results, print_workload_answer
from orchestrator.cli.run_options import RunOptions, resumed_plan
from orchestrator.cli.typer_options import takes
from orchestrator.config.catalog import discover, resolve
from orchestrator.config.option_table import Given
from orchestrator.config.plan import Plan
from orchestrator.infra import run_lock
from orchestrator.infra.hostinfo import host_info
from orchestrator.measure import runner
from orchestrator.results import compare, judge, noise
from orchestrator.results import store as results


@takes("run")
def run(given: Given) -> None:
    """Build, verify and measure targets under a load profile; every finished cell is stored at once."""
    asked = RunOptions(**vars(given))
    catalog, resume, results_dir = discover(), given.resume, given.results_dir
    if resume:
        store = results.RunStore(results.find_run(resume, results_dir))
        plan = resumed_plan(store)
        console.print(f"resuming {store.run_id}: {len(store.rows)} rows already measured")
        runs = [(plan, store)]
    else:
        runs = [(plan, None) for plan in asked.plans(catalog, console.print)]
    failed = 0
    with run_lock.held(resume):   # before any folder is made: a resumed run is refused while it is live
        for i, (plan, store) in enumerate(runs):
            if len(runs) > 1:
                console.rule(f"part {i + 1} of {len(runs)}: preset {plan.preset}")
            try:
                failed += _measure(plan, store or runner.new_store(root=results_dir), catalog, results_dir)
            except KeyboardInterrupt:
                left = [p.preset for p, _ in runs[i + 1:]]
                if left:
                    console.print(f"not run: {', '.join(left)} (`bench run --preset NAME:PART` runs one part)")
                raise
    if failed:
        raise typer.Exit(1)


def _measure(plan: Plan, store: results.RunStore, catalog: dict, results_dir: Path) -> int:
    """Run the plan into store and print its rows; the number of failed cells."""
    p = plan.profile
    console.print(f"profile {p.name} ({p.kind}, {p.driver}): {p.describe()}, {p.repeat} repeat(s)")
    console.print(f"[dim]{escape(judge_notice(plan, catalog, results_dir))}[/]", soft_wrap=True)
    started = dt.datetime.now()
    failed = runner.execute(plan, store, console, catalog=catalog)
    took = (dt.datetime.now() - started).total_seconds()
    print_results(results.load(store.dir))
    if plan.workload:
        print_workload_answer(results.load(store.dir), plan.workload)
    console.print(f"run {store.run_id}: {len(store.rows)} rows ({failed} failed cells) in {took:.0f} s -> "
                  f"{store.dir / results.MEASUREMENTS}")
    return failed


def judge_notice(plan: Plan, catalog: dict, results_dir: Path) -> str:
    """What the plan's repeats can tell, before it measures: at the noise this machine's floor measured
    on the plan's scenarios (the noisiest), else a typical CV; `bench compare` of two such runs judges
    every cell's rps and p99 at once."""
    cells = [(t, cell) for t in map(lambda t: resolve(catalog, t), plan.targets) for cell in plan.cells(t)]
    scenarios = {cell[0] for _, cell in cells}
    measured = [f.cv for (s, m), f in noise.floors(host_info(), results_dir).items() if m == "rps" and s in scenarios]
    return judge.plan_notice(plan.repeat, len(cells) * len(compare.DEFAULT_METRICS),
                             max(measured) if measured else judge.TYPICAL_CV)
