"""The report's content: its sections in order (the run's facts and warnings, network levels,
capacity, winners, the study's claims, parity, then per scenario its charts, tables, Flight
Recorder's why and what the backends counted, and startup), with the prose that explains each, as a
list of blocks that render.py writes twice (HTML and Markdown).

What the run was (its plan, parity, scenarios' contracts, generator ceilings, warnings) comes from its
own files, measurements.parquet and run.json, not from today's configuration: an old run reports what
it ran under, and a section whose data it lacks is left out.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from orchestrator import lazy
from orchestrator.config import kinds
from orchestrator.core.schema import GRACEFUL, NEAR_CEILING, percentile_label
from orchestrator.report import capacity as capacity_report
from orchestrator.report import network as network_report
from orchestrator.report import parity_table
from orchestrator.report import workload as workload_report
from orchestrator.report.charts import (
    latency_chart,
    resources_chart,
    startup_chart,
    sweep_chart,
    target_colors,
    throughput_chart,
    timeseries_chart,
)
from orchestrator.report.render import Chart, png
from orchestrator.report.tables import comparison_table, evidence_table, not_crowned, winners_matrix
from orchestrator.report.why import WHY_TEXT, why_table
from orchestrator.results import analysis, claims, judge, starts
from orchestrator.results import noise as noise_mod
from orchestrator.results.analysis import SEPARATOR, fmt

pd = lazy.module("pandas")
if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", str(text).lower()).strip("-")


def _facts(meta: dict, df: pd.DataFrame) -> str:
    plan, host = meta.get("plan", {}), meta.get("host", {})
    s = plan.get("settings", {})
    # Runs before profiles existed kept the profile's fields in the plan itself.
    prof = plan.get("profile") if isinstance(plan.get("profile"), dict) else {**plan, "name": plan.get("profile")}
    parts = [f"started {meta.get('started_at', '?')}", meta.get("status", ""),
             f"preset {plan['preset']}" if plan.get("preset") else "",
             f"{host.get('cpu_model', '?')}, {host.get('cores', '?')} cores",
             f"JDK {meta.get('jdk', {}).get('version', '?')}",
             f"server CPUs {s.get('server_cpus', '?')}, load generator CPUs {s.get('loadgen_cpus', '?')}",
             f"heap {s.get('heap', '?')}, {s.get('runtime', '?')} runtime",
             f"profile {prof.get('name', '?')} ({prof.get('kind', 'throughput')}, "
             f"{prof.get('driver', s.get('driver', '?'))})",
             f"warm-up windows of {prof.get('warmup_s', '?')} s until steady, {kinds.measured_words(prof)}, "
             f"{prof.get('repeat', '?')} repeat(s)",
             f"{len(df)} cells, {int((df['status'] != 'ok').sum())} failed",
             f"commit {str(meta.get('git_commit', ''))[:12]}"]
    return " · ".join(p for p in parts if p)


def _floor_note(entry: dict | None, host: dict) -> str:
    machine = noise_mod.machine_key(host)
    if not entry:
        return (f"No noise floor measured on this run's machine ({machine}): a lead rests on its repeats "
                f"alone, and a single repeat crowns nothing (`bench noise` measures one).")
    return (f"Noise floor on this run's machine ({machine}): {noise_mod.describe(entry)}. A floor widens only "
            f"cells of its own scenario and metric with fewer than {judge.OWN_NOISE} repeats; elsewhere it "
            f"is context, and a cell is judged by its own repeats.")


def _ceiling_note(meta: dict) -> str:
    """The generator ceilings the run was flagged against (run.json, from `bench calibrate`)."""
    ceilings = meta.get("generator_ceilings") or {}
    if not ceilings:
        return ("No generator ceiling was calibrated on this run's machine: a cell near what its generator can "
                "send at all is not flagged (`bench calibrate` measures each generator against nginx).")
    each = ", ".join(f"{name} {fmt(rps)} req/s" for name, rps in sorted(ceilings.items()))
    return (f"Generator ceilings on this run's machine (`bench calibrate`, against nginx): {each}. A cell above "
            f"{NEAR_CEILING:.0%} of its generator's ceiling is flagged near-generator-ceiling: it may measure the "
            f"generator rather than the target.")


EVIDENCE_TEXT = ("Per request in the measured window, from Redis's and MariaDB's own counters, and the peaks of "
                 "their connections and of statements running at once; TCP counters from the kernel.")


def contract_of(meta: dict, scenario: str) -> str:
    """The sentence that states a scenario's contract, as run.json recorded it (a network level or the
    VUs folded into the name are not part of it); "" for runs made before runs recorded contracts."""
    contract = (meta.get("contracts") or {}).get(scenario.split(SEPARATOR)[0])
    return f"The contract: {contract}" if contract else ""


def warnings(meta: dict) -> list[str]:
    """What the run warned of, and each target whose framework.toml leaves a parity field out."""
    silent = parity_table.undeclared(meta.get("parity") or {})
    return [*meta.get("warnings", []),
            *(f"{t} declares no {', '.join(fields)} in its framework.toml's [parity]: a limit there is unknown, so "
              f"its figures may not compare with the others'" for t, fields in silent.items())]


def parity_blocks(meta: dict) -> list[tuple]:
    """The parity table of the run (run.json), the columns in which targets differ marked ≠."""
    entries = meta.get("parity") or {}
    if not entries:
        return []
    t = parity_table.table(entries)
    diff = parity_table.differing(t)
    return [("h2", "Parity: what each target runs with"),
            ("p", "Declared in each framework.toml (pools, keep-alive, backlog), resolved by Maven for the build "
                  "(library versions), and observed after each target's load (`jcmd Thread.print`: platform "
                  "threads by pool, the largest first; GC and heap). Properties marked ≠ differ between targets: "
                  + ("; ".join(diff) if diff else "none") + "."),
            ("table", parity_table.matrix(t))]


CLAIMS_TEXT = ("Each claim of the study this preset reruns, in the study's words and figures, judged on this run. "
               "An order (a lead is an order of two) or a trend is decided pair by pair by the rule that crowns "
               "(Welch's t on the logarithms of the repeats, each a fresh JVM; Holm's adjustment over the claim's "
               "pairs): it holds when every pair goes the study's way beyond the noise, does not hold when one "
               "goes the other way, and otherwise cannot be told at these repeats (the pair and the repeats it "
               "needs are named), or at this load where both sides of a pair serve what a closed loop's clients "
               "can send at all (each client waiting the scenario's own wait: no repeats part them). ×r is the "
               "ratio of a pair's figures in the study's direction (above 1: as the "
               "study found), with its 95% interval; a trend that is linear grows in proportion to the load. A "
               "cell whose flags only slowed it (a busy load generator, steal) counts where its bias cannot have "
               "made the pair: its throughput is at least, its latency at most, what it shows; where only the "
               "host's steal could have made it, the cell is judged given back all the time stolen, at its best. "
               "An explanation is "
               "tested by evidence recorded in the same cells (medians over the clean repeats; the condition is "
               "the preset's, in orchestrator/config/presets/). Here: median (min-max, repeats that ran).")


def claims_blocks(df: pd.DataFrame, told: list[dict], x: str) -> list[tuple]:
    """The Claims section, first in a preset's report: each claim, the figures here, the verdict, the
    evidence and what differs from the study's set-up."""
    if not told:
        return []
    table = pd.DataFrame(claims.judged(df, told, x), columns=["claim", "here", "verdict", "evidence", "differs"])
    return [("h2", "Claims"), ("p", CLAIMS_TEXT),
            ("table", table.rename(columns={"claim": "the study", "differs": "what differs from the study's set-up"}))]


