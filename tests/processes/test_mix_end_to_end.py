"""A workload's capacity on the fixture: what its blocking part leaves of a pool of 16 threads."""
from __future__ import annotations

import pytest


def test_a_workload_s_capacity_is_what_its_blocking_part_leaves_of_a_pool(tmp_path):
    """Half sleeps of 100 ms, half json, on a fixed pool of 16 threads: the sleeps hold the pool, so no
    more than 16 / (0.5 x 100 ms) = 320 requests a second of the mix pass. Below that, the draw of each
    arrival's scenario makes the sleeps come in bunches, and they queue for the pool before it is full:
    a first-come-first-served pool of 16 fed that way (evenly spaced arrivals, each a sleep with
    probability 0.5, 200,000 of them) keeps the mix's p99 within 150 ms up to about 288/s (p99 134 ms at
    280/s, 152 at 290, 187 at 300). The search finds its capacity there, below the pool's bound, and
    each scenario's rows their share of it."""
    from conftest import PORTS, bench

    from orchestrator.infra.hostinfo import host_info
    from orchestrator.measure import ceilings
    from orchestrator.results import store as results
    results_dir = tmp_path / "results"
    results_dir.mkdir()
    ceilings.store(results_dir, host_info(), {"pacer": {"open_ceiling_rps": 2000.0, "server_cpus": "1",
                                                        "loadgen_cpus": "0", "seeded": "test_mix"}})
    path = tmp_path / "half-asleep.toml"
    path.write_text('description = "half asleep"\ntargets = ["fixture:pool-16"]\nobjective = "p99=50ms"\n'
                    '[mix]\nsleep = 1\njson = 1\n'
                    '[objectives]\njson = "p50=140ms"\n')   # of its own, never binding: each row says which it met
    r = bench("run", *PORTS, "--workload", str(path), "--duration", "2s", "--warmup", "2s", "--warmup-max", "2s",
              "--results-dir", str(results_dir))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr
    said = " ".join(r.stdout.split())
    assert "workload half-asleep: half asleep" in said and "50 % sleep, 50 % json" in said
    df = results.load(root=results_dir)
    found = df[df["rate"].isna()].set_index("scenario")
    mine = found.loc["half-asleep"]
    assert mine["verdict"] == "found" and mine["mix"] == "half-asleep" and mine["slo"] == "p99 <= 150 ms, errors <= 0.1 %"
    # 2-s probes of ~550 arrivals read a p99 from their 6 slowest, and this host steals: within 20 % below
    # the queue's 288/s, never above the pool's 320/s (a run here: 260-274)
    assert 0.8 * 288 <= mine["capacity_low_rps"] and mine["capacity_high_rps"] <= 1.05 * 320, \
        mine[["capacity_low_rps", "capacity_high_rps"]]
    sleeps = found.loc["half-asleep/sleep"]
    assert sleeps["capacity_low_rps"] == pytest.approx(mine["capacity_low_rps"] / 2)
    # each scenario's rows name the objective it was judged by: json its own, the sleeps the mix's
    assert sleeps["slo"] == mine["slo"] and found.loc["half-asleep/json", "slo"] == "p50 <= 140 ms, errors <= 0.1 %"
    # each probe's scenarios: their own requests, their own latencies (the sleeps' at least their 100 ms)
    probes = df[df["rate"].notna()]
    per = probes[probes["mix"] == "half-asleep"].groupby("scenario")["latency_p50_ms"].median()
    assert per["half-asleep/sleep"] >= 100 > per["half-asleep/json"], per
    mix_probes = probes[probes["scenario"] == "half-asleep"].set_index("step")["requests"]
    parts = probes[probes["scenario"] != "half-asleep"].groupby("step")["requests"].sum()
    assert (mix_probes == parts.reindex(mix_probes.index)).all()
    # the answer, printed, and the report's section of its own
    assert "workload half-asleep: capacity at p99=50ms" in said and "fixture:pool-16" in said
    run = results.find_run(None, results_dir)
    r = bench("report", run.name, "--results-dir", str(results_dir), timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    report = (run / "report.md").read_text()
    assert "Workload half-asleep: capacity and cost" in report and "report-workload-cost.png" in report
    r = bench("results", run.name, "--results-dir", str(results_dir))
    assert r.returncode == 0 and "workload half-asleep: capacity at p99=50ms" in " ".join(r.stdout.split()), r.stdout
