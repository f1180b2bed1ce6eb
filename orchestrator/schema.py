"""The vocabulary of a measurement, defined once: the columns of a row, the latency percentiles
every generator reports, and the thresholds of the self-checks that flag a row or a warm-up.

Nothing here measures or starts anything (it needs pyarrow only): drivers, the cell, the store,
the reports and the notebooks all read it, so a column or a threshold changes in one place.
"""
from __future__ import annotations

import pyarrow as pa

# Latency percentiles, nearest rank, as every driver reports them: key -> percentile.
PERCENTILES = {"p50": 50, "p75": 75, "p90": 90, "p95": 95, "p99": 99, "p999": 99.9}
LATENCY_STATS = ("min", "mean", "stdev", *PERCENTILES, "max")


def latency_column(stat: str) -> str:
    """The row's column of a latency statistic: latency_p99_ms."""
    return f"latency_{stat}_ms"


def percentile_label(key: str) -> str:
    """How a percentile is written for people: p99.9 for p999."""
    return f"p{PERCENTILES[key]:g}"


# Self-checks of a cell (checks.py): a row beyond one is flagged, never silently kept.
LITTLE_LOW, LITTLE_HIGH = 0.75, 1.25   # rps x mean latency / connections, in a closed loop
LOADGEN_SATURATED = 0.90   # of the generator's CPUs: its own processes, or everything that ran there
MIN_REQUESTS = 100
NEAR_CEILING = 0.8         # of a generator's calibrated ceiling: above it the cell may measure the generator
# Backend work per request (evidence.py): interpolating a ramp step's edges blurs a count by far
# less; a second statement per request is +1.
EVIDENCE_TOLERANCE = 0.25
# A warm-up is steady (warmup.py) when, over the last STEADY_WINDOWS windows, rps climbs by at most
# CLIMB of their median per window and the JIT compiled for at most JIT_QUIET of the last one.
STEADY_WINDOWS = 4
CLIMB = 0.03
JIT_QUIET = 0.05

MiB = 2**20

