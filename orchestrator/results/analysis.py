"""Analysis of one run: tidy long and wide forms, a summary per cell over repeats, and the leaders.

The reports and the notebooks build on these; everything here takes and returns plain DataFrames:

    from orchestrator.results import store as results, analysis, noise
    df = results.load("sample")
    s = analysis.summary(df)                  # one row per (scenario, concurrency, target): median, min, max
    analysis.wide(df, "rps")                  # scenarios x targets, median rps
    analysis.leaders(s, ["rps", "latency_p99_ms"], noise=noise.floors(results.load_meta("sample")["host"]))

A cell is *crowned* only when it is clean (every repeat ran, status "ok", and none carries a flag), its
lead over the runner-up is beyond the noise (judge.lead: a 95 % interval that excludes a tie), and no flagged or
partly failed cell at that level did better. Failed and flagged cells stay in the summary, with their
`state`, so that a report can show them.
"""
from __future__ import annotations

import itertools
import math
import os
from pathlib import Path

from orchestrator import RESULTS_DIR, lazy
from orchestrator.config import kinds
from orchestrator.core.schema import METRICS, latency_column, percentile_label
from orchestrator.results import bias, judge
from orchestrator.results.store import MEASUREMENTS, RUN_JSON

np = lazy.module("numpy")
pd = lazy.module("pandas")


# The percentiles a latency plot draws: label -> column.
PLOTTED_PERCENTILES = {percentile_label(k): latency_column(k) for k in ("p50", "p90", "p99", "p999")}
# Between a scenario and what else makes a cell its own (a network level, the VUs that carry a rate)
SEPARATOR = " · "
ID_COLUMNS = ["run_id", "target", "framework", "variant", "scenario", "profile", "concurrency", "rate", "step",
              "repeat", "status", "check_flags"]


def fmt(value, unit: str = "") -> str:
    """A number with as many digits as it deserves, and its unit: 1,135 req/s, 18.1 ms, 0.32 ms."""
    if value is None or pd.isna(value):
        return "–"
    digits = 0 if abs(value) >= 100 or float(value).is_integer() else 1 if abs(value) >= 10 else 2
    return f"{value:,.{digits}f}" + (f" {unit}" if unit and unit != "%" else unit)


def level_column(df: pd.DataFrame) -> str:
    """The column that names a cell's load level: rate for an open model, else concurrency (connections,
    or users in a ramp's steps)."""
    return "rate" if "rate" in df and df["rate"].notna().any() else "concurrency"


def level_name(df: pd.DataFrame, x: str) -> str:
    """What to call x in titles: rate (req/s), users (a ramp), or concurrency."""
    if x == "concurrency" and "kind" in df:
        words = {kinds.KINDS[k].level_word for k in df["kind"].dropna().unique() if k in kinds.KINDS}
        if len(words) == 1:
            return words.pop()
    return "rate (req/s)" if x == "rate" else x


# The committed sample runs the notebooks read by default, each with the variable that points it elsewhere
SAMPLES = {"sample": "BENCH_SAMPLE_RUN", "sample-workload": "BENCH_SAMPLE_WORKLOAD_RUN"}


def sample_run(name: str = "sample") -> Path:
    """A run the notebooks and tests read by default: results/sample (a workload's: results/sample-workload),
    or the folder in $BENCH_SAMPLE_RUN ($BENCH_SAMPLE_WORKLOAD_RUN)."""
    run = Path(os.environ.get(SAMPLES[name], RESULTS_DIR / name))
    if not (run / RUN_JSON).exists() or not (run / MEASUREMENTS).exists():
        raise FileNotFoundError(f"no sample run at {run} ({RUN_JSON} and {MEASUREMENTS} expected): commit a small "
                                f"real run there, or set {SAMPLES[name]} to a run folder")
    return run


