"""`bench calibrate`'s measure of the downstream service (infra/downstream.py): how many calls a second
it answers on the CPUs it has in a run (the load generator's), so that a fan-out cell's calls can be
read against it. wrk, on the server's CPUs for this measure, sends the calls; the downstream's own CPU
says whether it was the limit. Twice: with no delay (its per-call cost), and with the run's default
delay at more connections than a target's pool has (its timers' cost, and each call's delay as seen
from outside, which is its timer's precision).
"""
from __future__ import annotations

import shutil
import statistics
import tempfile
from pathlib import Path

import psutil

from orchestrator.config.driver_registry import get
from orchestrator.config.load import LoadSpec
from orchestrator.config.scenarios import Scenario
from orchestrator.core import downstream_api
from orchestrator.core.cpus import cpu_count
from orchestrator.infra import downstream, procs
from orchestrator.infra.backends import OWNER_FILE
from orchestrator.infra.procs import stop_pid
from orchestrator.measure import ceilings

# (delay in ms, connections): no delay at the generators' usual level; the default delay at twice the
# pool a target keeps to the downstream (CONTRACT.md), so that timers, not connections, are counted
LEVELS = ((0, 256), (downstream_api.DEFAULT_MS, 1024))
WINDOWS = 3


def _call(ms: int) -> Scenario:
    return Scenario(f"downstream-{ms}ms", "GET", f"/call?i=1&ms={ms}", 200, "application/json", {"call": 1})


def measure(port: int, downstream_cpus: str, generator_cpus: str, duration_s: float, work: Path) -> dict:
    """The downstream on downstream_cpus, wrk on generator_cpus: WINDOWS windows at each of LEVELS.
    `work` is a folder of its own in the system's temporary folder (as the infrastructure's is), which
    the downstream's user can reach."""
    folder = work
    pid = downstream.start(folder, port, ["127.0.0.1"], downstream_api.DEFAULT_MS, downstream_cpus, None, False,
                           "127.0.0.1")
    wrk, cpus = get("wrk"), cpu_count(downstream_cpus)
    levels = []
    try:
        server = psutil.Process(pid)
        for ms, connections in LEVELS:
            windows = []
            for _ in range(WINDOWS):
                spec = LoadSpec(port=port, scenario=_call(ms), concurrency=connections, duration_s=duration_s,
                                cpus=generator_cpus, timeout_s=10.0, out_dir=folder / "wrk")
                before = sum(server.cpu_times()[:2])
                r = wrk.run(spec)
                used = sum(server.cpu_times()[:2]) - before
                windows.append({"rps": r.rps, "p50": r.latency_p50, "p99": r.latency_p99,
                                "cpu": 100 * used / r.duration_s / cpus, "errors": r.errors + r.errors_status})
            levels.append({"delay_ms": ms, "connections": connections,
                           "median_rps": round(statistics.median(w["rps"] for w in windows)),
                           "p50_ms": round(statistics.median(w["p50"] for w in windows), 2),
                           "p99_ms": round(statistics.median(w["p99"] for w in windows), 2),
                           "downstream_cpu_pct": round(statistics.median(w["cpu"] for w in windows), 1),
                           "errors": sum(w["errors"] for w in windows)})
    finally:
        stop_pid(pid, grace=2)
    return {"downstream_cpus": downstream_cpus, "generator_cpus": generator_cpus, "levels": levels,
            "ceiling_rps": levels[0]["median_rps"], "ceiling_cpu_pct": levels[0]["downstream_cpu_pct"]}


def line(entry: dict) -> str:
    """One line per level, as `bench calibrate` prints them."""
    return "; ".join(f"{lv['delay_ms']} ms delay at {lv['connections']:,} connections: {lv['median_rps']:,} calls/s, "
                     f"p50 {lv['p50_ms']:g} ms, p99 {lv['p99_ms']:g} ms, its CPU {lv['downstream_cpu_pct']:.0f} %"
                     for lv in entry["levels"])


def measure_and_store(port: int, server_cpus: str, loadgen_cpus: str, duration_s: float, results_dir: Path,
                      host: dict, console) -> Path:
    """The downstream service's ceiling (wrk on the server's CPUs against it on the generator's), stored."""
    procs.ensure_port_free(port, "the downstream service")
    console.print(f"the downstream service (nginx's echo module) on CPU(s) {loadgen_cpus}, wrk on CPU(s) {server_cpus}")
    folder = Path(tempfile.mkdtemp(prefix="bench-infra-"))   # as `bench clean` knows the infrastructure's
    (folder / OWNER_FILE).write_text(procs.Owner.me().mark())
    try:
        entry = measure(port, loadgen_cpus, server_cpus, duration_s, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    path = ceilings.store(results_dir, host, {}, downstream=entry)
    console.print(f"downstream: {line(entry)}")
    return path
