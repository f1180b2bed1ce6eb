"""Two runs side by side, in the spirit of benchstat: is a difference larger than the run-to-run noise?

The samples of a cell are its repeats (each a fresh JVM). The test is the two-sided Mann-Whitney U
test: it assumes nothing about the shape of the noise, and is exact for the few repeats a benchmark
has. Its price: with n and m repeats the smallest p-value it can give is 2 / C(n + m, n), so 3 + 3
repeats can never reach p < 0.05; 4 + 4 (or 3 + 5) can. The comparison says so instead of guessing.

A comparison tests many cells at once, and at alpha 0.05 one in twenty unchanged cells would look
changed. The p-values are therefore adjusted with Holm-Bonferroni over every comparison that has one
(it controls the chance of any false "worse" or "better", and is uniformly more powerful than plain
Bonferroni); a cell is significant when its adjusted p is under alpha. Each row also states its
minimum detectable effect (analysis.mde_pct): a "~" says the change was below what these repeats could
see, not that there was none. Flagged cells are shown, never counted as regressions, and runs made
with different drivers, pinning, heap, runtime or machines are not compared (`setup_differences`).

    from orchestrator import results, compare
    c = compare.compare_runs(results.load("before"), results.load("after"))
    compare.regressions(c, pct=5)
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd

from .analysis import METRICS, mde_pct, pooled_cv, tidy

ALPHA = 0.05
# Above this many ways to split the samples the normal approximation is accurate and the enumeration slow.
EXACT_LIMIT = 5000
DEFAULT_METRICS = ("rps", "latency_p99_ms")


def min_p_value(n: int, m: int) -> float:
    """The smallest two-sided p-value the Mann-Whitney test can give with n and m samples (no ties)."""
    return min(1.0, 2 / math.comb(n + m, n)) if n and m else 1.0


def mann_whitney(a, b) -> float:
    """Two-sided p-value of the Mann-Whitney U test that a and b come from the same distribution.

    Exact (all splits of the pooled samples, ties at mid-ranks) while there are at most EXACT_LIMIT
    splits; beyond, the normal approximation with tie and continuity corrections. NaN for an empty side.
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    n, m = len(a), len(b)
    if not n or not m:
        return math.nan
    ranks = pd.Series(np.concatenate([a, b])).rank(method="average").to_numpy()
    center = n * (n + m + 1) / 2  # the expected rank sum of a
    observed = abs(ranks[:n].sum() - center)
    if math.comb(n + m, n) <= EXACT_LIMIT:
        splits = np.array(list(itertools.combinations(range(n + m), n)))
        sums = ranks[splits].sum(axis=1)
        return float(np.mean(np.abs(sums - center) >= observed - 1e-9))
    ties = np.unique(ranks, return_counts=True)[1]
    var = n * m / 12 * ((n + m + 1) - (ties ** 3 - ties).sum() / ((n + m) * (n + m - 1)))
    if var <= 0:
        return 1.0
    return math.erfc(max(observed - 0.5, 0) / math.sqrt(var) / math.sqrt(2))


def holm(p: pd.Series) -> pd.Series:
    """Holm-Bonferroni adjusted p-values (NaN stays NaN): the k-th smallest of m is multiplied by
    m - k + 1, then made monotone, so that p_adjusted < alpha holds the family-wise error at alpha."""
    known = p.dropna().sort_values()
    m = len(known)
    adjusted = (known * np.arange(m, 0, -1)).cummax().clip(upper=1.0)
    return adjusted.reindex(p.index)


def _setup(meta: dict) -> dict:
    plan = meta.get("plan", {})
    s = plan.get("settings", {})
    prof = plan.get("profile") if isinstance(plan.get("profile"), dict) else {}
    host = meta.get("host", {})
    return {"driver": prof.get("driver") or s.get("driver"),
            "pinning": f"server CPUs {s.get('server_cpus')}, load generator CPUs {s.get('loadgen_cpus')}",
            "heap": s.get("heap"), "runtime": s.get("runtime"),
            "host": f"{host.get('hostname')}, {host.get('cpu_model')}, {host.get('cores')} cores"}


def setup_differences(meta_a: dict, meta_b: dict) -> list[str]:
    """What differs between two runs (their run.json) that makes their figures incomparable:
    driver, pinning, heap, runtime, machine; e.g. ["driver wrk vs k6"]."""
    a, b = _setup(meta_a), _setup(meta_b)
    return [f"{k} {a[k]} vs {b[k]}" for k in a if a[k] != b[k]]


def _spread_pct(values: np.ndarray) -> float:
    """The largest distance of a repeat from the median, in % of the median (benchstat's "± x%")."""
    if len(values) < 2:
        return math.nan
    med = np.median(values)
    return float(np.max(np.abs(values - med)) / med * 100) if med else math.nan


def _cells(df: pd.DataFrame, x: str) -> dict:
    df = tidy(df)
    return {key: g for key, g in df.groupby(["scenario", "target", x], sort=True)}


# Flags whose cause is the target itself (it answered errors, dropped connections, died): a cell that
# newly carries one broke, whatever else is flagged. The others (the generator's or the machine's)
# say the figure measured something other than the target.
TARGET_FLAGS = ("non-2xx", "socket-errors", "server-died")


def _side(cell: pd.DataFrame | None, metric: str) -> tuple[np.ndarray, int, str]:
    """The repeats of one side that ran, how many failed, and why the side can't be compared ('' when
    it can)."""
    if cell is None:
        return np.array([]), 0, "missing"
    values = cell.loc[cell["status"] == "ok", metric].dropna().to_numpy(dtype=float)
    failed = int((cell["status"] != "ok").sum())
    if not len(values):
        return values, failed, "failed"
    return values, failed, f"{failed} of {len(cell)} repeats failed" if failed else ""


