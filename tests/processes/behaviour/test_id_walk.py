"""Each real generator walks cache-aside's ids as items.IdCycle says: the share of cold items, and every
one of them asked for, counted by a small server in this process."""
from __future__ import annotations

import collections
import dataclasses
import http.server
import threading
from urllib.parse import parse_qs, urlparse

import pytest
from conftest import PORT_BASE, Answering

from orchestrator.config import driver_registry
from orchestrator.config.items import IdCycle
from orchestrator.config.load import LoadSpec, Ramp
from orchestrator.config.scenarios import SCENARIOS


class _Recorder(Answering):
    asked: list[int] = []

    def do_GET(self):   # the standard library names it
        self.asked.append(int(parse_qs(urlparse(self.path).query)["id"][0]))
        self.answer(200, b"{}")


# A cycle short enough that a second of load goes round it several times
WALK = dataclasses.replace(SCENARIOS["cache-aside"], name="walk", path="/walk?id=1",
                           ids=IdCycle("/walk?id=", hot=7, every=4, first=1000, count=50))


@pytest.mark.parametrize("generator", ["wrk", "k6", "pacer", "locust"])
def test_each_generator_walks_the_ids_as_the_cycle_says(tmp_path, generator):
    port = PORT_BASE + 395
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
