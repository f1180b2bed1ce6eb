"""The report of a run measured at several network levels (topology.py): each target's throughput
per level beside the round trip probed at it, and where one target overtakes another as the link
grows longer (the far-database experiment: where R2DBC overtakes JDBC, if it does)."""
from __future__ import annotations

import itertools

import pandas as pd

from .analysis import fmt
from .topology import Topology

SEPARATOR = " · "


def levels(meta: dict) -> list[str]:
    """The run's network levels in the order they were measured (the topology's), or [] for one."""
    topo = Topology.from_dict(((meta.get("plan") or {}).get("settings") or {}).get("topology"))
    return [lv for lv in topo.levels() if lv is not None]


def by_level(df: pd.DataFrame) -> pd.DataFrame:
    """The rows with each network level folded into the scenario's name ("db-read · app-db rtt 20 ms"),
    so that every per-scenario table and chart of the report keeps levels apart."""
    if "network" not in df or df["network"].isna().all():
        return df
    out = df.copy()
    has = out["network"].notna()
    out.loc[has, "scenario"] = out.loc[has, "scenario"] + SEPARATOR + out.loc[has, "network"]
    return out


def _medians(df: pd.DataFrame, scenario: str, metric: str) -> pd.DataFrame:
    ran = df[(df["scenario"] == scenario) & (df["status"] == "ok") & df["network"].notna()]
    return ran.groupby(["target", "network"])[metric].agg(["median", "min", "max", "size"])


def table(df: pd.DataFrame, scenario: str, order: list[str], metric: str = "rps", unit: str = "req/s") -> pd.DataFrame | None:
    """Targets by level: median of the metric over the repeats [min-max], and a last row with the
    round trip probed at each level (median over the cells)."""
    m = _medians(df, scenario, metric)
    if m.empty:
        return None
    cols = [lv for lv in order if lv in set(m.index.get_level_values("network"))]
    out = {}
    for target in sorted(set(m.index.get_level_values("target"))):
        out[target] = {lv: (f"{fmt(r['median'], unit)} [{fmt(r['min'])}-{fmt(r['max'])}]" if r["size"] > 1
                            else fmt(r["median"], unit))
                       for lv in cols if (target, lv) in m.index for r in [m.loc[(target, lv)]]}
    ran = df[(df["scenario"] == scenario) & df["network"].notna()]
    rtt = ran.groupby("network")["network_rtt_ms"].median()
    out["round trip probed"] = {lv: fmt(rtt.get(lv), "ms") for lv in cols}
    return pd.DataFrame(out).T.reindex(columns=cols).rename_axis(f"{metric} by network level").reset_index()


def overtakes(df: pd.DataFrame, scenario: str, order: list[str], metric: str = "rps") -> list[str]:
    """A sentence for each pair of targets whose order on the metric turns between the first level
    and a later one: where it turns, by how much, and whether the repeats' ranges still overlap."""
    m = _medians(df, scenario, metric)
    if m.empty:
        return []
    order = [lv for lv in order if lv in set(m.index.get_level_values("network"))]
    targets = sorted(set(m.index.get_level_values("target")))
    out = []
    for a, b in itertools.permutations(targets, 2):
        if not all((t, lv) in m.index for t in (a, b) for lv in order):
            continue
        if m.loc[(a, order[0]), "median"] >= m.loc[(b, order[0]), "median"]:
            continue   # a must start behind b
        turned = next((lv for lv in order[1:] if m.loc[(a, lv), "median"] > m.loc[(b, lv), "median"]), None)
        if turned is None:
            continue
        ra, rb = m.loc[(a, turned)], m.loc[(b, turned)]
        apart = ra["min"] > rb["max"]
        out.append(f"{scenario}: {a} overtakes {b} at {turned}: {fmt(ra['median'])} against {fmt(rb['median'])} "
                   f"{metric} (behind at {order[0]}: {fmt(m.loc[(a, order[0]), 'median'])} against "
                   f"{fmt(m.loc[(b, order[0]), 'median'])})"
                   + ("; the repeats' ranges no longer overlap." if apart and min(ra["size"], rb["size"]) > 1 else
                      "; within the repeats' spread (ranges overlap, or one repeat): not a verdict."))
    if not out:
        out.append(f"{scenario}: no target overtakes another across {', '.join(order)}: the order at "
                   f"{order[0]} holds at every level.")
    return out


def describe(meta: dict) -> str | None:
    """Where the run's server and data services ran, each link's shape and its round trip as probed."""
    net = meta.get("network")
    if not net:
        return None
    topo = Topology.from_dict(net["topology"])
    links = []
    for name, link in net["links"].items():
        probed = [p["rtt"][name]["median_ms"] for p in net.get("rtt_probes", []) if name in p["rtt"]]
        shapes = "; ".join(f"{lv if lv != 'None' else 'configured'}: {s['rtt_ms']:g} ms" for lv, s in link["shapes"].items())
        links.append(f"{name} ({link['ends'][0]['address']} - {link['ends'][1]['address']}; {shapes}; probed "
                     + (f"{fmt(min(probed), 'ms')} to {fmt(max(probed), 'ms')} over {len(probed)} probes"
                        if probed else "never") + ")")
    return (f"Topology {topo.name}: the load generator on this machine's own stack, the server on host "
            f"{topo.server}, Redis and MariaDB on host {topo.data} (network namespaces joined by veth links; a "
            f"link with a round trip is a delay wire, orchestrator/wire/). Links: " + "; ".join(links)
            + ". A probe is the median of 10 TCP connects answered by the far kernel's reset.")
