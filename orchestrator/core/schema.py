"""The vocabulary of a measurement, defined once: the columns of a row, the latency percentiles
every generator reports, and the thresholds of the self-checks that flag a row or a warm-up.

Nothing here measures or starts anything, or imports a library: drivers, the cell, the store,
the reports and the notebooks all read it, so a column or a threshold changes in one place.
"""
from __future__ import annotations

from dataclasses import dataclass

# Latency percentiles, nearest rank, as every driver reports them: key -> percentile.
PERCENTILES = {"p50": 50, "p75": 75, "p90": 90, "p95": 95, "p99": 99, "p999": 99.9}
LATENCY_STATS = ("min", "mean", "stdev", *PERCENTILES, "max")


def latency_column(stat: str) -> str:
    """The row's column of a latency statistic: latency_p99_ms."""
    return f"latency_{stat}_ms"


def percentile_label(key: str) -> str:
    """How a percentile is written for people: p99.9 for p999."""
    return f"p{PERCENTILES[key]:g}"


# The metrics a report ranks and judges: which column, its words and unit, which way is better.
@dataclass(frozen=True)
class Metric:
    column: str
    label: str
    unit: str
    higher_is_better: bool
    # Why the metric is shown but never ranked ('': it is ranked)
    not_ranked: str = ""

    @property
    def ranked(self) -> bool:
        return not self.not_ranked


# An absolute total over the window (CPU %, GC time) falls with the work done: the lowest is the
# slowest server as often as the leanest.
NOT_RANKED = "not ranked: a total over the window, lower for a server that did less work (CPU per request ranks)"


METRICS = {m.column: m for m in [
    Metric("rps", "throughput", "req/s", True),
    Metric("latency_mean_ms", "mean latency", "ms", False),
    *(Metric(latency_column(k), f"{percentile_label(k)} latency", "ms", False) for k in PERCENTILES),
    Metric("server_cpu_pct", "server CPU", "%", False, not_ranked=NOT_RANKED),
    # CPU % alone rewards the slowest server; CPU per request is what efficiency means.
    Metric("cpu_ms_per_req", "CPU per request", "ms", False),
    Metric("server_peak_rss_mb", "peak RSS", "MiB", False),
    Metric("server_peak_threads", "peak threads", "", False),
    Metric("gc_time_ms", "GC time", "ms", False, not_ranked=NOT_RANKED),
    # In a fixed window more data means more responses: it follows throughput.
    Metric("mb_received", "data received", "MB", True),
    # The same answer everywhere (CONTRACT.md): what differs is the headers, shown so that it is seen
    Metric("bytes_per_response", "bytes per response", "B", False,
           not_ranked="not ranked: every target sends the contract's body; a difference is in its headers"),
    Metric("startup_s", "startup", "s", False),
    Metric("rss_after_start_mb", "RSS after start", "MiB", False),
]}

# Self-checks of a cell (checks.py): a row beyond one is flagged, never silently kept.
LITTLE_LOW, LITTLE_HIGH = 0.75, 1.25   # rps x mean latency / connections, in a closed loop
LOADGEN_SATURATED = 0.90   # of the generator's CPUs: its own processes, or everything that ran there
MIN_REQUESTS = 100
# of the server's or the load generator's CPUs' time taken by the host (steal): a calm host here steals
# 0-2 %, a busy one 17-32 % in bursts, when a window reads the host's neighbours, not the target; and in
# any one poll interval (0.25 s) HOST_STEAL_PEAK: a single hold of 60 ms or more, which a p99 of a 50-ms
# objective cannot absorb (one of 190 ms, 4.8 % of its 4-s probe, failed WebFlux json at 4,000 req/s)
HOST_STEAL = 0.05
HOST_STEAL_PEAK = 0.25
# of the server's CPUs' time, run by processes other than the target: 0-2.6 % on a quiet machine here
# (the kernel's threads), 15-85 % with another process on that CPU (methodology.md)
SERVER_CPUS_SHARED = 0.05
# of its capacity: goodput at the last overload multiple at least this degrades gracefully, else collapses
GRACEFUL = 0.9
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

