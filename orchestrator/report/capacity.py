"""The capacity section of a report: capacity at the objective per target and scenario, each target's
cost per request at the common rate (where every target does the same work) and at its capacity,
and latency against the offered rate with the objective drawn in. Reads rows only (results, schema)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from orchestrator import lazy
from orchestrator.config import kinds
from orchestrator.config.kinds.capacity import FAILURE_SPOILED
from orchestrator.core.schema import PERCENTILES, latency_column, percentile_label
from orchestrator.results import bias
from orchestrator.results.capacities import across_jvms, ceiling, stolen

pd = lazy.module("pandas")
figure = lazy.module("matplotlib.figure")   # loaded by a chart, not by the CLI that names this module
if TYPE_CHECKING:
    from matplotlib.figure import Figure

OUTCOMES = {"found": "", "above-generator": " (generator limit)",
            "below-floor": " (below the lowest rate probed)", "unresolved": " (probe budget spent)"}


def split(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(probe rows, capacity rows, every other row) of a run."""
    search = df["kind"].isin(kinds.having("searches")) if "kind" in df else pd.Series(False, index=df.index)
    capacity = search & df["rate"].isna()
    return df[search & ~capacity], df[capacity], df[~search]


def _interval(row) -> str:
    if row["status"] != "ok":
        return f"failed: {str(row['reason']).splitlines()[0][:60]}"
    marks = [*(["host-steal"] if stolen(row) else []),
             *(["its failure spoiled"] if FAILURE_SPOILED in bias.flags_of(row.get("check_flags") or "") else [])]
    return (span(row["capacity_low_rps"], ceiling(row)) + OUTCOMES.get(row["verdict"], f" ({row['verdict']})")
            + (f" ⚠ {', '.join(marks)}" if marks else ""))


def span(low: float, high: float) -> str:
    """An interval of capacities in words: '2,000 – 2,300', '≥ 2,000' (no failure), '' (none known)."""
    if low != low:
        return ""
    return f"≥ {low:,.0f}" if high == float("inf") else f"{low:,.0f} – {high:,.0f}"


def capacity_table(capacity: pd.DataFrame) -> pd.DataFrame:
    """Targets by scenarios: the interval [highest rate that passed, lowest that failed) in req/s,
    one per repeat, and with 2 or more the interval they support together."""
    cells = capacity.assign(text=capacity.apply(_interval, axis=1)).sort_values("repeat")
    groups = cells.groupby(["target", "scenario"])

    def text(rows: pd.DataFrame) -> str:
        joint = across_jvms(rows) if len(rows) > 1 else None
        return "; ".join(rows["text"]) + (f" → across JVMs {span(*joint)}" if joint else "")
    table = groups.apply(text, include_groups=False).unstack("scenario")
    return table.reset_index().rename(columns={"target": "target (capacity in req/s)"}).fillna("")


def ordering(capacity: pd.DataFrame) -> list[str]:
    """Per scenario of two targets or more, which have more capacity than which, in every JVM: A is
    above B only when the lowest capacity A reached in any JVM is at or above the highest rate at
    which B failed in any JVM. Overlapping intervals tell nothing apart, however far apart their midpoints are."""
    out = []
    for scenario, rows in capacity.groupby("scenario"):
        joint = {t: across_jvms(r) for t, r in rows.groupby("target")}
        joint = {t: j for t, j in joint.items() if j is not None}
        if len(joint) < 2:
            continue
        ranked = sorted(joint.items(), key=lambda kv: -kv[1][0])
        above = [f"{a} ({span(*ja)}) above {b} ({span(*jb)})"
                 for a, ja in ranked for b, jb in ranked if a != b and ja[0] >= jb[1]]
        out.append(f"{scenario}: " + ("; ".join(above) if above else
                                       "no target's capacity is above another's in every JVM"))
    return out


def past_the_knee(probes: pd.DataFrame) -> pd.Series:
    """Which probe rows are not the search's: overload probes (at multiples of the capacity) and spikes."""
    over = probes["overload_factor"].notna() if "overload_factor" in probes else pd.Series(False, index=probes.index)
    return over | probes.index.isin(spikes(probes).index)


