"""Free space before a run starts: the worst case of one cell, estimated from the plan, must fit.

A run that fills its filesystem half-way fails in a confusing place (a parquet file written short,
a JVM that cannot write its log) and takes the machine's other work down with it. The estimate is
of what one cell can write before anything of it is compressed or read, from the figures measured
here: Flight Recorder writes about 744 KiB per 5-s window (--jfr), pacer 24 bytes an arrival (kept
at about 7 once read), a k6 burst about 2 KB of CSV per request (gzipped as written: an upper bound), an
h2load burst 25 bytes a request, each log at most log_cap.LIMIT, and an AOT cache about 100 MiB per
target (--jvm-mode aot-cache).
"""
from __future__ import annotations

import shutil
from pathlib import Path

from orchestrator.config.modes import AOT_CACHE
from orchestrator.config.plan import Plan
from orchestrator.drivers.pacer import RECORD_BYTES
from orchestrator.errors import BenchError
from orchestrator.infra.log_cap import LIMIT as LOG_BYTES
from orchestrator.measure.ceilings import ceilings
from orchestrator.results.prune import human_size

JFR_BYTES_PER_S = 744 * 1024 / 5
K6_CSV_BYTES_PER_REQUEST = 2048
H2LOAD_BYTES_PER_REQUEST = 25
AOT_CACHE_BYTES = 100 << 20
# logs a cell may write: its target's server log and the load generator's (a Locust master and workers: more,
# but each of theirs stays small)
LOGS_PER_CELL = 2


class NotEnoughSpace(BenchError):
    exit_code = 2


def cell_bytes(plan: Plan, rate: float | None, open_ceiling: float | None) -> dict[str, float]:
    """What one cell at `rate` (None: a closed loop, or the search of a capacity cell) may write at most,
    by kind of file. A capacity cell offers at most the generator's calibrated open-model ceiling."""
    p, s = plan.profile, plan.settings
    seconds = p.rules.measured_s(p)
    out = {"logs": LOGS_PER_CELL * LOG_BYTES}
    if s.jfr:
        out["Flight Recorder"] = JFR_BYTES_PER_S * seconds
    most = p.rules.open_ceiling_needed(p)
    offered = rate or (min(open_ceiling or most / 2, most / 2) if most else None)
    if p.driver == "pacer" and offered:
        # the warm-up's windows at the cell's rate are pacer's too, each one's records replaced by the next
        out["pacer records"] = RECORD_BYTES * offered * (seconds + p.warmup_s)
    if p.requests and p.driver in ("k6", "h2load"):
        per = K6_CSV_BYTES_PER_REQUEST if p.driver == "k6" else H2LOAD_BYTES_PER_REQUEST
        out[f"{p.driver} per-request files"] = per * p.requests
    return out


def worst_cell(plan: Plan, open_ceiling: float | None) -> dict[str, float]:
    """The largest cell's cell_bytes, with the AOT caches of the run's targets when it trains them."""
    worst = max((cell_bytes(plan, rate, open_ceiling) for _, rate in plan.profile.levels()),
                key=lambda parts: sum(parts.values()))
    if AOT_CACHE in plan.settings.jvm_modes:
        worst["AOT caches"] = AOT_CACHE_BYTES * len(plan.targets)
    return worst


def check(plan: Plan, results_dir: Path) -> None:
    """NotEnoughSpace (one line, exit 2) when the worst cell would not fit on results_dir's filesystem."""
    open_ceiling = ceilings(results_dir=results_dir, loadgen_cpus=plan.settings.loadgen_cpus,
                            key="open_ceiling_rps").get(plan.profile.driver)
    parts = worst_cell(plan, open_ceiling)
    need, free = sum(parts.values()), shutil.disk_usage(results_dir).free
    if need > free:
        detail = ", ".join(f"{name} {human_size(v)}" for name, v in sorted(parts.items(), key=lambda kv: -kv[1]))
        raise NotEnoughSpace(f"not enough free space for this run: {human_size(free)} free on the filesystem of "
                             f"{results_dir}, and one cell may write up to {human_size(need)} ({detail}); "
                             f"free some (`bench prune`) or shorten the profile")