def tidy(df: pd.DataFrame) -> pd.DataFrame:
    """A copy of a `results.load()` frame with the derived columns the analysis uses.

    `flags` becomes "" where empty, `flagged` is True where a cell carries a flag, `clean` where a cell
    ran and carries none, `cpu_ms_per_req` is the server's CPU milliseconds per request. A scenario
    run at one rate with several VU counts is named per VU count ("json · 100 VUs").
    """
    out = df.copy()
    out["check_flags"] = out["check_flags"].fillna("").astype(str)
    out["reason"] = out["reason"].fillna("").astype(str)
    out["flagged"] = out["check_flags"] != ""
    out["clean"] = (out["status"] == "ok") & ~out["flagged"]
    requests = pd.to_numeric(out["requests"], errors="coerce")
    out["cpu_ms_per_req"] = (out["server_cpu_s"] * 1000 / requests.where(requests > 0)).astype(float)
    # A rate cell is its rate and the VUs that carry it: where a scenario was run at one rate with
    # several VU counts, those are different cells (p99 2 ms at 100 VUs, 40 ms at 1,000), never
    # repeats of one, so the VUs join the scenario's name as a network level does.
    if {"kind", "rate", "concurrency"} <= set(out):
        rated = out["kind"].isin(kinds.having("cells_by_vus")) & out["rate"].notna() & out["concurrency"].notna()
        several = out[rated].groupby(["scenario", "rate"])["concurrency"].nunique().groupby("scenario").max()
        fold = rated & out["scenario"].map(several).gt(1)
        out.loc[fold, "scenario"] = (out.loc[fold, "scenario"] + SEPARATOR
                                     + out.loc[fold, "concurrency"].astype(int).astype(str) + " VUs")
    if "bytes" in out:
        received = pd.to_numeric(out["bytes"], errors="coerce")
        out["mb_received"] = (received / 1e6).astype(float)
        # status line, headers and body, as the generator counted them (wrk and k6: every byte read)
        out["bytes_per_response"] = (received / requests.where(requests > 0)).astype(float)
    return out


def long(df: pd.DataFrame, metrics: list[str] | None = None) -> pd.DataFrame:
    """Tidy long form: one row per cell, repeat and metric, with columns ID_COLUMNS + metric + value."""
    df = tidy(df)
    metrics = [m for m in (metrics or METRICS) if m in df]
    ids = [c for c in ID_COLUMNS if c in df]
    return df.melt(id_vars=ids, value_vars=metrics, var_name="metric", value_name="value")


def wide(df: pd.DataFrame, metric: str = "rps", x: str = "concurrency", agg: str = "median") -> pd.DataFrame:
    """Wide form: (scenario, x) rows, one column per target, `agg` of `metric` over the repeats that ran."""
    df = tidy(df)
    ok = df[df["status"] == "ok"]
    return ok.pivot_table(index=["scenario", x], columns="target", values=metric, aggfunc=agg)


def _union(flags: pd.Series) -> str:
    return ",".join(sorted({f for s in flags for f in s.split(",") if f}))


def _first(reasons: pd.Series) -> str:
    """The first failure reason on one line: the lines after the first often hold the cause (a log tail)."""
    return next((" ".join(r.split())[:300] for r in reasons if r), "")


def without_slowed(df: pd.DataFrame, keys: list[str]) -> tuple[pd.DataFrame, pd.Series]:
    """The rows less the slowed repeats of each cell that has bias.MIN_CLEAN clean ones beside them and
    nothing else flagged or failed, and what was left out per cell (keys -> words; '' for none)."""
    flags = df["check_flags"].fillna("")
    ok = df["status"] == "ok"
    clean, slowed = ok & (flags == ""), ok & flags.map(bias.only_slowing)
    cell = df.groupby(keys, dropna=False).ngroup()
    per_cell = pd.DataFrame({"cell": cell, "clean": clean, "slowed": slowed, "other": ~(clean | slowed)})
    counts = per_cell.groupby("cell")[["clean", "slowed", "other"]].sum()
    leave = counts[(counts["slowed"] > 0) & (counts["other"] == 0) & (counts["clean"] >= bias.MIN_CLEAN)].index
    out = slowed & cell.isin(leave)
    said = {}
    for c, group in df[out].groupby(cell[out]):
        n = int(counts.loc[c, "clean"] + counts.loc[c, "slowed"])
        said[tuple(group.iloc[0][k] for k in keys)] = (
            f"{len(group)} of {n} repeats left out ({_union(group['check_flags'])}: only slowed)")
    return df[~out], pd.Series(said, dtype=object)


