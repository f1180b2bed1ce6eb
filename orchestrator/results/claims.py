"""A study's claims, re-tested: each judged on the run's rows, in the form the study states it.

A preset lists its study's claims ([[claims]] in presets/*.toml), each with the study's words and
figures (`claim`) and, optionally, what in the study's set-up differs from this one (`differs`). Its
`form` says how it is judged:

- "order", "lead" (some targets ahead of others) and "trend": the finding itself, decided by the judge from the
  repeats (claim_forms.py): "holds", "does not hold" or "cannot tell at these repeats".
- "explanation" (the default): the explanation the study gives, tested by evidence recorded in the
  same cells: the target and scenario it is about, the figure to show (a row column), a measure of
  the row (MEASURES) and the condition under which the explanation holds (`holds = ">= 190"`), and
  optionally the load level (`level = 2000`, in the run's level column). Medians over the unflagged
  repeats: "the explanation holds", "does not hold", "no evidence recorded" when the run had none (for
  instance without --jfr), or "not judged" when every repeat carries a flag (a quick form's cold cells
  are `not-steady`).
"""
from __future__ import annotations

import operator

from orchestrator import lazy
from orchestrator.config.claim_fields import EVIDENCE, HOLDS
from orchestrator.config.modes import base_id
from orchestrator.results import claim_forms

pd = lazy.module("pandas")

# How a row gives each evidence measure (config/claim_fields.EVIDENCE says what each is, in words)
READERS = {
    "asleep": lambda r: r["jfr_sleep_ms"] / 1000 / r["duration_s"],
    "parked": lambda r: r["jfr_parked_ms"] / 1000 / r["duration_s"],
    "event-loop-app-share": lambda r: 100 * r["jfr_event_loop_app_share"],
    "pinned": lambda r: r["jfr_pinned_count"],
    "threads-on-cpu": lambda r: r["jfr_platform_threads_busy"],
    "listen-overflows": lambda r: r["tcp_listen_overflows"],
    "switches-per-request": lambda r: r["server_switches_per_request"],
}
# one reader each, or importing this module fails
MEASURES = {name: (words, READERS[name]) for name, words in EVIDENCE.items()}
_OPS = {">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt}


def judged(df: pd.DataFrame, claims: list[dict], x: str = "concurrency") -> list[dict]:
    """Each claim judged on df: rows of claim (the study's words), here (the figures measured), verdict,
    evidence and differs (what in the study's set-up differs from this one)."""
    out = []
    for c in claims:
        out += _explained(df, c, x) if c.get("form", "explanation") == "explanation" else \
            claim_forms.judge_claim(df, c, x)
    return out


def _explained(df: pd.DataFrame, c: dict, x: str) -> list[dict]:
    """An explanation claim, per load level of its target and scenario in df; a target measured in
    several modes (cold, with an AOT cache: modes.MODES) is judged in each."""
    rows = df[(df["target"].map(base_id) == c["target"]) & (df["scenario"] == c["scenario"])
              & (df["status"] == "ok")]
    at = f" at {x} {c['level']:g}" if "level" in c else ""
    if "level" in c:
        rows = rows[rows[x] == c["level"]]
    said = {"claim": c["claim"], "differs": c.get("differs", "")}
    if rows.empty:
        return [{**said, "here": f"{c['target']} on {c['scenario']}{at} was not measured", "verdict": "not measured",
                 "evidence": ""}]
    label, measure = MEASURES[c["evidence"]]
    op, bound = HOLDS.fullmatch(c["holds"]).groups()
    out = []
    for (target, level), cell in rows.groupby(["target", x], sort=True):
        # A flagged repeat measured something besides the target (a busy generator, a JIT still
        # compiling): its figure and evidence judge nothing. Shown, never judged on.
        flags = cell["check_flags"].fillna("") if "check_flags" in cell else pd.Series("", index=cell.index)
        clean = cell[flags == ""]
        shown = clean if len(clean) else cell
        figure, evidence = shown[c["figure"]].median(), shown.apply(measure, axis=1).median()
        left_out = f"; {len(cell) - len(clean)} flagged left out" if len(clean) < len(cell) else ""
        if clean.empty:
            seen = sorted({f for s in flags for f in s.split(",") if f})
            verdict = f"not judged: every repeat was flagged ({', '.join(seen)})"
        elif pd.isna(evidence):
            verdict = "no evidence recorded (a run with --jfr records it)"
        else:
            holds = _OPS[op](evidence, float(bound))
            verdict = f"the explanation {'holds' if holds else 'does not hold'}"
        out.append({**said, "here": f"{target} on {c['scenario']} at {x} {level:g}: {c['figure']} {figure:,.1f}",
                    "evidence": f"{label}: {'' if pd.isna(evidence) else f'{evidence:,.1f} '}(it needs {op} {bound})",
                    "verdict": f"{verdict} ({len(shown)} repeat(s){left_out})"})
    return out


def sentence(row: dict) -> str:
    """A judged claim in one sentence, as the console and the notebooks print it."""
    evidence = f"; {row['evidence']}" if row["evidence"] else ""
    return f"{row['claim']} Here: {row['here']}{evidence}: {row['verdict']}."