def overload_table(probes: pd.DataFrame, capacity: pd.DataFrame) -> pd.DataFrame | None:
    """Per target and scenario: goodput at each overload multiple of the capacity, in % of that
    repeat's capacity (median over repeats), and each repeat's verdict. None: no overload probes."""
    over = probes[probes["overload_factor"].notna()] if "overload_factor" in probes else probes.iloc[:0]
    if over.empty:
        return None
    cap = capacity.set_index(["target", "scenario", "repeat"])["capacity_low_rps"]
    held = over.assign(held=[100 * g / cap.get((t, s, r), float("nan")) if g == g and g is not None else float("nan")
                             for t, s, r, g in zip(over["target"], over["scenario"], over["repeat"], over["goodput_rps"])])
    table = held.pivot_table(index=["scenario", "target"], columns="overload_factor", values="held", aggfunc="median")
    table.columns = [f"goodput @ {f:g}x (% of capacity)" for f in table.columns]
    table = table.map(lambda v: f"{v:.0f} %" if v == v else "")
    verdicts = capacity.dropna(subset=["overload_verdict"]).groupby(["scenario", "target"])["overload_verdict"].agg(
        lambda v: " / ".join(v)) if "overload_verdict" in capacity else pd.Series(dtype=str)
    return table.join(verdicts.rename("verdict (last multiple)"), how="left").fillna("").reset_index()


def spikes(probes: pd.DataFrame) -> pd.DataFrame:
    """The spike rows of a run's capacity cells (after the overload probes)."""
    return probes[probes["verdict"].fillna("").str.startswith("spike")]


def recovery_table(probes: pd.DataFrame) -> pd.DataFrame | None:
    """Targets by scenarios: the seconds each JVM took to recover from its spike. None: no spikes."""
    rows = spikes(probes)
    if rows.empty:
        return None
    text = rows.sort_values("repeat").assign(
        text=[f"{v:g} s" if v == v and v is not None else "did not recover" for v in rows["recovery_s"]])
    table = text.groupby(["target", "scenario"])["text"].agg("; ".join).unstack("scenario")
    return table.reset_index().rename(columns={"target": "target (recovery after the spike)"}).fillna("")


def spike_chart(ts: pd.DataFrame, scenario: str, colors: dict, bound_ms: float | None) -> Figure | None:
    """Per second of each target's spike (its first repeat): offered and goodput above, p99 below with
    the objective dashed and the spike shaded."""
    if "offered_per_s" not in ts:
        return None
    rows = ts[(ts["scenario"] == scenario) & ts["offered_per_s"].notna()]
    if rows.empty:
        return None
    fig = figure.Figure(figsize=(9, 5.6), dpi=110, layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True)
    for target, mine in rows.groupby("target"):
        first = mine[mine["repeat"] == mine["repeat"].min()].sort_values("t_s")
        color = colors.get(target, "k")
        top.plot(first["t_s"], first["goodput_per_s"], "-", color=color, label=f"{target} goodput", lw=1.4)
        top.plot(first["t_s"], first["offered_per_s"], ":", color=color, lw=1.0)
        bottom.plot(first["t_s"], first["p99_ms"], "-", color=color, lw=1.4)
        spike = first[first["step"] == 2]["t_s"]
        if len(spike):
            for ax in (top, bottom):
                ax.axvspan(spike.min(), spike.max() + 1, color="#bbbbbb", alpha=0.15, lw=0)
    if bound_ms is not None:
        bottom.axhline(bound_ms, color="#c62828", ls="--", lw=1.2, label=f"objective {bound_ms:g} ms")
        bottom.legend(fontsize=8)
    if rows["p99_ms"].dropna().max() / max(rows["p99_ms"].dropna().min(), 1e-3) > 20:
        bottom.set_yscale("log")
    top.set_ylabel("req/s (dotted: offered)")
    bottom.set_ylabel("p99 of the second's arrivals (ms)")
    bottom.set_xlabel("second of the window (shaded: the spike)")
    top.legend(fontsize=8)
    top.set_title(f"{scenario}: half the capacity, twice it, half again (goodput: answers within the objective)")
    return fig


