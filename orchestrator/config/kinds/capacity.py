"""The capacity kind: the highest arrival rate at which a target meets a latency objective, found by a
search over open-model probes (config/kinds/capacity_search.py: Search, judge), one cell per scenario with at most
the profile's largest concurrency in VUs. Each probe is a row; the capacity row, written last, holds
the interval the capacity lies in. The search is capped at the generator's calibrated open-model
ceiling, which the run measures first when it is unknown.

Past the knee: once a capacity is found, the target is probed at the profile's `overload` multiples
of it (1.25x, 1.5x, 2x by default), a row each with its goodput (answers within the objective per
second), and the capacity row says whether it degrades gracefully (goodput at the last multiple at
least GRACEFUL of the capacity) or collapses, with the evidence of that probe beside it. Then a spike
(pacer): `spike` seconds at half the capacity, as long at twice it, then `recovery_window` at half
again, in one window timed per second (timeseries.parquet); its row and the capacity row give the
seconds from the spike's end until every second meets the objective again (recovery_s)."""
from __future__ import annotations

from dataclasses import replace

from orchestrator.config.kinds.base import CellRun, Kind, Rows
from orchestrator.config.kinds.capacity_search import PASS, SPOILED, Search, judge, own_objectives, vus_for
from orchestrator.config.load import LoadResult
from orchestrator.config.objective import Objective, parse_slo
from orchestrator.core.schema import GRACEFUL, percentile_label
from orchestrator.errors import UsageError

HELD = "; the objective held"   # the end of an overload probe's verdict when it met the objective


