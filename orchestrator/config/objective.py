"""A latency objective (`--slo p99=50ms`, a capacity profile's `slo`): which percentile, its bound over
the scenario's own wait, and the share of arrivals that may fail. A description of what a run asks
for, so it is config's; config/kinds/capacity_search.py judges probes against it."""
from __future__ import annotations

import re
from dataclasses import dataclass

from orchestrator.config.scenarios import Scenario
from orchestrator.core.schema import PERCENTILES, percentile_label
from orchestrator.errors import UsageError


@dataclass(frozen=True)
class Objective:
    """The service-level objective of a capacity search."""
    percentile: str = "p99"      # a key of schema.PERCENTILES
    bound_ms: float = 50.0       # over the scenario's own wait (a sleep scenario's sleep)
    error_budget: float = 0.001  # failed and dropped arrivals, as a share of those offered

    def bound_for(self, scenario: Scenario) -> float:
        return self.bound_ms + scenario.wait_ms

    def describe(self, scenario: Scenario) -> str:
        return (f"{percentile_label(self.percentile)} <= {self.bound_for(scenario):g} ms, "
                f"errors <= {100 * self.error_budget:g} %")


def parse_slo(text: str) -> tuple[str, float]:
    """'p99=50ms' -> ('p99', 50.0): the percentile and its bound over the scenario's own wait."""
    m = re.fullmatch(r"\s*(p\d+(?:\.\d+)?)\s*=\s*(\d+(?:\.\d+)?)\s*ms\s*", text or "")
    key = m and {percentile_label(k): k for k in PERCENTILES}.get(m.group(1))
    if not key:
        raise UsageError(f"--slo {text!r} is not PERCENTILE=BOUNDms with a percentile of "
                         f"{', '.join(percentile_label(k) for k in PERCENTILES)} (e.g. p99=50ms)")
    return key, float(m.group(2))
