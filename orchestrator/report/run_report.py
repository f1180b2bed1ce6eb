"""The report of a run: report.html (self-contained, images inline) and report.md (images beside it).

Charts are matplotlib Figures made without pyplot, so this module sets no global backend and a
notebook can show the same figures. Every chart gives a target the same colour and the same row.
"""
from __future__ import annotations

import base64
import html
import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator import RESULTS_DIR
from orchestrator.results import analysis, claims, judge, store as results
from orchestrator.report import capacity as capacity_report, network as network_report
from orchestrator import lazy
from orchestrator.targets import parity
from orchestrator.results import noise as noise_mod
from orchestrator.results.analysis import METRICS, PLOTTED_PERCENTILES, fmt
from orchestrator.errors import UsageError
from orchestrator.report.why import WHY_TEXT, Link, why_table
from orchestrator.results.schema import NEAR_CEILING, percentile_label

np = lazy.module("numpy")
pd = lazy.module("pandas")
# matplotlib (with NumPy) doubled the time `bench --help` took: the CLI names this module, only a chart draws
matplotlib = lazy.module("matplotlib")
figure = lazy.module("matplotlib.figure")
lines = lazy.module("matplotlib.lines")
ticker = lazy.module("matplotlib.ticker")
if TYPE_CHECKING:
    from matplotlib.figure import Figure

TIMESERIES = results.TIMESERIES
WIDTH_IN, DPI = 10.0, 100  # 1000 px wide: reads on a laptop without zooming
FAILED_COLOR = "#c62828"
TABLE_METRICS = ["rps", "latency_mean_ms", "latency_p50_ms", "latency_p90_ms", "latency_p95_ms", "latency_p99_ms",
                 "latency_p999_ms", "mb_received", "bytes_per_response", "server_cpu_pct", "cpu_ms_per_req",
                 "server_peak_rss_mb", "server_peak_threads", "gc_time_ms"]
WINNER_METRICS = ["rps", "latency_p50_ms", "latency_p99_ms", "cpu_ms_per_req", "server_peak_rss_mb"]
RESOURCE_METRICS = ["server_cpu_pct", "server_peak_rss_mb", "server_peak_threads", "gc_time_ms"]
MARKERS = dict(zip(PLOTTED_PERCENTILES, "os^D"))
MARKS = {"failed": "✗", "partial": "⚠", "flagged": "⚠", "ok": ""}
LEGEND_NOTE = ("✗ failed  ·  ⚠ flagged or partly failed: hatched or hollow, never crowned  ·  "
               "whiskers: min–max over repeats")


# ---- numbers and labels -------------------------------------------------------------------------

def metric_title(metric: str) -> str:
    m = METRICS[metric]
    return f"{m.label} ({m.unit}) {'↑' if m.higher_is_better else '↓'}" if m.unit else \
        f"{m.label} {'↑' if m.higher_is_better else '↓'}"


def target_colors(targets) -> dict[str, tuple]:
    """A colour per target, by sorted name: the same target has the same colour in every chart of a run."""
    targets = sorted(set(targets))
    names = ["tab10"] if len(targets) <= 10 else ["tab20", "tab20b"]
    palette = [c for name in names for c in matplotlib.colormaps[name].colors]
    return {t: palette[i % len(palette)] for i, t in enumerate(targets)}


def _label(row) -> str:
    mark = MARKS[row["state"]]
    return f"{row['target']} {mark}" if mark else row["target"]


def _cells(summ: pd.DataFrame, scenario: str, x: str, level, colors: dict) -> pd.DataFrame:
    """The summary rows of one scenario and load level, in the stable target order."""
    cells = summ[(summ["scenario"] == scenario) & (summ[x] == level)]
    return cells.set_index("target").reindex([t for t in colors if t in set(cells["target"])]).reset_index()


# ---- charts -------------------------------------------------------------------------------------

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
    ax.set_yticks(range(len(cells)), [_label(r) for _, r in cells.iterrows()])
    ax.set_ylim(len(cells) - 0.5, -0.5)  # first target at the top
    ax.set_title(title, fontsize=10)
    ax.margins(x=0.18)
    ax.grid(axis="x", alpha=0.3)


