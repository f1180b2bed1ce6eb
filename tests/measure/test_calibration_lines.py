"""What `bench calibrate` prints of pacer's ceiling on a mix beside one path's: the ratio, and how much the
host stole in each search, which can make the ratio the host's."""
from __future__ import annotations

from orchestrator.measure import calibrate


def test_the_mix_s_line_names_the_steal_of_each_search():
    entry = {"open_ceiling_rps": 2_062, "open_probes": [{"steal_pct": 12.9}, {"steal_pct": 26.7}, {"steal_pct": None}],
             "open_mix": {"ceiling_rps": 39_000, "outcome": "found", "probes": [{"steal_pct": 0.5}]}}
    line = calibrate._mix_line("pacer", entry)
    assert line == ("pacer: open model on a mix of plaintext+json 39,000 req/s (1891% of one path's), found; the host "
                    "stole up to 27 % of the CPUs in one path's search, 0 % in the mix's")
    # no ceiling on one path: no ratio
    assert "of one path's" not in calibrate._mix_line("pacer", {**entry, "open_ceiling_rps": 0})
