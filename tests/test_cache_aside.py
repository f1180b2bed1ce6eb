"""Cache-aside's misses: the ids its load walks (items.IdCycle), each generator walking them, and
the share of misses Redis counts in a cell, over the window and second by second."""
from __future__ import annotations

import collections
import dataclasses
import http.server
import threading
from urllib.parse import parse_qs, urlparse

import pytest
from conftest import PORTS, bench

from orchestrator.config import driver_registry
from orchestrator.config.items import CACHE_CHECK_ID, SEED_ROWS, IdCycle
from orchestrator.config.load import LoadSpec, Ramp
from orchestrator.config.scenarios import SCENARIOS
from orchestrator.drivers.base import DriverFailed
from orchestrator.measure.evidence import Evidence, miss_seconds, off_contract
from orchestrator.results import store as results

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


class _Recorder(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"   # keep-alive, as the generators expect
    disable_nagle_algorithm = True   # headers and body in two writes: no 40-ms delayed ACK between them
    asked: list[int] = []

    def do_GET(self):   # the standard library names it
        self.asked.append(int(parse_qs(urlparse(self.path).query)["id"][0]))
        body = b"{}"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


# A cycle short enough that a second of load goes round it several times
WALK = dataclasses.replace(CACHE, name="walk", path="/walk?id=1",
                           ids=IdCycle("/walk?id=", hot=7, every=4, first=1000, count=50))


@pytest.mark.slow   # real generators (k6 is built for the slow tier)
@pytest.mark.parametrize("generator", ["wrk", "k6", "pacer", "locust"])
def test_each_generator_walks_the_ids_as_the_cycle_says(tmp_path, generator):
    port = 29395
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), _Recorder)
    _Recorder.asked = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    spec = LoadSpec(port=port, scenario=WALK, concurrency=4, duration_s=2, cpus="0", timeout_s=5, out_dir=tmp_path)
    spec = {"wrk": spec, "k6": dataclasses.replace(spec, duration_s=0, requests=400),
            "pacer": dataclasses.replace(spec, rate=200.0),
            "locust": dataclasses.replace(spec, ramp=Ramp(4, 0, 4.0, 1))}[generator]
    try:
        driver_registry.get(generator).run(spec)
    finally:
        server.shutdown()
        server.server_close()
    asked = collections.Counter(_Recorder.asked)
    total, cold = sum(asked.values()), {i: n for i, n in asked.items() if i != 7}
    assert total >= 200 and set(cold) <= set(range(1000, 1050)), asked
    # a quarter of the requests ask for cold items, and every one of them is asked for (the load went
    # round the cycle of 200 at least once)
    assert 0.2 <= sum(cold.values()) / total <= 0.3 and len(cold) == 50, asked


@pytest.mark.slow
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
