"""Cache-aside's misses on made-up counts: the ids its load walks (items.IdCycle), the share of misses read
over the window and in each second, and the flag for a share off the load's beyond the hot item's refills."""
from __future__ import annotations

import pytest

from orchestrator.config import driver_registry
from orchestrator.config.items import CACHE_CHECK_ID, SEED_ROWS
from orchestrator.config.load import LoadSpec
from orchestrator.config.scenarios import SCENARIOS
from orchestrator.drivers.base import DriverFailed
from orchestrator.measure.evidence import Evidence, miss_seconds, off_contract

CACHE = SCENARIOS["cache-aside"]


def test_one_request_in_ten_asks_for_an_item_not_asked_for_in_the_whole_cycle():
    ids = CACHE.ids
    assert ids.miss_share == 0.1 and ids.first + ids.count - 1 == SEED_ROWS
    asked = [int(ids.path(k).rsplit("=", 1)[1]) for k in range(ids.length)]
    cold = [i for i in asked if i != ids.hot]
    assert len(cold) == ids.count == len(set(cold)) and asked[:11] == [10_001] + [42] * 9 + [10_002]
    # no load reads the item verification changes behind the cache, nor an id past the seed
    assert CACHE_CHECK_ID not in asked and max(asked) <= SEED_ROWS
    assert ids.path(ids.length) == ids.path(0)   # the cycle wraps
    # streams start spread over the cycle, so that together they walk it as one would
    assert [ids.offset(s, 4) for s in range(4)] == [0, ids.length // 4, ids.length // 2, 3 * ids.length // 4]
    assert CACHE.backend_work == {"redis_commands": 1.1, "db_selects": 0.1}


def test_the_share_of_misses_is_read_over_the_window_and_in_each_whole_second():
    # polls 4 a second: 900 hits and 100 misses a second, but 500 misses in the third second
    times = [100 + i / 4 for i in range(17)]
    hits, misses, h, m = [], [], 0.0, 0.0
    for i, _ in enumerate(times):
        hits.append(h)
        misses.append(m)
        h += 225
        m += 125 if 8 <= i < 12 else 25
    seconds = miss_seconds(times, hits, misses, 100, 104)
    assert [m for m, _ in seconds] == pytest.approx([100, 100, 500, 100])
    assert [n for _, n in seconds] == pytest.approx([1000, 1000, 1400, 1000])
    # a second with fewer than 100 lookups says nothing
    assert miss_seconds(times, [0.0] * 17, [float(i) for i in range(17)], 100, 104) == []
    row = Evidence(cache_hits=900.0, cache_misses=100.0, cache_miss_seconds=[(9, 100), (12, 100)]).per_request(100)
    assert (row["cache_miss_share"], row["cache_miss_share_min"], row["cache_miss_share_max"]) == (0.1, 0.09, 0.12)
    assert Evidence().per_request(100)["cache_miss_share"] is None


def _window(seconds: list[tuple[float, float]]) -> Evidence:
    misses, lookups = sum(m for m, _ in seconds), sum(n for _, n in seconds)
    return Evidence(cache_hits=lookups - misses, cache_misses=misses, cache_miss_seconds=seconds)


@pytest.mark.parametrize("seconds,in_flight,refills,off", [
    ([(87, 870)] * 4, 32, 1, False),
    # the hot item's refill: 32 requests in flight for it missed in one second (CI read 14.3 %)
    ([(87, 870), (124, 870), (87, 870), (87, 870)], 32, 1, False),
    ([(87, 870), (124, 870), (87, 870), (87, 870)], 8, 1, True),      # more than the requests in flight
    ([(87, 870), (124, 870), (87, 870), (124, 870)], 32, 2, False),   # a window of two refills
    ([(87, 870), (87, 870), (87, 870), (87, 870), (87, 870), (120, 870)] * 4, 32, 1, False),
    ([(87, 870), (174, 870), (174, 870), (174, 870)], 32, 1, True),   # twice the share, second after second
    ([(87, 870), (40, 870), (87, 870), (87, 870)], 2000, 1, True),    # too few misses: never a refill's
    ([(0, 870)] * 4, 32, 1, True),              # served from the cache what it should not
    ([(870, 870)] * 4, 32, 1, True),            # never cached
    # 2,000 connections: a refill may miss most of a second, and the window stays within the allowance
    ([(300, 3000), (2200, 3000), (300, 3000)], 2000, 1, False),
])
def test_misses_off_the_load_s_share_beyond_the_hot_item_s_refills_flag_the_cell(seconds, in_flight, refills, off):
    evidence = _window(seconds)
    assert evidence.misses_off(0.1, in_flight, refills) is off
    row = {"redis_commands_per_request": 1.1, "db_selects_per_request": 0.1}
    assert ("cache-misses-off-contract" in off_contract(CACHE, row, evidence.misses_off(0.1, in_flight, refills))) is off
    # another scenario's lookups (redis: an MGET of three keys, all hits) are no cache's
    assert off_contract(SCENARIOS["redis"], {"redis_commands_per_request": 1.0}, True) == []


def test_a_generator_that_sends_one_path_refuses_a_load_that_walks_ids(tmp_path):
    spec = LoadSpec(port=29395, scenario=CACHE, concurrency=10, requests=10, duration_s=0, cpus="0",
                    timeout_s=5, out_dir=tmp_path)
    for name in ("h2load", "oha"):
        with pytest.raises(DriverFailed, match=f"{name} sends the same path every time, and cache-aside"):
            driver_registry.get(name).run(spec)
