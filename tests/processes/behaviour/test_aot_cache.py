"""Cold starts and the JDK's AOT cache on a real JVM (the fixture, which starts in a fraction of a
second): one cache trained per run and what each JVM mapped from it, read from the JVM's own log."""
from __future__ import annotations

import json

from conftest import IDLE, PORTS, bench

from orchestrator.results import store as results
from orchestrator.targets import aot_cache

TARGETS = {"fixture:ok", "fixture:ok+cold", "fixture:ok+aot-cache", "fixture:ok+aot-cache+cold"}


def test_both_modes_warm_and_cold_train_one_cache_and_each_jvm_s_log_says_what_it_mapped(results_dir):
    # on IDLE (conftest): 1,000 sleeps at 50 connections, 2 s a burst, spread over the seconds the cold
    # ones are read by, and a training that leaves the server's CPU to the load smoke beside this test
    r = bench("run", "-f", "fixture:ok", "-s", IDLE, "-p", "burst", "--requests", "1000", "-c", "50",
              "--jvm-mode", "default,aot-cache", "--start", "warm,cold", "--warmup", "1s", "--warmup-max", "2s",
              "--results-dir", str(results_dir), *PORTS)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr
    run = results.find_run(None, results_dir)
    df, meta = results.load(run), json.loads((run / "run.json").read_text())
    assert set(df["target"]) == TARGETS and (df["status"] == "ok").all()
    # one cache, trained on what the run measures, recorded with the run
    record = meta["aot_caches"]["fixture:ok"]
    assert (run / record["cache"]).stat().st_size > 1_000_000 and record["trained_on"] == [IDLE]
    assert "AOT cache of fixture:ok" in " ".join(r.stdout.split())
    # the JVM's own log of each start: the fixture's class from the cache with it, from the jar without
    for target, source in (("fixture-ok-aot-cache", "shared objects file"), ("fixture-ok", "file:")):
        log = run / "logs" / f"{target}-{run.name}{aot_cache.CLASS_LOG_SUFFIX}"
        line = next(x for x in log.read_text().splitlines() if "] Fixture source:" in x)
        assert source in line, line
    cached, default = (df[df["jvm_mode"] == m] for m in ("aot-cache", "default"))
    assert cached["classes_from_cache"].min() > default["classes_from_cache"].max()
    assert (df["classes_from_cache"] <= df["classes_loaded"]).all()
    # cold: no warm-up, loaded seconds after the first answer, answers per second kept
    cold, warm = df[df["start"] == "cold"], df[df["start"] == "warm"]
    assert (cold["warmup_s"] == 0).all() and (warm["warmup_s"] > 0).all()
    assert (cold["since_launch_s"] > cold["startup_s"]).all()
    ts = results.load_timeseries(run)
    assert set(ts["target"]) == {"fixture:ok+cold", "fixture:ok+aot-cache+cold"}
    # answers per second, the last second's as a rate over the part of it the window had
    for target, seconds in ts.groupby("target"):
        row = cold.set_index("target").loc[target]
        share = [min(1.0, row["duration_s"] - t) for t in seconds["t_s"]]
        assert round(sum(seconds["rps"] * share)) == row["requests"], (target, seconds)
    report = bench("report", run.name, "--results-dir", str(results_dir))
    assert report.returncode == 0, report.stdout + report.stderr
    md = (run / "report.md").read_text()
    assert "## Cold start" in md and f"| fixture:ok+aot-cache+cold | {IDLE} |" in md
    assert "## The JDK's AOT cache against the default start" in md and f"| fixture:ok | {IDLE} | startup_s |" in md