def document(df: pd.DataFrame, meta: dict, ts: pd.DataFrame | None, x: str,
             floor: dict | None = None, cvs: dict | None = None) -> list[tuple]:
    """The report as a list of blocks ("h2" | "p" | "table" | "chart", content), rendered twice.
    floor: the newest noise-floor entry of the run's machine (noise.entry), or None; cvs: its floors
    by scenario and metric (noise.floors)."""
    colors = target_colors(df["target"])
    blocks: list[tuple] = [("facts", _facts(meta, df))]
    warned = warnings(meta)
    if warned:
        blocks.append(("warn", warned))

    def chart(name, fig, title):
        if fig is not None:
            blocks.append(_chart_block(name, fig, title))

    blocks += claims_blocks(df, (meta.get("plan") or {}).get("claims") or [], x)
    served = (meta.get("plan") or {}).get("workload")
    if served:
        blocks += [("h2", f"Workload {served['name']}: capacity and cost"), ("p", workload_report.text(df, served)),
                   ("table", workload_report.answer_table(df, served))]
        chart("workload-cost", workload_report.cost_chart(df, served, colors), "capacity against cost")
    network = network_report.describe(meta)
    if network:
        blocks.append(("p", network))
    order = network_report.levels(meta)
    if order:
        blocks += [("h2", "Across network levels"),
                   ("p", "Every cell was measured at each level of the link that varies, the link reshaped in "
                         "place between levels (the JVM kept running). Median over the repeats [min-max]; the "
                         "last row is the round trip probed when each level began. A target overtakes another "
                         "when it is behind beyond the noise of the repeats at the first level and ahead beyond "
                         "it at a later one, by the rule that crowns (orchestrator/results/judge.py).")]
        for scenario in sorted(set(df.loc[df["network"].notna(), "scenario"])):
            t = network_report.table(df, scenario, order)
            if t is not None:
                blocks += [("h3", f"{scenario} by network level"), ("table", t),
                           *(("p", s) for s in network_report.verdicts(df, scenario, order, meta))]
    raw, df = df, network_report.by_level(df)   # every later table keeps the levels apart
    probes, capacity, df = capacity_report.split(df)
    if len(capacity) or len(probes):
        blocks += _capacity_blocks(probes, capacity, meta, colors, ts)
        if df.empty:
            blocks.append(("h2", "Startup"))
            chart("startup", startup_chart(capacity, colors), "startup")
            return blocks
    summ = analysis.summary(df, x)
    if summ.empty:
        return blocks + [("p", "No cells were measured.")]
    blocks += [("h2", "Winners"),
               ("p", "The best target per scenario and metric among clean cells (every repeat ran, no "
                     "self-check flag), and how far it leads the runner-up. ↑ higher is better, ↓ lower is "
                     "better; figures are medians over repeats. A target is crowned only when the 95% "
                     "interval of its lead (Welch's t on the logarithms of the repeats, each a fresh JVM; "
                     "orchestrator/results/judge.py) excludes a tie; otherwise the lead is within noise, ± the "
                     "interval's half-width, with the repeats a side a lead that large needs. MDE is the "
                     "smallest lead these repeats could have detected (power 0.8): within noise is no proof "
                     "of equality, and more repeats lower it. A level where a flagged or partly failed cell "
                     "did better than the best clean one is inconclusive, and so is a lead with too few "
                     "repeats to have a noise (it names the repeats it needs). A cell whose flagged repeats "
                     "were only slowed (the host's steal, a busy load generator: orchestrator/results/bias.py) "
                     "is ranked on its clean repeats alone where two or more are clean, and its entry says "
                     "how many were left out."),
               ("p", _floor_note(floor, meta.get("host", {}))),
               ("p", _ceiling_note(meta)),
               ("table", winners_matrix(analysis.summary(df, x, leave_out_slowed=True), x, noise=cvs))]
    bad = not_crowned(summ, x)
    if len(bad):
        blocks += [("h2", "Cells not crowned"), ("table", bad)]
    blocks += parity_blocks(meta)

    for scenario in sorted(summ["scenario"].unique()):
        blocks.append(("h2", f"Scenario: {scenario}"))
        if ts is not None and scenario in set(ts["scenario"]):
            chart(f"{scenario}-timeseries", timeseries_chart(ts, scenario, colors), f"{scenario} over time")
        if not analysis.x_levels(summ, scenario, x):
            blocks.append(("p", f"No {x} recorded for {scenario}: no per-level charts or tables."))
            continue
        chart(f"{scenario}-throughput", throughput_chart(summ, scenario, colors, x), f"{scenario} throughput")
        chart(f"{scenario}-latency", latency_chart(summ, scenario, colors, x), f"{scenario} latency")
        chart(f"{scenario}-sweep", sweep_chart(summ, scenario, colors, x), f"{scenario} against {x}")
        chart(f"{scenario}-resources", resources_chart(summ, scenario, colors, x), f"{scenario} resources")
        for level in analysis.x_levels(summ, scenario, x):
            blocks += [("h3", f"{scenario} at {analysis.level_name(df, x)} {level:g}"),
                       ("table", comparison_table(summ, scenario, level, x, noise=cvs))]
        why = why_table(df, scenario, x)
        if why is not None:
            blocks += [("h3", f"{scenario}: why, from Flight Recorder"), ("p", WHY_TEXT), ("table", why)]
        evidence = evidence_table(df, scenario, x)
        if evidence is not None:
            blocks += [("h3", f"{scenario}: what the backends and the kernel counted"),
                       ("p", " ".join(filter(None, [EVIDENCE_TEXT, contract_of(meta, scenario)]))),
                       ("table", evidence)]
    blocks += _start_blocks(raw, ts)
    blocks.append(("h2", "Startup"))
    chart("startup", startup_chart(df, colors), "startup")
    return blocks