def throughput_chart(summ: pd.DataFrame, scenario: str, colors: dict, x: str = "concurrency") -> Figure:
    """Throughput by target, one panel per load level: median bar, min–max whiskers over repeats."""
    levels = analysis.x_levels(summ, scenario, x)
    n = len(_cells(summ, scenario, x, levels[0], colors))
    fig, axes = _figure(n, len(levels), title=f"{scenario}: throughput (req/s, higher is better)")
    for ax, level in zip(axes, levels):
        _hbars(ax, _cells(summ, scenario, x, level, colors), "rps", colors, f"{x} {level}")
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
    n = len(_cells(summ, scenario, x, levels[0], colors))
    fig, axes = _figure(n, len(levels), title=f"{scenario}: latency percentiles (ms, lower is better)")
    seen = []
    for ax, level in zip(axes, levels):
        cells = _cells(summ, scenario, x, level, colors)
        for i, r in cells.iterrows():
            values = [r[c] for c in PLOTTED_PERCENTILES.values()]
            if r["state"] == "failed":
                ax.text(0.01, i, "failed", va="center", fontsize=8, color=FAILED_COLOR, transform=ax.get_yaxis_transform())
                continue
            color, clean = colors[r["target"]], r["state"] == "ok"
            ax.plot(values, [i] * len(values), color=color, lw=2, alpha=0.4)
            for v, marker in zip(values, MARKERS.values()):
                ax.plot(v, i, marker, color=color, mfc=color if clean else "white", ms=7)
            seen += values
        ax.set_yticks(range(len(cells)), [_label(r) for _, r in cells.iterrows()])
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
    cells = _cells(summ, scenario, x, level, colors)
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


# ---- tables: DataFrames of display strings, for the report and for notebooks --------------------

def _value(row, metric: str) -> str:
    if row["state"] == "failed":
        return "✗ failed"
    text = fmt(row[metric])
    if row["state"] == "partial":
        return f"{text} ✗ {row['ok']}/{row['repeats']} ran"
    return f"{text} ⚠ {row['flags']}" if row["state"] == "flagged" else text


def _pct(value: float) -> str:
    return f"{value:+.{0 if abs(value) >= 10 else 1}f}%"


def _lead(lead: pd.Series, unit: str) -> str:
    if pd.isna(lead["diff_pct"]):
        return "–"
    return f"{_pct(lead['diff_pct'])} ({'+' if lead['diff_abs'] >= 0 else '-'}{fmt(abs(lead['diff_abs']), unit)})"


def _interval(lead: pd.Series) -> str:
    return "–" if pd.isna(lead["ci_low_pct"]) else f"{_pct(lead['ci_low_pct'])} to {_pct(lead['ci_high_pct'])}"


def _mde(lead: pd.Series) -> str:
    return "–" if pd.isna(lead["mde_pct"]) else f"{lead['mde_pct']:.{0 if lead['mde_pct'] >= 10 else 1}f}%"


def comparison_table(summ: pd.DataFrame, scenario: str, level, x: str = "concurrency",
                     metrics: list[str] = TABLE_METRICS, noise: dict | None = None) -> pd.DataFrame:
    """metric | one column per target | difference (best vs runner-up, % and absolute) | its 95 % interval |
    MDE (the smallest difference these repeats could detect) | better.

    Medians over repeats; failed cells read "✗ failed", flagged ones carry "⚠" and their flags, and
    neither is ever "better". `noise`: the machine's noise floor (analysis.leaders).
    """
    cells = _cells(summ, scenario, x, level, target_colors(summ["target"]))
    leads = analysis.leaders(cells, metrics, x, noise).set_index("metric")
    rows = []
    for metric in metrics:
        lead = leads.loc[metric]
        verdict, why = lead["verdict"], lead["why"]
        better = lead["best"] if verdict == "crowned" else f"inconclusive: {why}" if verdict == "inconclusive" else why
        rows.append([metric_title(metric), *[_value(r, metric) for _, r in cells.iterrows()],
                     _lead(lead, METRICS[metric].unit), _interval(lead), _mde(lead), better])
    return pd.DataFrame(rows, columns=["metric", *cells["target"], "difference", "95% interval", "MDE", "better"])


EVIDENCE = {"redis_commands_per_request": "Redis cmds / req", "db_selects_per_request": "SELECTs / req",
            "db_inserts_per_request": "INSERTs / req", "db_prepares_per_request": "PREPAREs / req",
            "redis_peak_clients": "peak Redis clients", "db_peak_connections": "peak DB connections",
            "db_peak_running": "peak statements running", "tcp_listen_overflows": "listen overflows",
            "tcp_retransmits": "TCP retransmits"}


