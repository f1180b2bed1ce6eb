"""Capacities read across repeats: the interval the JVMs of one target support together, and whether
the host's steal may have set a search's interval."""
from __future__ import annotations

from orchestrator import lazy
from orchestrator.results import bias

pd = lazy.module("pandas")


def stolen(row) -> bool:
    """Whether the host held the CPUs in some probe of the search (its interval may be the host's)."""
    return bool(bias.STOLEN & bias.flags_of(row.get("check_flags") or ""))


def across_jvms(rows: pd.DataFrame) -> tuple[float, float] | None:
    """The interval the repeats of one target and scenario (each a fresh JVM) support together:
    every JVM carried at least the lowest of their capacities and failed below the highest of their
    breaks (inf: some JVM was not broken, the generator's limit). None when a repeat failed, or met
    the host stealing the CPUs."""
    if rows.empty or (rows["status"] != "ok").any() or any(stolen(r) for _, r in rows.iterrows()):
        return None
    highs = rows["capacity_high_rps"].astype(float)
    return float(rows["capacity_low_rps"].min()), float("inf") if highs.isna().any() else float(highs.max())
