"""A workload's answer (`bench run --workload`): per target, the capacity of its mix at the objective,
what a core and a GiB of memory serve at that capacity, and what a million requests cost at the
workload's prices, ranked only where the repeats tell the targets apart.

At the capacity (the highest rate that passed, its probe's figures on the capacity row):

- requests per second per core used: the capacity over the server's CPU in that window, in cores
  (rps_per_core: requests per CPU-second);
- requests per second per GiB: the capacity over the peak resident memory (RSS) of that window;
- the smallest heap that holds it: of a target measured at several heaps (`--heap 128m,256m,512m`,
  or a workload's `heaps`), the smallest whose capacity these repeats cannot tell below its best heap's;
- cost of a million requests: the CPU they take (CPU-seconds per request x 1,000,000, at the price
  of a core-hour) plus the memory held while they are served (peak RSS for 1,000,000 / capacity
  seconds, at the price of a GiB-hour). It is the marginal cost of the server process at its
  capacity: licences, the load balancer, the database's and the cache's own cores, headroom and idle
  hours are not in it (docs/workloads.md).

The ranking reads the capacities as the report's capacity section does: one target is above another
only where every JVM of it reached a rate at which every JVM of the other had failed
(results/capacities.across_jvms); otherwise the two are within the noise of these repeats.
"""
from __future__ import annotations

from orchestrator import lazy
from orchestrator.config.modes import HEAP_MODE
from orchestrator.results.capacities import across_jvms

pd = lazy.module("pandas")

GIB_MB = 1024.0


def objective_searched(df: pd.DataFrame, workload: dict) -> str:
    """The file's objective, and the bound its searches applied as the mix's rows record it (the
    objective over the mix's slowest wait): "p99=50ms over the mix's wait (p99 <= 70 ms, errors <= 0.1 %)"."""
    applied = sorted(set(df.loc[df["scenario"] == workload["name"], "slo"].dropna())) if "slo" in df else []
    return workload["objective"] + (f" over the mix's wait ({'; '.join(applied)})" if applied else "")


def answer(df: pd.DataFrame, mix: str, prices: dict[str, float]) -> pd.DataFrame:
    """One row per target of the mix's capacity rows in df (medians over the repeats): the capacity
    interval across its JVMs, req/s per core and per GiB at capacity, the cost of a million requests,
    the heap, and its place ("1", "2", or "=1" where within the noise of the one above)."""
    rows = df[(df["scenario"] == mix) & df["rate"].isna()]
    out = []
    for target, mine in rows.groupby("target"):
        ok = mine[mine["status"] == "ok"]
        med = ok.median(numeric_only=True)
        joint = across_jvms(mine)
        cpu_s_per_request = med.get("cpu_ms_per_request", float("nan")) / 1000
        rss_gib = med.get("server_peak_rss_mb", float("nan")) / GIB_MB
        capacity = med.get("capacity_low_rps", float("nan"))
        cost = 1e6 * (cpu_s_per_request * prices["core"] / 3600
                      + rss_gib * prices["gib"] / 3600 / capacity) if capacity and capacity == capacity else float("nan")
        out.append({"target": target, "repeats": f"{len(ok)} of {len(mine)}", "capacity_rps": capacity,
                    "capacity_low_rps": joint[0] if joint else float("nan"),
                    "capacity_high_rps": joint[1] if joint else float("nan"),
                    "rps_per_core": med.get("rps_per_core", float("nan")),
                    "rps_per_gib": capacity / rss_gib if rss_gib else float("nan"),
                    "server_cpu_pct": med.get("server_cpu_pct", float("nan")),
                    "rss_mb": med.get("server_peak_rss_mb", float("nan")),
                    "cost_per_million": cost, "heap": ok["heap"].iloc[0] if "heap" in ok and len(ok) else None,
                    "verdicts": ", ".join(sorted(set(mine["verdict"].dropna())))})
    table = pd.DataFrame(out)
    if table.empty:
        return table
    table = table.sort_values("capacity_rps", ascending=False, na_position="last").reset_index(drop=True)
    table.insert(0, "place", places(table))
    table["smallest_heap"] = smallest_heaps(table)
    return table


def _mb(heap: str | None) -> float:
    return float("inf") if not heap else int(heap[:-1]) * (1024 if heap[-1] in "gG" else 1)


def smallest_heaps(table: pd.DataFrame) -> list[str]:
    """Per row, for a target measured at several heaps (+heap-SIZE): the smallest heap at which its
    capacity cannot be told below its best heap's (some JVM of it failed only at or above a rate every
    JVM of the best reached); '' for a target of one heap."""
    base = table["target"].map(lambda t: "+".join(m for m in t.split("+") if not HEAP_MODE.fullmatch(m)))
    out = {}
    for name, rows in table.groupby(base):
        if len(rows) < 2:
            continue
        best = rows.loc[rows["capacity_rps"].idxmax()] if rows["capacity_rps"].notna().any() else None
        enough = [r for _, r in rows.iterrows() if best is not None and r["capacity_high_rps"] == r["capacity_high_rps"]
                  and best["capacity_low_rps"] == best["capacity_low_rps"]
                  and r["capacity_high_rps"] > best["capacity_low_rps"]]
        out[name] = min((r["heap"] for r in enough), key=_mb, default="")
    return [out.get(b, "") for b in base]


def places(table: pd.DataFrame) -> list[str]:
    """Each target's place by capacity: a target shares the place of the one above it ("=1") unless its
    JVMs' failures all lie below what every JVM of that one reached (across_jvms' intervals)."""
    out, place = [], 0
    for i, row in table.iterrows():
        above = table.iloc[i - 1] if i else None
        apart = above is None or (above["capacity_low_rps"] == above["capacity_low_rps"]
                                  and row["capacity_high_rps"] == row["capacity_high_rps"]
                                  and above["capacity_low_rps"] >= row["capacity_high_rps"])
        place = i + 1 if apart else place
        out.append(str(place) if apart else f"={place}")
    return out
