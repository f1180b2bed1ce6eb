"""Capacities read across repeats: the interval the JVMs of one target support together, and whether
the host stole from a search."""
from __future__ import annotations

from orchestrator import lazy
from orchestrator.results import bias

pd = lazy.module("pandas")


def stolen(row) -> bool:
    """Whether the host held the CPUs in some probe of the search (its interval may be the host's)."""
    return bool(bias.STOLEN & bias.flags_of(row.get("check_flags") or ""))


# A JVM whose failure tells nothing of its ceiling: an overload probe held above it, or the probe that
# decided it met the host stealing or another process on the server's CPU (config/kinds/capacity.py).
# Steal in any other probe does not void the interval: a pass under steal is a pass, and a failure under
# it is probed again before it counts.
CEILING_UNKNOWN = {"capacity-in-doubt", "capacity-failure-spoiled"}


def across_jvms(rows: pd.DataFrame) -> tuple[float, float] | None:
    """The interval the repeats of one target and scenario (each a fresh JVM) support together:
    every JVM carried at least the lowest of their capacities and failed below the highest of their
    breaks (inf: some JVM was not broken, by the generator's limit, or its failure was not its own:
    CEILING_UNKNOWN). None when a repeat failed."""
    if rows.empty or (rows["status"] != "ok").any():
        return None
    unknown = rows["check_flags"].fillna("").map(lambda f: bool(CEILING_UNKNOWN & bias.flags_of(f))) \
        if "check_flags" in rows else pd.Series(False, index=rows.index)
    highs = rows["capacity_high_rps"].astype(float).where(~unknown, float("inf"))
    return float(rows["capacity_low_rps"].min()), float("inf") if highs.isna().any() else float(highs.max())
