"""Building the rows of measurements.parquet (their columns: schema.py): what identifies a cell,
what a measured window gives, and the row of a cell that failed."""
from __future__ import annotations

import datetime as dt

from orchestrator.config.catalog import Target
from orchestrator.config.load import LoadResult
from orchestrator.config.modes import COLD, WARM
from orchestrator.config.plan import Plan
from orchestrator.core.schema import LATENCY_STATS, MiB, latency_column
from orchestrator.measure.checks import littles_law_ratio
from orchestrator.measure.sampling import ServerSample


def identity(plan: Plan, run_id: str, target: Target, repeat: int, scenario: str, started=None,
             network: str | None = None, network_rtt_ms: float | None = None) -> dict:
    """The columns that say what a cell is and what it ran with; the same for every row of it.
    started: the JVM the cell ran on (None: it never started); network: the cell's network level."""
    s, p = plan.settings, plan.profile
    return {"run_id": run_id, "started_at": dt.datetime.now().isoformat(timespec="seconds"),
            "target": target.id, "framework": target.framework.name, "variant": target.variant.name,
            "jvm_mode": target.jvm_mode, "start": COLD if target.cold else WARM,
            "runtime": s.runtime, "scenario": scenario, "network": network, "network_rtt_ms": network_rtt_ms,
            "driver": p.driver, "profile": p.name,
            "kind": p.kind, "repeat": repeat, "duration_s": p.measured_s(),
            "heap": target.heap(s.heap), "server_cpus": s.server_cpus, "loadgen_cpus": s.loadgen_cpus,
            "startup_s": started.startup_s if started else None,
            "rss_after_start_mb": started.rss_after_start_mb if started else None}


def failed(plan: Plan, base: dict, cell: tuple, reason: str) -> list[dict]:
    """The rows of a cell that measured nothing (a ramp: one per step), with the reason. No warm-up
    ran, so warmup_s is null, as are its figures."""
    _, conc, rate, _ = cell
    return [{**base, "concurrency": c, "rate": r, "step": step, "status": "failed", "reason": reason,
             "requests": 0, "rps": 0.0} for c, r, step in plan.profile.row_keys(conc, rate)]


def measured(base: dict, r: LoadResult, smp: ServerSample, flags: list[str]) -> dict:
    """The row of one measured window: the generator's figures, the server's over the same window,
    and the backends' evidence."""
    return {
        **base, "status": "ok", "reason": "", **generator_figures(r, base["concurrency"]),
        "server_cpu_s": smp.cpu_s,
        "server_cpu_pct": 100.0 * smp.cpu_s / smp.wall_s if smp.wall_s else None,
        "server_peak_rss_mb": smp.peak_rss_bytes / MiB, "server_peak_threads": smp.peak_threads,
        "container_peak_mem_mb": smp.peak_container_mem_bytes / MiB if smp.peak_container_mem_bytes else None,
        "gc_count": smp.gc_count, "gc_time_ms": smp.gc_time_s * 1000 if smp.gc_time_s is not None else None,
        "gc_collector": smp.collector,
        "jit_time_ms": smp.jit_time_s * 1000 if smp.jit_time_s is not None else None,
        "server_switches_per_request": smp.switches / r.requests if smp.switches is not None and r.requests else None,
        "loadgen_cpu_pct": r.loadgen_busiest_pct if r.loadgen_busiest_pct is not None
        else _or_none(100.0 * r.loadgen_cpus_used),
        "loadgen_cpus_busy_pct": smp.loadgen_cpus_busy_pct,
        "loadgen_cpus_steal_pct": smp.loadgen_cpus_steal_pct, "server_cpus_steal_pct": smp.server_cpus_steal_pct,
        "steal_peak_pct": smp.steal_peak_pct,
        "server_cpus_foreign_pct": smp.server_cpus_foreign_pct, "server_cpus_shared_by": smp.server_cpus_shared_by,
        "check_flags": ",".join(flags),
        "cpu_ms_per_request": 1000 * smp.cpu_s / r.requests if r.requests and smp.cpu_s == smp.cpu_s else None,
        "rps_per_core": r.requests / smp.cpu_s if smp.cpu_s else None,
        "rps_per_mib": r.rps / (smp.peak_rss_bytes / MiB) if smp.peak_rss_bytes else None,
        **(smp.evidence.per_request(r.requests, r.duration_s) if smp.evidence else {}),
    }


def generator_figures(r: LoadResult, concurrency: int) -> dict:
    """What the generator alone measured of a window's requests: counts, errors and latencies."""
    return {
        "requests": r.requests, "rps": r.rps,
        "bytes": r.bytes, "errors_connect": r.errors_connect, "errors_read": r.errors_read,
        "errors_write": r.errors_write, "errors_timeout": r.errors_timeout,
        "errors_status": r.errors_status, "dropped": r.dropped, "duration_s": r.duration_s,
        "late_sends": r.late_sends, "send_lag_p99_ms": _or_none(r.send_lag_p99),
        **{latency_column(k): getattr(r, f"latency_{k}") for k in LATENCY_STATS},
        "co_corrected_mean_ms": _or_none(r.co_corrected_mean), "co_corrected_p99_ms": _or_none(r.co_corrected_p99),
        "littles_ratio": littles_law_ratio(concurrency, r), "users_answered": r.users_answered,
    }


# What a mix's scenario's row keeps of the window's row: what the cell is, and nothing the server or the
# backends measured over the whole window (that is the mix's, on its own row)
CELL_COLUMNS = ("run_id", "started_at", "target", "framework", "variant", "jvm_mode", "start", "runtime", "network",
                "network_rtt_ms", "driver", "profile", "kind", "repeat", "heap", "server_cpus", "loadgen_cpus",
                "startup_s", "rss_after_start_mb", "warmup_s", "warmup_windows", "concurrency", "rate", "step",
                "since_launch_s", "status", "reason", "check_flags", "slo", "verdict")


def part_rows(row: dict, r: LoadResult) -> list[dict]:
    """A mix's window (config/mix.py): the mix's row named as the mix, and a row per scenario in it,
    scenario MIX/NAME, with its own requests' figures (rps, percentiles, errors) from the generator and
    the window's flags; [] for a window of one scenario."""
    if not r.parts:
        return []
    name = row["scenario"]
    return [{**{k: row[k] for k in CELL_COLUMNS if k in row}, "scenario": f"{name}/{part}", "mix": name,
             **generator_figures(figures, row["concurrency"])} for part, figures in r.parts.items()]


def second(base: dict, record: dict, smp: ServerSample) -> dict:
    """The timeseries row of one second of a time-resolved cell: the driver's record (it names the
    second's step by the users then running; None: a second in transition) and the server's figures."""
    return {**record, "run_id": base["run_id"], "target": base["target"], "scenario": base["scenario"],
            "network": base.get("network"),
            "repeat": base["repeat"],
            "server_cpu_pct": 100.0 * smp.cpu_s if smp.cpu_s == smp.cpu_s else None,
            "server_rss_mb": smp.peak_rss_bytes / MiB if smp.peak_rss_bytes else None,
            "server_threads": smp.peak_threads or None,
            "loadgen_cpus_busy_pct": smp.loadgen_cpus_busy_pct,
            "tcp_accept_queue_peak": smp.evidence.tcp_accept_queue_peak if smp.evidence else None}


def _or_none(x: float) -> float | None:
    return None if x != x else x
