"""The report's section for a workload's run (`bench run --workload`): the answer table
(results/workload_answer.py) and a chart of each target's capacity against the cost of a million
requests, first in the report, before the capacity search's own tables."""
from __future__ import annotations

from typing import TYPE_CHECKING

from orchestrator import lazy
from orchestrator.report.capacity import span
from orchestrator.results.workload_answer import answer, objective_searched

pd = lazy.module("pandas")
figure = lazy.module("matplotlib.figure")
if TYPE_CHECKING:
    from matplotlib.figure import Figure

COLUMNS = {"place": "place", "target": "target", "repeats": "repeats", "capacity_rps": "capacity req/s",
           "across": "across JVMs", "rps_per_core": "req/s per core", "rps_per_gib": "req/s per GiB",
           "server_cpu_pct": "server CPU %", "rss_mb": "RSS MiB", "cost_per_million": "cost of 1M requests",
           "heap": "heap", "smallest_heap": "smallest heap at its best capacity"}


def answer_table(df: pd.DataFrame, workload: dict) -> pd.DataFrame:
    """The answer as the report shows it: figures formatted, the interval across JVMs in words."""
    table = answer(df, workload["name"], workload["prices"])
    if table.empty:
        return table
    table["across"] = [span(lo, hi) for lo, hi in zip(table["capacity_low_rps"], table["capacity_high_rps"])]
    formats = {"capacity_rps": "{:,.0f}", "rps_per_core": "{:,.0f}", "rps_per_gib": "{:,.0f}",
               "server_cpu_pct": "{:.0f}", "rss_mb": "{:.0f}", "cost_per_million": "{:.4f}"}
    for column, spec in formats.items():
        table[column] = table[column].map(lambda v, s=spec: s.format(v) if v == v and v is not None else "")
    return table[list(COLUMNS)].rename(columns=COLUMNS)


def cost_chart(df: pd.DataFrame, workload: dict, colors: dict) -> Figure | None:
    """Each target's capacity (its interval across JVMs as an error bar) against the cost of a million
    requests at that capacity: up and to the left is more for less."""
    table = answer(df, workload["name"], workload["prices"]).dropna(subset=["capacity_rps", "cost_per_million"])
    if table.empty:
        return None
    fig = figure.Figure(figsize=(8, 4.6), dpi=110, layout="constrained")
    ax = fig.subplots()
    for _, r in table.iterrows():
        color = colors.get(r["target"], "k")
        low, high = r["capacity_low_rps"], r["capacity_high_rps"]
        if low == low and high == high and high != float("inf"):
            ax.errorbar(r["cost_per_million"], r["capacity_rps"], yerr=[[r["capacity_rps"] - low], [high - r["capacity_rps"]]],
                        fmt="none", ecolor=color, elinewidth=1, capsize=3)
        ax.plot(r["cost_per_million"], r["capacity_rps"], "o", color=color, label=r["target"], ms=7)
    prices = workload["prices"]
    ax.set_xlabel(f"cost of a million requests (server CPU and memory at {prices['core']:g} a core-hour, "
                  f"{prices['gib']:g} a GiB-hour)")
    ax.set_ylabel("capacity (req/s at the objective)")
    ax.set_title(f"{workload['name']}: capacity against cost (bars: the interval across JVMs)")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    return fig


def text(df: pd.DataFrame, workload: dict) -> str:
    examples = " (examples: the file set no prices)" if workload.get("prices_are_examples") else ""
    return (f"{workload.get('description', '')}. Each target's capacity for this mix at {objective_searched(df, workload)} "
            f"(and each scenario's own objective), the median of its repeats, and the interval its JVMs support "
            f"together; a place is shared (=N) where these repeats cannot tell a target from the one above it. "
            f"At that capacity: requests per CPU-second of the server, requests per second per GiB of its peak "
            f"resident memory, the server's CPU, and the cost of a million requests at "
            f"{workload['prices']['core']:g} a core-hour and {workload['prices']['gib']:g} a GiB-hour{examples}: the "
            f"server process's CPU and memory only, not licences, the load balancer or the database's own cores "
            f"(docs/workloads.md). Each scenario of the mix has its own rows (MIX/NAME) in the tables below.")