def summary(df: pd.DataFrame, x: str = "concurrency", metrics: list[str] | None = None,
            leave_out_slowed: bool = False) -> pd.DataFrame:
    """One row per (scenario, x, target): median, `_min` and `_max` of each metric over the repeats that ran.

    Also `repeats` (rows), `ok` (rows with status ok), `flags` (union), `reason` (the first failure) and
    `state`: "failed" (no repeat ran), "partial" (some did), "flagged" (all ran, some flagged) or "ok".
    `eligible` is state == "ok": only those cells are ranked. `<metric>_values` holds the repeats
    themselves (a tuple), which `leaders` resamples. With leave_out_slowed, a cell whose flagged repeats
    only slowed it (bias.SLOWING) and that has bias.MIN_CLEAN clean ones is summarised over the clean
    ones alone, and `left_out` says what was left out ('' elsewhere): the ranking's view, where a repeat
    the host slowed would otherwise withhold a cell that its clean repeats can judge.
    """
    df = tidy(df)
    keys = ["scenario", x, "target"]
    left_out = pd.Series(dtype=object)
    if leave_out_slowed:
        df, left_out = without_slowed(df, keys)
    metrics = [m for m in (metrics or METRICS) if m in df]
    df["ran"] = (df["status"] == "ok").astype(int)
    out = df.groupby(keys, dropna=False, sort=True).agg(
        repeats=("ran", "size"), ok=("ran", "sum"), check_flags=("check_flags", _union), reason=("reason", _first))
    ran = df[df["status"] == "ok"].groupby(keys, dropna=False)[metrics]
    out = out.join([ran.median(), ran.min().add_suffix("_min"), ran.max().add_suffix("_max"),
                    ran.agg(lambda v: tuple(v.dropna())).add_suffix("_values")]).reset_index()
    out["state"] = np.select([out["ok"] == 0, out["ok"] < out["repeats"], out["check_flags"] != ""],
                             ["failed", "partial", "flagged"], "ok")
    out["eligible"] = out["state"] == "ok"
    out["left_out"] = [left_out.get(tuple(r), "") for r in out[keys].itertuples(index=False)]
    return out


def startup(df: pd.DataFrame) -> pd.DataFrame:
    """Startup time and RSS after start per target (median, `_min`, `_max`): one sample per JVM start.

    Every cell of a start repeats the same figures, so each (target, repeat) counts once; targets that
    later failed count too, since they did start.
    """
    starts = df.dropna(subset=["startup_s"]).drop_duplicates(["run_id", "target", "repeat"])
    g = starts.groupby("target")[["startup_s", "rss_after_start_mb"]]
    out = g.median().join([g.min().add_suffix("_min"), g.max().add_suffix("_max")])
    out = out.assign(ok=starts.groupby("target").size(), state="ok").reset_index()
    return out


def x_levels(summ: pd.DataFrame, scenario: str, x: str = "concurrency") -> list:
    """The load levels (values of x) measured for a scenario, ascending."""
    return sorted(summ.loc[summ["scenario"] == scenario, x].dropna().unique().tolist())


