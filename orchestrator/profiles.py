"""Load profiles: how the cells of a run load a target. Each is a small TOML file that a user can
copy and edit (orchestrator/profiles/*.toml), chosen with `bench run --profile NAME|FILE`.

    throughput  closed loop for a fixed time at each concurrency (wrk; or k6 with constant VUs)
    burst       a fixed number of requests at each concurrency, then stop (k6 shared-iterations, or h2load)
    ramp        stepped users: start, +step every step_duration, for steps steps (Locust)
    rate        an open model at each fixed arrival rate (k6 constant-arrival-rate)

Every profile warms the target up with wrk until it is steady (see warmup.py) before it measures.
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, fields, replace
from pathlib import Path

from . import options
from .errors import ManifestError, UsageError

PROFILES_DIR = Path(__file__).resolve().parent / "profiles"
# kind -> the drivers that can run it, the first being the default
KINDS: dict[str, tuple[str, ...]] = {
    "throughput": ("wrk", "k6"),
    "burst": ("k6", "h2load"),
    "ramp": ("locust",),
    "rate": ("k6",),
}
MAX_CONNECTIONS = 20_000


@dataclass(frozen=True)
class Ramp:
    start_users: int
    step_users: int
    step_s: float
    steps: int
    workers: int = 0        # Locust worker processes beside a master; 0: one standalone process

    @property
    def duration_s(self) -> float:
        return self.step_s * self.steps

    def users(self, step: int) -> int:
        """Users during step (1-based)."""
        return self.start_users + (step - 1) * self.step_users


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
    source: str = ""                        # the file it came from

    def levels(self) -> list[tuple[int, float | None]]:
        """(concurrency, rate) of each cell per scenario; a ramp is one cell per scenario."""
        if self.kind == "ramp":
            return [(self.ramp.start_users, None)]
        if self.kind == "rate":
            return [(c, float(r)) for c in self.concurrency for r in self.rates]
        return [(c, None) for c in self.concurrency]

    def row_keys(self, concurrency: int, rate: float | None) -> list[tuple[int, float | None, int | None]]:
        """(concurrency, rate, step) of the measurement rows one cell writes: a ramp writes one per step."""
        if self.kind == "ramp":
            return [(self.ramp.users(s), None, s) for s in range(1, self.ramp.steps + 1)]
        return [(concurrency, rate, None)]

    def warmup_connections(self, concurrency: int) -> int:
        """Connections (VUs for a rate) of the warm-up: the load the cell measures, a ramp's first step."""
        if self.warmup_concurrency:
            return self.warmup_concurrency
        return self.ramp.start_users if self.ramp else concurrency

    def measured_s(self) -> float:
        """Seconds of load per cell, for estimates (a burst's length depends on the target)."""
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
OVERRIDES = {"concurrency": ("--concurrency", ("throughput", "burst", "rate")), "rates": ("--rate", ("rate",)),
             "requests": ("--requests", ("burst",)), "workers": ("--workers", ("ramp",)),
             "duration_s": ("--duration", ("throughput", "rate")), "warmup_s": ("--warmup", None),
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
    try:
        doc = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise ManifestError(path, "(syntax)", str(e)) from None
    return parse(doc, path)


def parse(doc: dict, path: Path, name: str | None = None) -> Profile:
    """Validate a profile document; ManifestError names the file and the field."""
    def err(fld: str, problem: str):
        return ManifestError(path, fld, problem)

    known = {"kind", "driver", "description", "concurrency", "rates", "requests", "duration", "warmup",
             "warmup_max", "warmup_concurrency", "repeat", "ramp"}
    extra = sorted(set(doc) - known)
    if extra:
        raise err(extra[0], f"unknown field; valid: {', '.join(sorted(known))}")
    kind = doc.get("kind")
    if kind not in KINDS:
        raise err("kind", f"{kind!r} is not a profile kind; valid: {', '.join(KINDS)}")
    driver = doc.get("driver", KINDS[kind][0])
    if driver not in KINDS[kind]:
        raise err("driver", f"{driver!r} cannot run a {kind} profile; valid: {', '.join(KINDS[kind])}")

    def ints(fld: str, default, maximum: int) -> tuple[int, ...]:
        value = doc.get(fld, default)
        value = [value] if isinstance(value, int) and not isinstance(value, bool) else value
        if not isinstance(value, list) or not value or not all(
                isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= maximum for v in value):
            raise err(fld, f"must be a whole number or a list of them, each 1 to {maximum:,}; got {value!r}")
        return tuple(value)

    def dur(fld: str, default: str, allow_zero: bool = False) -> float:
        value = doc.get(fld, default)
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise err(fld, f"must be a duration such as \"10s\"; got {value!r}")
        try:
            return options.duration(str(value), fld, allow_zero=allow_zero)
        except UsageError as e:
            raise err(fld, str(e)) from None

    def count(table: dict, fld: str, default=None, minimum: int = 1, where: str = "") -> int:
        value = table.get(fld, default)
        if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
            raise err(where + fld, f"must be a whole number of at least {minimum}; got {value!r}")
        return value

    p = Profile(
        name=name or path.stem, kind=kind, driver=driver, description=str(doc.get("description", "")).strip(),
        concurrency=ints("concurrency", [256] if kind != "rate" else [1000], MAX_CONNECTIONS),
        duration_s=dur("duration", "10s"), warmup_s=dur("warmup", "5s", allow_zero=True),
        warmup_max_s=dur("warmup_max", "90s"),
        warmup_concurrency=count(doc, "warmup_concurrency") if "warmup_concurrency" in doc else None, repeat=count(doc, "repeat", 1),
        source=str(path))
    if kind == "burst":
        p = replace(p, requests=count(doc, "requests"))
    if p.inconsistency():
        raise err("requests", p.inconsistency())
    if kind == "rate":
        p = replace(p, rates=ints("rates", None, 1_000_000))
    if kind == "ramp":
        table = doc.get("ramp")
        if not isinstance(table, dict):
            raise err("ramp", "a ramp profile needs a [ramp] table (start_users, step_users, step_duration, steps)")
        unknown = sorted(set(table) - {"start_users", "step_users", "step_duration", "steps", "workers"})
        if unknown:
            raise err(f"ramp.{unknown[0]}", "unknown field; valid: start_users, step_users, step_duration, steps, "
                                            "workers")
        step = table.get("step_duration")
        try:
            step_s = options.duration(str(step), "ramp.step_duration")
        except UsageError as e:
            raise err("ramp.step_duration", str(e)) from None
        p = replace(p, ramp=Ramp(start_users=count(table, "start_users", where="ramp."),
                                 step_users=count(table, "step_users", minimum=0, where="ramp."),
                                 step_s=step_s, steps=count(table, "steps", where="ramp."),
                                 workers=count(table, "workers", 0, minimum=0, where="ramp.")))
        if p.ramp.users(p.ramp.steps) > MAX_CONNECTIONS:
            raise err("ramp", f"ends at {p.ramp.users(p.ramp.steps):,} users, more than {MAX_CONNECTIONS:,}")
    return p
