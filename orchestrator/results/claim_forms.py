"""A study's finding, decided by the judge from the repeats: an order of targets on one metric, a lead
of some targets over others (each ahead of each), or a trend of one target over load levels (it
grows, or grows in proportion).

Every form comes down to pairs of cells, each claimed "this figure is above that one" (a throughput
higher, a latency lower, a latency at 2,000 connections higher than at 1,000). The judge's rule decides
each pair (judge.lead: Welch's t on the logarithms of the repeats), Holm's adjustment holds the claim's
pairs to one 5 % error, and the claim:

- holds when every pair is decided the study's way;
- does not hold when one pair is decided the other way (it is named);
- cannot tell at these repeats otherwise: the pair within the noise is named, with the repeats a side
  that would tell its lead as measured, or the pair that was withheld and why;
- cannot tell at this load where the only pairs left are level at a closed loop's own ceiling: both
  sides serve what its clients can send at all (AT_CEILING), which more repeats cannot part.

A cell whose flags only slowed it (bias.py) still counts where its bias cannot have made the pair:
a throughput measured slowed is at most the truth, so it may be the higher side of a pair, never the
lower; a latency the other way round. On the side where the bias could have made the pair, the cell's
flagged repeats are left out and its clean ones judged, when MIN_CLEAN or more are clean (the verdict
says so); else, where the host's steal is the only flag that withholds it, its repeats are given back
every stolen moment (bias.given_back) and the pair judged on that best, when it still points the way it
was measured. Any other flag, a failed repeat or a missing cell withholds.

"Linear" is growth in proportion to the load level (a latency that doubles with the connections, as
Little's law has it for a pool that is full): each step's ratio, at the interval of alpha over the
steps, must lie within LINEAR_BAND of the levels' ratio; outside it on both ends it does not hold.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from orchestrator import lazy
from orchestrator.config import kinds
from orchestrator.config.claim_fields import FARTHEST, NEAREST
from orchestrator.config.modes import base_id
from orchestrator.config.scenarios import SCENARIOS
from orchestrator.core.schema import METRICS
from orchestrator.results import bias, judge
from orchestrator.results.analysis import fmt, summary

pd = lazy.module("pandas")

LINEAR_BAND = 0.25
MIN_CLEAN = bias.MIN_CLEAN   # clean repeats a side needs to be judged without its flagged ones
GIVEN_BACK = "given_back"   # the claim's metric, each repeat given back the time the host stole
# Both sides of a pair at this share or more of their closed loop's own ceiling (its clients over the
# scenario's wait: 500 users of a 1-s sleep send at most 500 req/s) are level at that load, not within
# its noise: no number of repeats parts them there (mvc-vs-reactive-ramp:sleep, run 20261129-041556:
# MVC virtual 500 req/s, WebFlux 496 and 497, "a lead of 3 % needs 32 repeats" before this rule).
AT_CEILING = 0.95


@dataclass(frozen=True)
class Pair:
    """Two cells claimed high > low in the metric's raw value (a throughput ahead, a latency behind, a
    later level above an earlier one), named for the verdict, with the study's own ratio high / low."""
    high: dict | None
    low: dict | None
    label: str
    study_ratio: float
    # each side's clean repeats alone (summary of its unflagged rows), for a side whose flags could have made the pair
    high_clean: dict | None = None
    low_clean: dict | None = None


def judge_claim(df: pd.DataFrame, claim: dict, x: str = "concurrency") -> list[dict]:
    """The claim judged in each mode its targets ran in (cold, with an AOT cache) and, for an order
    with no `level`, at each load level: rows of claim, here, verdict, evidence, differs."""
    rows = _with_given_back(_rows(df, claim), claim["metric"])
    summ = summary(rows, x, [claim["metric"], GIVEN_BACK]) if len(rows) else pd.DataFrame(columns=["target", x])
    cells = {(c["target"], c[x]): c for c in summ.to_dict("records")}
    clean_rows = rows[(rows["status"] == "ok") & (rows["check_flags"].fillna("") == "")] if len(rows) else rows
    clean = {(c["target"], c[x]): c for c in
             (summary(clean_rows, x, [claim["metric"]]).to_dict("records") if len(clean_rows) else [])}
    suffixes = sorted({t[len(base_id(t)):] for t in summ["target"]}) or [""]
    # a closed loop's clients each wait for their answer: its own ceiling may level a pair
    found = set(rows["kind"].dropna()) if len(rows) and "kind" in rows else set()
    closed = bool(found) and found <= kinds.having("closed_loop")
    if claim["form"] == "trend":
        return [_judged(claim, x, cells, clean, suffix, None, None) for suffix in suffixes]
    levels = [claim["level"]] if "level" in claim else sorted({lv for (_, lv) in cells}) or [None]
    return [_judged(claim, x, cells, clean, suffix, level, load_ceiling(claim, level) if closed else None)
            for suffix in suffixes for level in levels]