def evidence_table(df: pd.DataFrame, scenario: str, x: str = "concurrency") -> pd.DataFrame | None:
    """What Redis, MariaDB and the kernel counted per target and level (medians over the repeats that
    ran): the work per request the contract asks for, the peaks of the pools, lost connections.
    None for runs made before the backends were sampled."""
    ran = df[(df["scenario"] == scenario) & (df["status"] == "ok")]
    cols = [c for c in EVIDENCE if c in ran and ran[c].notna().any()]
    if ran.empty or not cols:
        return None
    table = ran.groupby(["target", x], sort=True)[cols].median().reset_index()
    for c in cols:
        table[c] = table[c].map(lambda v: "" if pd.isna(v) else f"{v:.2f}" if c.endswith("_request") else f"{v:,.0f}")
    return table.rename(columns=EVIDENCE)


def winner_text(lead: pd.Series) -> str:
    """One lead of analysis.leaders in words, with its interval and MDE."""
    if lead["verdict"] == "no clean cell":
        return "no clean cell"
    if pd.isna(lead["runner_up"]):
        return f"{lead['best']} ({lead['why']})" if lead["verdict"] == "crowned" else \
            f"inconclusive: {lead['best']} is {lead['why']}"
    vs = f"{_pct(lead['diff_pct'])} vs {lead['runner_up']}"
    mde = "" if pd.isna(lead["mde_pct"]) else f"; MDE {_mde(lead)}"
    if lead["verdict"] == "crowned":
        return f"{lead['best']}: {vs} (95% CI {_interval(lead)}{mde})"
    if lead["verdict"] == "within noise":
        return f"{lead['why']}: {lead['best']}, {lead['runner_up']} ({_pct(lead['diff_pct'])}{mde})"
    return f"inconclusive: {lead['best']} {vs}, but {lead['why']}"


def winners_matrix(summ: pd.DataFrame, x: str = "concurrency", metrics: list[str] = WINNER_METRICS,
                   noise: dict | None = None) -> pd.DataFrame:
    """Scenario (and load level) x metric: the best clean target, its lead over the runner-up and whether
    that is beyond the noise (analysis.leaders; `noise` the machine's noise floor)."""
    leads = analysis.leaders(summ, metrics, x, noise)
    rows = {}
    for _, lead in leads.iterrows():
        rows.setdefault((lead["scenario"], lead[x]), {})[metric_title(lead["metric"])] = winner_text(lead)
    table = pd.DataFrame.from_dict(rows, orient="index")
    return table.rename_axis(["scenario", x]).reset_index() if len(table) else table


def not_crowned(summ: pd.DataFrame, x: str = "concurrency") -> pd.DataFrame:
    """The cells that are never crowned, and why: failed (the reason), partly failed, or flagged."""
    bad = summ[~summ["eligible"]]
    why = np.where(bad["state"] == "flagged", bad["flags"], bad["reason"])
    return pd.DataFrame({"scenario": bad["scenario"], x: bad[x], "target": bad["target"],
                         "state": [f"{MARKS[s]} {s}" for s in bad["state"]], "why": why})


# ---- the document -------------------------------------------------------------------------------

@dataclass
class Chart:
    name: str
    title: str
    png: bytes


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", str(text).lower()).strip("-")


def _measured(prof: dict) -> str:
    """What a cell of the profile measures: a window, a number of requests, or the steps of a ramp."""
    if prof.get("kind") == "burst":
        return f"{prof.get('requests', 0):,} requests per cell"
    if prof.get("kind") == "ramp" and prof.get("ramp"):
        r = prof["ramp"]
        return f"{r['steps']} steps of {r['step_s']:g} s from {r['start_users']} users, +{r['step_users']} per step"
    return f"{prof.get('duration_s', '?')} s measured"


