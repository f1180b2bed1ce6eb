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
"""
from __future__ import annotations

from orchestrator.results.schema import PERCENTILES, latency_column

# Clean repeats a cell needs for its slowed ones to be left out and the clean ones judged alone (Welch's
# t needs two): a repeat the host or a busy generator slowed measured them, and its clean siblings, each a
# fresh JVM of the same target, are a smaller sample of the target alone.
MIN_CLEAN = 2
SLOWING = frozenset({"host-steal", "server-cpus-shared", "loadgen-cpus-busy", "loadgen-saturated",
                     "near-generator-ceiling", "downstream-busy"})
# metric -> what a slowing flag leaves of the truth, relative to the figure measured
BOUNDS = {"rps": "at least", "mb_received": "at least", "latency_mean_ms": "at most",
          **{latency_column(k): "at most" for k in PERCENTILES}}


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
    """"at least" / "at most" when flags only slowed the cell and metric is one they bound; else ""."""
    return BOUNDS.get(metric, "") if only_slowing(flags) else ""
