"""The throughput kind: a closed loop for a fixed time at each concurrency (wrk; or k6 with constant
VUs), one cell and one row per concurrency: the base Kind's defaults, with its description."""
from __future__ import annotations

from orchestrator.config.kinds.base import Kind
from orchestrator.config.load import LoadSpec


class ThroughputKind(Kind):
    name = "throughput"
    options = ("concurrency", "duration_s")
    closed_loop = True

    def closed_loop_probe(self, common: dict, requests: int) -> LoadSpec:
        return LoadSpec(**common)

    def describe(self, p) -> str:
        return f"{', '.join(map(str, p.concurrency))} connections for {p.duration_s:g} s"