def _facts(meta: dict, df: pd.DataFrame) -> str:
    plan, host = meta.get("plan", {}), meta.get("host", {})
    s = plan.get("settings", {})
    # Runs before profiles existed kept the profile's fields in the plan itself.
    prof = plan.get("profile") if isinstance(plan.get("profile"), dict) else {**plan, "name": plan.get("profile")}
    parts = [f"started {meta.get('started_at', '?')}", meta.get("status", ""),
             f"preset {plan['preset']}" if plan.get("preset") else "",
             f"{host.get('cpu_model', '?')}, {host.get('cores', '?')} cores",
             f"JDK {meta.get('jdk', {}).get('version', '?')}",
             f"server CPUs {s.get('server_cpus', '?')}, load generator CPUs {s.get('loadgen_cpus', '?')}",
             f"heap {s.get('heap', '?')}, {s.get('runtime', '?')} runtime",
             f"profile {prof.get('name', '?')} ({prof.get('kind', 'throughput')}, "
             f"{prof.get('driver', s.get('driver', '?'))})",
             f"warm-up windows of {prof.get('warmup_s', '?')} s until steady, {_measured(prof)}, "
             f"{prof.get('repeat', '?')} repeat(s)",
             f"{len(df)} cells, {int((df['status'] != 'ok').sum())} failed",
             f"commit {str(meta.get('git_commit', ''))[:12]}"]
    return " · ".join(p for p in parts if p)


def _floor_note(entry: dict | None, host: dict) -> str:
    machine = noise_mod.machine_key(host)
    if not entry:
        return (f"No noise floor measured on this run's machine ({machine}): a lead rests on its repeats "
                f"alone, and a single repeat crowns nothing (`bench noise` measures one).")
    return (f"Noise floor on this run's machine ({machine}): {noise_mod.describe(entry)}. A floor widens only "
            f"cells of its own scenario and metric with fewer than {judge.OWN_NOISE} repeats; elsewhere it "
            f"is context, and a cell is judged by its own repeats.")


def _ceiling_note(meta: dict) -> str:
    """The generator ceilings the run was flagged against (run.json, from `bench calibrate`)."""
    ceilings = meta.get("generator_ceilings") or {}
    if not ceilings:
        return ("No generator ceiling was calibrated on this run's machine: a cell near what its generator can "
                "send at all is not flagged (`bench calibrate` measures each generator against nginx).")
    each = ", ".join(f"{name} {fmt(rps)} req/s" for name, rps in sorted(ceilings.items()))
    return (f"Generator ceilings on this run's machine (`bench calibrate`, against nginx): {each}. A cell above "
            f"{NEAR_CEILING:.0%} of its generator's ceiling is flagged near-generator-ceiling: it may measure the "
            f"generator rather than the target.")


def warnings(meta: dict) -> list[str]:
    """What the run warned of, and each target whose framework.toml leaves a parity field out."""
    return [*meta.get("warnings", []),
            *(f"{t} declares no {', '.join(fields)} in its framework.toml's [parity]: a limit there is unknown, so "
              f"its figures may not compare with the others'" for t, fields in parity.undeclared(meta.get("parity") or {}).items())]


def parity_blocks(meta: dict) -> list[tuple]:
    """The parity table of the run (run.json), the columns in which targets differ marked ≠."""
    entries = meta.get("parity") or {}
    if not entries:
        return []
    t = parity.table(entries)
    diff = parity.differing(t)
    return [("h2", "Parity: what each target runs with"),
            ("p", "Declared in each framework.toml (pools, keep-alive, backlog), resolved by Maven for the build "
                  "(library versions), and observed after each target's load (`jcmd Thread.print`: platform "
                  "threads by pool, the largest first; GC and heap). Properties marked ≠ differ between targets: "
                  + ("; ".join(diff) if diff else "none") + "."),
            ("table", parity.matrix(t))]


