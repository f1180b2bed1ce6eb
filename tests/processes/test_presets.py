"""Each preset whose quick form runs what no other test runs, end to end in its --quick form against
the real frameworks of the repo: a Locust ramp with its claims' evidence (cpu-yield), a capacity search
that calibrates pacer first, then overloads and spikes the target (cold-start-and-spike:overload, which
capacity-at-slo's quick form is)."""
from __future__ import annotations

import json

import pytest
from chromium_page import assert_renders
from conftest import PORTS, ROOT, RUN_AS, bench

from orchestrator.config import presets
from orchestrator.config.catalog import discover
from orchestrator.config.modes import with_modes
from orchestrator.measure import calibrate, ceilings
from orchestrator.results import store as results

# A quick form that only repeats what other tests run: each a k6 burst, a closed loop or a window on
# targets the load smoke fires 1,000 connections at on every scenario, of a mode, start or topology
# another test runs end to end; each preset's plan and claims are checked without a JVM (test_claims,
# test_profiles): 325 s of CI saved
COVERED = {"service-calls:burst",            # one burst of cache-aside on Vert.x (13 s)
           # a quick search on Vert.x of fan-out (23 s) and of cache-aside, which the smoke, the evidence and
           # the end-to-end tests load; a search on real targets is :overload's, one whose ceiling is seeded
           # test_capacity's, a search's evidence columns test_mix's
           "service-calls:fan-out", "service-calls:cache-aside",
           "spring-concurrency-models",      # bursts of sleep at 500 on three Spring targets (60 s)
           "cpu-and-io-bursts",              # warm bursts of its claims' cells on Spring targets (60 s)
           "gateway-vt-vs-webflux",          # 2-s closed loops of k6 on the two gateways (40 s)
           # a Locust ramp on Spring targets, as cpu-yield's quick form runs: of GETs, and (:db) of db-write's
           # POST, whose body and status test_locust_end_to_end checks and whose INSERT on every target the
           # smoke loads (41 s)
           "mvc-vs-reactive-ramp:light", "mvc-vs-reactive-ramp:sleep", "mvc-vs-reactive-ramp:db",
           # a Spring target's AOT cache trained (44 s of the 89), then a burst of sleep from it cold and warm:
           # both modes, warm and cold, are test_aot_cache's on the fixture's jar (the training, what each JVM
           # mapped, the cold seconds). A Spring jar's cache is trained in no test: a build that broke it would
           # show in a user's run (run.json's aot_caches, each row's classes_from_cache), not in CI
           "cold-start-and-spike:cold",
           # a window of db-read on Spring MVC with the database 0 and then 40 ms away: a link that changes
           # between levels is test_topology's, on the fixture's Redis, and db-read the smoke's on every target (44 s)
           "far-database",
           "redis-frameworks"}               # a window of wrk on Undertow's redis: the smoke's, test_evidence's (22 s)