class CapacityKind(Kind):
    name = "capacity"
    single_window = False
    fields = ("slo", "error_budget", "common_rate", "resolution", "max_probes", "overload", "spike", "recovery_window")
    options = ("concurrency", "slo", "duration_s")
    default_concurrency = (1000,)
    open_model = True
    searches = True
    needs_open_ceiling = True

    def read(self, doc, p):
        try:
            percentile, bound = parse_slo(doc.get("slo", str, "p99=50ms"))
        except UsageError as e:
            doc.fail("slo", str(e).replace("--slo ", ""))
        return replace(p, slo_percentile=percentile, slo_ms=bound, error_budget=doc.fraction("error_budget", 0.001),
                       common_rate=doc.whole("common_rate", 500), resolution=doc.fraction("resolution", 0.05),
                       max_probes=doc.whole("max_probes", 12, minimum=2), overload=self._multiples(doc),
                       spike_s=doc.duration("spike", "10s", allow_zero=True),
                       recovery_window_s=doc.duration("recovery_window", "30s"))

    @staticmethod
    def _multiples(doc) -> tuple[float, ...]:
        value = doc.table.get("overload", [1.25, 1.5, 2.0])
        if not isinstance(value, list) or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and 1 < v <= 10 for v in value):
            doc.fail("overload", f"must be a list of multiples of the capacity, each above 1 and at most 10 "
                                 f"([] for none); got {value!r}")
        return tuple(sorted(float(v) for v in value))

    def override(self, p, changes: dict):
        slo = changes.pop("slo", None)
        if slo is not None:
            changes["slo_percentile"], changes["slo_ms"] = slo
        return replace(p, **changes)

    @staticmethod
    def objective(p) -> Objective:
        return Objective(p.slo_percentile, p.slo_ms, p.error_budget)

    def levels(self, p) -> list[tuple[int, float | None]]:
        return [(max(p.concurrency), None)]   # one search per scenario, with at most this many VUs

    def open_ceiling_needed(self, p) -> float | None:
        """Twice the most the search can offer (it doubles from the common rate, one probe at a time),
        so that a search the probe budget ends is never called the generator's limit."""
        return float(p.common_rate * 2 ** p.max_probes)

    def warmup_rate(self, p, rate: float | None) -> float | None:
        return float(p.common_rate)           # where the search starts

    def measured_s(self, p) -> float:
        return p.duration_s * (p.max_probes + len(p.overload)) + 2 * p.spike_s + p.recovery_window_s   # at most

    def describe(self, p) -> str:
        o = self.objective(p)
        return (f"the highest rate with {percentile_label(o.percentile)} <= {o.bound_ms:g} ms over the scenario's "
                f"wait and errors <= {100 * o.error_budget:g} %, from {p.common_rate} req/s to within "
                f"{100 * p.resolution:g} %, {p.duration_s:g} s probes (at most {p.max_probes}), at most "
                f"{max(p.concurrency)} connections")

    def measure(self, cell: CellRun) -> Rows:
        """The search on the warmed-up target: a row per probe, in the order they ran (rate = offered,
        step = the probe's number), then the overload probes past a found capacity, then the capacity
        row, which carries the interval the capacity lies in, the figures of the highest rate that
        passed and the overload verdict."""
        p, scenario = cell.profile, cell.scenario
        objective, most = self.objective(p), cell.open_ceiling()
        search = Search(start=p.common_rate, resolution=p.resolution, max_probes=p.max_probes, max_rate=most)
        slo = objective.describe(scenario)
        rows, best, results = [], None, []
        while (rate := search.next_rate()) is not None:
            known = f"{search.low:,.0f} passed" + (f", {search.high:,.0f} failed" if search.high else "")
            if rows and rows[-1]["rate"] == rate and set(SPOILED) & set(rows[-1]["check_flags"].split(",")):
                # probed again because something held the CPUs: not before it has let go of them
                cell.progress(f"{scenario.name}: waiting for the CPUs to be quiet and the host to stop stealing them")
                cell.calm()
            cell.progress(f"{scenario.name}: probe {len(search.probes) + 1} at {rate:,.0f}/s ({known})")
            row, result, row_flags = self._probe(cell, rate, len(rows) + 1, slo)
            verdict = judge(rate, result, row_flags, objective, scenario, most, row["concurrency"])
            search.record(rate, verdict)
            rows.append({**row, "verdict": f"{verdict.state}: {verdict.why}"})
            results.append(result)
            if verdict.state == PASS and rate == search.low:
                best, best_result = rows[-1], result
        outcome = search.outcome()
        overloads = self._overload(cell, search.low, most, len(rows), slo) if outcome == "found" else []
        spike, series = self._spike(cell, search.low, most, len(rows) + len(overloads) + 1, slo) \
            if outcome == "found" and p.spike_s > 0 else ([], [])
        summary = {**(best or {**cell.base, "status": "ok", "reason": "", "requests": 0, "rps": 0.0}),
                   "concurrency": cell.load.concurrency, "rate": None, "step": None, "slo": slo,
                   "verdict": outcome, "capacity_low_rps": search.low,
                   "capacity_high_rps": search.high if outcome != "above-generator" else None,
                   "overload_factor": None, "goodput_rps": None,
                   "overload_verdict": overload_verdict(search.low, overloads, search.high),
                   "recovery_s": spike[0]["recovery_s"] if spike else None,
                   "check_flags": ",".join(capacity_flags(best, rows, outcome, overloads, search.high))}
        # a mix: each scenario's figures in every probe, and at the capacity its share of it
        # each part's row says the objective it was judged by: its own where it has one, else the mix's
        own = {part.scenario.name: o.describe(part.scenario) for part, o in own_objectives(scenario, objective)}
        parts = [{**part, "slo": own.get(_part_of(part), slo)}
                 for row, result in zip(rows, results) for part in cell.parts(row, result)]
        shares = getattr(scenario, "shares", {})
        at_capacity = [{**part, "slo": own.get(_part_of(part), slo), "rate": None, "step": None, "verdict": outcome,
                        "capacity_low_rps": search.low * shares[_part_of(part)],
                        "capacity_high_rps": summary["capacity_high_rps"] and
                        summary["capacity_high_rps"] * shares[_part_of(part)]}
                       for part in (cell.parts(best, best_result) if best else [])]
        return rows + overloads + spike + [summary] + parts + at_capacity, series

    def _probe(self, cell: CellRun, rate: float, step: int, slo: str) -> tuple[dict, LoadResult, list[str]]:
        """One open-model window at `rate`, with the connections Little's law needs at the objective:
        its row (not yet judged), its result and its flags."""
        vus = vus_for(rate, self.objective(cell.profile), cell.scenario, cell.load.concurrency)
        row, result, _, row_flags = self._window(cell, replace(cell.load, rate=rate, concurrency=vus),
                                                 f"{cell.scenario.name}-probe{step}", rate, step, slo)
        return row, result, row_flags

    def _window(self, cell: CellRun, load, name: str, rate: float, step: int, slo: str):
        """Drive one load and make its row (rate: the one it is known by): (row, result, sampler, flags),
        the row with its goodput at the objective."""
        result, sampler = cell.drive(load, name)
        sample = cell.window(sampler, result, whole_load=True)
        row_flags = cell.flags(load.concurrency, result, sample)
        row = cell.row({"concurrency": load.concurrency, "rate": rate, "step": step}, result, sample, row_flags)
        row = cell.keep(name, [result], [row])[0]
        goodput = result.goodput(self.objective(cell.profile).bound_for(cell.scenario))
        return {**row, "slo": slo, "goodput_rps": None if goodput != goodput else goodput}, result, sampler, row_flags

    def _overload(self, cell: CellRun, capacity: float, most: float | None, done: int, slo: str) -> list[dict]:
        """The target at each overload multiple of its capacity, as far as the generator can offer."""
        rows = []
        for factor in cell.profile.overload:
            rate = float(round(capacity * factor))
            if most and rate > most:
                cell.progress(f"{cell.scenario.name}: overload {factor:g}x ({rate:,.0f}/s) is above what the "
                              f"generator can offer here ({most:,.0f}/s): not probed")
                break
            cell.progress(f"{cell.scenario.name}: overload {factor:g}x its capacity, {rate:,.0f}/s")
            row, result, row_flags = self._probe(cell, rate, done + len(rows) + 1, slo)
            met = judge(rate, result, row_flags, self.objective(cell.profile), cell.scenario, most,
                        row["concurrency"]).state == PASS
            rows.append({**row, "overload_factor": factor,
                         "verdict": f"overload {factor:g}x: {_goodput_text(row, capacity)}" + (HELD if met else "")})
        return rows

    def _spike(self, cell: CellRun, capacity: float, most: float | None, step: int,
               slo: str) -> tuple[list[dict], list[dict]]:
        """Half the capacity, twice it for spike_s, half again for the recovery window, in one pacer
        window: its row (rate: the spike's) and its per-second series."""
        p, scenario, objective = cell.profile, cell.scenario, self.objective(cell.profile)
        calm, peak = float(round(capacity / 2)), float(round(capacity * 2))
        if p.driver != "pacer" or (most and peak > most):
            cell.progress(f"{scenario.name}: no spike: " + (f"{p.driver} runs one rate a window" if p.driver != "pacer"
                                                             else f"{peak:,.0f}/s is above what the generator can offer"))
            return [], []
        cell.progress(f"{scenario.name}: spike {calm:,.0f} -> {peak:,.0f} -> {calm:,.0f}/s")
        vus = vus_for(peak, objective, scenario, cell.load.concurrency)
        load = replace(cell.load, rate=calm, duration_s=p.spike_s, concurrency=vus,
                       then=((peak, p.spike_s), (calm, p.recovery_window_s)))
        row, result, sampler, _ = self._window(cell, load, f"{scenario.name}-spike", peak, step, slo)
        bound = objective.bound_for(scenario)
        seconds = result.per_second(bound)
        recovered = recovery_s(seconds, 2 * p.spike_s, bound, objective.error_budget)
        said = (f"recovered {recovered:g} s after it" if recovered is not None else
                f"did not recover within {p.recovery_window_s:g} s")
        row = {**row, "recovery_s": recovered,
               "verdict": f"spike {p.spike_s:g} s at 2x its capacity, from and back to half: {said}"}
        series = [cell.second({"t_s": s["t_s"], "epoch_s": int(result.started_at + s["t_s"]),
                               "step": 1 if s["t_s"] < p.spike_s else 2 if s["t_s"] < 2 * p.spike_s else 3,
                               "rps": s["answered"], "failures_per_s": s["failed"], "p50_ms": s["p50_ms"],
                               "p95_ms": s["p95_ms"], "p99_ms": s["p99_ms"], "offered_per_s": s["offered"],
                               "goodput_per_s": s["goodput"], "dropped_per_s": s["dropped"]},
                              sampler, at=result.started_at + s["t_s"]) for s in seconds]
        return [row], series


