"""The report's charts: throughput, latency percentiles, sweeps, server resources, startup, a ramp's
time series and a comparison's deltas, each a matplotlib Figure.

Figures are made without pyplot, so this module sets no global backend and a notebook can show the
same figures the report embeds. Every chart gives a target the same colour and the same row.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from orchestrator import lazy
from orchestrator.report.labels import cells_at, metric_title, target_label
from orchestrator.results import analysis
from orchestrator.results.analysis import PLOTTED_PERCENTILES, fmt

pd = lazy.module("pandas")
# matplotlib (with NumPy) doubled the time `bench --help` took: the CLI names the report, only a chart draws
matplotlib = lazy.module("matplotlib")
figure = lazy.module("matplotlib.figure")
lines = lazy.module("matplotlib.lines")
ticker = lazy.module("matplotlib.ticker")
if TYPE_CHECKING:
    from matplotlib.figure import Figure

WIDTH_IN, DPI = 10.0, 100  # 1000 px wide: reads on a laptop without zooming
FAILED_COLOR = "#c62828"
RESOURCE_METRICS = ["server_cpu_pct", "server_peak_rss_mb", "server_peak_threads", "gc_time_ms"]
MARKERS = dict(zip(PLOTTED_PERCENTILES, "os^D"))
LEGEND_NOTE = ("✗ failed  ·  ⚠ flagged or partly failed: hatched or hollow, never crowned  ·  "
               "whiskers: min–max over repeats")


def target_colors(targets) -> dict[str, tuple]:
    """A colour per target, by sorted name: the same target has the same colour in every chart of a run."""
    targets = sorted(set(targets))
    names = ["tab10"] if len(targets) <= 10 else ["tab20", "tab20b"]
    palette = [c for name in names for c in matplotlib.colormaps[name].colors]
    return {t: palette[i % len(palette)] for i, t in enumerate(targets)}


def _figure(rows: int, panels: int = 1, height_per_row: float = 0.32, sharey=True, title: str = ""):
    height = 1.6 + height_per_row * max(rows, 2)
    fig = figure.Figure(figsize=(WIDTH_IN, height), dpi=DPI, layout="constrained")
    axes = fig.subplots(1, panels, sharey=sharey, squeeze=False)[0]
    fig.suptitle(title, fontweight="bold")
    return fig, axes


def _hbars(ax, cells: pd.DataFrame, metric: str, colors: dict, title: str) -> None:
    """One horizontal bar per target: the median, whiskers from min to max, failed cells named."""
    for i, r in cells.iterrows():
        value = r[metric]
        if r["state"] == "failed" or pd.isna(value):
            ax.text(0, i, " failed" if r["state"] == "failed" else " n/a", va="center", fontsize=8,
                    color=FAILED_COLOR if r["state"] == "failed" else "grey")
            continue
        clean = r["state"] == "ok"
        ax.barh(i, value, color=colors[r["target"]], alpha=1 if clean else 0.5, hatch=None if clean else "//",
                edgecolor="black" if not clean else colors[r["target"]], linewidth=0.5)
        top = value
        if r["ok"] > 1:
            lo, hi = r[f"{metric}_min"], r[f"{metric}_max"]
            ax.errorbar(value, i, xerr=[[value - lo], [hi - value]], fmt="none", ecolor="black", capsize=3, lw=1)
            top = hi
        ax.text(top, i, " " + fmt(value), va="center", fontsize=8)
    ax.set_yticks(range(len(cells)), [target_label(r) for _, r in cells.iterrows()])
    ax.set_ylim(len(cells) - 0.5, -0.5)  # first target at the top
    ax.set_title(title, fontsize=10)
    ax.margins(x=0.18)
    ax.grid(axis="x", alpha=0.3)


def throughput_chart(summ: pd.DataFrame, scenario: str, colors: dict, x: str = "concurrency") -> Figure:
    """Throughput by target, one panel per load level: median bar, min–max whiskers over repeats."""
    levels = analysis.x_levels(summ, scenario, x)
    n = len(cells_at(summ, scenario, x, levels[0], colors))
    fig, axes = _figure(n, len(levels), title=f"{scenario}: throughput (req/s, higher is better)")
    for ax, level in zip(axes, levels):
        _hbars(ax, cells_at(summ, scenario, x, level, colors), "rps", colors, f"{x} {level}")
        ax.set_xlabel("req/s")
    fig.supxlabel(LEGEND_NOTE, fontsize=8, color="dimgrey")
    return fig


def _log_if_wide(ax, values, axis: str = "x", ratio: float = 10) -> None:
    values = [v for v in values if v and v > 0 and not pd.isna(v)]
    if values and max(values) / min(values) > ratio:
        (ax.set_xscale if axis == "x" else ax.set_yscale)("log")
        scale = ax.xaxis if axis == "x" else ax.yaxis
        # 1, 2, 5, 10, 20 ... in plain numbers: powers of ten in math text overlap and take a moment to read
        scale.set_major_locator(ticker.LogLocator(subs=(1, 2, 5)))
        scale.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        scale.set_minor_formatter(ticker.NullFormatter())


def latency_chart(summ: pd.DataFrame, scenario: str, colors: dict, x: str = "concurrency") -> Figure:
    """p50, p90, p99 and p99.9 per target on one line each, one panel per load level, log scale when wide."""
    levels = analysis.x_levels(summ, scenario, x)
    n = len(cells_at(summ, scenario, x, levels[0], colors))
    fig, axes = _figure(n, len(levels), title=f"{scenario}: latency percentiles (ms, lower is better)")
    seen = []
    for ax, level in zip(axes, levels):
        cells = cells_at(summ, scenario, x, level, colors)
        for i, r in cells.iterrows():
            values = [r[c] for c in PLOTTED_PERCENTILES.values()]
            if r["state"] == "failed":
                ax.text(0.01, i, "failed", va="center", fontsize=8, color=FAILED_COLOR,
                        transform=ax.get_yaxis_transform())
                continue
            color, clean = colors[r["target"]], r["state"] == "ok"
            ax.plot(values, [i] * len(values), color=color, lw=2, alpha=0.4)
            for v, marker in zip(values, MARKERS.values()):
                ax.plot(v, i, marker, color=color, mfc=color if clean else "white", ms=7)
            seen += values
        ax.set_yticks(range(len(cells)), [target_label(r) for _, r in cells.iterrows()])
        ax.set_ylim(len(cells) - 0.5, -0.5)
        ax.set_title(f"{x} {level}", fontsize=10)
        ax.set_xlabel("ms")
        ax.grid(axis="x", which="both", alpha=0.3)
    for ax in axes:
        _log_if_wide(ax, seen)
    handles = [lines.Line2D([], [], marker=m, color="dimgrey", ls="", label=p) for p, m in MARKERS.items()]
    fig.legend(handles=handles, loc="outside right upper", fontsize=8)
    fig.supxlabel(LEGEND_NOTE, fontsize=8, color="dimgrey")
    return fig


def sweep_chart(summ: pd.DataFrame, scenario: str, colors: dict, x: str = "concurrency") -> Figure | None:
    """Throughput and p99 against the load level (x: concurrency, later users or rate); None for one level."""
    levels = analysis.x_levels(summ, scenario, x)
    if len(levels) < 2:
        return None
    fig = figure.Figure(figsize=(WIDTH_IN, 4.2), dpi=DPI, layout="constrained")
    axes = fig.subplots(1, 2)
    fig.suptitle(f"{scenario}: throughput and p99 latency against {x}", fontweight="bold")
    cells = summ[summ["scenario"] == scenario]
    for ax, metric in zip(axes, ["rps", "latency_p99_ms"]):
        for target, color in colors.items():
            t = cells[cells["target"] == target].sort_values(x)
            ran = t["state"] != "failed"
            if not ran.any():
                continue
            ax.plot(t[x], t[metric].where(ran), "-", color=color, label=target, lw=2)
            ax.fill_between(t[x], t[f"{metric}_min"], t[f"{metric}_max"], color=color, alpha=0.15, lw=0)
            for _, r in t[ran].iterrows():
                ax.plot(r[x], r[metric], "o", color=color, mfc=color if r["state"] == "ok" else "white")
        ax.set_title(metric_title(metric), fontsize=10)
        ax.set_xlabel(x)
        ax.grid(alpha=0.3, which="both")
        if metric != "rps":
            _log_if_wide(ax, cells[metric], axis="y")
        if ax.get_yscale() == "linear":  # from zero: an axis that starts elsewhere turns 5 % into a cliff
            ax.set_ylim(0, ax.get_ylim()[1] * 1.08)
        if levels[0] > 0 and levels[-1] / levels[0] >= 8:
            ax.set_xscale("log", base=2)
            ax.set_xticks(levels, [str(v) for v in levels])
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside right upper", fontsize=8)
    fig.supxlabel("lines: median over repeats; bands: min–max; hollow: flagged or partly failed",
                  fontsize=8, color="dimgrey")
    return fig


def resources_chart(summ: pd.DataFrame, scenario: str, colors: dict, x: str = "concurrency") -> Figure:
    """Server CPU, peak RSS, peak threads and GC time by target, at the scenario's highest load level."""
    level = analysis.x_levels(summ, scenario, x)[-1]
    cells = cells_at(summ, scenario, x, level, colors)
    fig, axes = _figure(len(cells), len(RESOURCE_METRICS),
                        title=f"{scenario}: server resources at {x} {level} (lower is better)")
    for ax, metric in zip(axes, RESOURCE_METRICS):
        _hbars(ax, cells, metric, colors, metric_title(metric))
    fig.supxlabel(LEGEND_NOTE, fontsize=8, color="dimgrey")
    return fig


