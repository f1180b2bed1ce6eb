"""What Redis, MariaDB and the kernel saw while a cell ran: evidence that every target did the
contract's work per request, and of where a burst lost its connections.

TechEmpower's toolset counts a test's queries once, at verification. Here they are counted under
load, in every measured window: Redis's own command counters, MariaDB's statement counters by
kind, the downstream service's calls, and the peaks of connections, of statements running and of
calls in flight at once. A target that sends two
statements per request, prepares and closes a statement around every query, or answers from a
cache shows up in the figures of its cell, not only in a code review. The kernel's TCP counters
(listen-queue overflows and drops, retransmitted segments) make "the accept queue is the narrow
entrance" a measurement.

Every counter is read by the sampler at each poll. A cell's figure is the difference between the
poll before its generator started and the one after it ended (the backends count nothing else
meanwhile); a ramp step's is interpolated at its edges, as the server's CPU seconds are. A peak is
the largest poll inside the window.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass

import psutil

from orchestrator.core.downstream_api import StatusReader
from orchestrator.core.schema import EVIDENCE_TOLERANCE
from orchestrator.infra.procs import listen_sockets, netns_tcp_table

# MariaDB's statement counters by kind (SHOW GLOBAL STATUS); Com_stmt_prepare counts server-side
# prepares, one per request when a client prepares, executes and closes around every query.
DB_COUNTERS = {"db_selects": "Com_select", "db_inserts": "Com_insert", "db_prepares": "Com_stmt_prepare"}
DB_GAUGES = ("Threads_connected", "Threads_running")
# Commands the sampler itself sends (and the handshake every client does) are not the target's work.
REDIS_OWN = {"info", "auth", "hello", "client|setinfo", "client|setname", "select", "ping"}
TCP_COUNTERS = {"tcp_listen_overflows": ("TcpExt", "ListenOverflows"), "tcp_listen_drops": ("TcpExt", "ListenDrops"),
                "tcp_retransmits": ("Tcp", "RetransSegs")}
# Redis's own count of key lookups that found their key and that did not (INFO stats): cache-aside's hits
# and misses (every key a command reads counts, so a redis cell's MGET counts three hits)
CACHE_COUNTERS = {"cache_hits": "keyspace_hits", "cache_misses": "keyspace_misses"}
COUNTERS = ("redis_commands", *DB_COUNTERS, "downstream_calls", "downstream_cpu_s", "downstream_unanswered",
            *CACHE_COUNTERS, *TCP_COUNTERS)
# A cell's share of cache misses may stray this far from the load's (IdCycle.miss_share), over the
# window or in any whole second of it with at least MISS_SECOND_MIN lookups, before it is flagged.
MISS_SHARE_TOLERANCE = 0.03
MISS_SECOND_MIN = 100
# The downstream service must never be what limits a cell: this much of one CPU and the cell says so.
DOWNSTREAM_BUSY_PCT = 80.0
PER_REQUEST = ("redis_commands", *DB_COUNTERS, "downstream_calls")   # stored per request; the TCP counters as totals
# Evidence's peak of each of Reading's gauges over a window
GAUGES = {"redis_peak_clients": "redis_clients", "db_peak_connections": "db_connections",
          "db_peak_running": "db_running", "tcp_accept_queue_peak": "accept_queue",
          "downstream_peak_in_flight": "downstream_in_flight", "downstream_peak_connections": "downstream_connections"}


@dataclass(frozen=True)
class Reading:
    """One poll of the backends and the kernel: cumulative counters and current gauges."""
    counters: dict[str, float]
    redis_clients: int | None = None
    db_connections: int | None = None
    db_running: int | None = None
    accept_queue: int | None = None   # connections the kernel completed that the server had not accepted
    downstream_in_flight: int | None = None     # calls the downstream service was answering
    downstream_connections: int | None = None   # connections open to it


def _snmp(path: str) -> dict[tuple[str, str], int]:
    """/proc/net/snmp and /proc/net/netstat: pairs of lines, names then values, per protocol."""
    out: dict[tuple[str, str], int] = {}
    with open(path) as f:
        lines = f.read().splitlines()
    for names, values in zip(lines[::2], lines[1::2]):
        proto, *keys = names.split()
        _, *nums = values.split()
        out.update({(proto.rstrip(":"), k): int(v) for k, v in zip(keys, nums)})
    return out


def accept_queue(pid: int | str, port: int) -> int:
    """How many connections wait in the accept queue of the listening sockets on `port` in pid's
    network namespace: completed by the kernel, not yet taken by the server's accept()."""
    return sum(queue for _, p, queue, _ in listen_sockets(netns_tcp_table(pid)) if p == port)


def tcp_counters(pid: int | str = "self") -> dict[str, float]:
    """The kernel's TCP counters of the network namespace pid runs in: the server's, also when a
    topology gives it a host of its own."""
    stats = {**_snmp(f"/proc/{pid}/net/snmp"), **_snmp(f"/proc/{pid}/net/netstat")}
    return {name: float(stats.get(key, 0)) for name, key in TCP_COUNTERS.items()}


