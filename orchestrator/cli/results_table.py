"""A run's measurements as the table `bench run` prints when it ends and `bench results` prints for any
stored run: one line a cell and repeat, its figures, or the reason it failed; and a workload's answer."""
from __future__ import annotations

from rich import box
from rich.markup import escape
from rich.table import Table

from orchestrator.cli.common import console
from orchestrator.measure.console import level_label
from orchestrator.report.capacity import span
from orchestrator.results.workload_answer import answer, objective_searched


def print_results(df) -> None:
    """The rows of results.load, one table line each; a failed cell shows its reason instead of figures."""
    table = Table("target", "scenario", "load", "rep", "rps", "p50 ms", "p99 ms", "errors", "cpu %", "RSS MiB",
                  "threads", "GC ms", "flags / reason", box=box.SIMPLE_HEAD, pad_edge=False)
    for col in table.columns:
        col.no_wrap = True
    table.columns[-1].max_width = 40
    for _, r in df.iterrows():
        cells = [r["target"], r["scenario"], level_label(_present(r)), str(r["repeat"])]
        if r["status"] != "ok":
            table.add_row(*cells, *[""] * 8, f"[red]{escape(str(r['reason']).splitlines()[0][:70])}[/]")
            continue
        errors = sum(r[c] for c in ("errors_connect", "errors_read", "errors_write", "errors_timeout", "errors_status"))
        table.add_row(*cells, _fmt(r["rps"], ",.0f"), _fmt(r["latency_p50_ms"], ".2f"),
                      _fmt(r["latency_p99_ms"], ".2f"), _fmt(errors, ".0f"), _fmt(r["server_cpu_pct"], ".0f"),
                      _fmt(r["server_peak_rss_mb"], ".0f"),
                      _fmt(r["server_peak_threads"], ".0f"), _fmt(r["gc_time_ms"], ".0f"),
                      f"[yellow]{r['check_flags']}[/]" if r["check_flags"] else "")
    console.print(table)


def print_workload_answer(df, workload: dict) -> None:
    """The workload's answer (results/workload_answer.py): a line per target, best capacity first."""
    table = answer(df, workload["name"], workload["prices"])
    if table.empty:
        return
    prices = workload["prices"]
    heaps = table["smallest_heap"].astype(bool).any()
    out = Table("place", "target", "capacity req/s", "across JVMs", "req/s per core", "req/s per GiB",
                "server CPU %", "RSS MiB", f"cost of 1M requests ({prices['core']:g}/core-h, {prices['gib']:g}/GiB-h)",
                *(["smallest heap at its best"] if heaps else []),
                box=box.SIMPLE_HEAD, pad_edge=False,
                title=f"workload {workload['name']}: capacity at {objective_searched(df, workload)}")
    for _, r in table.iterrows():
        out.add_row(r["place"], r["target"], _fmt(r["capacity_rps"], ",.0f"),
                    span(r["capacity_low_rps"], r["capacity_high_rps"]), _fmt(r["rps_per_core"], ",.0f"),
                    _fmt(r["rps_per_gib"], ",.0f"), _fmt(r["server_cpu_pct"], ".0f"), _fmt(r["rss_mb"], ".0f"),
                    _fmt(r["cost_per_million"], ".4f"), *([r["smallest_heap"]] if heaps else []))
    console.print(out)
    console.print("[dim]place: =N where the capacities of these repeats overlap (one target is above another only "
                  "where every JVM of it reached a rate every JVM of the other failed at); cost: the server's CPU and "
                  "memory at capacity, nothing else (docs/workloads.md)"
                  + ("; the file set no prices: these are examples" if workload.get("prices_are_examples") else "") + "[/]")


def _present(row) -> dict:
    """A results row with NaN turned into None, as level_label expects of an absent rate or step."""
    return {k: (None if isinstance(v, float) and v != v else v) for k, v in row.items()}


def _fmt(value, spec: str) -> str:
    """A figure, or blank where the row has none: a capacity row whose search passed no probe
    carries no window's figures."""
    return "" if value is None or value != value else format(value, spec)