def startup_chart(df: pd.DataFrame, colors: dict) -> Figure:
    """Time to the first good response and RSS after start, per target, over the JVM starts."""
    starts = analysis.startup(df)
    starts = starts.set_index("target").reindex([t for t in colors if t in set(starts["target"])]).reset_index()
    fig, axes = _figure(len(starts), 2, title="startup: time to first response and RSS after start (lower is better)")
    for ax, metric in zip(axes, ["startup_s", "rss_after_start_mb"]):
        _hbars(ax, starts, metric, colors, metric_title(metric))
    return fig


def timeseries_chart(ts: pd.DataFrame, scenario: str, colors: dict) -> Figure:
    """Users, throughput, failures and p95 over time for a ramp profile, one line per target and repeat."""
    panels = [("users", "users"), ("rps", "req/s"), ("failures_per_s", "failures/s"), ("p95_ms", "p95 latency (ms)")]
    fig = figure.Figure(figsize=(WIDTH_IN, 8), dpi=DPI, layout="constrained")
    axes = fig.subplots(len(panels), 1, sharex=True)
    fig.suptitle(f"{scenario}: over time", fontweight="bold")
    data = ts[ts["scenario"] == scenario]
    for ax, (column, unit) in zip(axes, panels):
        for (target, repeat), t in data.groupby(["target", "repeat"]):
            first = repeat == data.loc[data["target"] == target, "repeat"].min()
            ax.plot(t["t_s"], t[column], color=colors.get(target, "grey"), lw=1.5, label=target if first else None)
        ax.set_ylabel(unit)
        ax.grid(alpha=0.3)
    axes[-1].set_xlabel("time since the start of the cell (s)")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside right upper", fontsize=8)
    return fig