class Probe:
    """Reads Redis, MariaDB (as root, over its socket) and the kernel; keeps one connection to each.
    A backend that does not answer is left out of that reading (its figures of the window are then
    empty), never guessed: the cell's own failure handling reports a dead backend."""

    def __init__(self, infra, server_pid: int | str | None = "self", port: int | None = None):
        """server_pid: whose namespace's TCP counters to read; None: none (a server on another machine).
        port: the server's, whose accept queue is read."""
        self.infra, self.server_pid, self.port = infra, server_pid, port
        self._redis = self._db = None
        self._downstream = (StatusReader(infra.placement.host, infra.downstream_port)
                            if getattr(infra, "downstream_port", 0) else None)
        self._downstream_unanswered = 0   # polls of its status page that got no answer (within 1 s)

    def _redis_reading(self, counters: dict) -> int | None:
        if self._redis is None:
            self._redis = self.infra.redis_client(timeout=1)
        info = self._redis.info("commandstats", "clients", "stats")
        counters["redis_commands"] = float(sum(v["calls"] for k, v in info.items()
                                               if k.startswith("cmdstat_") and k[8:] not in REDIS_OWN))
        counters.update({name: float(info[key]) for name, key in CACHE_COUNTERS.items()})
        return int(info["connected_clients"]) - 1   # not the probe's own connection

    def _db_reading(self, counters: dict) -> tuple[int, int]:
        if self._db is None:
            self._db = self.infra.db_root(timeout=1, read_timeout=1)
        names = (*DB_COUNTERS.values(), *DB_GAUGES)
        with self._db.cursor() as c:
            c.execute("SHOW GLOBAL STATUS WHERE Variable_name IN (" + ",".join(["%s"] * len(names)) + ")", names)
            status = {k: int(v) for k, v in c.fetchall()}
        counters.update({name: float(status.get(var, 0)) for name, var in DB_COUNTERS.items()})
        # the probe's own connection is connected and running its SHOW STATUS
        return status.get("Threads_connected", 1) - 1, status.get("Threads_running", 1) - 1

    def read(self) -> Reading:
        counters, queue = {}, None
        try:
            if self.server_pid is not None:
                counters = tcp_counters(self.server_pid)
                queue = accept_queue(self.server_pid, self.port) if self.port else None
        except OSError:   # the server exited: its namespace's counters went with it; the cell fails anyway
            pass
        clients = connections = running = None
        try:
            clients = self._redis_reading(counters)
        except Exception:  # noqa: BLE001 - a dead or restarting Redis: no reading this poll
            self._redis = None
        try:
            connections, running = self._db_reading(counters)
        except Exception:  # noqa: BLE001 - likewise for MariaDB
            self._close_db()
        in_flight = open_connections = None
        if self._downstream is not None:
            try:
                status = self._downstream.read()
                counters["downstream_calls"] = float(status.calls)
                in_flight, open_connections = status.in_flight, status.connections
                t = psutil.Process(self.infra.pids["downstream"]).cpu_times()
                counters["downstream_cpu_s"] = t.user + t.system
            except Exception:  # noqa: BLE001 - likewise for the downstream service, counted
                self._downstream_unanswered += 1
            counters["downstream_unanswered"] = float(self._downstream_unanswered)
        return Reading(counters, clients, connections, running, queue, in_flight, open_connections)

    def _close_db(self) -> None:
        if self._db is not None:
            with contextlib.suppress(Exception):
                self._db.close()
        self._db = None

    def close(self) -> None:
        self._close_db()
        if self._redis is not None:
            with contextlib.suppress(Exception):
                self._redis.close()
        self._redis = None


