"""The report of a run measured at several network levels (topology.py): each target's throughput
per level beside the round trip probed at it, and where one target overtakes another as the link
grows longer (the far-database experiment: where R2DBC overtakes JDBC, if it does), decided by the
judge (judge.py) on the repeats at each level, as a crown is."""
from __future__ import annotations

import itertools

from orchestrator import lazy
from orchestrator.config.topology import LOCAL, Topology
from orchestrator.results import judge
from orchestrator.results.analysis import SEPARATOR, fmt

pd = lazy.module("pandas")

# A lead this large between medians is read as a difference; smaller ones are within this machine's
# run-to-run spread (10-s windows in fresh JVMs: CV about 11 %)
LEAD = 0.10


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


def table(df: pd.DataFrame, scenario: str, order: list[str], metric: str = "rps",
          unit: str = "req/s") -> pd.DataFrame | None:
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


def bound(scenario: str, meta: dict, rtt_ms: float | None) -> float | None:
    """The most a database scenario can do at a round trip: each request holds one of DB_POOL_SIZE
    connections for at least one round trip, so rps <= pool / rtt (None elsewhere, or near)."""
    pool = ((meta.get("plan") or {}).get("settings") or {}).get("db_pool_size")
    if not scenario.startswith("db-") or not pool or not rtt_ms or rtt_ms < 1:
        return None
    return pool / (rtt_ms / 1000)


def verdicts(df: pd.DataFrame, scenario: str, order: list[str], meta: dict, metric: str = "rps") -> list[str]:
    """Per level, who leads and by how much, beside the pool's bound where one applies; then each
    pair of targets behind beyond the noise at the first level and ahead beyond it at a later one."""
    m = _medians(df, scenario, metric)
    if m.empty:
        return []
    order = [lv for lv in order if lv in set(m.index.get_level_values("network"))]
    ran = df[(df["scenario"] == scenario) & df["network"].notna()]
    rtt = ran.groupby("network")["network_rtt_ms"].median()
    out = []
    for lv in order:
        at = m.xs(lv, level="network")["median"].sort_values(ascending=False)
        lead = at.iloc[0] / at.iloc[1] - 1 if len(at) > 1 else 0.0
        text = (f"{scenario} at {lv}: every target within {100 * (at.iloc[0] / at.iloc[-1] - 1):.1f} % "
                f"({fmt(at.iloc[-1])}-{fmt(at.iloc[0])} {metric})" if at.iloc[0] / at.iloc[-1] - 1 < LEAD else
                f"{scenario} at {lv}: {at.index[0]} leads with {fmt(at.iloc[0])} {metric}, "
                + (f"{100 * lead:.0f} % ahead of {at.index[1]}" if lead >= LEAD else
                   f"within {100 * LEAD:.0f} % of {at.index[1]} ({fmt(at.iloc[1])})"))
        most = bound(scenario, meta, rtt.get(lv))
        if most:
            text += (f"; the bound of {meta['plan']['settings']['db_pool_size']} connections each holding a "
                     f"statement for the probed {fmt(rtt.get(lv), 'ms')} is {fmt(most)} {metric}, reached to "
                     f"{100 * at.iloc[-1] / most:.0f}-{100 * at.iloc[0] / most:.0f} %")
        out.append(text + ".")
    targets = sorted(set(m.index.get_level_values("target")))
    for a, b in itertools.permutations(targets, 2):
        if not all((t, lv) in m.index for t in (a, b) for lv in order):
            continue
        # the judge's rule, as for a crown: behind beyond the noise first, ahead beyond it later
        first = _lead(ran, metric, a, b, order[0])
        turned = next((lv for lv in order[1:] if _lead(ran, metric, a, b, lv).low > 1), None)
        if first.high < 1 and turned:
            out.append(f"{scenario}: {a} overtakes {b} at {turned}: {fmt(m.loc[(a, turned), 'median'])} against "
                       f"{fmt(m.loc[(b, turned), 'median'])} {metric}, {100 * (1 - first.ratio):.0f} % behind at "
                       f"{order[0]}.")
    if not any("overtakes" in t for t in out):
        out.append(f"{scenario}: no target overtakes another beyond the noise of its repeats across the levels.")
    return out


def _lead(ran: pd.DataFrame, metric: str, a: str, b: str, level: str) -> judge.Lead:
    """a's repeats against b's at one network level, judged (judge.lead)."""
    at = ran[(ran["network"] == level) & (ran["status"] == "ok")]
    return judge.lead(at.loc[at["target"] == a, metric], at.loc[at["target"] == b, metric])


def describe(meta: dict) -> str | None:
    """Where the run's server and data services ran, each link's shape and its round trip as probed."""
    net, engine = meta.get("network"), meta.get("docker_engine")
    plan = meta.get("plan", {})
    master = plan.get("settings", {}).get("locust_master")
    if engine:
        n = plan["profile"]["ramp"]["workers"] if master else 0
        workers = (f"; the ramp's {n} Locust worker{'s' * (n != 1)} on other machines (`bench locust-worker` "
                   f"there), connected to the master here at {master}: their hosts are in each cell's "
                   f"locust-*.buckets.json" if master else "")
        return (f"The targets ran on a remote Docker engine ({engine['docker_host']}: {engine['name']}, "
                f"{engine['cpus']} CPUs, {engine['memory_gb']:g} GiB, {engine['os']}, kernel {engine['kernel']}) "
                f"at {engine['address']}; the {'Locust master' if master else 'load generator'}, Redis and "
                f"MariaDB on this machine "
                f"({engine['this_machine']}), {fmt(engine['rtt_ms'], 'ms')} away (median of 10 TCP handshakes "
                f"with the engine's port at the start){workers}. Out of this machine's sight there: no JFR, no "
                f"thread dumps, no kernel TCP counters; CPU, memory and threads from the stats API once a second.")
    if not net:
        return None
    topo = Topology.from_dict(net["topology"])
    links = []
    for name, link in net["links"].items():
        probed = [p["rtt"][name]["median_ms"] for p in net.get("rtt_probes", []) if name in p["rtt"]]
        shapes = "; ".join(f"{lv if lv != 'None' else 'configured'}: {s['rtt_ms']:g} ms"
                           for lv, s in link["shapes"].items())
        links.append(f"{name} ({link['ends'][0]['address']} - {link['ends'][1]['address']}; {shapes}; probed "
                     + (f"{fmt(min(probed), 'ms')} to {fmt(max(probed), 'ms')} over {len(probed)} "
                        f"probe{'s' * (len(probed) != 1)}" if probed else "never") + ")")
    n = (plan.get("profile", {}).get("ramp") or {}).get("workers", 0) if topo.workers != LOCAL else 0
    generator = (f"the Locust master on this machine's own stack and its {n} worker{'s' * (n != 1)} on host "
                 f"{topo.workers}" if n else "the load generator on this machine's own stack")
    return (f"Topology {topo.name}: {generator}, the server on host "
            f"{topo.server}, Redis and MariaDB on host {topo.data} (network namespaces joined by veth links; a "
            f"link with a round trip is a delay wire, orchestrator/infra/wire/). Links: " + "; ".join(links)
            + ". A probe is the median of 10 TCP connects answered by the far kernel's reset.")
