"""One cell: warm the target up, drive the profile's load while sampling the server and the
backends, check the target still answers, and turn the windows into rows (rows.py) with their
flags (checks.py, evidence.py). A capacity cell is a search: one load per probe (capacity.py)."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from orchestrator import drivers
from orchestrator.drivers.base import LoadResult, LoadSpec
from orchestrator.measure import rows as rows_mod
from orchestrator.measure.ceilings import ceilings, cell_ceiling
from orchestrator.measure.capacity import PASS, Search, judge, vus_for
from orchestrator.measure.checks import cell_flags
from orchestrator.targets.environment import Environment, Started
from orchestrator.errors import TargetFailed
from orchestrator.measure.evidence import Probe, off_contract
from orchestrator.measure.flight_recorder import CellRecorder
from orchestrator.infra.httpclient import request
from orchestrator.targets.jvm import cpu_count
from orchestrator.config.plan import Plan
from orchestrator.infra.procs import server_failure
from orchestrator.measure.sampling import Sampler
from orchestrator.config.scenarios import SCENARIOS
from orchestrator.measure.warmup import warm_up

PROBE_TIMEOUT_S = 10.0


def load_dir(environment: Environment, target_id: str, repeat: int) -> Path:
    """Where a target's generator files go: one folder per target and repeat (each file is named by
    scenario and level), so that no later target or repeat overwrites them."""
    return environment.logs / "load" / f"{target_id.replace(':', '-')}-r{repeat}"


def measure_cell(environment: Environment, started: Started, plan: Plan, base: dict, scenario: str,
                 concurrency: int, rate: float | None, infra=None,
                 progress=lambda text: None) -> tuple[list[dict], list[dict]]:
    """Warm up, drive the profile's load while sampling the server, check the server still answers;
    returns the measurement rows (one; a ramp: one per step) and the per-second series (ramp).

    The server's figures are those of the generator's own window (each driver reports its start
    and length), not of the whole driver call around it."""
    s, p = plan.settings, plan.profile
    out_dir = load_dir(environment, base["target"], base["repeat"])
    spec = LoadSpec(port=s.port, scenario=SCENARIOS[scenario], cpus=s.loadgen_cpus,
                            timeout_s=s.request_timeout_s, out_dir=out_dir / "warmup",
                            concurrency=p.warmup_connections(concurrency), duration_s=p.warmup_s,
                            rate=p.warmup_rate(rate), **environment.load_placement())
    warm = warm_up(p.warmup_s, p.warmup_max_s, spec, started.server)
    load = replace(spec, concurrency=concurrency, duration_s=p.duration_s, requests=p.requests, rate=rate,
                   ramp=p.ramp, out_dir=out_dir)
    base = {**base, "warmup_s": warm.spent_s, "warmup_windows": len(warm.windows)}
    cores = cpu_count(s.loadgen_cpus)
    ceiling = cell_ceiling(p.driver, bool(rate) or p.kind == "capacity", environment.results_root, s.loadgen_cpus)
    # Little's law ties rps and latency to the clients only in a closed loop of fixed size.
    closed = p.kind in ("throughput", "ramp")
    recorder = CellRecorder(environment.jdk.home, started.server.pid, environment.logs / "jfr" / out_dir.name,
                            environment.logs.parent, s.loadgen_cpus, on=s.jfr)

    def run(load: LoadSpec, name: str) -> tuple[LoadResult, Sampler]:
        """Drive one load while sampling (and recording, when on), then make sure the target survived it."""
        probe = Probe(infra, started.server.pid, s.port) if infra else None
        with recorder.load(name), Sampler(started.server, s.loadgen_cpus, probe=probe) as sampler:
            result = drivers.get(p.driver).run(load)
        if started.server.exit_code() is not None:
            raise TargetFailed(server_failure(f"target exited with {started.server.exit_code()} during the cell",
                                              started.server.log_path))
        try:
            request(s.port, "GET", environment.catalog[base["framework"]].health_path, timeout=PROBE_TIMEOUT_S,
                    host=environment.server_host)
        except OSError:
            raise TargetFailed(server_failure(
                f"target stopped answering: no response to its health path within {PROBE_TIMEOUT_S:.0f} s after "
                f"the cell ({result.requests} requests answered in the cell)", started.server.log_path)) from None
        return result, sampler

    def flags(conc: int, r: LoadResult, smp) -> list[str]:
        backends = off_contract(SCENARIOS[scenario], smp.evidence.per_request(r.requests)) if smp.evidence else []
        return (cell_flags(conc, r, cores, closed_loop=closed, loadgen_cpus_busy_pct=smp.loadgen_cpus_busy_pct,
                           ceiling=ceiling)
                + backends + r.flags + ([] if warm.steady else ["not-steady"]))

    def window(sampler: Sampler, r: LoadResult, whole_load: bool = False):
        return sampler.window(r.started_at, r.started_at + r.duration_s, whole_load)

    if p.kind == "capacity":
        most = ceilings(results_dir=environment.results_root, loadgen_cpus=s.loadgen_cpus,
                        key="open_ceiling_rps").get(p.driver)
        return search_rows(p, base, SCENARIOS[scenario], load, run, window, flags, most, progress, recorder), []
    name = f"{scenario}-" + (f"r{rate:g}" if rate else f"c{concurrency}")
    result, sampler = run(load, name)
    if p.ramp is None:
        smp = window(sampler, result, whole_load=True)
        row = rows_mod.measured({**base, "concurrency": concurrency, "rate": rate}, result, smp, flags(concurrency, result, smp))
        return [recorder.add(name, [result], [row])[0]], []
    rows = []
    for step, r in enumerate(result.steps, start=1):
        users = p.ramp.users(step)
        smp = window(sampler, r)
        rows.append(rows_mod.measured({**base, "concurrency": users, "step": step, "duration_s": r.duration_s},
                                      r, smp, flags(users, r, smp)))
    rows = recorder.add(name, result.steps, rows)
    series = [rows_mod.second(base, rec, sampler.window(rec["epoch_s"], rec["epoch_s"] + 1))
              for rec in result.timeseries]
    return rows, series


def search_rows(p, base: dict, scenario, load: LoadSpec, run, window, flags,
                most: float | None, progress, recorder: CellRecorder) -> list[dict]:
    """A capacity search (capacity.py) on the warmed-up target: a row per probe, in the order they
    ran (rate = offered, step = the probe's number), then the capacity row, which carries the
    interval the capacity lies in and the figures of the highest rate that passed. most: the highest
    rate the generator can offer here (its calibrated open-model ceiling), None when unknown."""
    objective = p.objective
    search = Search(start=p.common_rate, resolution=p.resolution, max_probes=p.max_probes, max_rate=most)
    slo = objective.describe(scenario)
    rows, best = [], None
    while (rate := search.next_rate()) is not None:
        known = f"{search.low:,.0f} passed" + (f", {search.high:,.0f} failed" if search.high else "")
        progress(f"{scenario.name}: probe {len(search.probes) + 1} at {rate:,.0f}/s ({known})")
        vus = vus_for(rate, objective, scenario, load.concurrency)
        name = f"{scenario.name}-probe{len(search.probes) + 1}"
        result, sampler = run(replace(load, rate=rate, concurrency=vus), name)
        smp = window(sampler, result, whole_load=True)
        row_flags = flags(vus, result, smp)
        verdict = judge(rate, result, row_flags, objective, scenario, most, vus)
        search.record(rate, verdict)
        row = rows_mod.measured({**base, "concurrency": vus, "rate": rate, "step": len(search.probes)},
                                result, smp, row_flags)
        row = recorder.add(name, [result], [row])[0]
        rows.append({**row, "slo": slo, "verdict": f"{verdict.state}: {verdict.why}"})
        if verdict.state == PASS and rate == search.low:
            best = row
    outcome = search.outcome()
    summary = {**(best or {**base, "status": "ok", "reason": "", "requests": 0, "rps": 0.0}),
               "concurrency": load.concurrency, "rate": None, "step": None, "slo": slo,
               "verdict": outcome, "capacity_low_rps": search.low,
               "capacity_high_rps": search.high if outcome != "above-generator" else None,
               "flags": ",".join(f for f in [(best or {}).get("flags", ""), f"capacity-{outcome}"] if f)}
    return rows + [summary]
