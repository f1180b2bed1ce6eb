"""Two runs side by side, in the spirit of benchstat: is a difference larger than the run-to-run noise?

The samples of a cell are its repeats (each a fresh JVM), and the judge decides (judge.lead: Welch's t
on the logarithms of the repeats, the same rule that crowns in the report). Its p-value is exact for
noise that is a proportion of the figure, and it can reach significance with 2 repeats a side when
the change is large against their spread; the MDE says how large it must be.

A comparison tests many cells at once, and at alpha 0.05 one in twenty unchanged cells would look
changed. The p-values are therefore adjusted with Holm-Bonferroni over every comparison that has one
(it controls the chance of any false "worse" or "better", and is uniformly more powerful than plain
Bonferroni); a cell is significant when its adjusted p is under alpha. Each row also states its
minimum detectable effect at alpha / comparisons and the repeats a side a 10 % change would need: a
"~" says the change was below what these repeats could see, not that there was none. Flagged cells
are shown, never counted as regressions, and runs made with different drivers, pinning, heap,
runtime or machines are not compared (`setup_differences`).

    from orchestrator.results import store as results, compare
    c = compare.compare_runs(results.load("before"), results.load("after"))
    compare.regressions(c, pct=5)
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from orchestrator import lazy
from orchestrator.core.schema import METRICS
from orchestrator.results import bias, judge
from orchestrator.results.analysis import tidy, without_slowed

np = lazy.module("numpy")
pd = lazy.module("pandas")

ALPHA = judge.ALPHA
DEFAULT_METRICS = ("rps", "latency_p99_ms")
# the change the "needs" column sizes repeats for
NEEDS_PCT = 10.0


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


@dataclass
class _Cell:
    """The repeats of one cell of a run: which ran, their flags, and each metric's figures."""
    ran: np.ndarray
    flags: list[str]
    figures: pd.DataFrame
    stolen: np.ndarray   # per repeat, the share (0-1) of its window the host may have held a side (bias.stolen_share)
    duration_s: np.ndarray


def _cells(df: pd.DataFrame, x: str, metrics) -> dict:
    # plain arrays per cell: a run of many cells is judged in one pass, not one pandas query per cell
    df = tidy(df).dropna(subset=["scenario", "target", x])
    keys = list(zip(df["scenario"], df["target"], df[x]))
    ran, flags = (df["status"] == "ok").to_numpy(), df["check_flags"].tolist()
    figures = df[[m for m in metrics if m in df]].to_numpy(dtype=float)
    stolen = bias.stolen_share(df)
    duration = df["duration_s"].to_numpy(dtype=float) if "duration_s" in df else np.full(len(df), np.nan)
    rows: dict = {}
    for i, key in enumerate(keys):
        rows.setdefault(key, []).append(i)
    return {key: _Cell(ran[i], [flags[j] for j in i], figures[i], stolen[i], duration[i])
            for key, i in ((k, np.array(v)) for k, v in rows.items())}


def _given_back(cell: _Cell, metric: str, values_of: np.ndarray) -> np.ndarray | None:
    keep = cell.ran & ~np.isnan(values_of)
    back = bias.given_back(metric, values_of[keep], cell.stolen[keep], cell.duration_s[keep])
    return None if back is None or np.isnan(back).any() else back


# Flags whose cause is the target itself (it answered errors, dropped connections, died): a cell that
# newly carries one broke, whatever else is flagged. The others (the generator's or the machine's)
# say the figure measured something other than the target.
TARGET_FLAGS = ("non-2xx", "socket-errors", "server-died")
# Flags that only slowed a cell (bias.SLOWING: the host held its vCPUs, a busy generator or server
# CPU): its throughput and latencies can only be worse than the target's. On A alone they make B's
# regression look smaller, never larger, so they do not withhold a "worse" verdict on those metrics
# (one 1-s repeat of A with 6.5 % steal hid B's 94 % drop in rps); nor does a flag on B that can only
# have flattered it (listen-queue-overflow's latency: bias.DIRECTIONS). On B they withhold it, except
# steal, which is measured: where giving B back every stolen moment (`_given_back`) cannot close the
# gap, B is worse (CI read B 96 % below A, both sides stealing, as "no regression").


def _side(cell: _Cell | None, column: int) -> tuple[np.ndarray, int, str]:
    """The repeats of one side that ran, how many failed, and why the side can't be compared ('' when
    it can)."""
    if cell is None:
        return np.array([]), 0, "missing"
    values = cell.figures[cell.ran, column]
    values = values[~np.isnan(values)]
    failed = int((~cell.ran).sum())
    if not len(values):
        return values, failed, "failed"
    return values, failed, f"{failed} of {len(cell.ran)} repeats failed" if failed else ""


