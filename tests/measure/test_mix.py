"""A mix of scenarios as one load (config/mix.py): what a mix is made of, who can send it, and the
one-line errors of a bad one. pacer's draw of each arrival's part is test_pacer's."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from orchestrator.config.driver_registry import get
from orchestrator.config.load import LoadSpec
from orchestrator.config.mix import mix
from orchestrator.drivers.base import DriverFailed
from orchestrator.drivers.pacer import build
from orchestrator.errors import UsageError


def test_a_mix_does_its_parts_backend_work_in_their_shares():
    m = mix("read-mostly", {"cache-aside": 7, "db-read": 2, "db-write": 1})
    assert m.shares == pytest.approx({"cache-aside": 0.7, "db-read": 0.2, "db-write": 0.1})
    # cache-aside: 1.1 Redis commands and 0.1 SELECT a request; db-read one SELECT; db-write one INSERT
    assert m.backend_work == pytest.approx({"redis_commands": 0.77, "db_selects": 0.27, "db_inserts": 0.1})
    assert "70 % cache-aside, 20 % db-read, 10 % db-write" in m.contract
    # its objective is set over the slowest part's own wait; the run's downstream delay reaches its parts
    fan = mix("aggregator", {"fan-out": 1, "json": 3}).for_run(35)
    assert fan.wait_ms == 35 and fan.parts[0].scenario.wait_ms == 35


@pytest.mark.parametrize("weights, problem", [
    ({}, "it names no scenario"),
    ({"nope": 1}, "unknown scenario 'nope'"),
    ({"json": 0}, "the weight of 'json' must be a number above 0, not 0"),
    ({"json": -1.5}, "must be a number above 0, not -1.5"),
    ({"json": "70"}, "must be a number above 0, not '70'"),
    ({"json": float("nan")}, "must be a number above 0, not nan"),
    ({"json": True}, "must be a number above 0, not True"),
])
def test_a_bad_mix_is_named_in_one_line(weights, problem):
    with pytest.raises(UsageError, match=r"^mix .m.: .*" + re.escape(problem)):
        mix("m", weights)


@pytest.mark.parametrize("generator", ["wrk", "k6", "h2load", "oha", "locust"])
def test_a_generator_that_sends_one_scenario_a_load_refuses_a_mix(generator, tmp_path):
    spec = LoadSpec(port=1, scenario=mix("m", {"json": 1, "plaintext": 1}), concurrency=1, duration_s=1, cpus="0",
                    timeout_s=1, out_dir=tmp_path)
    with pytest.raises(DriverFailed, match=f"{generator} sends one scenario a load, and m is a mix of 2: load it "
                                           "with pacer"):
        get(generator).run(spec)


@pytest.mark.parametrize("args, problem", [
    (["--weight", "2", "--request", "R"], "--weight takes a number > 0, after its --request"),
    (["--request", "R", "--weight", "0"], "--weight takes a number > 0, after its --request"),
    (["--request", "R", "--weight", "x"], "--weight takes a number > 0, after its --request"),
    (["--ids", "1:10:5:5", "--request", "R"], "--ids takes HOT:EVERY:FIRST:COUNT, EVERY and COUNT > 0, after its"),
    ([a for _ in range(17) for a in ("--request", "R")], "at most 16 --request parts"),
])
def test_pacer_names_a_malformed_part_and_exits_2(args, problem, tmp_path):
    request = tmp_path / "R"
    request.write_bytes(b"GET / HTTP/1.1\r\n\r\n")
    args = [str(request) if a == "R" else a for a in args]
    r = subprocess.run([build(), "--port", "1", "--rate", "1", "--duration", "1", "--records",
                        str(Path(tmp_path) / "rec"), *args], capture_output=True, text=True, timeout=10)
    assert r.returncode == 2 and problem in r.stderr, r.stderr


def test_a_mix_s_window_gives_a_row_per_scenario_with_its_own_figures_and_nothing_of_the_server_s():
    from orchestrator.config.load import LoadResult
    from orchestrator.measure.rows import part_rows
    window = LoadResult(requests=1000, duration_s=2.0, latency_p99=21.0, bytes=50_000,
                        parts={"cache-aside": LoadResult(requests=700, duration_s=2.0, latency_p99=1.5),
                               "db-write": LoadResult(requests=300, duration_s=2.0, latency_p99=21.0, errors_status=3)})
    row = {"run_id": "r", "target": "vertx:eventloop", "scenario": "read-mostly", "concurrency": 64, "rate": 500.0,
           "repeat": 1, "status": "ok", "reason": "", "check_flags": "host-steal", "rps": 500.0,
           "server_cpu_s": 1.2, "redis_commands_per_request": 0.77}
    cache, write = part_rows(row, window)
    assert (cache["scenario"], cache["mix"], cache["rps"], cache["latency_p99_ms"]) == \
        ("read-mostly/cache-aside", "read-mostly", 350.0, 1.5)
    assert (write["rps"], write["errors_status"], write["check_flags"], write["rate"]) == (150.0, 3, "host-steal", 500.0)
    # the server's CPU and the backends' counts are the window's, never split by a guess
    assert "server_cpu_s" not in cache and "redis_commands_per_request" not in cache
    assert part_rows(row, LoadResult(requests=1, duration_s=1.0)) == []


def test_a_probe_fails_on_a_scenario_s_own_objective_though_the_mix_meets_its_own():
    from orchestrator.config.kinds.capacity_search import FAIL, PASS, judge
    from orchestrator.config.load import LoadResult
    from orchestrator.config.objective import Objective
    m = mix("m", {"json": 9, "plaintext": 1}, objectives={"plaintext": ("p99", 2.0)})

    def probe(plaintext_p99):
        return LoadResult(requests=1000, duration_s=1.0, latency_p99=3.0, send_lag_p99=0.1,
                          parts={"json": LoadResult(requests=900, duration_s=1.0, latency_p99=3.0),
                                 "plaintext": LoadResult(requests=100, duration_s=1.0, latency_p99=plaintext_p99)})
    failed = judge(1000, probe(2.5), [], Objective("p99", 50.0), m, None)
    assert (failed.state, failed.why) == (FAIL, "plaintext's p99 2.5 ms > 2 ms (its own objective)")
    passed = judge(1000, probe(1.0), [], Objective("p99", 50.0), m, None)
    assert passed.state == PASS and passed.why == "p99 3.0 ms <= 50 ms; plaintext's p99 1.0 ms <= 2 ms"