@pytest.mark.parametrize("name", [n for n in presets.names() if n not in RUN_AS and n not in COVERED])
def test_a_preset_runs_to_completion_in_its_quick_form(results_dir, name):
    preset = presets.load(name, discover(ROOT / "frameworks"), quick=True)
    r = bench("run", *PORTS, "--preset", name, "--quick", "--results-dir", str(results_dir), frameworks=None,
              timeout=1500)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr
    run = results.find_run(None, results_dir)
    df = results.load(run)
    assert (df["status"] == "ok").all(), df[["target", "scenario", "reason"]]
    assert set(df["profile"]) == {f"{name} (quick)"} and set(df["kind"]) == {preset.profile.kind}
    measured = {(t, s) for t, s in zip(df["target"], df["scenario"])}
    # each target once per mode and start the preset runs it in
    planned = with_modes(preset.matrix, preset.jvm_modes, preset.starts)
    assert measured == {(t, s) for t, scenarios in planned.items() for s in scenarios}
    if preset.profile.kind == "capacity":
        # With no calibration in its --results-dir, the run measured pacer's open-model ceiling first
        # and kept it there (never in the checkout's results/), as the search's cap; only up to twice
        # what its search can offer (the quick form: 250/s doubled over 7 probes, 32,000/s, below the
        # 48,000/s pacer keeps here, so its calibration stops there: five probes)
        assert "is not calibrated" in " ".join(r.stdout.split()), r.stdout[-3000:]
        # (at least one rate kept: with the host stealing 23-32 % of both CPUs, pacer kept only 375/s
        # with its own lag p99 within 1 ms, where a calm host keeps the whole 8,000 the quick search needs)
        assert ceilings.ceilings(results_dir=results_dir, loadgen_cpus="0", key="open_ceiling_rps")["pacer"] > 0
        # its ceiling is the highest probe that kept the rate with p99 and its own lag within the test
        # and nothing dropped, probed as long as the search's own probes
        (record,) = json.loads((results_dir / ceilings.FILE).read_text())["machines"].values()
        pacer = record["generators"]["pacer"]
        passed = [p for p in pacer["open_probes"] if p["verdict"].startswith("pass")]
        assert pacer["open_ceiling_rps"] == max(p["rate"] for p in passed)
        needed = preset.profile.rules.open_ceiling_needed(preset.profile)
        assert max(p["rate"] for p in pacer["open_probes"]) <= needed
        assert pacer["open_capped_at"] in (needed, None)   # None: it failed below the need
        assert (pacer["open_window_s"], pacer["open_resolution"]) == (2.0, 0.5)   # as the quick search's probes
        # each over the host's own timer: pacer's lag where it idles between arrivals
        floor = pacer["open_timer_floor_ms"]
        assert floor >= 0 and f"{floor:g} ms at {calibrate.OPEN_FLOOR_RATE}/s" in pacer["open_test"], pacer
        assert all(p["dropped"] == 0 and p["p99_ms"] <= calibrate.OPEN_P99_MS + floor and p["rps"] >= 0.97 * p["rate"]
                   and p["send_lag_p99_ms"] <= calibrate.OPEN_LAG_MS + floor for p in passed), passed
        # a search writes its probes (as many as it takes) and then one capacity row per target and scenario
        found, df = df[df["rate"].isna()], df[df["rate"].notna()]
        assert len(found) == len(measured) * preset.profile.repeat and found["verdict"].notna().all()
        assert found["capacity_low_rps"].notna().all() and df.groupby(["target", "scenario"]).size().min() >= 1
    else:
        per_cell = len(preset.profile.levels()) * (preset.profile.ramp.steps if preset.profile.ramp else 1)
        assert len(df) == len(measured) * per_cell * preset.profile.repeat
    assert (df["requests"] > 0).all() and df["latency_p95_ms"].notna().all()
    if preset.profile.kind == "ramp":
        ts = results.load_timeseries(run)
        assert {(t, s) for t, s in zip(ts["target"], ts["scenario"])} == measured
    meta = results.load_meta(run)
    assert meta["plan"]["preset"] == name and meta["status"] == "finished"
    if name == "cpu-yield":
        # 2,262 yields a request: on platform threads each is a sched_yield that lets another busy
        # worker on; a virtual thread's yield stays inside the JVM
        switches = df[df["scenario"] == "cpu-yield"].groupby("target")["server_switches_per_request"].min()
        assert switches["spring-mvc:platform"] >= 1000 and switches["spring-mvc:virtual"] < 100, switches
        # Netty's loops, busy counting, leave new connections in the kernel's accept queue; Tomcat's
        # acceptor thread takes them at once (README: 354-358 against 0 at 500 users)
        queue = df[df["scenario"] == "cpu-yield"].groupby("target")["tcp_accept_queue_peak"].max()
        assert queue["spring-webflux:reactive"] > queue["spring-mvc:virtual"] + 10, queue
        assert (df["users_answered"] <= df["concurrency"]).all() and df["users_answered"].notna().all()
    if preset.profile.spike_s and preset.profile.kind == "capacity":
        # the spike's own row and the per-second series it is read from (test_capacity checks the
        # recovery against theory on a pool of known size), after each capacity found: a search that
        # stopped at the generator's limit has none (CI's host, stealing, left pacer a ceiling of 375/s)
        spiked = df[df["verdict"].fillna("").str.startswith("spike")]
        assert len(spiked) == (found["verdict"] == "found").sum() and spiked["rate"].notna().all(), \
            df[["rate", "verdict"]]
        if len(spiked):
            ts = results.load_timeseries(run)
            assert set(ts["step"]) == {1, 2, 3} and ts["offered_per_s"].sum() > 0
    # The report of a preset run (a ramp's with its time series, a search's with its capacity and spike) renders.
    r = bench("report", run.name, "--results-dir", str(results_dir), frameworks=None, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    render = results_dir.parent / "render"
    render.mkdir()
    assert_renders(run, render)
