"""Load profiles: how the cells of a run load a target. Each is a small TOML file that a user can
copy and edit (orchestrator/config/profiles/*.toml), chosen with `bench run --profile NAME|FILE`. A
Profile is the flat record a run.json stores; what its `kind` means (throughput, burst, rate, capacity,
ramp: its own fields, cells, description and how a cell is measured) is the kind's (config/kinds/),
which this module looks up by name and never branches on. Every profile warms the target up with wrk
(k6 for arrival rates) until it is steady (measure/warmup.py) before it measures."""
from __future__ import annotations

import os
from dataclasses import dataclass, fields
from pathlib import Path

from orchestrator.config import kinds, option_table
from orchestrator.config.documents import Document
from orchestrator.config.driver_registry import drivers_by_kind
from orchestrator.config.kinds.base import MAX_CONNECTIONS, Kind, Level, RowKey
from orchestrator.config.load import Ramp
from orchestrator.errors import UsageError

PROFILES_DIR = Path(__file__).resolve().parent / "profiles"
# The keys of a profile file every kind reads; each kind adds its own (Kind.fields).
COMMON_FIELDS = ("kind", "driver", "description", "concurrency", "duration", "warmup", "warmup_max",
                 "warmup_concurrency", "repeat")


@dataclass(frozen=True)
class Profile:
    name: str
    kind: str
    driver: str
    description: str = ""
    concurrency: tuple[int, ...] = (256,)   # connections (throughput, burst), VUs that carry a rate (rate)
    rates: tuple[int, ...] = ()             # rate: arrivals per second, one cell each
    requests: int = 0                       # burst: requests per cell
    duration_s: float = 10.0                # throughput, rate: the measured window
    warmup_s: float = 5.0                   # one warm-up window, repeated until steady; 0: none
    warmup_max_s: float = 90.0
    warmup_concurrency: int | None = None   # wrk connections while warming up; None: the cell's own load
    repeat: int = 1
    ramp: Ramp | None = None
    # capacity: the objective (config/objective.py), where the search starts (also the common rate at
    # which every target's efficiency is compared), when it stops, and how many probes it may spend
    slo_percentile: str = "p99"
    slo_ms: float = 50.0
    error_budget: float = 0.001
    common_rate: int = 500
    resolution: float = 0.05
    max_probes: int = 12
    # capacity: multiples of the found capacity at which the target is then measured past its knee
    # (overload probes: goodput, errors, drops, queues), the last one judging graceful or collapsing
    overload: tuple[float, ...] = (1.25, 1.5, 2.0)
    # capacity: then a spike (0: none): spike_s at half the capacity, spike_s at twice it, then
    # recovery_window_s at half again, timed per second (recovery_s)
    spike_s: float = 10.0
    recovery_window_s: float = 30.0
    source: str = ""                        # the file it came from

    @property
    def rules(self) -> Kind:
        """What the profile's kind means (config/kinds/)."""
        return kinds.get(self.kind)

    def levels(self) -> list[Level]:
        """(concurrency, rate) of each cell per scenario."""
        return self.rules.levels(self)

    def row_keys(self, concurrency: int, rate: float | None) -> list[RowKey]:
        """(concurrency, rate, step) of the measurement rows one cell writes."""
        return self.rules.row_keys(self, concurrency, rate)

    def warmup_rate(self, rate: float | None) -> float | None:
        """The arrival rate of the warm-up (None: a closed loop)."""
        return self.rules.warmup_rate(self, rate)

    def warmup_connections(self, concurrency: int) -> int:
        """Connections (VUs for a rate) of the warm-up: the profile's own, else the kind's."""
        return self.warmup_concurrency or self.rules.warmup_connections(self, concurrency)

    def measured_s(self) -> float:
        """Seconds of load per cell, for estimates."""
        return self.rules.measured_s(self)

    def describe(self) -> str:
        """The load of its cells in one line."""
        return self.rules.describe(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Profile":
        d = dict(d)
        for k in ("concurrency", "rates"):
            d[k] = tuple(d.get(k) or ())
        d["ramp"] = Ramp(**d["ramp"]) if d.get("ramp") else None
        return cls(**{k: v for k, v in d.items() if k in {f.name for f in fields(cls)}})

    def with_overrides(self, **changes) -> "Profile":
        """A copy with what the command line sets instead (None: keep). An option the profile's kind
        has no use for is a usage error rather than silently ignored."""
        changes = {k: v for k, v in changes.items() if v is not None}
        for fld in changes:
            applies = option_table.kinds_taking(fld)
            if self.kind not in applies:
                raise UsageError(f"{option_table.profile_flags()[fld]} does not apply to the {self.kind} profile '{self.name}' "
                                 f"(it applies to: {', '.join(applies)})")
        p = self.rules.override(self, changes)
        conflict = p.rules.conflict(p)
        if conflict:
            raise UsageError(f"{option_table.profile_flags()[conflict[0]]} {conflict[1]}")
        return p


def shipped() -> dict[str, Path]:
    return {p.stem: p for p in sorted(PROFILES_DIR.glob("*.toml"))}


def load(name_or_path: str) -> Profile:
    """A shipped profile by name, or a profile file by path (whatever is there: a folder or a FIFO is
    refused by the reader, in one line). UsageError lists the valid names."""
    known = shipped()
    path = known.get(name_or_path, Path(name_or_path))
    if name_or_path not in known and not os.path.lexists(path):
        raise UsageError(f"unknown profile '{name_or_path}' (neither a shipped profile nor a file); "
                         f"valid: {', '.join(known)}")
    return parse(Document.read(path))


def parse(doc: Document, name: str | None = None) -> Profile:
    """Validate a profile document (a file, or a preset's [profile] table); ManifestError names the
    file and the field."""
    # every kind's keys, whatever the kind: a file that changes its kind keeps loading
    doc.check_keys(tuple(dict.fromkeys(COMMON_FIELDS + tuple(f for k in kinds.KINDS.values() for f in k.fields))))
    kind = kinds.get(doc.choice("kind", tuple(kinds.KINDS), "a profile kind", default=None))
    runs = drivers_by_kind().get(kind.name, ())
    driver = doc.table.get("driver", runs[0] if runs else None)
    if driver not in runs:
        doc.fail("driver", f"{driver!r} cannot run a {kind.name} profile; valid: {', '.join(runs)}")
    p = Profile(
        name=name or doc.path.stem, kind=kind.name, driver=driver,
        description=str(doc.table.get("description", "")).strip(),
        concurrency=doc.wholes("concurrency", list(kind.default_concurrency), MAX_CONNECTIONS),
        duration_s=doc.duration("duration", "10s"), warmup_s=doc.duration("warmup", "5s", allow_zero=True),
        warmup_max_s=doc.duration("warmup_max", "90s"),
        warmup_concurrency=doc.whole("warmup_concurrency") if "warmup_concurrency" in doc else None,
        repeat=doc.whole("repeat", 1), source=str(doc.path))
    p = kind.read(doc, p)
    conflict = kind.conflict(p)
    if conflict:
        doc.fail(*conflict)
    return p