# A capacity row's flags that say its JVM's ceiling is not known (results/capacities.py reads them)
IN_DOUBT, FAILURE_SPOILED = "capacity-in-doubt", "capacity-failure-spoiled"


def capacity_flags(best: dict | None, rows: list[dict], outcome: str, overloads: list[dict] = (),
                   failed_at: float | None = None) -> list[str]:
    """The capacity row's flags: those of the probe at its low end, host-steal when the host held the
    CPUs in any probe of the search, the outcome, capacity-in-doubt when an overload probe met the
    objective above the rate that failed it in the search, and capacity-failure-spoiled when the probe
    that decided that failure (probed again, the second) still met something holding the CPUs (SPOILED):
    that JVM's ceiling is then not known. A pass under steal stays a pass: steal only slows."""
    flags = [f for f in ((best or {}).get("check_flags") or "").split(",") if f]
    if "host-steal" not in flags and any("host-steal" in (r.get("check_flags") or "").split(",") for r in rows):
        flags.append("host-steal")
    decided = [r for r in rows if failed_at is not None and r.get("rate") == failed_at
               and not (r.get("verdict") or "").startswith(PASS)]
    spoiled = bool(decided) and bool(set(SPOILED) & set((decided[-1].get("check_flags") or "").split(",")))
    return [*flags, f"capacity-{outcome}", *([IN_DOUBT] if _held_above(overloads, failed_at) else []),
            *([FAILURE_SPOILED] if spoiled else [])]