def _flags(cell: _Cell | None) -> set[str]:
    return {f for s in cell.flags for f in s.split(",") if f} if cell is not None else set()


def _note(why_a: str, why_b: str, lead: judge.Lead) -> str:
    if why_a or why_b:
        return "; ".join(f"{why} in {side}" for side, why in (("A", why_a), ("B", why_b)) if why)
    return lead.why


def compare_runs(a: pd.DataFrame, b: pd.DataFrame, metrics=DEFAULT_METRICS, x: str = "concurrency",
                 alpha: float = ALPHA, noise: dict | None = None) -> pd.DataFrame:
    """Every cell (scenario, target, x) of two runs, one row per metric, A the baseline and B the candidate.

    Columns: a_median, a_spread_pct, a_n, b_median, b_spread_pct, b_n, ratio (B / A of the medians),
    delta_pct, worse_pct (how much worse B is, in the metric's own direction; negative is better),
    p_value (judge.lead), p_adjusted (Holm-Bonferroni over every row with a p-value), significant
    (p_adjusted < alpha), mde_pct (the smallest change these repeats could detect at alpha over the
    comparisons), needs (repeats a side with which a NEEDS_PCT % change would be found at this noise
    and family), flags (either side), note (why a cell can't be judged), bound ("at least" where a side
    whose flags only slowed it leaves the change a bound, bias.py), broke (B failed in some or all
    repeats, or newly answered errors or died, where A did not) and verdict: "broke", "better",
    "worse", "~" (within the noise) or "?" (no verdict, see note). `noise` maps (scenario, metric) to
    the machine's noise floor measured there (judge.Floor; see analysis.leaders).
    """
    metrics = [m for m in metrics if m in tidy(a.head(0))]
    # each side's repeats that only the host or a busy generator slowed, left out where two clean ones
    # remain (analysis.without_slowed): judged on its clean repeats, not withheld for the slowed ones
    keys = ["scenario", x, "target"]
    (a, left_a), (b, left_b) = (without_slowed(tidy(d).dropna(subset=keys), keys) for d in (a, b))
    cells_a, cells_b = _cells(a, x, metrics), _cells(b, x, metrics)
    rows, leads = [], []
    for key in sorted(set(cells_a) | set(cells_b), key=lambda k: (str(k[0]), str(k[1]), k[2])):
        at = (key[0], key[2], key[1])
        left = "; ".join(f"{side}: {said[at]}" for side, said in (("A", left_a), ("B", left_b)) if at in said)
        for column, metric in enumerate(metrics):
            row, lead = _compared(cells_a.get(key), cells_b.get(key), column, metric,
                                  (noise or {}).get((key[0], metric)), alpha, f" of {key[0]} {metric}")
            rows.append({"scenario": key[0], "target": key[1], x: key[2], "metric": metric, "left_out": left, **row})
            leads.append(lead)
    return _judged(pd.DataFrame(rows), leads, alpha)