def load_ceiling(claim: dict, level) -> float | None:
    """The most a closed loop of `level` clients serves of the claim's scenario, each client waiting the
    scenario's own wait for every answer; None for a metric other than throughput or a scenario that
    makes no one wait."""
    scenario = SCENARIOS.get(claim["scenario"])
    if claim["metric"] != "rps" or level is None or scenario is None or scenario.wait_ms <= 0:
        return None
    return level * 1000.0 / scenario.wait_ms


def _with_given_back(rows: pd.DataFrame, metric: str) -> pd.DataFrame:
    """The rows with GIVEN_BACK: each one's figure on metric had the host stolen nothing (bias.given_back),
    NaN where that is not known."""
    if not len(rows):
        return rows
    duration = rows["duration_s"] if "duration_s" in rows else [math.nan] * len(rows)
    back = bias.given_back(metric, rows[metric], bias.stolen_share(rows), duration) if metric in rows else None
    return rows.assign(**{GIVEN_BACK: back if back is not None else math.nan})


def _rows(df: pd.DataFrame, claim: dict) -> pd.DataFrame:
    wanted = {claim["target"]} if claim["form"] == "trend" else {*claim["targets"], *claim.get("over", [])}
    rows = df[(df["scenario"] == claim["scenario"]) & df["target"].map(base_id).isin(wanted)]
    network = claim.get("network")
    if network and "network" in rows:
        if network in (NEAREST, FARTHEST):
            rtt = rows.groupby("network")["network_rtt_ms"].median().dropna()
            network = (rtt.idxmin() if network == NEAREST else rtt.idxmax()) if len(rtt) else None
        rows = rows[rows["network"] == network]
    return rows


def _judged(claim: dict, x: str, cells: dict, clean: dict, suffix: str, level, ceiling: float | None) -> dict:
    """One verdict; clean: the cells of the unflagged repeats alone, by (target, level) as cells; ceiling:
    the closed loop's own (load_ceiling), None for another load."""
    study = claim.get("study")
    if claim["form"] == "trend":
        levels = claim["levels"]
        names = [f"{claim['target']}{suffix} at {x} {lv:g}" for lv in levels]
        sides = [cells.get((claim["target"] + suffix, lv)) for lv in levels]
        where = ""
        unflagged = [clean.get((claim["target"] + suffix, lv)) for lv in levels]
        pairs = [Pair(sides[i + 1], sides[i], f"{names[i + 1]} above {names[i]}", _ratio(study, i + 1, i),
                      unflagged[i + 1], unflagged[i]) for i in range(len(sides) - 1)]
        steps = [levels[i + 1] / levels[i] for i in range(len(levels) - 1)] if claim["shape"] == "linear" else None
    else:
        names = [t + suffix for t in (*claim["targets"], *claim.get("over", []))]
        sides = [cells.get((n, level)) for n in names]
        unflagged = [clean.get((n, level)) for n in names]
        where = "" if level is None else f" at {x} {level:g}"
        # an order: each target ahead of the next; a lead: each of `targets` ahead of each of `over`
        ahead = [(i, i + 1) for i in range(len(names) - 1)] if claim["form"] == "order" else \
            [(i, j) for i in range(len(claim["targets"])) for j in range(len(claim["targets"]), len(names))]
        # where lower is better, the one behind has the higher figure
        up = METRICS[claim["metric"]].higher_is_better
        pairs = [Pair(*((sides[i], sides[j]) if up else (sides[j], sides[i])), f"{names[i]} ahead of {names[j]}",
                      _ratio(study, i, j) if up else _ratio(study, j, i),
                      *((unflagged[i], unflagged[j]) if up else (unflagged[j], unflagged[i]))) for i, j in ahead]
        steps = None
    verdict, evidence = decide(pairs, claim["metric"], steps, by=claim.get("by"), ceiling=ceiling)
    here = "; ".join(_here(c, n, claim["metric"]) for c, n in zip(sides, names))
    scenario = claim["scenario"] + (f" ({claim['network']})" if claim.get("network") else "")
    return {"claim": claim["claim"], "here": f"{scenario}{where}: {here}", "verdict": verdict,
            "evidence": evidence, "differs": claim.get("differs", "")}


