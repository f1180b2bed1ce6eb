"""Analysis of one run: tidy long and wide forms, a summary per cell over repeats, and the leaders.

The reports and the notebooks build on these; everything here takes and returns plain DataFrames:

    from orchestrator import results, analysis
    df = results.load("sample")
    s = analysis.summary(df)                  # one row per (scenario, concurrency, target): median, min, max
    analysis.wide(df, "rps")                  # scenarios x targets, median rps
    analysis.leaders(s, ["rps", "latency_p99_ms"])

A cell is *crowned* only when it is clean: every repeat ran (status "ok") and none carries a flag.
Failed and flagged cells stay in the summary, with their `state`, so that a report can show them.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from . import RESULTS_DIR
from .checks import STEADY_TOLERANCE
from .results import MEASUREMENTS, RUN_JSON


@dataclass(frozen=True)
class Metric:
    column: str
    label: str
    unit: str
    higher_is_better: bool


METRICS = {m.column: m for m in [
    Metric("rps", "throughput", "req/s", True),
    Metric("latency_mean_ms", "mean latency", "ms", False),
    Metric("latency_p50_ms", "p50 latency", "ms", False),
    Metric("latency_p90_ms", "p90 latency", "ms", False),
    Metric("latency_p95_ms", "p95 latency", "ms", False),
    Metric("latency_p99_ms", "p99 latency", "ms", False),
    Metric("latency_p999_ms", "p99.9 latency", "ms", False),
    Metric("server_cpu_pct", "server CPU", "%", False),
    # CPU % alone rewards the slowest server; CPU per request is what efficiency means.
    Metric("cpu_ms_per_req", "CPU per request", "ms", False),
    Metric("server_peak_rss_mb", "peak RSS", "MiB", False),
    Metric("server_peak_threads", "peak threads", "", False),
    Metric("gc_time_ms", "GC time", "ms", False),
    # In a fixed window more data means more responses: it follows throughput.
    Metric("mb_received", "data received", "MB", True),
    Metric("startup_s", "startup", "s", False),
    Metric("rss_after_start_mb", "RSS after start", "MiB", False),
]}
PERCENTILES = {"p50": "latency_p50_ms", "p90": "latency_p90_ms", "p99": "latency_p99_ms",
               "p99.9": "latency_p999_ms"}
ID_COLUMNS = ["run_id", "target", "framework", "variant", "scenario", "profile", "concurrency", "rate", "step",
              "repeat", "status", "flags"]


def level_column(df: pd.DataFrame) -> str:
    """The column that names a cell's load level: rate for an open model, else concurrency (connections,
    or users in a ramp's steps)."""
    return "rate" if "rate" in df and df["rate"].notna().any() else "concurrency"


def level_name(df: pd.DataFrame, x: str) -> str:
    """What to call x in titles: rate (req/s), users (a ramp), or concurrency."""
    if x == "concurrency" and "kind" in df and (df["kind"] == "ramp").any():
        return "users"
    return "rate (req/s)" if x == "rate" else x


def sample_run() -> Path:
    """The run the notebooks and tests read by default: results/sample, or the folder in $BENCH_SAMPLE_RUN."""
    run = Path(os.environ.get("BENCH_SAMPLE_RUN", RESULTS_DIR / "sample"))
    if not (run / RUN_JSON).exists() or not (run / MEASUREMENTS).exists():
        raise FileNotFoundError(f"no sample run at {run} ({RUN_JSON} and {MEASUREMENTS} expected): commit a small "
                                f"real run there, or set BENCH_SAMPLE_RUN to a run folder")
    return run


def tidy(df: pd.DataFrame) -> pd.DataFrame:
    """A copy of a `results.load()` frame with the derived columns the analysis uses.

    `flags` becomes "" where empty, `flagged` is True where a cell carries a flag, `clean` where a cell
    ran and carries none, `cpu_ms_per_req` is the server's CPU milliseconds per request.
    """
    out = df.copy()
    out["flags"] = out["flags"].fillna("").astype(str)
    out["reason"] = out["reason"].fillna("").astype(str)
    out["flagged"] = out["flags"] != ""
    out["clean"] = (out["status"] == "ok") & ~out["flagged"]
    requests = pd.to_numeric(out["requests"], errors="coerce")
    out["cpu_ms_per_req"] = (out["server_cpu_s"] * 1000 / requests.where(requests > 0)).astype(float)
    if "bytes" in out:
        out["mb_received"] = (pd.to_numeric(out["bytes"], errors="coerce") / 1e6).astype(float)
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


def summary(df: pd.DataFrame, x: str = "concurrency", metrics: list[str] | None = None) -> pd.DataFrame:
    """One row per (scenario, x, target): median, `_min` and `_max` of each metric over the repeats that ran.

    Also `repeats` (rows), `ok` (rows with status ok), `flags` (union), `reason` (the first failure) and
    `state`: "failed" (no repeat ran), "partial" (some did), "flagged" (all ran, some flagged) or "ok".
    `eligible` is state == "ok": only those cells are ranked.
    """
    df = tidy(df)
    keys = ["scenario", x, "target"]
    metrics = [m for m in (metrics or METRICS) if m in df]
    df["ran"] = (df["status"] == "ok").astype(int)
    out = df.groupby(keys, dropna=False, sort=True).agg(
        repeats=("ran", "size"), ok=("ran", "sum"), flags=("flags", _union), reason=("reason", _first))
    ran = df[df["status"] == "ok"].groupby(keys, dropna=False)[metrics]
    out = out.join([ran.median(), ran.min().add_suffix("_min"), ran.max().add_suffix("_max")]).reset_index()
    out["state"] = np.select([out["ok"] == 0, out["ok"] < out["repeats"], out["flags"] != ""],
                             ["failed", "partial", "flagged"], "ok")
    out["eligible"] = out["state"] == "ok"
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


def leaders(summ: pd.DataFrame, metrics: list[str], x: str = "concurrency") -> pd.DataFrame:
    """The best and the runner-up per (scenario, x, metric) among eligible cells.

    `diff_abs` is best - runner-up in the metric's unit and `diff_pct` the same in % of the runner-up:
    positive for throughput, negative for latency and resources. `tie`: no lead, or one smaller than
    STEADY_TOLERANCE, which two windows of one steady JVM may differ by. `excluded`
    names the targets that were not ranked (failed, partial or flagged). best is None when no cell
    is clean.
    """
    rows = []
    for (scenario, level), cells in summ.groupby(["scenario", x], sort=True):
        excluded = ", ".join(cells.loc[~cells["eligible"], "target"])
        for metric in metrics:
            m = METRICS[metric]
            ranked = cells[cells["eligible"]].dropna(subset=[metric])
            ranked = ranked.sort_values(metric, ascending=not m.higher_is_better)
            best, runner = (list(ranked.itertuples()) + [None, None])[:2]
            value = getattr(best, metric) if best else np.nan
            other = getattr(runner, metric) if runner else np.nan
            rows.append({"scenario": scenario, x: level, "metric": metric,
                         "best": best.target if best else None, "best_value": value,
                         "runner_up": runner.target if runner else None, "runner_up_value": other,
                         "diff_abs": value - other, "diff_pct": 100 * (value - other) / other if other else np.nan,
                         "tie": bool(value == other or (other and abs(value - other) < STEADY_TOLERANCE * abs(other))),
                         "excluded": excluded})
    return pd.DataFrame(rows)
