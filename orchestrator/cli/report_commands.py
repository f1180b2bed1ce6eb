"""`bench results`, `bench report` and `bench compare`: the commands that read stored runs. They parse,
call results/ and report/ (the measurements, the report files, the comparison and its judgement) and
print; none measures, so none needs a target, a load generator or the infrastructure."""
from __future__ import annotations

import math
from typing import List, Optional

import typer
from rich import box
from rich.table import Table

from orchestrator.cli.common import console
from orchestrator.cli.results_table import print_results, print_workload_answer
from orchestrator.cli.typer_options import takes
from orchestrator.config.option_table import Given
from orchestrator.errors import UsageError
from orchestrator.report import network as network_report
from orchestrator.report import run_report
from orchestrator.results import compare, judge, noise
from orchestrator.results import store as results
from orchestrator.results.analysis import fmt, level_column
from orchestrator.results.store import machine_key

VERDICT_STYLE = {"broke": "bold red", "worse": "red", "better": "green", "~": "dim", "?": "yellow"}


@takes("results")
def results_cmd(run_id: Optional[str] = typer.Argument(None, help="Run id (default: the newest run)."),
                *, given: Given) -> None:
    """Print the measurements of a run."""
    results_dir = given.results_dir
    d = results.find_run(run_id, results_dir)
    meta = results.load_meta(d)
    console.print(f"run {d.name}, started {meta.get('started_at')}, {meta.get('status')}, "
                  f"commit {meta.get('git_commit', '')[:12]}")
    for w in meta.get("warnings", []):
        console.print(f"[yellow]warning:[/] {w}")
    df = results.load(d)
    print_results(df)
    served = (meta.get("plan") or {}).get("workload")
    if served:
        print_workload_answer(df, served)


@takes("report")
def report_cmd(runs: Optional[List[str]] = typer.Argument(None, help="Run ids or folders (default: the newest run)."),
               x: Optional[str] = typer.Option(None, "--x", help="The load-level column of sweeps (default: rate "
                                               "for a rate profile, else concurrency)."),
               *, given: Given) -> None:
    """Write report.html (self-contained) and report.md (PNGs beside it) into each run folder."""
    results_dir = given.results_dir
    for run in runs or [None]:
        html_path, md_path = run_report.build(run, results_dir, x)
        console.print(f"{html_path}\n{md_path}", soft_wrap=True)


