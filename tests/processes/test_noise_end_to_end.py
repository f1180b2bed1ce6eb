"""`bench noise` on the fixture: a floor stored, and the report of this machine quoting it."""
from __future__ import annotations

from conftest import PORTS, bench

from orchestrator.infra.hostinfo import host_info
from orchestrator.results import noise
from orchestrator.results import store as results


def test_bench_noise_on_the_fixture_stores_a_floor_that_the_report_of_this_machine_quotes(results_dir):
    r = bench("noise", "-f", "fixture:ok", "--repeat", "2", "-d", "2s", "--warmup", "1s", "--warmup-max", "1s",
              "--results-dir", str(results_dir), *PORTS)
    assert r.returncode == 0, r.stdout + r.stderr
    e = noise.entry(host_info(), results_dir)
    assert (e["target"], e["scenario"], e["concurrency"], e["n"], e["driver"]) == ("fixture:ok", "json", 64, 2, "wrk")
    assert e["cv"]["rps"] >= 0 and "noise floor of" in r.stdout
    df = results.load(e["run_id"], results_dir)
    assert len(df) == 2 and set(df["repeat"]) == {1, 2}
    assert {m: f.cv for (s, m), f in noise.floors(host_info(), results_dir).items() if s == "json"} == e["cv"]