def _target_flags(cell: pd.DataFrame | None) -> set[str]:
    found = {f for s in cell["flags"] for f in s.split(",")} if cell is not None else set()
    return found & set(TARGET_FLAGS)


def _note(n: int, m: int, why_a: str, why_b: str) -> str:
    if why_a or why_b:
        return "; ".join(f"{why} in {side}" for side, why in (("A", why_a), ("B", why_b)) if why)
    if n < 2 or m < 2:
        return "no repeats: noise unknown"
    return ""


def repeats_needed(comparisons: int, alpha: float = ALPHA) -> int:
    """The fewest repeats a side with which the smallest p-value survives Holm over `comparisons`
    tests (the smallest is multiplied by their number): 4 for one, 5 for 2 to 3, 7 for 8 x 3 x 2."""
    k = 2
    while min_p_value(k, k) * max(1, comparisons) >= alpha:
        k += 1
    return k


def compare_runs(a: pd.DataFrame, b: pd.DataFrame, metrics=DEFAULT_METRICS, x: str = "concurrency",
                 alpha: float = ALPHA, noise: dict | None = None) -> pd.DataFrame:
    """Every cell (scenario, target, x) of two runs, one row per metric, A the baseline and B the candidate.

    Columns: a_median, a_spread_pct, a_n, b_median, b_spread_pct, b_n, ratio (B / A), delta_pct,
    worse_pct (how much worse B is, in the metric's own direction; negative is better), p_value,
    p_adjusted (Holm-Bonferroni over every row with a p-value), significant (p_adjusted < alpha),
    mde_pct (the smallest change these repeats could detect: the noise floor's CV of the metric from
    `noise`, else the CV of the two sides' repeats), flags (either side), note (why a cell can't be
    judged), broke (B failed in some or all repeats, or newly answered errors or died, where A did
    not) and verdict: "broke", "better", "worse", "~" (within the noise) or "?" (no verdict, see note).
    """
    cells_a, cells_b = _cells(a, x), _cells(b, x)
    rows = []
    for key in sorted(set(cells_a) | set(cells_b), key=lambda k: (str(k[0]), str(k[1]), k[2])):
        ca, cb = cells_a.get(key), cells_b.get(key)
        flags = ",".join(sorted({f for c in (ca, cb) if c is not None for s in c["flags"] for f in s.split(",") if f}))
        newly = sorted(_target_flags(cb) - _target_flags(ca)) if ca is not None else []
        for metric in metrics:
            (va, _, why_a), (vb, failed_b, why_b) = _side(ca, metric), _side(cb, metric)
            med_a = float(np.median(va)) if len(va) else math.nan
            med_b = float(np.median(vb)) if len(vb) else math.nan
            ratio = med_b / med_a if med_a else math.nan
            delta = (ratio - 1) * 100
            note = _note(len(va), len(vb), why_a, why_b)
            # B broke where A did not: all or some of its repeats failed, or it newly answered errors
            broke = bool(failed_b and not why_a or newly)
            if newly:
                note = "; ".join(w for w in (note, f"newly {', '.join(newly)} in B") if w)
            p = mann_whitney(va, vb) if min(len(va), len(vb)) > 1 else math.nan
            worse = -delta if METRICS[metric].higher_is_better else delta
            cv = (noise or {}).get(metric, pooled_cv(va, vb))
            rows.append({"scenario": key[0], "target": key[1], x: key[2], "metric": metric,
                         "a_median": med_a, "a_spread_pct": _spread_pct(va), "a_n": len(va),
                         "b_median": med_b, "b_spread_pct": _spread_pct(vb), "b_n": len(vb),
                         "ratio": ratio, "delta_pct": delta, "worse_pct": worse, "p_value": p,
                         "mde_pct": mde_pct(cv, len(va), len(vb)), "flags": flags, "note": note,
                         "broke": broke})
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    # Holm multiplies the smallest p by the number of comparisons: where even the smallest p these
    # repeats can give does not survive that, no verdict is possible, and "~" would claim one
    family = int(out["p_value"].notna().sum())
    floor = pd.Series([min_p_value(n, m) * family for n, m in zip(out["a_n"], out["b_n"])], index=out.index)
    short = (out["note"] == "") & (floor >= alpha)
    out.loc[short, "note"] = [f"too few repeats to tell ({n}+{m} over {family} comparisons: the smallest "
                              f"adjusted p is {f:.2g}; {repeats_needed(family, alpha)} a side can)"
                              for n, m, f in zip(out.loc[short, "a_n"], out.loc[short, "b_n"], floor[short])]
    out.insert(out.columns.get_loc("p_value") + 1, "p_adjusted", holm(out["p_value"]))
    out.insert(out.columns.get_loc("p_adjusted") + 1, "significant", (out["p_adjusted"] < alpha) & (out["note"] == ""))
    out["verdict"] = np.select([out["broke"], out["note"] != "", ~out["significant"], out["worse_pct"] > 0],
                               ["broke", "?", "~", "worse"], "better")
    return out


def regressions(cmp: pd.DataFrame, pct: float) -> pd.DataFrame:
    """The rows of `compare_runs` that gate a CI job: significantly worse by more than pct % in an
    unflagged cell (a flag says the figure measured something other than the target), or broken in
    B where A was not: some or all of its repeats failed, or it newly answered errors or died
    (TARGET_FLAGS). A target that broke is the largest regression there is, flagged or not."""
    worse = cmp["significant"] & (cmp["worse_pct"] > pct) & (cmp["flags"] == "")
    return cmp[worse | cmp["broke"]]
