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
    noise.floors()           # {("json", "rps"): Floor(cv=0.11, n=5, ...), ...} ({} when none was measured)
"""
from __future__ import annotations

import datetime as dt
import json
import math
from pathlib import Path
from typing import Optional

import typer

from orchestrator import RESULTS_DIR
from orchestrator.results import analysis, store as results
from orchestrator.results.judge import Floor
from orchestrator.infra.hostinfo import MACHINE_KEYS, host_info, machine_key

FLOOR_FILE = "noise-floor.json"
QUOTED = {"rps": "rps", "latency_p50_ms": "p50", "latency_p99_ms": "p99"}


def _ran(df):
    ran = analysis.tidy(df)
    return ran[ran["status"] == "ok"]


def cvs(df) -> dict[str, float]:
    """The CV of every metric of analysis.METRICS over the repeats that ran, for a frame of one cell's
    repeats; metrics with fewer than two values or a mean of 0 are left out."""
    ran = _ran(df)
    out = {m: analysis.cv(ran[m]) for m in analysis.METRICS if m in ran}
    return {m: round(c, 5) for m, c in out.items() if not math.isnan(c)}


def counts(df) -> dict[str, int]:
    """The repeats that ran and gave a value, per metric of `cvs`."""
    ran = _ran(df)
    return {m: int(ran[m].notna().sum()) for m in cvs(df)}


def _entries(root: Path) -> dict:
    path = Path(root) / FLOOR_FILE
    return json.loads(path.read_text()) if path.exists() else {}


def record(df, meta: dict, root: Path = RESULTS_DIR) -> dict:
    """Store the noise floor of an A/A run (its measurements and run.json) and return the entry."""
    host = {k: meta.get("host", {}).get(k) for k in MACHINE_KEYS}
    settings = meta.get("plan", {}).get("settings", {})
    ran = df[df["status"] == "ok"]
    entry = {"date": dt.datetime.now().isoformat(timespec="seconds"), "run_id": meta.get("run_id"), **host,
             "target": df["target"].iloc[0], "scenario": df["scenario"].iloc[0],
             "concurrency": int(df["concurrency"].iloc[0]), "driver": df["driver"].iloc[0],
             "duration_s": round(float(df["duration_s"].median()), 1), "n": len(ran),
             "flagged": int((ran["flags"].fillna("") != "").sum()),
             **{k: settings.get(k) for k in ("server_cpus", "loadgen_cpus", "heap", "runtime")},
             "cv": cvs(df), "n_by_metric": counts(df)}
    floors = _entries(root)
    floors.setdefault(machine_key(host), []).append(entry)
    results._atomic_write(Path(root) / FLOOR_FILE, lambda p: p.write_text(json.dumps(floors, indent=2) + "\n"))
    return entry


def entry(host: dict | None = None, root: Path = RESULTS_DIR) -> dict | None:
    """The newest noise-floor entry of a machine (a run.json "host"; None: this one), or None."""
    found = _entries(root).get(machine_key(host if host is not None else host_info()), [])
    return found[-1] if found else None  # record() appends


def floors(host: dict | None = None, root: Path = RESULTS_DIR) -> dict[tuple[str, str], Floor]:
    """(scenario, metric) -> the newest noise floor measured there on a machine (None: this one).
    Entries written before "n_by_metric" count every repeat that ran for each metric."""
    out = {}
    for e in _entries(root).get(machine_key(host if host is not None else host_info()), []):   # oldest first
        for metric, c in e["cv"].items():
            n = e.get("n_by_metric", {}).get(metric, e["n"])
            out[(e["scenario"], metric)] = Floor(c, n, f"{e['scenario']} at {e['concurrency']}, run {e['run_id']}")
    return out


def describe(e: dict) -> str:
    """'rps CV 11%, p50 CV 8%, p99 CV 30% (n=5, run ..., ...)'"""
    quoted = ", ".join(f"{name} CV {100 * e['cv'][m]:.1f}%" for m, name in QUOTED.items() if m in e["cv"])
    return (f"{quoted} (n={e['n']}, run {e['run_id']}: {e['target']} on {e['scenario']} at {e['concurrency']} "
            f"connections, {e['driver']}, {e['duration_s']:g} s windows, {e['date'][:10]})")


def register(app: typer.Typer) -> None:
    """Add the `noise` command to the `bench` app."""
    from orchestrator.cli import app as cli  # only here: cli imports this module

    @app.command("noise")
    def noise_cmd(framework: str = typer.Option(..., "--framework", "-f", help="The target: framework or "
                                                "framework:variant (default variant: the framework's own)."),
                  variant: Optional[str] = typer.Option(None, "--variant", "-v", help="Its variant."),
                  scenario: str = typer.Option("json", "--scenario", "-s", help="One scenario."),
                  concurrency: int = typer.Option(64, "--concurrency", "-c", help="Connections."),
                  repeat: int = typer.Option(5, "--repeat", help="Repeats, each in a fresh JVM (2 or more)."),
                  duration: str = typer.Option("10s", "--duration", "-d", help="Measured window per repeat."),
                  warmup: Optional[str] = typer.Option(None, "--warmup", help="Warm-up window (as in `run`)."),
                  warmup_max: Optional[str] = typer.Option(None, "--warmup-max", help="Give up warming up after."),
                  server_cpus: Optional[str] = cli.ServerCpus, loadgen_cpus: Optional[str] = cli.LoadgenCpus,
                  heap: Optional[str] = cli.HeapOpt, port: int = cli.PortOpt, redis_port: int = cli.RedisPortOpt,
                  db_port: int = cli.DbPortOpt, start_timeout: str = cli.StartTimeoutOpt,
                  results_dir: Path = typer.Option(RESULTS_DIR, "--results-dir")) -> None:
        """Run one target N times on one scenario and level (A/A) and store this machine's noise floor."""
        from orchestrator.config import profiles
        from orchestrator.measure import runner
        from orchestrator.config.plan import Plan
        from orchestrator.config.catalog import discover, resolve
        from orchestrator.errors import UsageError
        from orchestrator.config.scenarios import SCENARIOS, parse_list
        if repeat < 2:
            raise UsageError("--repeat must be 2 or more: one repeat has no spread")
        scenarios = parse_list(scenario, list(SCENARIOS), "scenario")
        if len(scenarios) != 1:
            raise UsageError("bench noise measures one scenario")
        target = resolve(discover(), f"{framework}:{variant}" if variant else framework)
        prof = cli._override(profiles.load("throughput"), concurrency=str(concurrency), rate=None, requests=None,
                             workers=None, warmup=warmup, warmup_max=warmup_max, duration=duration, repeat=repeat)
        settings = cli._settings(server_cpus, loadgen_cpus, heap, port, redis_port, db_port,
                                 start_timeout=start_timeout)
        plan = Plan(matrix={target.id: scenarios}, profile=prof, settings=settings)
        if not plan.scenarios_of(target):
            raise UsageError(f"{target.id} does not serve {scenario} "
                             f"(it serves {', '.join(target.framework.scenarios)})")
        cli._check_writable(results_dir)
        store = runner.new_store(root=results_dir)
        cli.console.print(f"noise: {target.id} on {scenario} at {concurrency} connections, {repeat} fresh JVMs, "
                          f"{prof.duration_s:g} s windows")
        if runner.execute(plan, store, cli.console):
            cli.console.print(f"[red]failed repeats in run {store.run_id}: no noise floor stored[/]")
            raise typer.Exit(1)
        e = record(results.load(store.dir), store.meta(), results_dir)
        cli.console.print(f"noise floor of {machine_key(e)}: {describe(e)}" +
                          (f"; {e['flagged']} flagged repeat(s) included" if e["flagged"] else ""), soft_wrap=True)
        cli.console.print("CV per metric: " + ", ".join(f"{m} {100 * c:.1f}%" for m, c in e["cv"].items()) +
                          f" -> {Path(results_dir) / FLOOR_FILE}", soft_wrap=True)