@takes("compare")
def compare_cmd(run_a: str = typer.Argument(..., help="The baseline run."),
                run_b: str = typer.Argument(..., help="The run to judge against it."),
                fail_on_regression: Optional[float] = typer.Option(
                    None, "--fail-on-regression", metavar="PCT",
                    help="Exit 1 when a cell's rps dropped or p99 rose by more than PCT % beyond the noise, "
                         "or a cell that ran in RUN_A broke in RUN_B: some or all of its repeats failed, or it "
                         "newly answered errors or died."),
                alpha: float = typer.Option(0.05, "--alpha", help="Family-wise significance level (Holm)."),
                force: bool = typer.Option(False, "--force", help="Compare runs made with different drivers, "
                                           "pinning, heap, runtime or machines."),
                *, given: Given) -> None:
    """The same cells of two runs side by side: the change, and whether it is beyond the run-to-run noise."""
    results_dir = given.results_dir
    dirs = [results.find_run(r, results_dir) for r in (run_a, run_b)]
    metas = [results.load_meta(d) for d in dirs]
    differs = compare.setup_differences(*metas)
    if differs and not force:
        raise UsageError(f"{dirs[0].name} and {dirs[1].name} differ in {'; '.join(differs)}: their figures "
                         f"are not comparable (--force compares them anyway)")
    # each network level compared as a scenario of its own
    a, b = (network_report.by_level(results.load(d)) for d in dirs[:2])
    x = level_column(a)
    # One machine's floor says nothing of another's noise: with two machines, the repeats alone.
    floor = {} if differs else noise.floors(metas[0].get("host", {}), results_dir)
    cmp = compare.compare_runs(a, b, alpha=alpha, x=x, noise=floor)
    if differs:
        console.print(f"[yellow]compared anyway (--force), although they differ in {'; '.join(differs)}[/]",
                      soft_wrap=True)
    console.print(_comparison_table(cmp, x, dirs[0].name, dirs[1].name))
    counts = cmp["verdict"].value_counts()
    source = (f"the repeats, and for cells of fewer than {judge.OWN_NOISE} the noise floor of "
              f"{machine_key(metas[0]['host'])} measured on their own scenario and metric"
              if floor else "the repeats")
    console.print(f"{len(cmp)} comparisons: {counts.get('broke', 0)} broke, {counts.get('worse', 0)} worse, "
                  f"{counts.get('better', 0)} better, "
                  f"{counts.get('~', 0)} within the noise (~), {counts.get('?', 0)} without a verdict (?). "
                  f"Welch's t on the logarithms of the repeats (orchestrator/results/judge.py), p adjusted by "
                  f"Holm-Bonferroni over the {int(cmp['p_value'].notna().sum())} comparisons with a p-value, "
                  f"family-wise alpha {alpha}; ± is the largest distance of a repeat from the median; MDE is "
                  f"the smallest change these repeats could detect (power 0.8, noise: {source}), needs the "
                  f"repeats a side a {compare.NEEDS_PCT:g}% change needs: ~ is not proof of no change; flagged "
                  f"cells (⚠) count as regressions only where B broke (failed repeats, or newly errors or a dead "
                  f"server), or where their only flag is host-steal and B stays worse even given back all the "
                  f"time the host stole from it (a rate divided by the share left, a latency less the time "
                  f"stolen in the window: steal cannot explain that loss).", soft_wrap=True)
    if fail_on_regression is None:
        return
    bad = compare.regressions(cmp, fail_on_regression)
    for _, r in bad.iterrows():
        what = r["note"] if r["note"] else f"{r['worse_pct']:.1f}% worse (Holm-adjusted p={r['p_adjusted']:.3f})"
        console.print(f"[red]regression:[/] {r['scenario']} {r['target']} {x} {r[x]:g} "
                      f"{r['metric']}: {what}", soft_wrap=True)
    if len(bad):
        raise typer.Exit(1)
    console.print(f"no regression beyond {fail_on_regression:g}%")


def _comparison_table(cmp, x: str, name_a: str, name_b: str) -> Table:
    """compare_runs's rows as the console shows them: a cell's sides, change, what could be seen, verdict."""
    table = Table("scenario", "target", "rate" if x == "rate" else "conc", "metric", f"A {name_a}",
                  f"B {name_b}", "delta", "MDE", "needs", "p", "p adj", "verdict", box=box.SIMPLE_HEAD,
                  pad_edge=False)
    for _, r in cmp.iterrows():
        style = VERDICT_STYLE[r["verdict"]]
        verdict = r["note"] if r["verdict"] in ("?", "broke") else f"{r['bound']} {r['verdict']}".strip()
        table.add_row(r["scenario"], r["target"], f"{r[x]:g}", r["metric"],
                      _side(r["a_median"], r["a_spread_pct"], r["a_n"]),
                      _side(r["b_median"], r["b_spread_pct"], r["b_n"]),
                      "" if math.isnan(r["delta_pct"]) else f"{r['delta_pct']:+.1f}%",
                      "" if math.isnan(r["mde_pct"]) else f"{r['mde_pct']:.0f}%", f"{r['needs']}",
                      "" if math.isnan(r["p_value"]) else f"{r['p_value']:.3f}",
                      "" if math.isnan(r["p_adjusted"]) else f"{r['p_adjusted']:.3f}",
                      f"[{style}]{verdict}[/]" + (f" [yellow]⚠ {r['check_flags']}[/]" if r["check_flags"] else "")
                      + (f" [dim]({r['left_out']})[/]" if r["left_out"] else ""))
    return table


def _side(median: float, spread: float, n: int) -> str:
    """One run's side of a comparison: its median, the spread of its repeats and how many; – for none."""
    if math.isnan(median):
        return "–"
    return fmt(median) + ("" if math.isnan(spread) else f" ±{spread:.0f}%") + f" n={n}"
