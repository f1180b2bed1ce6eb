"""`bench noise`: how much this machine's figures move on their own, from one target run N times (A/A).

Each repeat is a fresh JVM on the same scenario and load level, as in any run; the spread of the repeats
is the noise every comparison on this machine carries. Per metric the noise is the coefficient of
variation over the repeats that ran: sample standard deviation (n - 1) over the mean (analysis.cv).
Flagged repeats count too: noise the machine makes is noise.

The floor is stored in results/noise-floor.json, by machine (hostname, CPU model, cores), newest last,
each entry for the one scenario and level it measured (its "cv" per metric, "n_by_metric" the repeats
behind each). Noise lives where it was measured: `floors()` gives the newest floor of each scenario
and metric of a machine, and the judge applies one only to cells of that scenario and metric (and
only to cells of too few repeats to have their own; judge.py). `entry()` is the newest of all, the
context a report quotes:

    from orchestrator.results import noise
    noise.floors(meta["host"])   # {("json", "rps"): Floor(cv=0.11, n=5, ...), ...} ({} when none was measured)
"""
from __future__ import annotations

import datetime as dt
import json
import math
from pathlib import Path

from orchestrator import RESULTS_DIR
from orchestrator.core.schema import METRICS
from orchestrator.results import analysis
from orchestrator.results import store as results
from orchestrator.results.judge import Floor
from orchestrator.results.store import MACHINE_KEYS, machine_key

FLOOR_FILE = "noise-floor.json"
QUOTED = {"rps": "rps", "latency_p50_ms": "p50", "latency_p99_ms": "p99"}


def _ran(df):
    ran = analysis.tidy(df)
    return ran[ran["status"] == "ok"]


def cvs(df) -> dict[str, float]:
    """The CV of every metric of METRICS over the repeats that ran, for a frame of one cell's
    repeats; metrics with fewer than two values or a mean of 0 are left out."""
    ran = _ran(df)
    out = {m: analysis.cv(ran[m]) for m in METRICS if m in ran}
    return {m: round(c, 5) for m, c in out.items() if not math.isnan(c)}


def counts(df) -> dict[str, int]:
    """The repeats that ran and gave a value, per metric of `cvs`."""
    ran = _ran(df)
    return {m: int(ran[m].notna().sum()) for m in cvs(df)}


def _entries(root: Path) -> dict:
    path = Path(root) / FLOOR_FILE
    return results.read_json(path) if path.exists() else {}


def record(df, meta: dict, root: Path = RESULTS_DIR) -> dict:
    """Store the noise floor of an A/A run (its measurements and run.json) and return the entry."""
    host = {k: meta.get("host", {}).get(k) for k in MACHINE_KEYS}
    settings = meta.get("plan", {}).get("settings", {})
    ran = df[df["status"] == "ok"]
    entry = {"date": dt.datetime.now().isoformat(timespec="seconds"), "run_id": meta.get("run_id"), **host,
             "target": df["target"].iloc[0], "scenario": df["scenario"].iloc[0],
             "concurrency": int(df["concurrency"].iloc[0]), "driver": df["driver"].iloc[0],
             "duration_s": round(float(df["duration_s"].median()), 1), "n": len(ran),
             "flagged": int((ran["check_flags"].fillna("") != "").sum()),
             **{k: settings.get(k) for k in ("server_cpus", "loadgen_cpus", "heap", "runtime")},
             "cv": cvs(df), "n_by_metric": counts(df)}
    path = Path(root) / FLOOR_FILE
    with results.updating(path):   # read, appended to and written by one writer at a time: no entry lost
        floors = _entries(root)
        floors.setdefault(machine_key(host), []).append(entry)
        results.atomic_write(path, lambda p: p.write_text(json.dumps(floors, indent=2) + "\n"))
    return entry


def entry(host: dict, root: Path = RESULTS_DIR) -> dict | None:
    """The newest noise-floor entry of a machine (a run.json "host", or hostinfo.host_info()), or None."""
    found = _entries(root).get(machine_key(host), [])
    return found[-1] if found else None  # record() appends


def floors(host: dict, root: Path = RESULTS_DIR) -> dict[tuple[str, str], Floor]:
    """(scenario, metric) -> the newest noise floor measured there on a machine (a run.json "host").
    Entries written before "n_by_metric" count every repeat that ran for each metric."""
    out = {}
    for e in _entries(root).get(machine_key(host), []):   # oldest first
        for metric, c in e["cv"].items():
            n = e.get("n_by_metric", {}).get(metric, e["n"])
            out[(e["scenario"], metric)] = Floor(c, n, f"{e['scenario']} at {e['concurrency']}, run {e['run_id']}")
    return out


def describe(e: dict) -> str:
    """'rps CV 11%, p50 CV 8%, p99 CV 30% (n=5, run ..., ...)'"""
    quoted = ", ".join(f"{name} CV {100 * e['cv'][m]:.1f}%" for m, name in QUOTED.items() if m in e["cv"])
    return (f"{quoted} (n={e['n']}, run {e['run_id']}: {e['target']} on {e['scenario']} at {e['concurrency']} "
            f"connections, {e['driver']}, {e['duration_s']:g} s windows, {e['date'][:10]})")