# The columns of measurements.parquet, in order. Latencies in ms, memory in MiB.
SCHEMA = pa.schema([
    ("run_id", pa.string()), ("started_at", pa.string()),
    ("target", pa.string()), ("framework", pa.string()), ("variant", pa.string()),
    ("runtime", pa.string()), ("scenario", pa.string()),
    # a topology's network level (topology.py): the varying link and its shape, e.g. "app-db rtt 20 ms";
    # null in a run of one level (run.json's "network" then says where everything ran). network_rtt_ms:
    # that link's round trip as probed when the level began (median of 10), not the configured one
    ("network", pa.string()), ("network_rtt_ms", pa.float64()),
    ("driver", pa.string()),
    ("profile", pa.string()), ("kind", pa.string()),
    ("concurrency", pa.int64()),   # connections; users for a ramp step; VUs for a rate
    ("rate", pa.float64()),        # rate, capacity probe: the arrival rate offered (req/s); else null
    ("step", pa.int64()),          # ramp: the step (1-based); capacity: the probe's number; else null
    ("repeat", pa.int64()),
    ("status", pa.string()), ("reason", pa.string()),
    # warmup_s: the seconds the warm-up took before the window (null in a failed row)
    ("warmup_s", pa.float64()), ("warmup_windows", pa.int64()), ("duration_s", pa.float64()),
    ("requests", pa.int64()), ("rps", pa.float64()), ("bytes", pa.int64()),
    ("errors_connect", pa.int64()), ("errors_read", pa.int64()), ("errors_write", pa.int64()),
    ("errors_timeout", pa.int64()), ("errors_status", pa.int64()), ("dropped", pa.int64()),
    *((latency_column(s), pa.float64()) for s in LATENCY_STATS),
    # wrk only: its coordinated-omission-corrected mean and p99 (synthetic samples included); the
    # latency_* columns above are raw measurements for every driver
    ("co_corrected_mean_ms", pa.float64()), ("co_corrected_p99_ms", pa.float64()),
    ("server_cpu_s", pa.float64()), ("server_cpu_pct", pa.float64()),
    ("server_peak_rss_mb", pa.float64()), ("server_peak_threads", pa.int64()),
    ("container_peak_mem_mb", pa.float64()),
    ("gc_count", pa.int64()), ("gc_time_ms", pa.float64()), ("gc_collector", pa.string()),
    ("jit_time_ms", pa.float64()),   # JIT compilation during the window: near 0 once warmed up
    # times the kernel put the server's threads on a CPU in the window (each thread's schedstat), per
    # request: OS context switches into the server; null where the process is out of sight (remote engine)
    ("server_switches_per_request", pa.float64()),
    ("startup_s", pa.float64()), ("rss_after_start_mb", pa.float64()),
    ("loadgen_cpu_pct", pa.float64()),        # the generator's own CPU in % of one CPU; Locust's workers: the busiest
    ("loadgen_cpus_busy_pct", pa.float64()),  # everything that ran on the load-generator CPUs, in % of them
    ("littles_ratio", pa.float64()), ("flags", pa.string()),
    # ramp (Locust): the step's users that got at least one response in it; fewer than `concurrency`
    # means some waited the whole step on one request (flag users-unanswered)
    ("users_answered", pa.int64()),
    # What one request cost the server: CPU-milliseconds per request, requests per CPU-second (what one
    # fully busy core would serve at this cost) and rps per MiB of peak RSS (the "throughput density")
    ("cpu_ms_per_request", pa.float64()), ("rps_per_core", pa.float64()), ("rps_per_mib", pa.float64()),
    # capacity profile (capacity.py): the objective; a probe's verdict ("pass: ...", "fail: ...",
    # "generator-limit: ...") or the search's outcome (found, above-generator, below-floor, unresolved) on
    # the capacity row (rate and step null), which also holds the interval [low, high) the capacity
    # lies in (high null when the generator could offer no more) and the figures of the probe at low
    ("slo", pa.string()), ("verdict", pa.string()),
    ("capacity_low_rps", pa.float64()), ("capacity_high_rps", pa.float64()),
    # What the backends and the kernel counted in the window (evidence.py): Redis commands and MariaDB
    # statements by kind per request (the contract: one MGET, one SELECT or one INSERT), the peaks of
    # Redis clients, database connections and statements running at once, and TCP counters
    ("redis_commands_per_request", pa.float64()), ("db_selects_per_request", pa.float64()),
    ("db_inserts_per_request", pa.float64()), ("db_prepares_per_request", pa.float64()),
    ("redis_peak_clients", pa.int64()), ("db_peak_connections", pa.int64()), ("db_peak_running", pa.int64()),
    ("tcp_listen_overflows", pa.int64()), ("tcp_listen_drops", pa.int64()), ("tcp_retransmits", pa.int64()),
    # the most connections seen waiting in the server's accept queue (completed by the kernel, not yet
    # accepted by the server), polled 4 times a second; null where the server is out of sight
    ("tcp_accept_queue_peak", pa.int64()),
    # Flight Recorder evidence of the window (flight_recorder.py; null when not recorded): CPU samples
    # and the five hottest methods with their share; virtual-thread pinning (count, total ms, the stack
    # that pinned longest); platform threads that used >= 1 % of a CPU, carriers among them, virtual
    # threads seen in samples; totals of waits over JFR's thresholds (parked, but not a pool's idle
    # worker waiting for a task (getTask, awaitWork), blocked on a monitor,
    # asleep, in socket reads); GC pauses and safepoints; allocation rate; and on event-loop threads,
    # their samples and the share of them in application code (a blocked or busy event loop)
    ("jfr_samples", pa.int64()), ("jfr_hot_methods", pa.string()),
    ("jfr_pinned_count", pa.int64()), ("jfr_pinned_ms", pa.float64()), ("jfr_pinned_top_stack", pa.string()),
    ("jfr_platform_threads_busy", pa.int64()), ("jfr_carrier_threads_busy", pa.int64()),
    ("jfr_virtual_threads_sampled", pa.int64()),
    ("jfr_parked_ms", pa.float64()), ("jfr_monitor_blocked_ms", pa.float64()), ("jfr_sleep_ms", pa.float64()),
    ("jfr_socket_read_ms", pa.float64()), ("jfr_gc_pause_ms", pa.float64()), ("jfr_gc_count", pa.int64()),
    ("jfr_safepoint_ms", pa.float64()), ("jfr_alloc_mb_per_s", pa.float64()),
    ("jfr_event_loop_samples", pa.int64()), ("jfr_event_loop_app_share", pa.float64()),
    ("jfr_file", pa.string()), ("jfr_flamegraph", pa.string()),   # relative to the run's folder
    ("jfr_error", pa.string()),    # why a window asked to be recorded has no evidence (null: it has)
    ("jfr_cost", pa.string()),     # what recording cost the figures on this machine kind (flight_recorder.COST)
    ("heap", pa.string()), ("server_cpus", pa.string()), ("loadgen_cpus", pa.string()),
])
COLUMNS = SCHEMA.names
CELL_KEY = ("target", "scenario", "network", "concurrency", "rate", "step", "repeat")

# The columns of timeseries.parquet: one row per second of a time-resolved cell.
TIMESERIES_SCHEMA = pa.schema([
    ("run_id", pa.string()), ("target", pa.string()), ("scenario", pa.string()), ("network", pa.string()),
    ("repeat", pa.int64()),
    ("t_s", pa.int64()), ("epoch_s", pa.int64()), ("step", pa.int64()), ("users", pa.int64()),
    ("rps", pa.float64()), ("failures_per_s", pa.float64()),
    ("p50_ms", pa.float64()), ("p95_ms", pa.float64()), ("p99_ms", pa.float64()),
    ("loadgen_cpu_pct", pa.float64()), ("server_cpu_pct", pa.float64()), ("server_rss_mb", pa.float64()),
    ("server_threads", pa.int64()), ("loadgen_cpus_busy_pct", pa.float64()),
])
TIMESERIES_KEY = ("target", "scenario", "network", "repeat")