def _sections(df: pd.DataFrame, meta: dict, ts: pd.DataFrame | None, x: str,
              floor: dict | None = None, cvs: dict | None = None) -> list[tuple]:
    """The report as a list of blocks ("h2" | "p" | "table" | "chart", content), rendered twice.
    floor: the newest noise-floor entry of the run's machine (noise.entry), or None; cvs: its floors
    by scenario and metric (noise.floors)."""
    colors = target_colors(df["target"])
    blocks: list[tuple] = [("facts", _facts(meta, df))]
    warned = warnings(meta)
    if warned:
        blocks.append(("warn", warned))

    def chart(name, fig, title):
        if fig is not None:
            blocks.append(_chart_block(name, fig, title))

    network = network_report.describe(meta)
    if network:
        blocks.append(("p", network))
    order = network_report.levels(meta)
    if order:
        blocks += [("h2", "Across network levels"),
                   ("p", "Every cell was measured at each level of the link that varies, the link reshaped in "
                         "place between levels (the JVM kept running). Median over the repeats [min-max]; the "
                         "last row is the round trip probed when each level began. A target overtakes another "
                         "when it is behind beyond the noise of the repeats at the first level and ahead beyond "
                         "it at a later one, by the rule that crowns (orchestrator/judge.py).")]
        for scenario in sorted(set(df.loc[df["network"].notna(), "scenario"])):
            t = network_report.table(df, scenario, order)
            if t is not None:
                blocks += [("h3", f"{scenario} by network level"), ("table", t),
                           *(("p", s) for s in network_report.verdicts(df, scenario, order, meta))]
    raw, df = df, network_report.by_level(df)   # every later table keeps the levels apart
    probes, capacity, df = capacity_report.split(df)
    if len(capacity) or len(probes):
        blocks += _capacity_blocks(probes, capacity, meta, colors)
        if df.empty:
            blocks.append(("h2", "Startup"))
            chart("startup", startup_chart(capacity, colors), "startup")
            return blocks
    summ = analysis.summary(df, x)
    if summ.empty:
        return blocks + [("p", "No cells were measured.")]
    blocks += [("h2", "Winners"),
               ("p", "The best target per scenario and metric among clean cells (every repeat ran, no "
                     "self-check flag), and how far it leads the runner-up. ↑ higher is better, ↓ lower is "
                     "better; figures are medians over repeats. A target is crowned only when the 95% "
                     "interval of its lead (Welch's t on the logarithms of the repeats, each a fresh JVM; "
                     "orchestrator/judge.py) excludes a tie; otherwise the lead is within noise, ± the "
                     "interval's half-width, with the repeats a side a lead that large needs. MDE is the "
                     "smallest lead these repeats could have detected (power 0.8): within noise is no proof "
                     "of equality, and more repeats lower it. A level where a flagged or partly failed cell "
                     "did better than the best clean one is inconclusive, and so is a lead with too few "
                     "repeats to have a noise (it names the repeats it needs)."),
               ("p", _floor_note(floor, meta.get("host", {}))),
               ("p", _ceiling_note(meta)),
               ("table", winners_matrix(summ, x, noise=cvs))]
    bad = not_crowned(summ, x)
    if len(bad):
        blocks += [("h2", "Cells not crowned"), ("table", bad)]
    told = (meta.get("plan") or {}).get("claims") or []
    if told:
        blocks += [("h2", "The study's claims, re-tested"),
                   ("p", "Each claim of the study this preset reruns, its figure as measured here, and the "
                         "evidence recorded in the same cells that tests the study's explanation (medians over "
                         "the repeats; the condition is the preset's, in orchestrator/presets/)."),
                   *(("p", text) for text in claims.sentences(raw, told, x))]
    blocks += parity_blocks(meta)

    for scenario in sorted(summ["scenario"].unique()):
        blocks.append(("h2", f"Scenario: {scenario}"))
        if ts is not None and scenario in set(ts["scenario"]):
            chart(f"{scenario}-timeseries", timeseries_chart(ts, scenario, colors), f"{scenario} over time")
        if not analysis.x_levels(summ, scenario, x):
            blocks.append(("p", f"No {x} recorded for {scenario}: no per-level charts or tables."))
            continue
        chart(f"{scenario}-throughput", throughput_chart(summ, scenario, colors, x), f"{scenario} throughput")
        chart(f"{scenario}-latency", latency_chart(summ, scenario, colors, x), f"{scenario} latency")
        chart(f"{scenario}-sweep", sweep_chart(summ, scenario, colors, x), f"{scenario} against {x}")
        chart(f"{scenario}-resources", resources_chart(summ, scenario, colors, x), f"{scenario} resources")
        for level in analysis.x_levels(summ, scenario, x):
            blocks += [("h3", f"{scenario} at {analysis.level_name(df, x)} {level:g}"),
                       ("table", comparison_table(summ, scenario, level, x, noise=cvs))]
        why = why_table(df, scenario, x)
        if why is not None:
            blocks += [("h3", f"{scenario}: why, from Flight Recorder"), ("p", WHY_TEXT), ("table", why)]
        evidence = evidence_table(df, scenario, x)
        if evidence is not None:
            blocks += [("h3", f"{scenario}: what the backends and the kernel counted"),
                       ("p", "Per request in the measured window, from Redis's and MariaDB's own counters, "
                             "and the peaks of their connections and of statements running at once; TCP "
                             "counters from the kernel. The contract: one MGET for redis, one SELECT for "
                             "db-read, one INSERT for db-write, nothing elsewhere, no PREPARE per request."),
                       ("table", evidence)]
    blocks.append(("h2", "Startup"))
    chart("startup", startup_chart(df, colors), "startup")
    return blocks


