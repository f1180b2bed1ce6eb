"""The report's "why" tables: the Flight Recorder evidence of each target's cells (flight_recorder.py)
beside its figures, so that a position is explained by what the JVM did, not by a story.

Waits are shown as thread-seconds per second of the window, which is the number of threads doing it
on average: Tomcat's 200 workers sleeping 100 ms at 2,000 req/s read "asleep 200". Totals count only
waits longer than flight_recorder.THRESHOLDS, so short parks of a busy pool are not in them.
"""
from __future__ import annotations

from dataclasses import dataclass

from orchestrator import lazy

pd = lazy.module("pandas")


@dataclass(frozen=True)
class Link:
    """A table cell that links to a file of the run (a flame graph)."""
    text: str
    href: str

    def __str__(self) -> str:
        return self.text


# The pools a request's calls go through, as the backends counted them at their peak in the window: read
# against each target's declared limits (the parity table), they say whether a capacity met its pool's
# limit (fan-out's calls against an HTTP client's connections) or the threads'.
POOLS = {"downstream_peak_in_flight": "downstream calls in flight (peak)",
         "downstream_peak_connections": "downstream connections (peak)",
         "redis_peak_clients": "Redis clients (peak)", "db_peak_connections": "MariaDB connections (peak)"}
# What a column means per second of the window: thread-seconds per second (threads on average).
PER_SECOND = {"jfr_sleep_ms": "asleep", "jfr_parked_ms": "parked", "jfr_monitor_blocked_ms": "blocked on monitors",
              "jfr_socket_read_ms": "in socket reads"}


def _per_second(rows: pd.DataFrame, column: str) -> pd.Series:
    return rows[column] / 1000 / rows["duration_s"]


def why_table(df: pd.DataFrame, scenario: str, x: str | None = "concurrency") -> pd.DataFrame | None:
    """Per target and level (x None: per target; medians over the repeats recorded): threads that used CPU, carriers,
    pinning, waits, GC share, allocation, the event loop's share in application code, the hottest
    method, and a flame graph per repeat. None when no cell of the scenario was recorded."""
    ran = df[(df["scenario"] == scenario) & (df["status"] == "ok")]
    if "jfr_samples" not in ran or ran["jfr_samples"].isna().all():
        return None
    ran = ran[ran["jfr_samples"].notna()].copy()
    for column, label in PER_SECOND.items():
        ran[label] = _per_second(ran, column)
    ran["GC pause %"] = 100 * ran["jfr_gc_pause_ms"] / 1000 / ran["duration_s"]
    # a pool only where the scenario used it: Redis's and MariaDB's clients are counted in every cell
    pools = [c for c in POOLS if c in ran and (ran[c].fillna(0) > 0).any()
             and (c.startswith("downstream") or _uses(ran, c))]
    out = []
    for key, cell in ran.groupby(["target", x] if x else ["target"], sort=True):
        med = cell.median(numeric_only=True)
        hot = cell.sort_values("repeat")["jfr_hot_methods"].dropna()
        row = {"target": key[0], **({x: key[1]} if x else {}),
               "threads on CPU": _n(med["jfr_platform_threads_busy"]),
               "carriers on CPU": _n(med["jfr_carrier_threads_busy"]),
               "virtual threads seen": _n(med["jfr_virtual_threads_sampled"]),
               "pinned (n, ms)": f"{med['jfr_pinned_count']:,.0f}, {med['jfr_pinned_ms']:,.0f}",
               **{label: f"{med[label]:,.1f}" for label in PER_SECOND.values()},
               "GC pause %": f"{med['GC pause %']:.2f}",
               "alloc MB/s": f"{med['jfr_alloc_mb_per_s']:,.0f}",
               "event loop in app code": "" if pd.isna(med["jfr_event_loop_app_share"])
               else f"{100 * med['jfr_event_loop_app_share']:.0f} %",
               "waiting on app locks": _lock_waits(med, cell),
               **{POOLS[c]: _n(med[c]) for c in pools},
               "hottest method": hot.iloc[0].split("; ")[0] if len(hot) and hot.iloc[0] else "",
               "flame graphs": [Link(f"r{r.repeat}", r.jfr_flamegraph)
                                for r in cell.sort_values("repeat").itertuples() if isinstance(r.jfr_flamegraph, str)]}
        out.append(row)
    return pd.DataFrame(out)


def _lock_waits(med: pd.Series, cell: pd.DataFrame) -> str:
    """Threads waiting on locks in application code (thread dumps), with the site of the latest repeat."""
    if pd.isna(med.get("dump_app_lock_waiting")):
        return ""
    sites = cell.sort_values("repeat")["dump_app_lock_site"].dropna()
    site = sites.iloc[-1] if len(sites) and sites.iloc[-1] else ""
    return f"{med['dump_app_lock_waiting']:,.1f}" + (f": {site}" if site else "")


def _uses(ran: pd.DataFrame, pool: str) -> bool:
    """Whether the scenario's requests did work on the pool's backend (its commands or statements)."""
    work = ["redis_commands_per_request"] if pool.startswith("redis") else \
        ["db_selects_per_request", "db_inserts_per_request"]
    return any(c in ran and (ran[c].fillna(0) > 0.01).any() for c in work)


def _n(value) -> str:
    return "" if pd.isna(value) else f"{value:,.0f}"


WHY_TEXT = ("What the JVM did in the measured window, from a Flight Recorder recording of it (medians over "
            "the repeats recorded): platform threads that used at least 1 % of a CPU, and the virtual-thread "
            "scheduler's carriers among them; virtual threads seen in CPU samples; pinning of a carrier by a "
            "virtual thread that could not unmount (events, total ms); threads asleep, parked (a pool's idle "
            "workers left out), blocked on a "
            "monitor or in a socket read on average (waits of at least 10 ms; monitors 1 ms); GC pauses as a "
            "share of the window; the allocation rate; on event-loop threads the share of CPU samples in the "
            "application's own code (a busy or blocked event loop); threads waiting on a lock, semaphore or monitor "
            "taken in the application's own code, on average over thread dumps every 0.5 s or less often (virtual "
            "threads included, which Flight Recorder's parks miss), and where most of them waited: a limit in the "
            "application, not in a pool or a backend; where the scenario calls the downstream service, Redis or "
            "MariaDB, the most calls and connections the backend saw at once (its own counters), to read against "
            "each target's declared limits in the parity table; the hottest method with its share of all "
            "CPU samples; the flame graph of each repeat.")
