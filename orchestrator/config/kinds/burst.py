"""The burst kind: a fixed number of requests at each concurrency, then stop (k6 shared-iterations, or
h2load). Its length depends on the target, so it is not a closed loop of fixed size, and every
connection must send at least one request."""
from __future__ import annotations

from dataclasses import replace

from orchestrator.config.kinds.base import Kind
from orchestrator.config.load import LoadSpec


class BurstKind(Kind):
    name = "burst"
    fields = ("requests",)
    options = ("concurrency", "requests")

    def read(self, doc, p):
        return replace(p, requests=doc.whole("requests"))

    def conflict(self, p) -> tuple[str, str] | None:
        if p.requests < max(p.concurrency):
            return "requests", (f"{p.requests} is fewer than the largest concurrency {max(p.concurrency)}: every "
                                f"connection must send at least one request")
        return None

    def measured_words(self, prof: dict) -> str:
        return f"{prof.get('requests', 0):,} requests per cell"

    def closed_loop_probe(self, common: dict, requests: int) -> LoadSpec:
        """Every connection sends ten at least: a burst shorter than that is mostly its start-up."""
        return LoadSpec(**common, requests=max(requests, common["concurrency"] * 10))

    def describe(self, p) -> str:
        return f"{p.requests:,} requests at {', '.join(map(str, p.concurrency))} connections"
