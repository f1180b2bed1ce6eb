"""How targets start: a cold JVM against the same target warmed up, and the JDK's AOT cache against
the default start (config/modes.py).

A cold cell (start = "cold") met its load with no warm-up, seconds after the JVM's first answer. Its
answers per second are in the time series; the warm figure is the median rps of the same target, JVM
mode, scenario and load level warmed up until steady, in the same run. `time_to_share_s` is the time
from the JVM's spawn to the end of the first second of the cold window whose answers (a rate: the
window's last second may be part of one) reached WARM_SHARE of that figure: its start-up, the wait
until the load began (verification) and the seconds the JIT needed. It is null when no second did
(the window was shorter than the JVM's way up, or a burst's last requests drained below it);
`best_share` says how close it came.

    from orchestrator.results import store, starts
    starts.cold_starts(store.load(run), store.load_timeseries(run))
"""
from __future__ import annotations

import math

from orchestrator import lazy
from orchestrator.config.modes import AOT_CACHE, COLD, DEFAULT_JVM, JVM_MODES, WARM, base_id, warm_twin
from orchestrator.results import judge

np = lazy.module("numpy")
pd = lazy.module("pandas")

WARM_SHARE = 0.9
LEVEL = ["scenario", "network", "concurrency", "rate"]


def _same_level(df: pd.DataFrame, row) -> pd.Series:
    keep = pd.Series(True, index=df.index)
    for c in LEVEL:
        if c in df:
            keep &= df[c].isna() if pd.isna(row[c]) else (df[c] == row[c])
    return keep


def cold_starts(df: pd.DataFrame, ts: pd.DataFrame | None) -> pd.DataFrame:
    """One row per cold cell that ran: its target, jvm_mode, level and repeat; startup_s (to the first
    answer), since_launch_s (to the load), rps and latency_p99_ms of the cold window, warm_rps (the
    warmed target's median, NaN when the run has none), best_share (the best second's answers / warm_rps),
    time_to_share_s (see the module), jit_time_ms in the window, classes_loaded, classes_from_cache."""
    if "start" not in df:
        return pd.DataFrame()
    ok = df[df["status"] == "ok"]
    cold = ok[ok["start"] == COLD]
    rows = []
    for _, r in cold.iterrows():
        warm = ok[(ok["target"] == warm_twin(r["target"])) & _same_level(ok, r)]
        warm_rps = float(warm["rps"].median()) if len(warm) else math.nan
        seconds = ts[(ts["target"] == r["target"]) & (ts["scenario"] == r["scenario"]) & (ts["repeat"] == r["repeat"])
                     ].sort_values("t_s") if ts is not None and len(ts) else pd.DataFrame(columns=["t_s", "rps"])
        best = float(seconds["rps"].max()) / warm_rps if len(seconds) and warm_rps > 0 else math.nan
        reached = seconds[seconds["rps"] >= WARM_SHARE * warm_rps] if warm_rps > 0 else seconds.iloc[0:0]
        # the end of that second, or of the window where its last second is part of one
        end = min(float(reached["t_s"].iloc[0]) + 1, float(r["duration_s"])) if len(reached) else math.nan
        to_share = float(r["since_launch_s"]) + end
        rows.append({"target": r["target"], "base": base_id(r["target"]), "jvm_mode": r.get("jvm_mode"),
                     **{c: r.get(c) for c in LEVEL}, "repeat": r["repeat"], "startup_s": r["startup_s"],
                     "since_launch_s": r["since_launch_s"], "rps": r["rps"], "latency_p99_ms": r["latency_p99_ms"],
                     "warm_rps": warm_rps, "best_share": best, "time_to_share_s": to_share,
                     "jit_time_ms": r.get("jit_time_ms"), "classes_loaded": r.get("classes_loaded"),
                     "classes_from_cache": r.get("classes_from_cache")})
    return pd.DataFrame(rows)


# what the JVM modes are compared on, each with whether higher is better
MODE_FIGURES = {"startup_s": False, "rss_after_start_mb": False, "rps": True, "time_to_share_s": False}


def jvm_modes(df: pd.DataFrame, ts: pd.DataFrame | None) -> pd.DataFrame:
    """Per target (framework:variant), scenario and level measured in both JVM modes: each figure of
    MODE_FIGURES as medians of each mode's repeats (the warm cells', time_to_share_s the cold cells'),
    the change with the AOT cache in %, and the judge's verdict on it (judge.lead, as the report
    crowns: "faster"/"slower" only where the change is beyond the repeats' noise)."""
    if "jvm_mode" not in df or not (df["jvm_mode"] == AOT_CACHE).any():
        return pd.DataFrame()
    ok = df[df["status"] == "ok"].assign(base=lambda d: d["target"].map(base_id))
    cold = cold_starts(df, ts)
    rows = []
    for (base, scenario), cell in ok.groupby(["base", "scenario"]):
        if set(cell["jvm_mode"]) != set(JVM_MODES):
            continue
        for figure, higher in MODE_FIGURES.items():
            if figure == "time_to_share_s":
                mine = cold[(cold["base"] == base) & (cold["scenario"] == scenario)] if len(cold) else cold
                values = {m: mine.loc[mine["jvm_mode"] == m, figure].dropna().to_numpy() for m in JVM_MODES} \
                    if len(mine) else {}
            else:
                warm = cell[cell["start"] == WARM]
                values = {m: warm.loc[warm["jvm_mode"] == m, figure].dropna().to_numpy() for m in JVM_MODES}
            if not values or not all(len(v) for v in values.values()):
                continue
            lead = judge.lead(values[AOT_CACHE], values[DEFAULT_JVM])
            change = 100 * (np.median(values[AOT_CACHE]) / np.median(values[DEFAULT_JVM]) - 1)
            better = (lead.ratio > 1) == higher
            verdict = ("within noise" if not lead.beyond_noise else "better" if better else "worse") \
                if not lead.why else lead.why
            rows.append({"target": base, "scenario": scenario, "figure": figure,
                         "default": float(np.median(values[DEFAULT_JVM])), "n_default": len(values[DEFAULT_JVM]),
                         "aot_cache": float(np.median(values[AOT_CACHE])), "n_aot_cache": len(values[AOT_CACHE]),
                         "change_pct": float(change), "verdict": verdict})
    return pd.DataFrame(rows)
