"""Cache-aside's misses under real load: each generator walks the ids as items.IdCycle says, and a
real cell on Vert.x misses one request in ten over its window and second by second, as Redis counts."""
from __future__ import annotations

import collections
import dataclasses
import http.server
import threading
from urllib.parse import parse_qs, urlparse

import pytest
from conftest import PORTS, Answering, bench

from orchestrator.config import driver_registry
from orchestrator.config.items import IdCycle
from orchestrator.config.load import LoadSpec, Ramp
from orchestrator.config.scenarios import SCENARIOS
from orchestrator.results import store as results

CACHE = SCENARIOS["cache-aside"]


class _Recorder(Answering):
    asked: list[int] = []

    def do_GET(self):   # the standard library names it
        self.asked.append(int(parse_qs(urlparse(self.path).query)["id"][0]))
        self.answer(200, b"{}")


# A cycle short enough that a second of load goes round it several times
WALK = dataclasses.replace(CACHE, name="walk", path="/walk?id=1",
                           ids=IdCycle("/walk?id=", hot=7, every=4, first=1000, count=50))


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
