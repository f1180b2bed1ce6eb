"""Cache-aside's misses under real load: a real cell on Vert.x misses one request in ten over its window
and second by second, as Redis counts (each generator's walk of the ids: behaviour/test_id_walk.py)."""
from __future__ import annotations

from conftest import PORTS, bench

from orchestrator.results import store as results


def test_a_cache_aside_cell_misses_one_request_in_ten_second_by_second(tmp_path):
    r = bench("run", *PORTS, "-f", "vertx:eventloop", "-s", "cache-aside", "-c", "32", "-d", "4s", "--warmup", "1s",
              "--warmup-max", "1s", "--results-dir", str(tmp_path), frameworks=None)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr
    (row,) = results.load(root=tmp_path).to_dict("records")
    # enough for every second to count (100 lookups at least); a stealing host once left 3,466 of ~16,000
    assert row["status"] == "ok" and row["requests"] > 2_000, row
    # the hot item's refill (its 32 requests in flight) is at most 32 misses over the window's 10 %
    assert 0.09 <= row["cache_miss_share"] <= 0.1 + 32 / row["requests"] + 0.005, row["cache_miss_share"]
    # a second: a refill's 32 misses in it are at most 32 / 500 of its lookups at the window's slowest
    # (a stalled poll moves lookups across seconds; CI read one second at 14.3 %, 870 lookups)
    assert 0.07 <= row["cache_miss_share_min"] <= row["cache_miss_share_max"] <= 0.13 + 32 / 500, row
    assert abs(row["db_selects_per_request"] - 0.1) <= 0.02 and abs(row["redis_commands_per_request"] - 1.1) <= 0.02
    assert "cache-misses-off-contract" not in row["check_flags"], row["check_flags"]
