"""The capacity kind: the highest arrival rate at which a target meets a latency objective, found by a
search over open-model probes (measure/capacity.py: Search, judge), one cell per scenario with at most
the profile's largest concurrency in VUs. Each probe is a row; the capacity row, written last, holds
the interval the capacity lies in. The search is capped at the generator's calibrated open-model
ceiling, which the run measures first when it is unknown."""
from __future__ import annotations

from dataclasses import replace

from orchestrator.config.kinds.base import CellRun, Kind, Rows
from orchestrator.config.objective import Objective, parse_slo
from orchestrator.errors import UsageError
from orchestrator.measure.capacity import PASS, Search, judge, vus_for
from orchestrator.results.schema import percentile_label


class CapacityKind(Kind):
    name = "capacity"
    fields = ("slo", "error_budget", "common_rate", "resolution", "max_probes")
    options = ("concurrency", "slo", "duration_s")
    default_concurrency = (1000,)
    open_model = True
    needs_open_ceiling = True

    def read(self, doc, p):
        try:
            percentile, bound = parse_slo(doc.get("slo", str, "p99=50ms"))
        except UsageError as e:
            doc.fail("slo", str(e).replace("--slo ", ""))
        return replace(p, slo_percentile=percentile, slo_ms=bound, error_budget=doc.fraction("error_budget", 0.001),
                       common_rate=doc.whole("common_rate", 500), resolution=doc.fraction("resolution", 0.05),
                       max_probes=doc.whole("max_probes", 12, minimum=2))

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
        return p.duration_s * p.max_probes    # at most

    def describe(self, p) -> str:
        o = self.objective(p)
        return (f"the highest rate with {percentile_label(o.percentile)} <= {o.bound_ms:g} ms over the scenario's "
                f"wait and errors <= {100 * o.error_budget:g} %, from {p.common_rate} req/s to within "
                f"{100 * p.resolution:g} %, {p.duration_s:g} s probes (at most {p.max_probes}), at most "
                f"{max(p.concurrency)} connections")

    def measure(self, cell: CellRun) -> Rows:
        """The search on the warmed-up target: a row per probe, in the order they ran (rate = offered,
        step = the probe's number), then the capacity row, which carries the interval the capacity lies
        in and the figures of the highest rate that passed."""
        p, scenario, load = cell.profile, cell.scenario, cell.load
        objective, most = self.objective(p), cell.open_ceiling()
        search = Search(start=p.common_rate, resolution=p.resolution, max_probes=p.max_probes, max_rate=most)
        slo = objective.describe(scenario)
        rows, best = [], None
        while (rate := search.next_rate()) is not None:
            known = f"{search.low:,.0f} passed" + (f", {search.high:,.0f} failed" if search.high else "")
            cell.progress(f"{scenario.name}: probe {len(search.probes) + 1} at {rate:,.0f}/s ({known})")
            vus = vus_for(rate, objective, scenario, load.concurrency)
            name = f"{scenario.name}-probe{len(search.probes) + 1}"
            result, sampler = cell.drive(replace(load, rate=rate, concurrency=vus), name)
            sample = cell.window(sampler, result, whole_load=True)
            row_flags = cell.flags(vus, result, sample)
            verdict = judge(rate, result, row_flags, objective, scenario, most, vus)
            search.record(rate, verdict)
            row = cell.row({"concurrency": vus, "rate": rate, "step": len(search.probes)}, result, sample, row_flags)
            row = cell.keep(name, [result], [row])[0]
            rows.append({**row, "slo": slo, "verdict": f"{verdict.state}: {verdict.why}"})
            if verdict.state == PASS and rate == search.low:
                best = row
        outcome = search.outcome()
        summary = {**(best or {**cell.base, "status": "ok", "reason": "", "requests": 0, "rps": 0.0}),
                   "concurrency": load.concurrency, "rate": None, "step": None, "slo": slo,
                   "verdict": outcome, "capacity_low_rps": search.low,
                   "capacity_high_rps": search.high if outcome != "above-generator" else None,
                   "check_flags": ",".join(f for f in [(best or {}).get("check_flags", ""), f"capacity-{outcome}"] if f)}
        return rows + [summary], []