def _ratio(study: list | None, high: int, low: int) -> float:
    """The study's own ratio of two of its figures (NaN where it gave none)."""
    return study[high] / study[low] if study and study[low] else math.nan


def _here(cell: dict | None, name: str, metric: str) -> str:
    if cell is None:
        return f"{name} not measured"
    unit = METRICS[metric].unit
    spread = f" ({fmt(cell[metric + '_min'])}-{fmt(cell[metric + '_max'])}, {cell['ok']} of {cell['repeats']})"
    flagged = f" ⚠ {cell['check_flags']}" if cell["check_flags"] else ""
    return f"{name} {fmt(cell[metric], unit)}{spread}{flagged}"


def _unusable(cell: dict | None, metric: str, truth: str) -> str:
    """Why a cell cannot stand on its side of a pair ('' when it can). truth: what the pair needs of
    the cell's true figure against the one measured ("at least": the high side, "at most": the low)."""
    if cell is None:
        return "not measured"
    if cell["state"] in ("failed", "partial"):
        return f"{cell['ok']} of {cell['repeats']} repeats ran"
    if cell["state"] == "flagged" and bias.bound(cell["check_flags"], metric) != truth:
        return f"flagged {cell['check_flags']}"
    return ""


def _usable_sides(pair: Pair, metric: str) -> tuple[Pair, str]:
    """The pair as it is judged, with what was done to it in words ('' when nothing). A side whose
    slowing flags could have made the pair, in the direction its figures point, is replaced by its clean
    repeats where MIN_CLEAN or more are clean; else, where the host's steal is all that withholds it,
    by its repeats given back every stolen moment, when even at that best the pair still points the
    same way (the truth lies between the figure and its best)."""
    if not (pair.high and pair.low):
        return pair, ""
    agrees = judge.lead(_values(pair.high, metric), _values(pair.low, metric)).ratio > 1
    needs = ("at least", "at most") if agrees else ("at most", "at least")
    sides, said = [pair.high, pair.low], []
    for i, (clean, truth) in enumerate(((pair.high_clean, needs[0]), (pair.low_clean, needs[1]))):
        cell = sides[i]
        if cell["state"] != "flagged" or not _unusable(cell, metric, truth):
            continue
        if bias.bound(cell["check_flags"], metric) not in ("", truth) and clean and clean["ok"] >= MIN_CLEAN:
            said.append(f"{cell['ok'] - clean['ok']} flagged repeat(s) of {cell['target']} left out "
                        f"({cell['check_flags']})")
            sides[i] = clean
            continue
        best = _given_back(cell, metric, truth)
        if best is None:
            continue
        trial = [*sides]
        trial[i] = best
        if (judge.lead(_values(trial[0], metric), _values(trial[1], metric)).ratio > 1) == agrees:
            said.append(f"{cell['target']} given back the host's steal")
            sides[i] = best
    return (Pair(sides[0], sides[1], pair.label, pair.study_ratio, pair.high_clean, pair.low_clean),
            "; ".join(said))


def _given_back(cell: dict, metric: str, truth: str) -> dict | None:
    """The cell at its best had the host stolen nothing, where steal is the only flag that withholds it
    and each repeat's steal was measured; None otherwise."""
    if not bias.held(cell["check_flags"], metric, truth) <= bias.STOLEN:
        return None
    back = cell.get(f"{GIVEN_BACK}_values")
    if not isinstance(back, (tuple, list)) or len(back) != len(_values(cell, metric)):
        return None
    return {**cell, metric: float(pd.Series(back).median()), f"{metric}_values": tuple(back),
            "check_flags": "", "state": "ok", "given_back": True}