def cv(values) -> float:
    """Coefficient of variation: sample standard deviation (n - 1) over the mean; NaN for fewer than two
    values or a mean of 0. The plain form, not a median-based one: the intervals and the minimum
    detectable effect below are built on variances, and one outlying JVM is noise a user meets too."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if len(v) < 2 or not v.mean():
        return math.nan
    return float(v.std(ddof=1) / abs(v.mean()))


def _values(cell: dict, metric: str) -> np.ndarray:
    """The repeats of a summary row; a row made without them (by hand) counts as one repeat."""
    values = cell.get(f"{metric}_values")
    values = values if isinstance(values, (tuple, list, np.ndarray)) else [cell[metric]]
    values = np.asarray(values, dtype=float)
    return values[np.isfinite(values)]


def _describe(cell: dict, metric: str) -> str:
    ran = f"{cell['ok']}/{cell['repeats']} ran" if cell["state"] == "partial" else ""
    why = ", ".join(w for w in (ran, cell["check_flags"]) if w) or cell["state"]
    return f"{cell['target']} {fmt(cell[metric], METRICS[metric].unit)} [{why}]"


def _verdict(best, runner, better: list[dict], others: list[dict], metric: str,
             lead: judge.Lead | None) -> tuple[str, str]:
    """(verdict, why) of one lead; see `leaders`. others: the excluded cells with a figure."""
    if best is None:
        return "no clean cell", "no clean cell"
    if not METRICS[metric].ranked:
        return "not ranked", METRICS[metric].not_ranked
    if better:
        what = "flagged" if all(c["state"] == "flagged" for c in better) else "flagged or partly failed"
        cells = "; ".join(_describe(c, metric) for c in better)
        return "inconclusive", f"{len(better)} {what} cell{'s' * (len(better) > 1)} did better: {cells}"
    if runner is None and others:
        # A flag's cause (a busy generator CPU, errors) can have lowered the other cell's own figure:
        # beating it proves nothing, and there is nobody clean to beat.
        cells = "; ".join(_describe(c, metric) for c in others)
        return "inconclusive", f"the only clean cell; the others cannot be ranked: {cells}"
    if runner is None:
        return "crowned", "the only cell"
    if best[metric] == runner[metric]:
        return "within noise", "equal medians"
    if lead.why:
        return "inconclusive", lead.why
    lo, hi = 100 * (lead.low - 1), 100 * (lead.high - 1)
    if (lead.low > 1) if METRICS[metric].higher_is_better else (lead.high < 1):
        return "crowned", f"95% interval {lo:+.1f}% to {hi:+.1f}%"
    # the interval need not be centred on the lead: name both ends, not only its half-width
    half = (hi - lo) / 2
    size = abs(100 * (best[metric] / runner[metric] - 1))
    return "within noise", (f"within noise (±{half:.{0 if half >= 10 else 1}f}%: 95% interval {lo:+.1f}% to "
                            f"{hi:+.1f}%; a lead of {size:.{0 if size >= 10 else 1}f}% needs "
                            f"{lead.repeats_for(size)} repeats a side)")


def _slowed_bound(better: list[dict], metric: str) -> str:
    """bias.bound of the one cell that did better than the best clean cell, where its flags only
    slowed it ('' otherwise: several did, or a flag of unknown direction or of one that flatters the
    figure, listen-queue-overflow's latency, or partly failed)."""
    if len(better) != 1 or better[0]["state"] != "flagged":
        return ""
    found = bias.bound(better[0]["check_flags"], metric)
    return found if found == bias.truth_better(METRICS[metric].higher_is_better) else ""


def leaders(summ: pd.DataFrame, metrics: list[str], x: str = "concurrency",
            noise: dict | None = None) -> pd.DataFrame:
    """The best and the runner-up per (scenario, x, metric) among eligible cells, and whether the lead
    is beyond the noise, as the judge (judge.lead) decides it.

    `diff_abs` is best - runner-up in the metric's unit and `diff_pct` the same in % of the runner-up:
    positive for throughput, negative for latency and resources. `ci_low_pct`..`ci_high_pct` is the
    95 % interval of the ratio of their geometric means - 1, in %. `noise` maps (scenario, metric) to
    the machine's noise floor measured there (a judge.Floor, as `noise.floors(host)` gives them): it only
    widens a cell of fewer than judge.OWN_NOISE repeats, and a floor of another scenario or metric is
    never used. `mde_pct`: the smallest lead these repeats could have shown. `verdict`:

    - "crowned": the interval excludes a tie (or best is the only cell at its level);
    - "within noise": it does not; `why` gives its half-width and the repeats a lead this large needs;
    A cell whose flags only slowed it (bias.SLOWING: a busy generator, steal) that did better than the
    best clean cell is judged against it instead: its figure is a bound of the truth on throughput and
    latency (`bound`: "at least" / "at most", '' for every other lead), so a lead it shows even slowed
    is its. Two such cells, or a flag of unknown direction, withhold as below.

    - "inconclusive": a flagged or partly failed cell did better than best (`why` names them), best
      is the only clean cell among flagged or partly failed ones, or neither repeats nor a noise
      floor give an interval (`why` names the repeats it needs);
    - "not ranked": a metric that is an absolute total (Metric.ranked);
    - "no clean cell".

    `tie` is verdict == "within noise". `excluded` names the targets that were not ranked.
    """
    noise = noise or {}
    rows = []
    # plain records, grouped once: pandas per level and metric is slow over the many levels of a sweep
    known = summ.dropna(subset=["scenario", x]).sort_values(["scenario", x], kind="stable")
    for (scenario, level), group in itertools.groupby(known.to_dict("records"), lambda c: (c["scenario"], c[x])):
        records = list(group)
        for metric in metrics:
            rows.append({"scenario": scenario, x: level, "metric": metric,
                         **_lead_at(records, metric, noise.get((scenario, metric)), f" of {scenario} {metric}")})
    return pd.DataFrame(rows)


def _lead_at(records: list[dict], metric: str, floor, where: str) -> dict:
    """leaders' row for one level and metric: the best eligible cell and its runner-up, the lead between
    them as the judge decides it, and the cells that were not ranked (see leaders)."""
    excluded = [c for c in records if not c["eligible"]]
    sign = 1 if METRICS[metric].higher_is_better else -1
    ranked = sorted((c for c in records if c["eligible"] and pd.notna(c[metric])), key=lambda c: -sign * c[metric])
    best, runner = (ranked + [None, None])[:2]
    value = best[metric] if best else np.nan
    other = runner[metric] if runner else np.nan
    lead = judge.lead(_values(best, metric), _values(runner, metric), floor, where=where) if runner else None
    others = [c for c in excluded if pd.notna(c[metric])]
    better = [c for c in others if best and sign * (c[metric] - value) > 0]
    bound = _slowed_bound(better, metric)
    if bound:
        # it beat the best clean cell even slowed: judged against it, its figure a bound of the truth
        best, runner, better = better[0], best, []
        value, other = best[metric], runner[metric]
        lead = judge.lead(_values(best, metric), _values(runner, metric), floor, where=where)
    verdict, why = _verdict(best, runner, better, others, metric, lead)
    if bound:
        why = f"{why}; {bound}: {best['check_flags']} only slowed {best['target']}"
    return {"best": best["target"] if best else None, "best_value": value,
            "runner_up": runner["target"] if runner else None, "runner_up_value": other,
            "diff_abs": value - other, "diff_pct": 100 * (value - other) / other if other else np.nan,
            "ci_low_pct": 100 * (lead.low - 1) if lead else np.nan,
            "ci_high_pct": 100 * (lead.high - 1) if lead else np.nan,
            "mde_pct": lead.mde_pct() if lead else np.nan,
            "verdict": verdict, "why": why, "tie": verdict == "within noise", "bound": bound,
            "left_out": "; ".join(f"{c['target']}: {c['left_out']}" for c in (best, runner) if c and c.get("left_out")),
            "excluded": ", ".join(c["target"] for c in excluded)}
