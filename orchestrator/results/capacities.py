"""Capacities read across repeats: the interval the JVMs of one target support together, and whether
the host stole from a search."""
from __future__ import annotations

from orchestrator import lazy
from orchestrator.config.kinds.capacity import FAILURE_SPOILED, IN_DOUBT
from orchestrator.results import bias

pd = lazy.module("pandas")


def stolen(row) -> bool:
    """Whether the host held the CPUs in some probe of the search (its interval may be the host's)."""
    return bool(bias.STOLEN & bias.flags_of(row.get("check_flags") or ""))


# A JVM whose failure tells nothing of its ceiling: an overload probe held above it, or the probe that
# decided it met the host stealing or another process on the server's CPU (config/kinds/capacity.py).
# Steal in any other probe does not void the interval: a pass under steal is a pass, and a failure under
# it is probed again before it counts.
CEILING_UNKNOWN = {IN_DOUBT, FAILURE_SPOILED}


def ceiling(row) -> float:
    """The lowest rate that failed one JVM's search, or inf where none did (the generator's limit) or its
    failure was not its own (CEILING_UNKNOWN)."""
    high = row.get("capacity_high_rps")
    unknown = CEILING_UNKNOWN & bias.flags_of(row.get("check_flags") or "")
    return float("inf") if unknown or high is None or high != high else float(high)


def across_jvms(rows: pd.DataFrame) -> tuple[float, float] | None:
    """The interval the repeats of one target and scenario (each a fresh JVM) support together:
    every JVM carried at least the lowest of their capacities and failed below the highest of their
    breaks (inf: some JVM was not broken, by the generator's limit, or its failure was not its own:
    CEILING_UNKNOWN). None when a repeat failed."""
    if rows.empty or (rows["status"] != "ok").any():
        return None
    return float(rows["capacity_low_rps"].min()), max(ceiling(r) for _, r in rows.iterrows())