def _start_blocks(df: pd.DataFrame, ts: pd.DataFrame | None) -> list[tuple]:
    """Cold starts against the warmed target, and the AOT cache against the default start (starts.py)."""
    blocks: list[tuple] = []
    cold = starts.cold_starts(df, ts)
    if len(cold):
        share = f"{starts.WARM_SHARE:.0%}"
        table = cold.groupby(["target", "scenario"], sort=True).agg(
            n=("repeat", "size"), startup_s=("startup_s", "median"), since_launch_s=("since_launch_s", "median"),
            to_share=("time_to_share_s", "median"), reached=("time_to_share_s", "count"),
            best=("best_share", "median"), rps=("rps", "median"), warm=("warm_rps", "median"),
            p99=("latency_p99_ms", "median"), jit=("jit_time_ms", "median")).reset_index()
        shown = pd.DataFrame({
            "target": table["target"], "scenario": table["scenario"], "repeats": table["n"],
            "first answer s": table["startup_s"].map(fmt), "load began s": table["since_launch_s"].map(fmt),
            f"to {share} of warm s": [fmt(t) + (f" ({k} of {n})" if k < n else "")
                                     for t, k, n in zip(table["to_share"], table["reached"], table["n"])],
            "best second, of warm": (100 * table["best"]).map(lambda v: fmt(v, "%")),
            "cold rps": table["rps"].map(fmt), "warm rps": table["warm"].map(fmt),
            "cold p99 ms": table["p99"].map(fmt), "JIT ms in window": table["jit"].map(fmt)})
        blocks += [("h2", "Cold start"),
                   ("p", f"Each cold cell met its load with no warm-up, in a JVM of its own, seconds after its "
                         f"first answer (the verification's few requests in between). Seconds are counted from "
                         f"the JVM's spawn: to its first answer, to the first request of the load, and to the "
                         f"end of the first second of the cold window whose answers reached {share} of the same "
                         f"target's warmed rps at the same load in this run ('–': no second did; 'k of n': only "
                         f"k repeats did, the median is theirs). The JIT's compile time in the window is the "
                         f"JVM's own counter. Medians over the repeats (orchestrator/results/starts.py)."),
                   ("table", shown)]
    modes = starts.jvm_modes(df, ts)
    if len(modes):
        shown = modes.assign(default=modes["default"].map(fmt), aot_cache=modes["aot_cache"].map(fmt),
                             change_pct=modes["change_pct"].map(lambda v: ("+" if v > 0 else "") + fmt(v, "%")))
        blocks += [("h2", "The JDK's AOT cache against the default start"),
                   ("p", "Each target ran in both JVM modes: the default, and from an AOT cache the run trained on "
                         "it first (orchestrator/targets/aot_cache.py; classes loaded and linked ahead of time, "
                         "method profiles; run.json's aot_caches says what each was trained on). Medians over "
                         "each mode's repeats, each a fresh JVM: start-up to the first answer, RSS after it and "
                         "the warmed rps from the warm cells, the time to the warm figure from the cold cells. "
                         "The verdict is the judge's, as for the crowns: within noise unless the interval of "
                         "the change excludes none (orchestrator/results/judge.py)."),
                   ("table", shown[["target", "scenario", "figure", "default", "n_default", "aot_cache",
                                    "n_aot_cache", "change_pct", "verdict"]])]
    return blocks


