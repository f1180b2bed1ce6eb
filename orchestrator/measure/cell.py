"""One cell: warm the target up, then let the profile's kind measure it (config/kinds/) through a
WarmedUpCell: each load is driven while the server and the backends are sampled, the target is checked
to still answer, and the windows become rows (rows.py) with their flags (checks.py, evidence.py)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from orchestrator.config import driver_registry
from orchestrator.config.items import CACHE_KEYS
from orchestrator.config.load import LoadResult, LoadSpec
from orchestrator.config.mix import parts_of
from orchestrator.config.modes import COLD, slug
from orchestrator.config.plan import Plan
from orchestrator.core.cpus import cpu_count, parse_cpus, settle
from orchestrator.core.httpclient import request
from orchestrator.errors import TargetFailed
from orchestrator.infra.procs import server_failure
from orchestrator.measure import rows as rows_mod
from orchestrator.measure.ceilings import ceilings, cell_ceiling
from orchestrator.measure.checks import cell_flags
from orchestrator.measure.evidence import Probe, off_contract
from orchestrator.measure.flight_recorder import CellRecorder
from orchestrator.measure.sampling import Sampler, ServerSample
from orchestrator.measure.warmup import WarmUp, warm_up
from orchestrator.targets import aot_cache
from orchestrator.targets.environment import Environment, Started

PROBE_TIMEOUT_S = 10.0


def load_dir(environment: Environment, target_id: str, repeat: int) -> Path:
    """Where a target's generator files go: one folder per target and repeat (each file is named by
    scenario and level), so that no later target or repeat overwrites them."""
    return environment.logs / "load" / f"{slug(target_id)}-r{repeat}"


def measure_cell(environment: Environment, started: Started, plan: Plan, base: dict, scenario: str,
                 concurrency: int, rate: float | None, infra=None,
                 progress=lambda text: None) -> tuple[list[dict], list[dict]]:
    """Warm up, then measure the cell as the profile's kind does; returns the measurement rows (one; a
    ramp: one per step; a search: one per probe and the capacity row) and the per-second series (ramp).

    The server's figures are those of the generator's own window (each driver reports its start
    and length), not of the whole driver call around it."""
    s, p = plan.settings, plan.profile
    out_dir = load_dir(environment, base["target"], base["repeat"])
    spec = LoadSpec(port=s.port, scenario=plan.scenario(scenario).for_run(s.downstream_ms), cpus=s.loadgen_cpus,
                    timeout_s=s.request_timeout_s, out_dir=out_dir / "warmup",
                    concurrency=p.warmup_connections(concurrency), duration_s=p.warmup_s,
                    rate=p.warmup_rate(rate), **environment.load_placement())
    # a cold target meets its load seconds after its first answer (and its verification's few requests)
    warm = warm_up(0.0 if base.get("start") == COLD else p.warmup_s, p.warmup_max_s, spec, started.server)
    load = replace(spec, concurrency=concurrency, duration_s=p.duration_s, requests=p.requests, rate=rate,
                   ramp=p.ramp, out_dir=out_dir)
    base = {**base, "warmup_s": warm.spent_s, "warmup_windows": len(warm.windows)}
    return p.rules.measure(WarmedUpCell(environment, started, plan, base, load, warm, infra, progress))


class WarmedUpCell:
    """A cell whose target is warmed up: what a profile kind's measure() drives its loads through
    (config/kinds/base.py's CellRun says which of these a kind may use)."""

    def __init__(self, environment: Environment, started: Started, plan: Plan, base: dict,
                 load: LoadSpec, warm: WarmUp, infra, progress: Callable[[str], None]):
        s = plan.settings
        self.environment, self.started, self.settings, self.infra = environment, started, s, infra
        self.profile, self.base, self.load, self.warm, self.progress = plan.profile, base, load, warm, progress
        self.scenario = load.scenario
        self.name = load.stem
        self.cores = cpu_count(s.loadgen_cpus)
        self.ceiling = cell_ceiling(self.profile.driver, self.profile.rules.open_model, environment.results_root,
                                    s.loadgen_cpus)
        self.recorder = CellRecorder(environment.jdk.home, started.server.pid,
                                     environment.logs / "jfr" / load.out_dir.name, environment.logs.parent,
                                     s.loadgen_cpus, on=s.jfr)

    def drive(self, load: LoadSpec, name: str) -> tuple[LoadResult, Sampler]:
        """Drive one load while sampling (and recording, when on), then make sure the target survived it."""
        s, server = self.settings, self.started.server
        if self.infra and any(p.scenario.ids for p in parts_of(load.scenario)):
            empty_cache(self.infra)
        probe = Probe(self.infra, server.pid, s.port) if self.infra else None
        with self.recorder.load(name), \
                Sampler(server, s.loadgen_cpus, probe, self.environment.local_server_cpus) as sampler:
            result = driver_registry.get(self.profile.driver).run(load)
        if server.exit_code() is not None:
            raise TargetFailed(server_failure(f"target exited with {server.exit_code()} during the cell",
                                              server.log_path))
        try:
            request(s.port, "GET", self.environment.catalog[self.base["framework"]].health_path,
                    timeout=PROBE_TIMEOUT_S, host=self.environment.server_host)
        except OSError:
            raise TargetFailed(server_failure(
                f"target stopped answering: no response to its health path within {PROBE_TIMEOUT_S:.0f} s after "
                f"the cell ({result.requests} requests answered in the cell)", server.log_path)) from None
        return result, sampler

    def window(self, sampler: Sampler, result: LoadResult, whole_load: bool = False) -> ServerSample:
        return sampler.window(result.started_at, result.started_at + result.duration_s, whole_load)

    def flags(self, concurrency: int, result: LoadResult, sample: ServerSample) -> list[str]:
        backends = (off_contract(self.scenario, sample.evidence.per_request(result.requests, result.duration_s),
                                 self._misses_off(sample.evidence, concurrency, result.duration_s))
                    if sample.evidence else [])
        # Little's law ties rps and latency to the clients only in a closed loop of fixed size.
        return (cell_flags(concurrency, result, self.cores, closed_loop=self.profile.rules.closed_loop,
                           loadgen_cpus_busy_pct=sample.loadgen_cpus_busy_pct, ceiling=self.ceiling,
                           steal_pct=max((v for v in (sample.loadgen_cpus_steal_pct, sample.server_cpus_steal_pct)
                                          if v is not None), default=None), steal_peak_pct=sample.steal_peak_pct,
                           foreign_pct=sample.server_cpus_foreign_pct)
                + backends + result.flags + ([] if self.warm.steady else ["not-steady"]))

    def _misses_off(self, evidence, in_flight: int, duration_s: float) -> bool:
        ids, ttl_s = self.scenario.ids, self.settings.cache_ttl_s
        # the cache is emptied before the load, and the hot item leaves it once a time to live
        refills = 1 + (int(duration_s // ttl_s) if ttl_s > 0 else 0)
        return bool(ids) and evidence.misses_off(ids.miss_share, in_flight, refills)

    def row(self, columns: dict, result: LoadResult, sample: ServerSample, flags: list[str]) -> dict:
        started = self.started
        own = {"since_launch_s": result.started_at - started.launched_at,
               **aot_cache.class_counts(aot_cache.class_log_of(started.server.log_path))}
        return rows_mod.measured({**self.base, **own, **columns}, result, sample, flags)

    def cold_series(self, result: LoadResult, sampler: Sampler) -> list[dict]:
        """A cold cell's answers per second of its window, with the server's figures over each (how
        fast the JVM came up to speed: results/starts.py reads it against the warm cell); [] for a
        warm cell, or a driver that keeps no per-request times."""
        answered = result.answered_per_second() if self.base.get("start") == COLD else None
        # a rate: the window's last second may be part of one (a burst of 0.6 s is one part-second)
        return [self.second({"t_s": t, "epoch_s": int(result.started_at + t),
                             "rps": n / max(min(1.0, result.duration_s - t), 1e-3)}, sampler, at=result.started_at + t)
                for t, n in enumerate(answered or [])]

    def keep(self, name: str, results: list, rows: list[dict]) -> list[dict]:
        """The windows' rows with their recording's evidence; a mix's window followed by a row per
        scenario in it (rows_mod.part_rows)."""
        kept = self.recorder.add(name, results, rows)
        return [out for row, result in zip(kept, results)
                for out in ([{**row, "mix": row["scenario"]}, *rows_mod.part_rows(row, result)]
                            if result.parts else [row])]

    def parts(self, row: dict, result: LoadResult) -> list[dict]:
        return rows_mod.part_rows(row, result)

    def calm(self) -> float:
        """Wait (up to 30 s) until the server and the load CPUs are quiet and the host steals neither
        the server's nor the generator's CPUs; the seconds waited."""
        s, local = self.settings, self.environment.local_server_cpus
        return settle(self.started.server, parse_cpus(s.loadgen_cpus),
                      steal_cpus=parse_cpus(s.loadgen_cpus) | (parse_cpus(local) if local else set()))

    def second(self, record: dict, sampler: Sampler, at: float | None = None) -> dict:
        """A timeseries row: the driver's record of one second and the server's figures over it (from
        `at`, epoch seconds, where the record's whole-second epoch_s would be off by a fraction)."""
        start = record["epoch_s"] if at is None else at
        return rows_mod.second(self.base, record, sampler.window(start, start + 1))

    def open_ceiling(self) -> float | None:
        return ceilings(results_dir=self.environment.results_root, loadgen_cpus=self.settings.loadgen_cpus,
                        key="open_ceiling_rps").get(self.profile.driver)


def empty_cache(infra) -> None:
    """Delete what cache-aside cached (its keys, item:N), so that a load's share of misses holds from
    its first second: the load walks its ids from the start of their cycle again."""
    r = infra.redis_client(timeout=10)
    try:
        keys = list(r.scan_iter(match=CACHE_KEYS, count=10_000))
        for i in range(0, len(keys), 10_000):
            r.delete(*keys[i:i + 10_000])
    finally:
        r.close()
