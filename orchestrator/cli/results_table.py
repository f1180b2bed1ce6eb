"""A run's measurements as the table `bench run` prints when it ends and `bench results` prints for any
stored run: one line a cell and repeat, its figures, or the reason it failed."""
from __future__ import annotations

from rich import box
from rich.markup import escape
from rich.table import Table

from orchestrator.cli.common import console
from orchestrator.measure.console import level_label


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


def _present(row) -> dict:
    """A results row with NaN turned into None, as level_label expects of an absent rate or step."""
    return {k: (None if isinstance(v, float) and v != v else v) for k, v in row.items()}


def _fmt(value, spec: str) -> str:
    """A figure, or blank where the row has none: a capacity row whose search passed no probe
    carries no window's figures."""
    return "" if value is None or value != value else format(value, spec)