def _chart_block(name: str, fig: Figure, title: str) -> tuple:
    return "chart", Chart(f"report-{_slug(name)}.png", title, _png(fig))


def _capacity_blocks(probes: pd.DataFrame, capacity: pd.DataFrame, meta: dict, colors: dict) -> list[tuple]:
    """The capacity section, first in the report: the table, the cost per request, a chart per scenario."""
    percentile, common_rate = capacity_report.objective_of(meta.get("plan", {}).get("profile") or {})
    label = percentile_label(percentile)
    slos = "; ".join(sorted(f"{s}: {o}" for s, o in capacity.groupby("scenario")["slo"].first().items()))
    blocks = [("h2", "Capacity at the objective"),
              ("p", f"The highest arrival rate each target sustains with the objective met ({slos}): an open "
                    f"model (k6 constant-arrival-rate, no coordinated omission), searched from {common_rate:g} "
                    f"req/s by doubling, then bisection. A rate passes when {label} is within the bound, failed "
                    f"and dropped arrivals are within the error budget and the rate offered is achieved; a pass "
                    f"within 10 % of the bound is probed twice. Each cell is the interval the capacity lies in: "
                    f"the highest rate that passed – the lowest that failed. Where the generator could offer no "
                    f"more (its CPUs saturated, or above the highest rate `bench calibrate` measured k6 to keep "
                    f"here in an open model: {_open_ceiling(meta)}) only a lower bound is known: "
                    f"\"≥ rate (generator limit)\". Every probe is a row of measurements.parquet."),
              ("table", capacity_report.capacity_table(capacity)),
              ("p", "With repeats, each a fresh JVM, a cell also gives the interval they support together "
                    "(from the lowest capacity any JVM reached to the highest rate at which any failed), and "
                    "one target has more capacity than another only where its interval lies wholly above the "
                    "other's" + "".join(f"; {line}" for line in capacity_report.ordering(capacity)) + "."),
              ("h3", f"Cost per request at the common rate ({common_rate:g} req/s) and at capacity"),
              ("p", "At the common rate every target does the same work, so CPU per request and memory compare "
                    "directly; at capacity, requests per CPU-second is what one fully busy core serves at that "
                    "cost, and req/s per MiB of peak RSS is the throughput density."),
              ("table", capacity_report.efficiency_table(probes, capacity, common_rate))]
    for scenario in sorted(set(probes["scenario"])):
        blocks.append(_chart_block(f"{scenario}-capacity", capacity_report.capacity_chart(
            probes, capacity, scenario, colors, percentile, capacity_report.bound_of(probes, scenario)),
            f"{scenario}: latency against offered rate"))
        why = why_table(capacity, scenario, x=None)
        if why is not None:
            blocks += [("h3", f"{scenario}: why, at the highest rate that passed"), ("p", WHY_TEXT), ("table", why)]
    return blocks


def _open_ceiling(meta: dict) -> str:
    known = meta.get("generator_open_ceilings") or {}
    return ", ".join(f"{name} {rps:,.0f} req/s" for name, rps in known.items()) or "not calibrated for this run"


