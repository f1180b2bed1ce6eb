"""A load's result: nearest-rank percentiles."""
from __future__ import annotations

import numpy as np


def test_nearest_rank_percentiles_land_on_their_rank_when_n_is_a_multiple_of_1000():
    from orchestrator.config.load import latency_fields
    for n in (1000, 3000):
        out = latency_fields(np.arange(1, n + 1, dtype=float))
        assert out["latency_p999"] == 0.999 * n and out["latency_p99"] == 0.99 * n and out["latency_p50"] == n / 2