def _chart_block(name: str, fig: Figure, title: str) -> tuple:
    return "chart", Chart(f"report-{_slug(name)}.png", title, png(fig))


def _capacity_blocks(probes: pd.DataFrame, capacity: pd.DataFrame, meta: dict, colors: dict,
                     ts: pd.DataFrame | None) -> list[tuple]:
    """The capacity section, first in the report: the table, the cost per request, a chart per scenario."""
    percentile, common_rate = capacity_report.objective_of(meta.get("plan", {}).get("profile") or {})
    label = percentile_label(percentile)
    driver = (meta.get("plan", {}).get("profile") or {}).get("driver") or "k6"   # runs before pacer had k6
    model = {"pacer": "pacer: arrivals on schedule, each latency from its intended send time",
             "k6": "k6 constant-arrival-rate"}.get(driver, driver)
    own_lag = ", its own send lag above a tenth of the bound when a probe failed" if driver == "pacer" else ""
    slos = "; ".join(sorted(f"{s}: {o}" for s, o in capacity.groupby("scenario")["slo"].first().items()))
    blocks = [("h2", "Capacity at the objective"),
              ("p", f"The highest arrival rate each target sustains with the objective met ({slos}): an open "
                    f"model ({model}; no coordinated omission), searched from {common_rate:g} "
                    f"req/s by doubling, then bisection. A rate passes when {label} is within the bound, failed "
                    f"and dropped arrivals are within the error budget and the rate offered is achieved; a pass "
                    f"within 10 % of the bound is probed twice. Each cell is the interval the capacity lies in: "
                    f"the highest rate that passed – the lowest that failed. Where the generator could offer no "
                    f"more (its CPUs saturated{own_lag}, or above the highest rate `bench calibrate` measured "
                    f"{driver} to keep "
                    f"here in an open model: {_open_ceiling(meta)}) only a lower bound is known: "
                    f"\"≥ rate (generator limit)\". Every probe is a row of measurements.parquet."),
              ("table", capacity_report.capacity_table(capacity)),
              ("p", "With repeats, each a fresh JVM, a cell also gives the interval they support together "
                    "(from the lowest capacity any JVM reached to the highest rate at which any failed), and "
                    "one target has more capacity than another only where its interval lies wholly above the "
                    "other's" + "".join(f"; {line}" for line in capacity_report.ordering(capacity)) + "."),
              ("h3", f"Cost per request at the common rate ({common_rate:g} req/s) and at capacity"),
              ("p", "At the common rate every target does the same work, so CPU per request and memory compare "
                    "directly; at capacity, requests per CPU-second is what one fully busy core serves at that "
                    "cost, and req/s per MiB of peak RSS is the throughput density. The server's CPU at "
                    "capacity says what bound it: near 100 % its core; well below, a limit of its own (workers, "
                    "carriers, a client's pool: the why tables give each pool's peak, the parity table each "
                    "target's declared limits)."),
              ("table", capacity_report.efficiency_table(probes, capacity, common_rate))]
    overload = capacity_report.overload_table(probes, capacity)
    if overload is not None:
        blocks += [("h3", "Past the knee: overload"),
                   ("p", f"After a found capacity each target was offered multiples of it. Goodput is the answers "
                         f"within the objective (status below 400) per second, of the arrivals due in the window, "
                         f"in % of that JVM's capacity: a server that keeps its goodput near its capacity degrades "
                         f"gracefully (at least {100 * GRACEFUL:.0f} % at the last multiple), one whose queues make "
                         f"every answer late collapses, though its rps may hold; an overload probe that met the "
                         f"objective above the rate that failed it in the search puts the capacity in doubt (repeat "
                         f"the search). The verdict quotes that probe's evidence; each probe is a row "
                         f"(`overload_factor`, `goodput_rps`), and drawn on the chart below, right of the break."),
                   ("table", overload)]
    recovery = capacity_report.recovery_table(probes)
    if recovery is not None:
        blocks += [("h3", "Recovery from a spike"),
                   ("p", "After the overload probes, one window: half the capacity, then twice it for as long, "
                         "then half again (pacer). Recovery is the seconds from the spike's end until every "
                         "second's arrivals, to the window's end, met the objective (their p99 within the bound, "
                         "latency from each arrival's due time, so a backlog still draining fails it, and "
                         "failures within the budget); \"did not recover\" within the window otherwise. The "
                         "charts draw each second (timeseries.parquet: offered, goodput, p99, accept queue, "
                         "threads)."),
                   ("table", recovery)]
        if ts is not None:
            for scenario in sorted(set(capacity["scenario"])):
                chart = capacity_report.spike_chart(ts, scenario, colors, capacity_report.bound_of(probes, scenario))
                if chart is not None:
                    blocks.append(_chart_block(f"{scenario}-spike", chart, f"{scenario}: a spike to 2x the capacity"))
    for scenario in sorted(set(probes["scenario"])):
        blocks.append(_chart_block(f"{scenario}-capacity", capacity_report.capacity_chart(
            probes, capacity, scenario, colors, percentile, capacity_report.bound_of(probes, scenario)),
            f"{scenario}: latency against offered rate"))
        why = why_table(capacity, scenario, x=None)
        if why is not None:
            blocks += [("h3", f"{scenario}: why, at the highest rate that passed"), ("p", WHY_TEXT), ("table", why)]
    return blocks


def _open_ceiling(meta: dict) -> str:
    known = meta.get("generator_open_ceilings") or {}
    return ", ".join(f"{name} {rps:,.0f} req/s" for name, rps in known.items()) or "not calibrated for this run"