def efficiency_table(probes: pd.DataFrame, capacity: pd.DataFrame, common_rate: float) -> pd.DataFrame:
    """Per target and scenario: the cost of a request at the common rate and at capacity (medians
    over repeats), and the server's CPU at capacity (of its CPUs' time)."""
    probes = probes[~past_the_knee(probes)]
    common = probes[probes["rate"] == common_rate]
    common = common.assign(passed=common["verdict"].str.startswith("pass"))
    at_common = common.groupby(["scenario", "target"])[
        ["cpu_ms_per_request", "rps_per_mib", "server_peak_rss_mb", latency_column("p99"), "startup_s"]].median()
    # a target that could not carry the common rate was overloaded there: its cost is not comparable
    at_common["met"] = common.groupby(["scenario", "target"])["passed"].all().map({True: "yes", False: "no ✗"})
    # what bound it: a server CPU near 100 % at capacity is the core's limit; well below it, a pool's or
    # the threads' (the why tables give the pools' peaks against the declared limits)
    at_capacity = capacity[capacity["requests"] > 0].groupby(["scenario", "target"])[
        [c for c in ("rps", "rps_per_core", "rps_per_mib", "server_cpu_pct") if c in capacity]].median()
    out = at_common.join(at_capacity, how="outer", rsuffix="_cap").reset_index()
    fmt = {"met": ("objective met @ common", "{}"),
           "cpu_ms_per_request": ("CPU ms/req @ common", "{:.3f}"),
           "rps_per_mib": ("req/s per MiB @ common", "{:.2f}"),
           "server_peak_rss_mb": ("RSS MiB @ common", "{:.0f}"),
           latency_column("p99"): ("p99 ms @ common", "{:.1f}"),
           "startup_s": ("startup s", "{:.2f}"),
           "rps": ("req/s @ capacity", "{:,.0f}"),
           "rps_per_core": ("req per CPU-s @ capacity", "{:,.0f}"),
           "rps_per_mib_cap": ("req/s per MiB @ capacity", "{:.2f}"),
           "server_cpu_pct": ("server CPU % @ capacity", "{:.0f}")}
    for col, (_, spec) in fmt.items():
        if col in out:
            out[col] = out[col].map(lambda v, s=spec: s.format(v) if v == v and v is not None else "")
    return out.rename(columns={c: label for c, (label, _) in fmt.items()})


def capacity_chart(probes: pd.DataFrame, capacity: pd.DataFrame, scenario: str, colors: dict,
                   percentile: str, bound_ms: float | None) -> Figure:
    """Latency at the objective's percentile against the offered rate, a line per target (the median
    over repeats at each rate probed), passes filled, fails hollow, the objective dashed, and each
    target's break (its lowest failing rate) marked with a cross."""
    col = latency_column(percentile)
    probes = probes.drop(spikes(probes).index)   # a spike's p99 is of three rates: its own chart
    fig = figure.Figure(figsize=(9, 4.6), dpi=110, layout="constrained")
    ax = fig.subplots()
    for target, rows in probes[probes["scenario"] == scenario].groupby("target"):
        rows = rows.assign(passed=rows["verdict"].str.startswith("pass"))
        by_rate = rows.groupby("rate").agg(latency=(col, "median"), passed=("passed", "all")).reset_index()
        color = colors.get(target, "k")
        ax.plot(by_rate["rate"], by_rate["latency"], "-", color=color, label=target, lw=1.4)
        ok, bad = by_rate[by_rate["passed"]], by_rate[~by_rate["passed"]]
        ax.plot(ok["rate"], ok["latency"], "o", color=color, ms=5)
        ax.plot(bad["rate"], bad["latency"], "o", mfc="white", color=color, ms=5)
        cap = capacity[(capacity["scenario"] == scenario) & (capacity["target"] == target)]
        high = cap["capacity_high_rps"].dropna()
        if len(high):
            at = by_rate[by_rate["rate"] == high.median()]
            if len(at):
                ax.plot(at["rate"], at["latency"], "x", color=color, ms=11, mew=2.5)
    if bound_ms is not None:
        ax.axhline(bound_ms, color="#c62828", ls="--", lw=1.2, label=f"objective {percentile_label(percentile)} "
                                                                     f"<= {bound_ms:g} ms")
    values = probes.loc[probes["scenario"] == scenario, col].dropna()
    if len(values) and values.max() / max(values.min(), 1e-3) > 20:
        ax.set_yscale("log")
    rates = probes.loc[probes["scenario"] == scenario, "rate"].dropna()
    if len(rates) and rates.max() / max(rates.min(), 1) > 20:
        ax.set_xscale("log")
    ax.set_xlabel("offered rate (req/s, open model)")
    ax.set_ylabel(f"{percentile_label(percentile)} latency (ms)")
    ax.set_title(f"{scenario}: latency against offered rate (filled: pass, hollow: fail, ×: where it breaks)")
    ax.grid(True, which="both", alpha=.3)
    ax.legend(fontsize=8, loc="upper left")
    return fig


def objective_of(profile: dict) -> tuple[str, float]:
    """(percentile key, common rate) of a plan's profile (run.json); the bound is per scenario (bound_of)."""
    key = profile.get("slo_percentile", "p99")
    return (key if key in PERCENTILES else "p99"), float(profile.get("common_rate", 500))


def bound_of(probes: pd.DataFrame, scenario: str) -> float | None:
    """The objective's bound for a scenario, read back from the rows' own slo text ("p99 <= 150 ms, ...")."""
    slo = probes.loc[probes["scenario"] == scenario, "slo"].dropna()
    if not len(slo):
        return None
    try:
        return float(str(slo.iloc[0]).split("<=")[1].split("ms")[0])
    except (IndexError, ValueError):
        return None   # a row written by another version: no line rather than a wrong one