def _held_above(overloads: list[dict], failed_at: float | None) -> dict | None:
    """The first overload probe that met the objective at a rate above failed_at (the lowest rate that
    failed it in the search), if any: the search's failing probe was not the target's limit (one
    window's tail, a pause, the host), so its interval is too low."""
    return next((o for o in overloads if failed_at is not None and o["rate"] > failed_at
                 and o["verdict"].endswith(HELD)), None)


def recovery_s(seconds: list[dict], end_s: float, bound_ms: float, budget: float) -> float | None:
    """Seconds from end_s (the spike's end) to the first second from which every second to the end of
    the window met the objective: p99 of its arrivals within bound_ms and at most `budget` of them
    failed (latencies run from each arrival's due time, so a backlog still draining fails it). None:
    some second to the last did not."""
    def met(s: dict) -> bool:
        return s["p99_ms"] is not None and s["p99_ms"] <= bound_ms and s["failed"] <= budget * s["offered"]
    after = [s for s in seconds if s["t_s"] >= end_s]
    for k, s in enumerate(after):
        if all(met(later) for later in after[k:]):
            return float(s["t_s"] - end_s)
    return None


def _goodput_text(row: dict, capacity: float) -> str:
    goodput = row.get("goodput_rps")
    if goodput is None:
        return "goodput not known (the generator keeps no latencies)"
    return f"goodput {goodput:,.0f} req/s, {100 * goodput / capacity:.0f} % of capacity"


def overload_verdict(capacity: float, overloads: list[dict], failed_at: float | None = None) -> str | None:
    """Graceful or collapsing, from the last (highest) overload probe, with its evidence: what was
    answered and how late, what failed or was dropped, and the server's queues, threads and GC.

    Goodput counts every answer within the bound, the capacity needs the objective's percentile within
    it, so goodput past the knee may read above 100 % of the capacity: a server whose tail, not its
    throughput, ends the search. But an overload probe that met the objective itself above the rate
    that failed it in the search says the search's interval is too low: "capacity in doubt", never
    "graceful", with the probe that held."""
    if not overloads or overloads[-1].get("goodput_rps") is None:
        return None
    last = overloads[-1]
    held = last["goodput_rps"] / capacity
    doubt = _held_above(overloads, failed_at)
    word = ((f"capacity in doubt (at {doubt['overload_factor']:g}x, {doubt['rate']:,.0f}/s, the objective held, "
             f"above the {failed_at:,.0f}/s that failed it in the search: repeat the search)") if doubt else
            "graceful" if held >= GRACEFUL else "collapses")
    failed = sum(int(last.get(k) or 0) for k in ("errors_connect", "errors_read", "errors_write", "errors_timeout",
                                                 "errors_status"))
    def known(key: str, text: str) -> list[str]:
        """The figure in its text, or nothing where the probe had none (nothing answered, a server out of sight)."""
        value = last.get(key)
        return [] if value is None or value != value else [text.format(value)]
    evidence = [f"{last['rps']:,.0f} answered/s", *known("latency_p50_ms", "p50 {:,.1f} ms"),
                *known("latency_p99_ms", "p99 {:,.1f} ms"), f"{failed:,} errors",
                f"{int(last.get('dropped') or 0):,} dropped", *known("server_cpu_pct", "server CPU {:.0f} %"),
                *known("server_peak_threads", "threads {}"), *known("tcp_accept_queue_peak", "accept queue peak {}"),
                *known("gc_time_ms", "GC {:,.0f} ms")]
    return (f"{word}: at {last['overload_factor']:g}x its capacity ({last['rate']:,.0f}/s) goodput held "
            f"{100 * held:.0f} % of it ({', '.join(evidence)})")


def _part_of(row: dict) -> str:
    """The scenario a mix's part row is of ('MIX/NAME' -> NAME)."""
    return row["scenario"].partition("/")[2]
