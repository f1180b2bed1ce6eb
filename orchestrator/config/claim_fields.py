"""A preset's [[claims]] as a file states them: the fields of each form, what each evidence measure
is, and the one check of a claim's fields, which the preset's reader runs so that a wrong claim is
one line naming it. Judging them is results/claims.py's and results/claim_forms.py's.

An "explanation" (the default form) names a target and scenario, the figure to show (a row column),
an evidence measure and the condition under which the explanation holds (`holds = ">= 190"`). An
"order", a "lead" (some targets ahead of others) or a "trend" (one target over load levels) names
the metric and the targets or levels, with the study's own figures where it gave them.
"""
from __future__ import annotations

import re

from orchestrator.core.schema import COLUMNS, METRICS

# Evidence measures: name -> what it is, in words
EVIDENCE = {
    "asleep": "threads asleep on average (Flight Recorder, sleeps >= 10 ms)",
    "parked": "threads parked on average (Flight Recorder, parks >= 10 ms, a pool's idle workers left out)",
    "event-loop-app-share": "share of the event loop's CPU samples in application code (%)",
    "pinned": "virtual-thread pinning events (Flight Recorder)",
    "threads-on-cpu": "platform threads that used >= 1 % of a CPU (Flight Recorder)",
    "listen-overflows": "listen-queue overflows counted by the kernel",
    "switches-per-request": "OS context switches into the server per request (schedstat)",
}
# The measures read from Flight Recorder's events: a run records them only with --jfr.
RECORDED = {"asleep", "parked", "event-loop-app-share", "pinned", "threads-on-cpu"}
HOLDS = re.compile(r"\s*(>=|<=|>|<)\s*(-?\d+(?:\.\d+)?)\s*")
FIELDS = ("claim", "target", "scenario", "figure", "evidence", "holds")
OPTIONAL = ("form", "level", "differs")

DECIDED = ("order", "lead", "trend")   # the forms the judge decides from the repeats
FORMS = ("explanation", *DECIDED)
SHAPES = ("grows", "linear")
NEAREST, FARTHEST = "nearest", "farthest"
REQUIRED = {"order": ("claim", "scenario", "metric", "targets"),
            "lead": ("claim", "scenario", "metric", "targets", "over"),
            "trend": ("claim", "target", "scenario", "metric", "levels", "shape")}
# `study`: the study's figure for each target (order; lead: its targets, then those it leads) or level
# (trend), where the study gives them (some give only a chart and its reading). `by`: the least ratio the
# study's words claim for each pair of an order or lead ("far more": by = 1.5), so that a lead of 2 %
# beyond the noise does not make "far more" hold
DECIDED_OPTIONAL = ("form", "study", "level", "network", "differs", "by")


def check(claim: dict) -> str | None:
    """What is wrong with a claim's fields, or None."""
    form = claim.get("form", "explanation")
    if form not in FORMS:
        return f"form '{form}' is not one of {', '.join(FORMS)}"
    if form != "explanation":
        return _check_decided(claim)
    missing = [f for f in FIELDS if not isinstance(claim.get(f), str) or not claim[f].strip()]
    if missing:
        return f"needs {', '.join(missing)} (text)"
    if claim["figure"] not in COLUMNS:
        return f"figure '{claim['figure']}' is not a column of the results (schema.py)"
    if claim["evidence"] not in EVIDENCE:
        return f"evidence '{claim['evidence']}' is not one of {', '.join(EVIDENCE)}"
    if not HOLDS.fullmatch(claim["holds"]):
        return f"holds '{claim['holds']}' is not a comparison such as '>= 190'"
    if "level" in claim and (isinstance(claim["level"], bool) or not isinstance(claim["level"], (int, float))):
        return f"level must be a number (the load level the claim is about), not {claim['level']!r}"
    unknown = set(claim) - {*FIELDS, *OPTIONAL}
    if unknown:
        return f"unknown field(s) {', '.join(sorted(unknown))}; valid: {', '.join((*FIELDS, *OPTIONAL))}"
    return None


def targets(claim: dict) -> list[str]:
    """The targets a claim is about."""
    return [*claim["targets"], *claim.get("over", [])] if "targets" in claim else [claim["target"]]


def _check_decided(claim: dict) -> str | None:
    """What is wrong with an order, lead or trend claim's fields, or None."""
    form = claim["form"]
    missing = [f for f in REQUIRED[form] if f not in claim]
    if missing:
        return f"a claim of form '{form}' needs {', '.join(missing)}"
    unknown = set(claim) - {*REQUIRED[form], *DECIDED_OPTIONAL}
    if unknown:
        return f"unknown field(s) {', '.join(sorted(unknown))}; valid: {', '.join((*REQUIRED[form], *DECIDED_OPTIONAL))}"
    if not isinstance(claim["claim"], str) or not claim["claim"].strip():
        return "needs claim (text: the study's words and figures)"
    if claim["metric"] not in METRICS or not METRICS[claim["metric"]].ranked:
        return f"metric '{claim['metric']}' is not one of {', '.join(m for m in METRICS if METRICS[m].ranked)}"
    if form == "trend":
        if not _listed(claim["levels"], (int, float), 2):
            return "levels must list two or more load levels (numbers)"
    elif not _listed(claim["targets"], str, 2 if form == "order" else 1):
        return f"targets must list {'two' if form == 'order' else 'one'} or more targets"
    if form == "lead" and not _listed(claim["over"], str, 1):
        return "over must list the targets the claim's targets lead"
    sides = len(claim["levels"]) if form == "trend" else len(claim["targets"]) + len(claim.get("over", []))
    if "study" in claim and not _listed(claim["study"], (int, float), sides, exact=True):
        return f"study must list the study's figure for each of the {sides} {'levels' if form == 'trend' else 'targets'}"
    if form == "trend" and claim["shape"] not in SHAPES:
        return f"shape '{claim['shape']}' is not one of {', '.join(SHAPES)}"
    if "by" in claim and (form == "trend" or isinstance(claim["by"], bool) or not isinstance(claim["by"], (int, float))
                          or not claim["by"] > 1):
        return "by is an order's or a lead's least ratio the study's words claim, a number above 1 (far more: 1.5)"
    if "network" in claim and not isinstance(claim["network"], str):
        return f"network must be a level's name, '{NEAREST}' or '{FARTHEST}'"
    return None


def _listed(values, kind, least: int, exact: bool = False) -> bool:
    return (isinstance(values, list) and (len(values) == least if exact else len(values) >= least)
            and all(isinstance(v, kind) and not isinstance(v, bool) for v in values))
