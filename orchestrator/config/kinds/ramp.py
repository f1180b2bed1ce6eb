"""The ramp kind: stepped users (Locust): start_users, then step_users more every step_duration, for
steps steps, from a [ramp] table. One cell per scenario, one load per cell, and from it a row per step
and a per-second series; it warms up at the first step's users."""
from __future__ import annotations

from dataclasses import replace

from orchestrator.config.kinds.base import MAX_CONNECTIONS, CellRun, Kind, Rows
from orchestrator.config.load import LoadSpec, Ramp

RAMP_FIELDS = ("start_users", "step_users", "step_duration", "steps", "workers")


class RampKind(Kind):
    name = "ramp"
    single_window = False
    fields = ("ramp",)
    options = ("workers",)
    closed_loop = True
    level_word = "users"

    def read(self, doc, p):
        if not isinstance(doc.table.get("ramp"), dict):
            doc.fail("ramp", "a ramp profile needs a [ramp] table (start_users, step_users, step_duration, steps)")
        table = doc.sub("ramp")
        table.check_keys(RAMP_FIELDS)
        ramp = Ramp(start_users=table.whole("start_users"), step_users=table.whole("step_users", minimum=0),
                    step_s=table.duration("step_duration", None), steps=table.whole("steps"),
                    workers=table.whole("workers", 0, minimum=0))
        if ramp.users(ramp.steps) > MAX_CONNECTIONS:
            doc.fail("ramp", f"ends at {ramp.users(ramp.steps):,} users, more than {MAX_CONNECTIONS:,}")
        return replace(p, ramp=ramp)

    def override(self, p, changes: dict):
        workers = changes.pop("workers", None)
        if workers is not None:
            changes["ramp"] = replace(p.ramp, workers=workers)
        return replace(p, **changes)

    def levels(self, p) -> list[tuple[int, float | None]]:
        return [(p.ramp.start_users, None)]

    def row_keys(self, p, concurrency: int, rate: float | None) -> list[tuple[int, float | None, int | None]]:
        return [(p.ramp.users(s), None, s) for s in range(1, p.ramp.steps + 1)]

    def warmup_connections(self, p, concurrency: int) -> int:
        return p.ramp.start_users

    def measured_s(self, p) -> float:
        return p.ramp.duration_s

    def measured_words(self, prof: dict) -> str:
        r = prof.get("ramp")
        if not r:
            return super().measured_words(prof)
        return f"{r['steps']} steps of {r['step_s']:g} s from {r['start_users']} users, +{r['step_users']} per step"

    def closed_loop_probe(self, common: dict, requests: int) -> LoadSpec:
        """One step as long as the window, its users the concurrency."""
        return LoadSpec(**common, ramp=Ramp(start_users=common["concurrency"], step_users=0,
                                            step_s=common["duration_s"], steps=1))

    def describe(self, p) -> str:
        r = p.ramp
        return (f"{r.start_users} users +{r.step_users} every {r.step_s:g} s for {r.steps} steps"
                + (f", {r.workers} Locust workers" if r.workers else ""))

    def measure(self, cell: CellRun) -> Rows:
        """One load; a row per step over the step's own window, then the per-second series."""
        result, sampler = cell.drive(cell.load, cell.name)
        rows = []
        for step, r in enumerate(result.steps, start=1):
            users = cell.profile.ramp.users(step)
            sample = cell.window(sampler, r)
            rows.append(cell.row({"concurrency": users, "step": step, "duration_s": r.duration_s}, r, sample,
                                 cell.flags(users, r, sample)))
        rows = cell.keep(cell.name, result.steps, rows)
        return rows, [cell.second(record, sampler) for record in result.timeseries]