# The columns of measurements.parquet, in order, with their Arrow types (results.py makes the schema).
# Latencies in ms, memory in MiB.
ROW_TYPES = [
    ("run_id", "string"), ("started_at", "string"),
    ("target", "string"), ("framework", "string"), ("variant", "string"),
    # how the JVM started (default, aot-cache: from a JDK AOT cache trained on it) and met its load
    # (warm: warmed up until steady; cold: no warm-up, a fresh JVM per cell); the target id says both
    ("jvm_mode", "string"), ("start", "string"),
    ("runtime", "string"), ("scenario", "string"),
    # a mix's window (config/mix.py): its name, on its own row (scenario: the mix) and on one row per
    # scenario in it (scenario MIX/NAME: that scenario's requests' figures alone); null otherwise
    ("mix", "string"),
    # a topology's network level (topology.py): the varying link and its shape, e.g. "app-db rtt 20 ms";
    # null in a run of one level (run.json's "network" then says where everything ran). network_rtt_ms:
    # that link's round trip as probed when the level began (median of 10), not the configured one
    ("network", "string"), ("network_rtt_ms", "float64"),
    ("driver", "string"),
    ("profile", "string"), ("kind", "string"),
    ("concurrency", "int64"),   # connections; users for a ramp step; VUs for a rate
    ("rate", "float64"),        # rate, capacity probe: the arrival rate offered (req/s); else null
    ("step", "int64"),          # ramp: the step (1-based); capacity: the probe's number; else null
    ("repeat", "int64"),
    ("status", "string"), ("reason", "string"),
    # warmup_s: the seconds the warm-up took before the window (null in a failed row)
    ("warmup_s", "float64"), ("warmup_windows", "int64"), ("duration_s", "float64"),
    ("requests", "int64"), ("rps", "float64"), ("bytes", "int64"),
    ("errors_connect", "int64"), ("errors_read", "int64"), ("errors_write", "int64"),
    ("errors_timeout", "int64"), ("errors_status", "int64"), ("dropped", "int64"),
    # open model (pacer): arrivals the generator sent more than its tolerance (1 ms) after their time
    # although a connection was idle, and the p99 of those arrivals' send lag in ms: its own lag (a wait
    # while every connection was busy is the server's and is not in it). Null for generators that do not say
    ("late_sends", "int64"), ("send_lag_p99_ms", "float64"),
    *((latency_column(s), "float64") for s in LATENCY_STATS),
    # wrk only: its coordinated-omission-corrected mean and p99 (synthetic samples included); the
    # latency_* columns above are raw measurements for every driver
    ("co_corrected_mean_ms", "float64"), ("co_corrected_p99_ms", "float64"),
    ("server_cpu_s", "float64"), ("server_cpu_pct", "float64"),
    ("server_peak_rss_mb", "float64"), ("server_peak_threads", "int64"),
    ("container_peak_mem_mb", "float64"),
    ("gc_count", "int64"), ("gc_time_ms", "float64"), ("gc_collector", "string"),
    ("jit_time_ms", "float64"),   # JIT compilation during the window: near 0 once warmed up
    # times the kernel put the server's threads on a CPU in the window (each thread's schedstat), per
    # request: OS context switches into the server; null where the process is out of sight (remote engine)
    ("server_switches_per_request", "float64"),
    ("startup_s", "float64"), ("rss_after_start_mb", "float64"),
    # from the JVM's spawn to the window's first request: a cold cell's load met a JVM this old
    ("since_launch_s", "float64"),
    # classes the JVM had loaded by the window's end, and of them those mapped from a CDS archive (the
    # JDK's own, or the target's AOT cache): its own -Xlog:class+load, in runs with an aot-cache mode
    ("classes_loaded", "int64"), ("classes_from_cache", "int64"),
    # the generator's own CPU per second it ran, in % of one CPU; Locust's workers: the busiest one
    ("loadgen_cpu_pct", "float64"),
    ("loadgen_cpus_busy_pct", "float64"),  # everything that ran on the load-generator CPUs, in % of them
    # of the load-generator and the server CPUs' time, what the host gave their vCPUs to others (the
    # server's: null where it runs on another machine); above HOST_STEAL, or above HOST_STEAL_PEAK in one
    # poll, the cell is flagged host-steal
    ("loadgen_cpus_steal_pct", "float64"), ("server_cpus_steal_pct", "float64"),
    ("steal_peak_pct", "float64"),   # the most of either's time stolen in one 0.25-s poll of the window
    # of the server CPUs' time over the window, what processes ran there (user, nice, system) less the
    # target's own CPU time: any other process and the kernel's threads; above SERVER_CPUS_SHARED the
    # cell is flagged server-cpus-shared. shared_by: the other processes whose CPU time grew over the load
    # and that may run there, biggest first ("java pid 1234 (31 %)"). Both null where the server is remote
    ("server_cpus_foreign_pct", "float64"), ("server_cpus_shared_by", "string"),
    ("littles_ratio", "float64"), ("check_flags", "string"),
    # ramp (Locust): the step's users that got at least one response in it; fewer than `concurrency`
    # means some waited the whole step on one request (flag users-unanswered)
    ("users_answered", "int64"),
    # What one request cost the server: CPU-milliseconds per request, requests per CPU-second (what one
    # fully busy core would serve at this cost) and rps per MiB of peak RSS (the "throughput density")
    ("cpu_ms_per_request", "float64"), ("rps_per_core", "float64"), ("rps_per_mib", "float64"),
    # capacity profile (capacity.py): the objective; a probe's verdict ("pass: ...", "fail: ...",
    # "generator-limit: ...") or the search's outcome (found, above-generator, below-floor, unresolved) on
    # the capacity row (rate and step null), which also holds the interval [low, high) the capacity
    # lies in (high null when the generator could offer no more) and the figures of the probe at low
    ("slo", "string"), ("verdict", "string"),
    ("capacity_low_rps", "float64"), ("capacity_high_rps", "float64"),
    # past the knee (overload probes after a found capacity): the multiple of the capacity a probe
    # offered; every probe's goodput (answers within the objective, status < 400, per second, pacer
    # only); on the capacity row, graceful or collapses at the last multiple, with its evidence
    ("overload_factor", "float64"), ("goodput_rps", "float64"), ("overload_verdict", "string"),
    # recovery: after a spike to 2x the capacity (the spike's row, and the capacity row), the seconds
    # from its end until every second's p99 is within the objective again with failures within the
    # budget, the backlog drained (null: it did not within the recovery window; its per-second series
    # is in timeseries.parquet)
    ("recovery_s", "float64"),
    # What the backends and the kernel counted in the window (evidence.py): Redis commands and MariaDB
    # statements by kind per request (the contract: one MGET, one SELECT or one INSERT), the peaks of
    # Redis clients, database connections and statements running at once, and TCP counters
    ("redis_commands_per_request", "float64"), ("db_selects_per_request", "float64"),
    ("db_inserts_per_request", "float64"), ("db_prepares_per_request", "float64"),
    ("redis_peak_clients", "int64"), ("db_peak_connections", "int64"), ("db_peak_running", "int64"),
    ("tcp_listen_overflows", "int64"), ("tcp_listen_drops", "int64"), ("tcp_retransmits", "int64"),
    # the most connections seen waiting in the server's accept queue (completed by the kernel, not yet
    # accepted by the server), polled 4 times a second; null where the server is out of sight
    ("tcp_accept_queue_peak", "int64"),
    # the downstream service's calls per request (fan-out: the contract's 3), and the most calls it was
    # answering and connections open to it at one poll: the HTTP client's concurrency and pool
    ("downstream_calls_per_request", "float64"), ("downstream_peak_in_flight", "int64"),
    ("downstream_peak_connections", "int64"),
    # the downstream's own CPU over the window, in % of one CPU: >= 80 flags the cell downstream-busy
    ("downstream_cpu_pct", "float64"),
    # polls of the downstream's status page in the window that got no answer within 1 s: a downstream that
    # stopped answering (with calls to it: flagged downstream-unanswered, beside the 504s it caused)
    ("downstream_polls_unanswered", "int64"),
    # Redis's share of key lookups that missed over the window, and its least and most in any whole second
    # of it (cache-aside's load misses one request in ten: off by more than 3 points flags
    # cache-misses-off-contract)
    ("cache_miss_share", "float64"), ("cache_miss_share_min", "float64"), ("cache_miss_share_max", "float64"),
    # Flight Recorder evidence of the window (flight_recorder.py; null when not recorded): CPU samples
    # and the five hottest methods with their share; virtual-thread pinning (count, total ms, the stack
    # that pinned longest); platform threads that used >= 1 % of a CPU, carriers among them, virtual
    # threads seen in samples; totals of waits over JFR's thresholds (parked, but not a pool's idle
    # worker waiting for a task (getTask, awaitWork), blocked on a monitor,
    # asleep, in socket reads); GC pauses and safepoints; allocation rate; and on event-loop threads,
    # their samples and the share of them in application code (a blocked or busy event loop)
    ("jfr_samples", "int64"), ("jfr_hot_methods", "string"),
    ("jfr_pinned_count", "int64"), ("jfr_pinned_ms", "float64"), ("jfr_pinned_top_stack", "string"),
    ("jfr_platform_threads_busy", "int64"), ("jfr_carrier_threads_busy", "int64"),
    ("jfr_virtual_threads_sampled", "int64"),
    ("jfr_parked_ms", "float64"), ("jfr_monitor_blocked_ms", "float64"), ("jfr_sleep_ms", "float64"),
    ("jfr_socket_read_ms", "float64"), ("jfr_gc_pause_ms", "float64"), ("jfr_gc_count", "int64"),
    ("jfr_safepoint_ms", "float64"), ("jfr_alloc_mb_per_s", "float64"),
    ("jfr_event_loop_samples", "int64"), ("jfr_event_loop_app_share", "float64"),
    # threads waiting on a lock, semaphore or monitor in application code (thread_dumps.py: JSON thread
    # dumps every 0.5 s or less often while recording, virtual threads included): dumps in the window and the
    # server CPU they took, the mean, and the site most of them waited at
    ("dump_samples", "int64"), ("dump_cpu_ms", "float64"), ("dump_app_lock_waiting", "float64"),
    ("dump_app_lock_site", "string"),
    ("jfr_file", "string"), ("jfr_flamegraph", "string"),   # relative to the run's folder
    ("jfr_error", "string"),    # why a window asked to be recorded has no evidence, or no thread dumps (null: it has both)
    ("jfr_cost", "string"),     # what recording cost the figures on this machine kind (flight_recorder.COST)
    ("heap", "string"), ("server_cpus", "string"), ("loadgen_cpus", "string"),
]
COLUMNS = [name for name, _ in ROW_TYPES]
# Columns renamed since runs were first stored (old name -> new): a run stored before loads under the new
# name. `flags` was pandas' own DataFrame.flags, so `df.flags` never reached the column.
RENAMED = {"flags": "check_flags"}

CELL_KEY = ("target", "scenario", "network", "concurrency", "rate", "step", "repeat")

# The columns of timeseries.parquet: one row per second of a time-resolved cell.
TIMESERIES_TYPES = [
    ("run_id", "string"), ("target", "string"), ("scenario", "string"), ("network", "string"),
    ("repeat", "int64"),
    ("t_s", "int64"), ("epoch_s", "int64"), ("step", "int64"), ("users", "int64"),
    ("rps", "float64"), ("failures_per_s", "float64"),
    ("p50_ms", "float64"), ("p95_ms", "float64"), ("p99_ms", "float64"),
    ("loadgen_cpu_pct", "float64"), ("server_cpu_pct", "float64"), ("server_rss_mb", "float64"),
    ("server_threads", "int64"), ("loadgen_cpus_busy_pct", "float64"),
    # an open model's second (a capacity cell's spike; step: 1 before it, 2 in it, 3 after it), by the
    # arrivals due in it: offered, answered within the objective, never sent; the accept queue's peak
    ("offered_per_s", "float64"), ("goodput_per_s", "float64"), ("dropped_per_s", "float64"),
    ("tcp_accept_queue_peak", "int64"),
]
TIMESERIES_KEY = ("target", "scenario", "network", "repeat")