def _compared(ca: _Cell | None, cb: _Cell | None, column: int, metric: str, noise, alpha: float,
              where: str) -> tuple[dict, judge.Lead]:
    """One metric of one cell of both runs: its row's figures, flags and note, and the judge's lead of B
    over A (where: the cell and metric, for the judge's words)."""
    flags = ",".join(sorted(_flags(ca) | _flags(cb)))
    newly = sorted((_flags(cb) - _flags(ca)) & set(TARGET_FLAGS)) if ca is not None else []
    # what keeps a worse B from being a regression: every flag but those that only slowed A (on
    # the metrics they bound), and on B those that only stole from it, where even given back its
    # stolen time B stays worse
    higher = METRICS[metric].higher_is_better
    better, worse = bias.truth_better(higher), bias.truth_worse(higher)
    held_a, held_b = bias.held(_flags(ca), metric, better), bias.held(_flags(cb), metric, worse)
    only_slowed_b = bool(held_b) and held_b <= bias.STOLEN and not held_a
    (va, _, why_a), (vb, failed_b, why_b) = _side(ca, column), _side(cb, column)
    med_a = float(np.median(va)) if len(va) else math.nan
    med_b = float(np.median(vb)) if len(vb) else math.nan
    ratio = med_b / med_a if med_a else math.nan
    delta = (ratio - 1) * 100
    lead = judge.lead(vb, va, noise, alpha, where=where)
    note = _note(why_a, why_b, lead)
    # B broke where A did not: all or some of its repeats failed, or it newly answered errors
    broke = bool(failed_b and not why_a or newly)
    if newly:
        note = "; ".join(w for w in (note, f"newly {', '.join(newly)} in B") if w)
    # B given back its stolen time, judged as any cell (its p against the family, _judged)
    best_b = _given_back(cb, metric, cb.figures[:, column]) if only_slowed_b and not note else None
    back = judge.lead(best_b, va, noise, alpha) if best_b is not None else None
    back_worse = math.nan if back is None or back.why else 100 * (back.ratio - 1) * (-1 if higher else 1)
    return {"a_median": med_a, "a_spread_pct": _spread_pct(va), "a_n": len(va),
            "b_median": med_b, "b_spread_pct": _spread_pct(vb), "b_n": len(vb),
            "ratio": ratio, "delta_pct": delta, "worse_pct": -delta if higher else delta,
            "p_value": math.nan if note else lead.p, "check_flags": flags,
            "withheld_by": ",".join(sorted(held_a | held_b)),
            "given_back_worse_pct": back_worse, "given_back_p": back.p if back and not back.why else math.nan,
            "note": note, "broke": broke,
            "a_truth": bias.bound(_flags(ca), metric), "b_truth": bias.bound(_flags(cb), metric),
            "better_way": better}, lead


def _judged(out: pd.DataFrame, leads: list[judge.Lead], alpha: float) -> pd.DataFrame:
    """compare_runs's rows with what the family of their comparisons decides: Holm's adjusted p, what
    these repeats could see, the verdict, and whether a side's flags leave the change a bound."""
    if out.empty:
        return out
    # Holm's first step tests at alpha / comparisons: what these repeats can see is sized for it
    family = alpha / max(1, int(out["p_value"].notna().sum()))
    out["mde_pct"] = [lead.mde_pct(family) for lead in leads]
    out["needs"] = [lead.repeats_for(NEEDS_PCT, family) if not math.isnan(lead.se) else judge.OWN_NOISE
                    for lead in leads]
    # B worse even given back every stolen moment, at Holm's strictest step: steal cannot explain it
    unexplained = (out["given_back_p"] < family) & (out["given_back_worse_pct"] > 0)
    out.loc[unexplained, "withheld_by"] = ""
    out.insert(out.columns.get_loc("p_value") + 1, "p_adjusted", judge.holm(out["p_value"]))
    out.insert(out.columns.get_loc("p_adjusted") + 1, "significant", (out["p_adjusted"] < alpha) & (out["note"] == ""))
    out["verdict"] = np.select([out["broke"], out["note"] != "", ~out["significant"], out["worse_pct"] > 0],
                               ["broke", "?", "~", "worse"], "better")
    # a side whose flags bound its figure leaves the change a bound: B better though slowed, or worse
    # than a slowed A or with its latency understated, is so by at least what was measured (bias.py)
    b_better, a_better = out["b_truth"] == out["better_way"], out["a_truth"] == out["better_way"]
    b_worse = (out["b_truth"] != "") & ~b_better
    a_worse = (out["a_truth"] != "") & ~a_better
    bounded = ((out["verdict"] == "better") & (b_better | a_worse)) | ((out["verdict"] == "worse") & (a_better | b_worse))
    out["bound"] = np.where(bounded, "at least", "")
    out = out.drop(columns=["a_truth", "b_truth", "better_way"])
    return out


def regressions(cmp: pd.DataFrame, pct: float) -> pd.DataFrame:
    """The rows of `compare_runs` that gate a CI job: significantly worse by more than pct % in an
    unflagged cell (a flag says the figure measured something other than the target; bias.SLOWING on A
    do not count, as they only made A worse, nor on B where B given back its stolen time is still
    significantly worse by more than pct %), or broken in B where A was not: some or all of its
    repeats failed, or it newly answered errors or died (TARGET_FLAGS). A target that broke is the
    largest regression there is, flagged or not."""
    # where steal on B was given back, the change beyond pct must be the given-back one
    size = cmp["given_back_worse_pct"].where(cmp["given_back_worse_pct"].notna(), cmp["worse_pct"])
    worse = cmp["significant"] & (cmp["worse_pct"] > pct) & (size > pct) & (cmp["withheld_by"] == "")
    return cmp[worse | cmp["broke"]]