def decide(pairs: list[Pair], metric: str, steps: list[float] | None = None,
           alpha: float = judge.ALPHA, by: float | None = None, ceiling: float | None = None) -> tuple[str, str]:
    """(verdict, evidence) of a claim made of pairs; steps: each pair's ratio in proportion (linear); by:
    the least ratio the study's words claim for each pair, which the pair's interval must clear; ceiling:
    the most the load could be served (load_ceiling), where a pair both of whose sides reach it is level."""
    judged = [_usable_sides(p, metric) for p in pairs]
    pairs, left_out = [p for p, _ in judged], [why for _, why in judged]
    leads = [judge.lead(_values(p.high, metric), _values(p.low, metric)) if p.high and p.low else None
             for p in pairs]
    p_adj = judge.holm(pd.Series([lead.p if lead and not lead.why else math.nan for lead in leads], dtype=float))
    family = alpha / max(1, len(pairs))
    said, against, open_, level = [], [], [], []
    for i, (pair, lead) in enumerate(zip(pairs, leads)):
        decided = lead is not None and not lead.why and p_adj[i] < alpha
        agrees = lead is not None and lead.ratio > 1
        # the side the pair measured: for the study it needs the high side's truth at least as high
        needs = ("at least", "at most") if agrees else ("at most", "at least")
        withheld = ""
        for cell, clean, truth in ((pair.high, pair.high_clean, needs[0]), (pair.low, pair.low_clean, needs[1])):
            why = _unusable(cell, metric, truth)
            if why and not withheld:
                clean_ok = clean["ok"] if clean else 0
                withheld = (f"{cell['target']} {why} in {cell['ok'] - clean_ok} of its {cell['ok']} repeats; "
                            f"{MIN_CLEAN} clean ones would be judged alone" if why.startswith("flagged") else why)
        text = _pair_text(pair, lead, p_adj[i], steps[i] if steps else None) + (f" ({left_out[i]})" if left_out[i] else "")
        if withheld:
            open_.append(f"{pair.label}: withheld ({withheld})")
        elif lead is None or lead.why:
            open_.append(f"{pair.label}: {lead.why if lead else 'not measured'}")
        elif decided and not agrees:
            against.append(pair.label)
        elif by and (within := judge.lead(_values(pair.high, metric), _values(pair.low, metric), alpha=family)).high < by:
            # whichever way it goes, it is not by as much as the study's words say, at Holm's strictest step
            against.append(f"{pair.label} (×{within.low:.2f} to ×{within.high:.2f}: less than the ×{by:g} the "
                           f"study's words claim)")
        elif not decided and ceiling and min(pair.high[metric], pair.low[metric]) >= AT_CEILING * ceiling:
            level.append(f"{pair.label}: both at the load's own ceiling of {ceiling:,.0f} req/s (its clients each "
                         f"waiting the scenario's wait), which no number of repeats parts")
        elif not decided:
            size = abs(100 * (lead.ratio - 1))
            open_.append(f"{pair.label}: within noise (a lead of {size:.0f}% needs "
                         f"{lead.repeats_for(max(size, 1.0), family)} repeats a side)")
        elif steps:
            band = _in_band(judge.lead(_values(pair.high, metric), _values(pair.low, metric), alpha=family), steps[i])
            if band is False:
                against.append(f"{pair.label} (not in proportion to the levels)")
            elif band is None:
                open_.append(f"{pair.label}: grows, but in proportion cannot be told at these repeats")
        elif by and within.low < by:   # ahead beyond the noise, but perhaps not by as much as the study's words
            open_.append(f"{pair.label}: ahead, but by ×{by:g} as the study's words claim cannot be told at "
                         f"these repeats (×{within.low:.2f} to ×{within.high:.2f})")
        said.append(text)
    if against:
        verdict = f"does not hold: {'; '.join(against)}"
    elif open_ or level:
        verdict = f"cannot tell at {'these repeats' if open_ else 'this load'}: {'; '.join(open_ + level)}"
    else:
        verdict = "holds"
    return verdict, " | ".join(said)


def _in_band(lead: judge.Lead, ratio: float) -> bool | None:
    """True when the step's interval lies within LINEAR_BAND of the levels' ratio, False when it lies
    wholly outside it, None in between."""
    lo, hi = ratio * (1 - LINEAR_BAND), ratio * (1 + LINEAR_BAND)
    if lo <= lead.low and lead.high <= hi:
        return True
    if lead.high < lo or lead.low > hi:
        return False
    return None


def _values(cell: dict, metric: str):
    values = cell.get(f"{metric}_values")
    return list(values) if isinstance(values, (tuple, list)) else [cell[metric]]


def _pair_text(pair: Pair, lead: judge.Lead | None, p_adj: float, step: float | None) -> str:
    if lead is None:
        return f"{pair.label}: not measured"
    study = f"; the study ×{pair.study_ratio:.2f}" if math.isfinite(pair.study_ratio) else ""
    if lead.why:
        return f"{pair.label}: ×{lead.ratio:.2f} here ({lead.why}){study}"
    levels = f", levels ×{step:g}" if step else ""
    return (f"{pair.label}: ×{lead.ratio:.2f} here (95% CI ×{lead.low:.2f} to ×{lead.high:.2f}, Holm p "
            f"{p_adj:.3g}{levels}){study}")
