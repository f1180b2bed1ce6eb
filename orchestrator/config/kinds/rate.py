"""The rate kind: an open model at each fixed arrival rate (pacer), one cell per concurrency (the most
connections that carry the rate) and rate; its warm-up runs at the cell's own rate."""
from __future__ import annotations

from dataclasses import replace

from orchestrator.config.kinds.base import Kind


class RateKind(Kind):
    name = "rate"
    fields = ("rates",)
    options = ("concurrency", "rates", "duration_s")
    default_concurrency = (1000,)
    open_model = True
    cells_by_vus = True

    def read(self, doc, p):
        return replace(p, rates=doc.wholes("rates", None, 1_000_000))

    def levels(self, p) -> list[tuple[int, float | None]]:
        return [(c, float(r)) for c in p.concurrency for r in p.rates]

    def describe(self, p) -> str:
        return f"{', '.join(map(str, p.rates))} req/s for {p.duration_s:g} s with at most {max(p.concurrency)} connections"
