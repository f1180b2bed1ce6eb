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


def mix(name: str, weights: dict[str, float], scenarios: dict[str, Scenario] = SCENARIOS) -> Mix:
    """The mix `name` of the scenarios `weights` names, each with its weight (any positive numbers:
    70/20/10 and 0.7/0.2/0.1 are the same mix). UsageError names what is wrong."""
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
    parts = tuple(Part(scenarios[s], float(w)) for s, w in weights.items())
    total = sum(p.weight for p in parts)
    work: dict[str, float] = {}
    for p in parts:
        for key, n in p.scenario.backend_work.items():
            work[key] = work.get(key, 0.0) + n * p.weight / total
    said = ", ".join(f"{100 * p.weight / total:.4g} % {p.scenario.name}" for p in parts)
    return Mix(name, "GET", "", 200, "", backend_work=work, parts=parts,
               contract=f"a mix of requests, each one of these drawn by its share: {said}")


MAX_PARTS = 16   # pacer's PARTS_MAX: a record keeps its part in a byte, and pacer holds each part's request