@dataclass
class Evidence:
    """A window's backend and kernel figures."""
    redis_commands: float | None = None
    db_selects: float | None = None
    db_inserts: float | None = None
    db_prepares: float | None = None
    downstream_calls: float | None = None
    downstream_cpu_s: float | None = None
    downstream_unanswered: float | None = None
    cache_hits: float | None = None
    cache_misses: float | None = None
    # the misses and lookups in each whole second of the window (with MISS_SECOND_MIN lookups or more)
    cache_miss_seconds: list[tuple[float, float]] | None = None
    tcp_listen_overflows: float | None = None
    tcp_listen_drops: float | None = None
    tcp_retransmits: float | None = None
    redis_peak_clients: int | None = None
    db_peak_connections: int | None = None
    db_peak_running: int | None = None
    tcp_accept_queue_peak: int | None = None
    downstream_peak_in_flight: int | None = None
    downstream_peak_connections: int | None = None

    def per_request(self, requests: int, duration_s: float | None = None) -> dict[str, float | None]:
        """The columns stored with a row (the downstream's CPU in % of one CPU, given the window's length)."""
        out = {f"{k}_per_request": (getattr(self, k) / requests if requests and getattr(self, k) is not None
                                    else None) for k in PER_REQUEST}
        out.update({k: _int(getattr(self, k)) for k in TCP_COUNTERS})
        out.update({k: getattr(self, k) for k in GAUGES})
        if duration_s and self.downstream_cpu_s is not None:
            out["downstream_cpu_pct"] = 100.0 * self.downstream_cpu_s / duration_s
        out["downstream_polls_unanswered"] = _int(self.downstream_unanswered)
        lookups = (self.cache_hits or 0) + (self.cache_misses or 0)
        out["cache_miss_share"] = self.cache_misses / lookups if lookups and self.cache_misses is not None else None
        seconds = [m / n for m, n in self.cache_miss_seconds or []]
        out["cache_miss_share_min"], out["cache_miss_share_max"] = (min(seconds), max(seconds)) if seconds else (None, None)
        return out

    def misses_off(self, share: float, in_flight: int, refills: int) -> bool:
        """Whether the misses stray from the load's `share` by more than MISS_SHARE_TOLERANCE, over the
        window or in a whole second of it, beyond what the hot item's refills explain. When the hot item
        leaves the cache (its time to live is up, or the cache was emptied before the load), every request
        for it in flight until one of them has stored it again misses too: a refill adds at most
        `in_flight` misses, and a window has at most `refills` of them (a second, one). That is what
        cache-aside does, not a load off its share (a run at 32 connections read one second at 13.7 %,
        21 misses over its 10 % in a quarter of a second, every 10 s). Too few misses never are: those
        are items served from the cache that should have left it."""
        lookups = (self.cache_hits or 0) + (self.cache_misses or 0)
        if self.cache_misses is None or not lookups:
            return False
        parts = [(self.cache_misses, lookups, refills), *((m, n, 1) for m, n in self.cache_miss_seconds or [])]
        return any(m / n < share - MISS_SHARE_TOLERANCE or (m - k * in_flight) / n > share + MISS_SHARE_TOLERANCE
                   for m, n, k in parts)


def _int(x: float | None) -> int | None:
    return None if x is None else int(round(x))


def off_contract(scenario, row: dict, misses_off: bool = False) -> list[str]:
    """Flags for a window whose backend work per request is not the scenario's contract: one MGET
    for redis, one SELECT for db-read, one INSERT for db-write, three downstream calls for fan-out,
    nothing for the others, and no server-side prepare per request anywhere; for a scenario that calls
    the downstream, a downstream that left a poll of its status page unanswered; for cache-aside, a
    share of misses off the load's (`misses_off`: Evidence.misses_off). Also a listen queue that
    overflowed."""
    flags = []
    expected = scenario.backend_work
    redis = row.get("redis_commands_per_request")
    if redis is not None and abs(redis - expected.get("redis_commands", 0)) > EVIDENCE_TOLERANCE:
        flags.append("redis-commands-off-contract")
    db = [(row.get(f"{k}_per_request"), expected.get(k, 0)) for k in DB_COUNTERS]
    if any(v is not None and abs(v - want) > EVIDENCE_TOLERANCE for v, want in db):
        flags.append("db-statements-off-contract")
    calls = row.get("downstream_calls_per_request")
    if calls is not None and abs(calls - expected.get("downstream_calls", 0)) > EVIDENCE_TOLERANCE:
        flags.append("downstream-calls-off-contract")
    if (row.get("downstream_cpu_pct") or 0) >= DOWNSTREAM_BUSY_PCT:
        flags.append("downstream-busy")
    if expected.get("downstream_calls") and row.get("downstream_polls_unanswered"):
        flags.append("downstream-unanswered")
    if scenario.ids and misses_off:
        flags.append("cache-misses-off-contract")
    if row.get("tcp_listen_overflows") or row.get("tcp_listen_drops"):
        flags.append("listen-queue-overflow")
    return flags


def at_time(times: list[float], values: list[float], t: float) -> float:
    """A cumulative counter polled at `times` (ascending), at time t: linearly between the polls around
    it, the first or last poll's outside them."""
    before = [i for i, x in enumerate(times) if x <= t]
    after = [i for i, x in enumerate(times) if x >= t]
    a, b = (before[-1] if before else 0), (after[0] if after else len(times) - 1)
    if times[b] <= times[a]:
        return values[a]
    return values[a] + (values[b] - values[a]) * (t - times[a]) / (times[b] - times[a])


def miss_seconds(times: list[float], hits: list[float], misses: list[float], t0: float,
                 t1: float) -> list[tuple[float, float]]:
    """The misses and lookups in each whole second from t0 to t1, from cumulative counts polled at
    `times` (read between polls linearly); seconds with fewer than MISS_SECOND_MIN lookups are left out."""
    out = []
    for k in range(int(t1 - t0)):
        a, b = t0 + k, t0 + k + 1
        h = at_time(times, hits, b) - at_time(times, hits, a)
        m = at_time(times, misses, b) - at_time(times, misses, a)
        if h + m >= MISS_SECOND_MIN:
            out.append((m, h + m))
    return out
