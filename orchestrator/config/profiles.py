"""Load profiles: how the cells of a run load a target. Each is a small TOML file that a user can
copy and edit (orchestrator/profiles/*.toml), chosen with `bench run --profile NAME|FILE`.

    throughput  closed loop for a fixed time at each concurrency (wrk; or k6 with constant VUs)
    burst       a fixed number of requests at each concurrency, then stop (k6 shared-iterations, or h2load)
    ramp        stepped users: start, +step every step_duration, for steps steps (Locust)
    rate        an open model at each fixed arrival rate (k6 constant-arrival-rate)

Every profile warms the target up with wrk until it is steady (see warmup.py) before it measures.
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace
from pathlib import Path

from orchestrator.measure.capacity import Objective, parse_slo
from orchestrator.config.documents import Document
from orchestrator.drivers import drivers_by_kind
from orchestrator.drivers.base import Ramp
from orchestrator.errors import UsageError

PROFILES_DIR = Path(__file__).resolve().parent / "profiles"
MAX_CONNECTIONS = 20_000


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
    # capacity: the objective (capacity.Objective), where the search starts (also the common rate at
    # which every target's efficiency is compared), when it stops, and how many probes it may spend
    slo_percentile: str = "p99"
    slo_ms: float = 50.0
    error_budget: float = 0.001
    common_rate: int = 500
    resolution: float = 0.05
    max_probes: int = 12
    source: str = ""                        # the file it came from

    @property
    def objective(self) -> Objective:
        return Objective(self.slo_percentile, self.slo_ms, self.error_budget)

    def levels(self) -> list[tuple[int, float | None]]:
        """(concurrency, rate) of each cell per scenario; a ramp is one cell per scenario."""
        if self.kind == "ramp":
            return [(self.ramp.start_users, None)]
        if self.kind == "rate":
            return [(c, float(r)) for c in self.concurrency for r in self.rates]
        if self.kind == "capacity":   # one search per scenario, with at most this many VUs
            return [(max(self.concurrency), None)]
        return [(c, None) for c in self.concurrency]

    def row_keys(self, concurrency: int, rate: float | None) -> list[tuple[int, float | None, int | None]]:
        """(concurrency, rate, step) of the measurement rows one cell writes: a ramp writes one per step;
        a search, its probes (rate = the rate offered, step = the probe's number, as many as it takes)
        and the capacity row (these keys), written last."""
        if self.kind == "ramp":
            return [(self.ramp.users(s), None, s) for s in range(1, self.ramp.steps + 1)]
        return [(concurrency, rate, None)]

    def warmup_rate(self, rate: float | None) -> float | None:
        """The arrival rate of the warm-up (None: a closed loop): a rate cell's own, a search's start."""
        return float(self.common_rate) if self.kind == "capacity" else rate

    def warmup_connections(self, concurrency: int) -> int:
        """Connections (VUs for a rate) of the warm-up: the load the cell measures, a ramp's first step."""
        if self.warmup_concurrency:
            return self.warmup_concurrency
        return self.ramp.start_users if self.ramp else concurrency

    def measured_s(self) -> float:
        """Seconds of load per cell, for estimates (a burst's length depends on the target; a search's,
        at most this)."""
        if self.kind == "capacity":
            return self.duration_s * self.max_probes
        return self.ramp.duration_s if self.ramp else self.duration_s

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
        for fld, value in changes.items():
            option, kinds = OVERRIDES.get(fld, (None, None))
            if value is not None and kinds and self.kind not in kinds:
                raise UsageError(f"{option} does not apply to the {self.kind} profile '{self.name}' "
                                 f"(it applies to: {', '.join(kinds)})")
        slo = changes.pop("slo", None)
        if slo is not None:
            changes["slo_percentile"], changes["slo_ms"] = slo
        workers = changes.pop("workers", None)
        if workers is not None:
            changes["ramp"] = replace(self.ramp, workers=workers)
        p = replace(self, **{k: v for k, v in changes.items() if v is not None})
        problem = p.inconsistency()
        if problem:
            raise UsageError(f"--requests {problem}")
        return p

    def inconsistency(self) -> str:
        """What makes the profile impossible to run, or ''."""
        if self.kind == "burst" and self.requests < max(self.concurrency):
            return (f"{self.requests} is fewer than the largest concurrency {max(self.concurrency)}: every "
                    f"connection must send at least one request")
        return ""


# Profile fields the command line can set: the option, and the kinds of profile it applies to (None: all).
OVERRIDES = {"concurrency": ("--concurrency", ("throughput", "burst", "rate", "capacity")),
             "rates": ("--rate", ("rate",)), "slo": ("--slo", ("capacity",)),
             "requests": ("--requests", ("burst",)), "workers": ("--workers", ("ramp",)),
             "duration_s": ("--duration", ("throughput", "rate", "capacity")), "warmup_s": ("--warmup", None),
             "warmup_max_s": ("--warmup-max", None), "repeat": ("--repeat", None)}


def shipped() -> dict[str, Path]:
    return {p.stem: p for p in sorted(PROFILES_DIR.glob("*.toml"))}


def load(name_or_path: str) -> Profile:
    """A shipped profile by name, or a profile file by path. UsageError lists the valid names."""
    path = Path(name_or_path)
    if not (path.suffix == ".toml" and path.exists()):
        known = shipped()
        if name_or_path not in known:
            raise UsageError(f"unknown profile '{name_or_path}' (neither a shipped profile nor a .toml file); "
                             f"valid: {', '.join(known)}")
        path = known[name_or_path]
    return parse(Document.read(path))


FIELDS = ("kind", "driver", "description", "concurrency", "rates", "requests", "duration", "warmup",
          "warmup_max", "warmup_concurrency", "repeat", "ramp", "slo", "error_budget", "common_rate", "resolution",
          "max_probes")
RAMP_FIELDS = ("start_users", "step_users", "step_duration", "steps", "workers")


def parse(doc: Document, name: str | None = None) -> Profile:
    """Validate a profile document (a file, or a preset's [profile] table); ManifestError names the
    file and the field."""
    doc.check_keys(FIELDS)
    kinds = drivers_by_kind()   # kind -> the drivers that can run it, the default first
    kind = doc.choice("kind", tuple(kinds), "a profile kind", default=None)
    driver = doc.table.get("driver", kinds[kind][0])
    if driver not in kinds[kind]:
        doc.fail("driver", f"{driver!r} cannot run a {kind} profile; valid: {', '.join(kinds[kind])}")
    p = Profile(
        name=name or doc.path.stem, kind=kind, driver=driver,
        description=str(doc.table.get("description", "")).strip(),
        concurrency=doc.wholes("concurrency", [1000] if kind in ("rate", "capacity") else [256], MAX_CONNECTIONS),
        duration_s=doc.duration("duration", "10s"), warmup_s=doc.duration("warmup", "5s", allow_zero=True),
        warmup_max_s=doc.duration("warmup_max", "90s"),
        warmup_concurrency=doc.whole("warmup_concurrency") if "warmup_concurrency" in doc else None,
        repeat=doc.whole("repeat", 1), source=str(doc.path))
    if kind == "burst":
        p = replace(p, requests=doc.whole("requests"))
    if kind == "rate":
        p = replace(p, rates=doc.wholes("rates", None, 1_000_000))
    if kind == "capacity":
        try:
            percentile, bound = parse_slo(doc.get("slo", str, "p99=50ms"))
        except UsageError as e:
            doc.fail("slo", str(e).replace("--slo ", ""))
        p = replace(p, slo_percentile=percentile, slo_ms=bound, error_budget=doc.fraction("error_budget", 0.001),
                    common_rate=doc.whole("common_rate", 500), resolution=doc.fraction("resolution", 0.05),
                    max_probes=doc.whole("max_probes", 12, minimum=2))
    if kind == "ramp":
        if not isinstance(doc.table.get("ramp"), dict):
            doc.fail("ramp", "a ramp profile needs a [ramp] table (start_users, step_users, step_duration, steps)")
        ramp = doc.sub("ramp")
        ramp.check_keys(RAMP_FIELDS)
        p = replace(p, ramp=Ramp(start_users=ramp.whole("start_users"), step_users=ramp.whole("step_users", minimum=0),
                                 step_s=ramp.duration("step_duration", None), steps=ramp.whole("steps"),
                                 workers=ramp.whole("workers", 0, minimum=0)))
        if p.ramp.users(p.ramp.steps) > MAX_CONNECTIONS:
            doc.fail("ramp", f"ends at {p.ramp.users(p.ramp.steps):,} users, more than {MAX_CONNECTIONS:,}")
    if p.inconsistency():
        doc.fail("requests", p.inconsistency())
    return p
