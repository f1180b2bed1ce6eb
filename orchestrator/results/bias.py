"""Flags whose bias has a known direction, and the bound they leave on a figure.

Most flags say a window measured something besides the target (errors answered fast, a JIT still
compiling, a generator whose clients were not all busy): its figures may be off either way, so a
flagged cell is never crowned and never judged. A few say only that something took the machine away
from the cell: the host held its vCPUs (host-steal), another process ran on the server's CPUs
(server-cpus-shared), or the load generator's CPUs ran full (loadgen-cpus-busy, loadgen-saturated,
near-generator-ceiling), so the generator sent later and read later than it would have. Either way
the target served no more than it would have, and no request was answered sooner: its throughput is
at most the truth, its latencies at least. Such a cell still wins when even its biased figure does,
and the report says "at least" (throughput) or "at most" (latency) of it. Its CPU, memory and GC
figures move either way, so on those it withholds as any flag does.

One flag points the other way on latency: listen-queue-overflow (the kernel dropped connection
attempts the target's full accept queue could not take, and the clients retried their SYN a second
or more later). k6, wrk, h2load and oha time a request from its first byte written on an open
connection, so those retries are in no latency they report; pacer and Locust count them. Either way
the target's true latency is at least the figure: such a cell still loses on latency when even its
understated figure does. Its throughput keeps the retries (the burst lasted them), and whether that
is the target's or the machine's (its backlog, somaxconn) is not known, so on throughput it withholds.
"""
from __future__ import annotations

import math

from orchestrator import lazy
from orchestrator.core.schema import PERCENTILES, latency_column

np = lazy.module("numpy")

# Clean repeats a cell needs for its slowed ones to be left out and the clean ones judged alone (Welch's
# t needs two): a repeat the host or a busy generator slowed measured them, and its clean siblings, each a
# fresh JVM of the same target, are a smaller sample of the target alone.
MIN_CLEAN = 2
SLOWING = frozenset({"host-steal", "server-cpus-shared", "loadgen-cpus-busy", "loadgen-saturated",
                     "near-generator-ceiling", "downstream-busy"})
# metric -> what a slowing flag leaves of the truth, relative to the figure measured
BOUNDS = {"rps": "at least", "mb_received": "at least", "latency_mean_ms": "at most",
          **{latency_column(k): "at most" for k in PERCENTILES}}
# what a full accept queue leaves of the true latency: retried connections are in no figure, or in all
UNDERSTATED = {"latency_mean_ms": "at least", **{latency_column(k): "at least" for k in PERCENTILES}}
# flag -> metric -> what it leaves of the truth; a flag or metric not here: no known direction
DIRECTIONS = {**{flag: BOUNDS for flag in SLOWING}, "listen-queue-overflow": UNDERSTATED}
# The one slowing flag whose size is measured (the share of the CPUs the host took, per window): a cell
# it withholds can be given back every stolen moment (given_back) and judged at its best
STOLEN = frozenset({"host-steal"})
STEAL_COLUMNS = ("server_cpus_steal_pct", "loadgen_cpus_steal_pct")


def flags_of(flags) -> set[str]:
    """A check_flags string ("a,b"), or any iterable of them, as a set of flags."""
    if isinstance(flags, str):
        flags = [flags]
    return {f for s in flags if isinstance(s, str) for f in s.split(",") if f}


def only_slowing(flags) -> bool:
    """True when there are flags and every one of them only slowed the cell."""
    found = flags_of(flags)
    return bool(found) and found <= SLOWING


def bound(flags, metric: str) -> str:
    """"at least" / "at most": what every one of the flags leaves of the true figure on metric, when
    they all agree (a slowed cell's rps: at least); '' without flags, or when one has no known direction
    on metric, or two point opposite ways."""
    found = flags_of(flags)
    ways = {DIRECTIONS.get(f, {}).get(metric, "") for f in found}
    return ways.pop() if len(ways) == 1 and "" not in ways else ""


def held(flags, metric: str, truth: str) -> set[str]:
    """The flags that withhold a verdict needing the true figure on metric to be `truth` ("at least" /
    "at most") the one measured: every flag but those that leave it so."""
    return {f for f in flags_of(flags) if DIRECTIONS.get(f, {}).get(metric) != truth}


def truth_better(higher_is_better: bool) -> str:
    """Where the true figure lies when the measured one understates the target: "at least" a rate,
    "at most" a latency."""
    return "at least" if higher_is_better else "at most"


def truth_worse(higher_is_better: bool) -> str:
    return truth_better(not higher_is_better)


def stolen_share(rows) -> "np.ndarray":
    """Per row, the share (0-1) of its window in which the host may have held either side: the server's
    share and the generator's added, since either one held stalls the exchange and the two need not
    have been held at once (NaN where a side's steal was not measured)."""
    steal = [rows[c].to_numpy(dtype=float) if c in rows else np.full(len(rows), np.nan) for c in STEAL_COLUMNS]
    return np.minimum(sum(steal) / 100, 1.0)


def given_back(metric: str, values, stolen, duration_s) -> "np.ndarray | None":
    """The figures had the host taken nothing, at their best: a rate divided by the share of time left
    (1 - stolen, stolen_share's), a latency less all the time stolen in the window (one request may have met every
    stolen moment); NaN where a figure's steal was not measured (rows from before it was). None for a
    metric steal cannot be bounded on (CPU, GC, memory...)."""
    values, stolen = np.asarray(values, dtype=float), np.asarray(stolen, dtype=float)
    if metric == "rps":
        return values / np.clip(1 - stolen, 0.01, None)
    if metric in UNDERSTATED:   # the latencies
        window_ms = np.nan_to_num(np.asarray(duration_s, dtype=float), nan=math.inf) * 1000
        return np.clip(values - stolen * window_ms, 1e-9, None)
    return None
