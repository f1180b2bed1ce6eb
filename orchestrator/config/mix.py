"""A mix: one load of several scenarios' requests, as a service serves them (70 % cached reads, 20 %
database reads, 10 % writes), each request one of the scenarios drawn by its weight.

A Mix is a Scenario to the rest of the pipeline, so that a cell, its evidence and its objective take
it as they take one endpoint: its backend work is its parts' per request, weighted by their shares
(what Redis, MariaDB and the downstream must count per request of the mix), and its wait the longest
of its parts' (an objective over the mix's latencies is set over the slowest kind's own wait). Only a
generator that can send several requests in one load and say which one each arrival was runs it
(pacer: `--request` per part, each arrival's part drawn by weight and kept in its record).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

from orchestrator.config.scenarios import SCENARIOS, Scenario
from orchestrator.errors import UsageError


@dataclass(frozen=True)
class Part:
    scenario: Scenario
    weight: float
    # its own objective besides the mix's: (percentile key, bound in ms over its own wait); None: the mix's only
    objective: tuple[str, float] | None = None


@dataclass(frozen=True)
class Mix(Scenario):
    parts: tuple[Part, ...] = ()

    @property
    def shares(self) -> dict[str, float]:
        """Each part's share of the requests, by scenario name."""
        total = sum(p.weight for p in self.parts)
        return {p.scenario.name: p.weight / total for p in self.parts}

    @property
    def wait_ms(self) -> float:
        return max(p.scenario.wait_ms for p in self.parts)

    def for_run(self, downstream_ms: float) -> "Mix":
        return replace(self, parts=tuple(replace(p, scenario=p.scenario.for_run(downstream_ms)) for p in self.parts))


def mix(name: str, weights: dict[str, float], scenarios: dict[str, Scenario] = SCENARIOS,
        objectives: dict[str, tuple[str, float]] | None = None) -> Mix:
    """The mix `name` of the scenarios `weights` names, each with its weight (any positive numbers:
    70/20/10 and 0.7/0.2/0.1 are the same mix) and, in objectives, its own objective if it has one.
    UsageError names what is wrong."""
    if not weights:
        raise UsageError(f"mix {name!r}: it names no scenario")
    unknown = [s for s in weights if s not in scenarios]
    if unknown:
        raise UsageError(f"mix {name!r}: unknown scenario {unknown[0]!r}; valid: {', '.join(scenarios)}")
    for s, w in weights.items():
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w) or w <= 0:
            raise UsageError(f"mix {name!r}: the weight of {s!r} must be a number above 0, not {w!r}")
    if len(weights) > MAX_PARTS:
        raise UsageError(f"mix {name!r}: at most {MAX_PARTS} scenarios, not {len(weights)}")
    objectives = objectives or {}
    parts = tuple(Part(scenarios[s], float(w), tuple(objectives[s]) if s in objectives else None)
                  for s, w in weights.items())
    total = sum(p.weight for p in parts)
    work: dict[str, float] = {}
    for p in parts:
        for key, n in p.scenario.backend_work.items():
            work[key] = work.get(key, 0.0) + n * p.weight / total
    said = ", ".join(f"{100 * p.weight / total:.4g} % {p.scenario.name}" for p in parts)
    return Mix(name, "GET", "", 200, "", backend_work=work, parts=parts,
               contract=f"a mix of requests, each one of these drawn by its share: {said}")


def parts_of(s: Scenario) -> list[Part]:
    """What a load of s sends: a mix's parts, or the one scenario."""
    return list(s.parts) if isinstance(s, Mix) else [Part(s, 1.0)]


def build(name: str, spec: dict) -> Mix:
    """The mix a plan records (Plan.mixes: its weights, its scenarios' parameters and objectives), made again."""
    params = spec.get("parameters", {})
    return mix(name, spec["weights"], {n: with_parameters(SCENARIOS[n], params.get(n, {})) for n in spec["weights"]},
               spec.get("objectives"))


MAX_PARTS = 16   # pacer's PARTS_MAX: a record keeps its part in a byte, and pacer holds each part's request
MAX_CALLS = 16   # fan-out's calls: the contract's maximum (CONTRACT.md)


def with_parameters(scenario: Scenario, params: dict) -> Scenario:
    """The scenario with a workload's parameters for it: fan-out's `calls` (1 to MAX_CALLS, each a call
    to the downstream in flight at once) and cache-aside's `miss_share` (one request in a whole number
    misses: 0.5, 0.25, 0.2, 0.1, 0.05 ...). UsageError names what is wrong; a scenario of neither takes none."""
    takes = {"fan-out": ("calls",), "cache-aside": ("miss_share",)}.get(scenario.name, ())
    for key in params:
        if key not in takes:
            raise UsageError(f"{scenario.name} takes " + (f"only {', '.join(takes)}" if takes else "no parameters") +
                             f", not {key!r}")
    if "calls" in params:
        calls = params["calls"]
        if isinstance(calls, bool) or not isinstance(calls, int) or not 1 <= calls <= MAX_CALLS:
            raise UsageError(f"fan-out's calls must be a whole number from 1 to {MAX_CALLS}, not {calls!r}")
        return replace(scenario, path=f"/fan-out?calls={calls}", expected=[{"call": i} for i in range(1, calls + 1)],
                       backend_work={**scenario.backend_work, "downstream_calls": calls},
                       contract=scenario.contract.replace("three GETs", f"{calls} GET{'s' if calls > 1 else ''}", 1))
    if "miss_share" in params:
        share = params["miss_share"]
        every = round(1 / share) if isinstance(share, (int, float)) and not isinstance(share, bool) and 0 < share <= 1 \
            else 0
        if not every or abs(1 / every - share) > 1e-9:
            raise UsageError(f"cache-aside's miss_share must be one request in a whole number (0.5, 0.25, 0.2, 0.1, "
                             f"0.05 ...), not {share!r}")
        ids = replace(scenario.ids, every=every)
        return replace(scenario, ids=ids, backend_work={"redis_commands": 1 + ids.miss_share,
                                                        "db_selects": ids.miss_share},
                       contract=scenario.contract.replace("one request in ten", f"one request in {every}", 1))
    return scenario