CSS = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em;font-size:13px}th,td{border:1px solid #ccc;padding:3px 8px;
text-align:left}th{background:#f3f3f3}td.fail{color:#c62828}td.flag{color:#8a6d00;background:#fff8e1}
.warn{background:#fff8e1;border-left:4px solid #f0b400;padding:4px 8px;margin:4px 0;font-size:13px}.warn ul{margin:2px 0}
.facts{color:#555;font-size:14px}img{max-width:100%;display:block;margin:1em 0}"""


def _links(value) -> list[Link] | None:
    """A cell of links (flame graphs) as a list of them; None for any other cell."""
    if isinstance(value, Link):
        return [value]
    return value if isinstance(value, list) and all(isinstance(v, Link) for v in value) else None


def _td(value) -> str:
    links = _links(value)
    if links is not None:
        return "<td>" + " ".join(f'<a href="{html.escape(a.href)}">{html.escape(a.text)}</a>' for a in links) + "</td>"
    text = "" if value is None or (not isinstance(value, str) and pd.isna(value)) else str(value)
    css = ' class="fail"' if "✗" in text else ' class="flag"' if "⚠" in text else ""
    return f"<td{css}>{html.escape(text)}</td>"


def _html(run_id: str, blocks: list[tuple]) -> str:
    out = [f"<!doctype html><html lang=en><head><meta charset=utf-8><title>Run {run_id}</title>"
           f"<style>{CSS}</style></head><body><h1>Run {html.escape(run_id)}</h1>"]
    for kind, content in blocks:
        if kind == "table":
            head = "".join(f"<th>{html.escape(str(c))}</th>" for c in content.columns)
            body = "".join("<tr>" + "".join(_td(v) for v in row) + "</tr>" for row in content.itertuples(index=False))
            out.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
        elif kind == "warn":
            items = "".join(f"<li>{html.escape(w)}</li>" for w in content)
            out.append(f'<div class="warn">warnings of the run (they may have skewed it):<ul>{items}</ul></div>')
        elif kind == "chart":
            data = base64.b64encode(content.png).decode()
            out.append(f'<img alt="{html.escape(content.title)}" src="data:image/png;base64,{data}">')
        else:
            tag, css = {"p": ("p", ""), "facts": ("p", ' class="facts"'), "h2": ("h2", ""), "h3": ("h3", "")}[kind]
            out.append(f"<{tag}{css}>{html.escape(content)}</{tag}>")
    return "\n".join(out + ["</body></html>"])


def _md_cell(value) -> str:
    links = _links(value)
    if links is not None:
        return " ".join(f"[{a.text}]({a.href.replace(' ', '%20')})" for a in links)
    text = "" if value is None or (not isinstance(value, str) and pd.isna(value)) else str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def _markdown(run_id: str, blocks: list[tuple]) -> str:
    out = [f"# Run {run_id}"]
    for kind, content in blocks:
        if kind == "table":
            out.append("| " + " | ".join(_md_cell(c) for c in content.columns) + " |")
            out.append("|" + "---|" * len(content.columns))
            out += ["| " + " | ".join(_md_cell(v) for v in row) + " |" for row in content.itertuples(index=False)]
        elif kind == "chart":
            out.append(f"![{content.title}]({content.name})")
        elif kind == "warn":
            out += ["> warnings of the run (they may have skewed it):", *[f"> - {w}" for w in content]]
        else:
            out.append({"p": "{}", "facts": "{}", "h2": "## {}", "h3": "### {}"}[kind].format(content))
        out.append("")
    return "\n".join(out)


def build(run: str | Path | None = None, root: Path = RESULTS_DIR, x: str | None = None) -> tuple[Path, Path]:
    """Write report.html and report.md (with its report-*.png) into the run folder; return both paths.

    x is the load-level column the charts and tables use; None: rate for an open model, else concurrency
    (which holds the users of a ramp's steps). The noise floor is the newest that `bench noise` stored
    in root for the run's machine.
    """
    run_dir = results.find_run(run, root)
    df = results.load(run_dir)
    x = x or analysis.level_column(df)
    if x not in df:
        raise UsageError(f"no column '{x}' in {run_dir / results.MEASUREMENTS}")
    ts = results.load_timeseries(run_dir)
    ts = network_report.by_level(ts) if len(ts) else None
    meta = results.load_meta(run_dir)
    host = meta.get("host", {})
    blocks = _sections(df, meta, ts, x, noise_mod.entry(host, root), noise_mod.floors(host, root))
    for stale in run_dir.glob("report-*.png"):
        stale.unlink()
    for kind, content in blocks:
        if kind == "chart":
            (run_dir / content.name).write_bytes(content.png)
    html_path, md_path = run_dir / "report.html", run_dir / "report.md"
    html_path.write_text(_html(run_dir.name, blocks), encoding="utf-8")
    md_path.write_text(_markdown(run_dir.name, blocks), encoding="utf-8")
    return html_path, md_path