def delta_chart(cmp: pd.DataFrame, metric: str = "rps", x: str = "concurrency") -> Figure:
    """A run comparison (compare.compare_runs) as one dot per cell: B's change against A in %.

    Red: worse beyond the noise, green: better beyond it, grey: within it, hollow: no verdict.
    """
    rows = cmp[cmp["metric"] == metric].reset_index(drop=True)
    fig, axes = _figure(len(rows), title=f"{metric_title(metric)}: change from A to B")
    ax = axes[0]
    colors = {"worse": FAILED_COLOR, "better": "#2e7d32", "~": "grey", "?": "grey"}
    for i, r in rows.iterrows():
        ax.plot(r["delta_pct"], i, "o", ms=8, color=colors[r["verdict"]],
                mfc="white" if r["verdict"] == "?" else colors[r["verdict"]])
    ax.axvline(0, color="black", lw=0.8)
    ax.set_yticks(range(len(rows)), [f"{r['scenario']} · {r['target']} · {x} {r[x]}" for _, r in rows.iterrows()])
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlabel("change of the median, B vs A (%)")
    ax.grid(axis="x", alpha=0.3)
    fig.supxlabel("red: worse beyond the noise · green: better beyond it · grey: within it · hollow: no verdict",
                  fontsize=8, color="dimgrey")
    return fig
