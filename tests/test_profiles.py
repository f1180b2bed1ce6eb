"""Load profiles and presets: the files parse, bad ones are named, and every profile runs end to end
against a real target (the fixture JVM) with its real generator: h2load, Locust, k6."""
from __future__ import annotations

import dataclasses
import json
import tomllib

import pytest
from conftest import PORTS, bench

from orchestrator.config import claim_fields, kinds, presets, profiles
from orchestrator.config.catalog import discover
from orchestrator.config.driver_registry import drivers_by_kind
from orchestrator.errors import ManifestError, UsageError
from orchestrator.results import store as results


def test_every_shipped_profile_loads():
    shipped = {profiles.load(name).kind for name in profiles.shipped()}
    assert shipped == set(kinds.KINDS)


def test_every_kind_has_a_driver_and_every_driver_runs_only_kinds():
    runs = drivers_by_kind()
    assert set(runs) == set(kinds.KINDS)
    assert all(runs[name] for name in kinds.KINDS)


def test_every_kind_describes_its_shipped_profile():
    assert profiles.load("throughput").describe() == "256 connections for 10 s"
    assert profiles.load("burst").describe() == "10,000 requests at 500, 1000, 2000 connections"
    assert profiles.load("rate").describe() == "500, 1000, 2000 req/s for 10 s with at most 1000 connections"
    assert profiles.load("ramp").describe() == "50 users +50 every 10 s for 10 steps"
    assert profiles.load("ramp").with_overrides(workers=2).describe().endswith(", 2 Locust workers")
    assert profiles.load("capacity").describe() == (
        "the highest rate with p99 <= 50 ms over the scenario's wait and errors <= 0.1 %, from 500 req/s to "
        "within 5 %, 8 s probes (at most 12), at most 2000 connections")


def test_every_shipped_preset_resolves_against_the_repo():
    from orchestrator import REPO_ROOT
    catalog = discover(REPO_ROOT / "frameworks")
    assert set(presets.names()) == {
        "gateway-vt-vs-webflux", "spring-concurrency-models", "redis-frameworks", "capacity-at-slo",
        "mvc-vs-reactive-ramp", "cpu-and-io-bursts", "far-database", "cpu-yield", "cold-start-and-spike:cold",
        "cold-start-and-spike:overload", "service-calls:capacity", "service-calls:burst"}
    for name in presets.names():
        full, quick = presets.load(name, catalog), presets.load(name, catalog, quick=True)
        assert full.profile.kind == quick.profile.kind, name
        # the quick form's cells cover every claim's cell and the scenarios its [quick] table names (else
        # every scenario) at least once, in as few targets (JVMs) as the claims allow, and nothing the
        # full form does not measure
        cells = {(t, s) for t, scenarios in quick.matrix.items() for s in scenarios}
        assert cells <= {(t, s) for t, scenarios in full.matrix.items() for s in scenarios}, name
        assert all(quick.matrix.values()), name
        assert len(quick.matrix) == max(1, len({c["target"] for c in full.claims if "evidence" in c})), name
        named = _quick_table(name).get("scenarios")
        wanted = set(named) if named is not None else {s for scenarios in full.matrix.values() for s in scenarios}
        explained = [c for c in full.claims if "evidence" in c]
        assert {s for _, s in cells} == wanted | {c["scenario"] for c in explained}, name
        assert {(c["target"], c["scenario"]) for c in explained} <= cells, name
        assert quick.profile.measured_s() <= full.profile.measured_s(), name
        # a full run records Flight Recorder; the quick form only where a claim reads its evidence
        assert full.jfr and quick.jfr == any(c.get("evidence") in claim_fields.RECORDED for c in full.claims), name
    # the far-database study: the database 0.3 and 170 ms away; here 0 to 170 ms, the quick form 0 and 40
    far, quick = presets.load("far-database", catalog), presets.load("far-database", catalog, quick=True)
    assert [s.rtt_ms for s in far.topology.varying.shapes] == [0, 20, 85, 170]
    assert [s.rtt_ms for s in quick.topology.varying.shapes] == [0, 40] and quick.profile.repeat == 1
    # the ramp study's 20 cells, 4 targets on 5 scenarios, in the one its [quick] scenarios name (no
    # claims); the bursts' two claims' cells and nothing more ([quick] scenarios = [])
    ramp = presets.load("mvc-vs-reactive-ramp", catalog, quick=True).matrix
    assert ramp == {"spring-mvc:platform": ["db-write"]}
    assert presets.load("cpu-and-io-bursts", catalog, quick=True).matrix == {
        "spring-mvc:platform": ["cpu"], "spring-webflux:reactive": ["cpu"]}
    # without [quick] scenarios, every scenario of the preset once, beside the claims' cells
    assert presets.quick_cover({"a:x": ["json", "redis"], "b:y": ["redis", "sleep"]}, ()) == {
        "a:x": ["json", "redis"], "b:y": ["sleep"]}
    models = presets.load("spring-concurrency-models", catalog)
    assert len(models.matrix) == 8 and models.profile.requests == 10_000
    assert models.profile.concurrency == (500, 1000, 2000) and models.profile.repeat == 3
    bursts = presets.load("cpu-and-io-bursts", catalog)
    assert bursts.matrix["spring-webflux:jdbc-elastic"] == ["db-read"]
    assert bursts.matrix["spring-mvc:platform"] == ["cpu", "db-read"]
    assert (bursts.starts, bursts.jvm_modes) == (("warm", "cold"), ("default",))   # the study ran cold
    assert presets.load("redis-frameworks", catalog).cpus(have=2) == ("1", "0")
    assert presets.load("redis-frameworks", catalog).cpus(have=8) == ("6-7", "0-5")


def test_a_quick_form_run_as_another_s_is_that_one_but_for_what_it_adds():
    from test_presets import RUN_AS
    catalog = discover()
    for name, other in RUN_AS.items():
        mine, theirs = presets.load(name, catalog, quick=True), presets.load(other, catalog, quick=True)
        assert (mine.matrix, mine.jvm_modes, mine.starts, mine.jfr) == (theirs.matrix, theirs.jvm_modes, theirs.starts,
                                                                        theirs.jfr), name
        # capacity-at-slo's quick search is the overload part's, which then spikes the target too
        assert dataclasses.replace(theirs.profile, name=mine.profile.name, source=mine.profile.source, spike_s=0,
                                   recovery_window_s=mine.profile.recovery_window_s) == mine.profile, name


def _quick_table(name: str) -> dict:
    """The [quick] table of a shipped preset as written (a part's, for NAME:PART)."""
    base, _, part = name.partition(presets.PART)
    doc = tomllib.loads(presets.shipped()[base].read_text())
    return next(p for p in doc["parts"] if p["name"] == part).get("quick", {}) if part else doc.get("quick", {})


def test_a_bad_preset_part_is_named(tmp_path, monkeypatch):
    text = presets.shipped()["cold-start-and-spike"].read_text()
    monkeypatch.setattr(presets, "PRESETS_DIR", tmp_path)
    for bad, good, name, field, problem in (
            ('name = "Cold Part"', 'name = "cold"', "mine:overload", "parts[0]", "lower-case letters, digits and -"),
            ('kind = "soak"', 'kind = "burst"', "mine:cold", "profile.kind", "'soak' is not a profile kind")):
        (tmp_path / "mine.toml").write_text(text.replace(good, bad, 1))
        with pytest.raises(ManifestError) as e:
            presets.load(name, discover())
        assert e.value.field == field and "mine.toml" in str(e.value) and problem in str(e.value)


BAD_PROFILES = [
    ('kind = "soak"\n', "kind", "not a profile kind; valid: throughput, burst, rate, capacity, ramp"),
    ('kind = "burst"\ndriver = "wrk"\nrequests = 10\n', "driver", "cannot run a burst profile"),
    ('kind = "burst"\nrequests = 100\nconcurrency = [500]\n', "requests", "fewer than the largest concurrency"),
    ('kind = "throughput"\nconcurrency = [0]\n', "concurrency", "each 1 to 20,000"),
    ('kind = "throughput"\nduration = "soon"\n', "duration", "is not a duration"),
    ('kind = "rate"\n', "rates", "must be a whole number or a list"),
    ('kind = "capacity"\noverload = [0.5, 2]\n', "overload", "each above 1 and at most 10"),
    ('kind = "ramp"\n', "ramp", "needs a [ramp] table"),
    ('kind = "ramp"\n[ramp]\nstart_users = 5\nstep_users = 5\nstep_duration = "1s"\nsteps = 0\n', "ramp.steps",
     "at least 1"),
    ('kind = "throughput"\nconcurency = [5]\n', "concurency", "unknown field"),
    ('kind = "throughput"\nconcurrency = [\n', "(syntax)", ""),
]


@pytest.mark.parametrize("text,field,problem", BAD_PROFILES)
def test_a_bad_profile_names_its_file_and_field(tmp_path, text, field, problem):
    path = tmp_path / "mine.toml"
    path.write_text(text)
    with pytest.raises(ManifestError) as e:
        profiles.load(str(path))
    assert e.value.field == field and str(path) in str(e.value) and problem in str(e.value)


def test_an_unknown_profile_lists_the_valid_ones():
    with pytest.raises(UsageError, match="unknown profile 'soak'.*valid: burst, capacity, ramp, rate, throughput"):
        profiles.load("soak")


def run_profile(results_dir, *args):
    r = bench("run", *PORTS, "-f", "fixture:ok", "--results-dir", str(results_dir), *args, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    run = results.find_run(None, results_dir)
    return results.load(run), results.load_timeseries(run), json.loads((run / "run.json").read_text())


@pytest.mark.slow
def test_burst_sends_exactly_the_requests_asked_at_each_concurrency(results_dir):
    df, ts, meta = run_profile(results_dir, "-s", "json,sleep", "-p", "burst", "--requests", "600",
                               "-c", "20,600", "--warmup", "1s", "--warmup-max", "1s")
    assert len(df) == 4 and set(df["driver"]) == {"k6"} and set(df["kind"]) == {"burst"}
    assert (df["status"] == "ok").all() and (df["requests"] == 600).all(), df[["requests", "status", "reason"]]
    assert df["rate"].isna().all() and df["step"].isna().all() and ts.empty
    sleep = df[df["scenario"] == "sleep"].set_index("concurrency")
    # 600 requests of 100 ms each over 20 connections take at least 30 rounds: 3 s; over 600
    # connections (one request each: one batch) they sleep at once, where k6's default batch of 6
    # at a time would take 10 s
    assert sleep.loc[20, "latency_min_ms"] >= 100 and sleep.loc[20, "duration_s"] >= 3.0
    assert sleep.loc[600, "latency_min_ms"] >= 100 and sleep.loc[600, "duration_s"] < sleep.loc[20, "duration_s"] / 2
    assert (df["latency_p50_ms"] <= df["latency_p95_ms"]).all() and (df["latency_p95_ms"] <= df["latency_max_ms"]).all()
    assert meta["plan"]["profile"]["requests"] == 600


@pytest.mark.slow
def test_h2load_bursts_too(results_dir, tmp_path):
    path = tmp_path / "h2.toml"
    path.write_text('kind = "burst"\ndriver = "h2load"\nrequests = 300\nconcurrency = [30]\nwarmup = "0s"\n')
    df, _, _ = run_profile(results_dir, "-s", "sleep", "-p", str(path))
    assert df.loc[0, "driver"] == "h2load" and df.loc[0, "requests"] == 300, df.iloc[0]
    assert df.loc[0, "latency_min_ms"] >= 100 and df.loc[0, "latency_stdev_ms"] >= 0


@pytest.mark.slow
def test_h2load_says_when_it_cannot_read_a_status_line(tmp_path):
    """Debian's h2load counts a response whose status line has no reason phrase (Tomcat's) as failed."""
    import socket
    import threading

    from orchestrator.config.driver_registry import get
    from orchestrator.config.load import LoadSpec
    from orchestrator.config.scenarios import SCENARIOS
    from orchestrator.drivers.base import DriverFailed
    server = socket.create_server(("127.0.0.1", 0))

    def serve():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn, conn.makefile("rb") as f:
                while f.readline():
                    while f.readline() not in (b"\r\n", b""):
                        pass
                    conn.sendall(b"HTTP/1.1 200 \r\nContent-Length: 2\r\n\r\nok")

    threading.Thread(target=serve, daemon=True).start()
    spec = LoadSpec(port=server.getsockname()[1], scenario=SCENARIOS["plaintext"], concurrency=2, duration_s=0,
                    cpus="0", timeout_s=10, out_dir=tmp_path, requests=20)
    with pytest.raises(DriverFailed, match="without a reason phrase, as Tomcat sends; use the k6 burst driver"):
        get("h2load").run(spec)
    server.close()


@pytest.mark.slow
def test_rate_holds_the_arrival_rate_in_an_open_model(results_dir):
    df, ts, _ = run_profile(results_dir, "-s", "sleep", "-p", "rate", "--rate", "100,300", "-c", "100",
                            "-d", "3s", "--warmup", "1s", "--warmup-max", "1s")
    assert list(df["rate"]) == [100.0, 300.0] and set(df["driver"]) == {"pacer"}
    assert (df["status"] == "ok").all(), df["reason"]
    for _, row in df.iterrows():
        # An open model: throughput is the rate asked for, whatever the 100 ms responses do.
        assert abs(row["rps"] - row["rate"]) <= 0.1 * row["rate"], row[["rate", "rps"]]
        assert row["latency_p50_ms"] >= 100 and row["dropped"] == 0
    assert "littles-law" not in ",".join(df["check_flags"])


@pytest.mark.slow
def test_a_rate_the_connections_cannot_carry_is_flagged(results_dir):
    # 5 connections with 100 ms each carry at most 50 req/s: at 100 req/s pacer's arrivals wait for a
    # connection, and only what was sent inside the window is throughput
    df, _, _ = run_profile(results_dir, "-s", "sleep", "-p", "rate", "--rate", "100", "-c", "5", "-d", "2s",
                           "--warmup", "0s")
    row = df.iloc[0]
    assert "rate-not-met" in row["check_flags"] and 40 <= row["rps"] <= 60, row
    # their wait is in their latency: the last sent waited about a second for a connection; pacer's own
    # lag is in none of it. Few arrivals find a connection idle here, so its lag p99 is their slowest:
    # one send 9.5 ms late, with the host holding CPU 0 for ~28 ms in a poll, read "p99 9.5 ms" in CI's
    # rehearsal. What says the generator lagged is its own rule (generator-behind-schedule) and how many
    # it sent late: at most 1 % of the 200 arrivals.
    assert row["latency_max_ms"] >= 900 and row["late_sends"] <= 2, row
    assert "generator-behind-schedule" not in row["check_flags"], row


@pytest.mark.slow
def test_k6_runs_a_closed_loop_too(results_dir, tmp_path):
    path = tmp_path / "k6-closed.toml"
    path.write_text('kind = "throughput"\ndriver = "k6"\nconcurrency = [10]\nduration = "3s"\nwarmup = "0s"\n')
    df, _, _ = run_profile(results_dir, "-s", "sleep", "-p", str(path))
    assert df.loc[0, "driver"] == "k6" and df.loc[0, "profile"] == "k6-closed"
    # 10 VUs in a closed loop on a 100 ms endpoint: ~100 req/s, and Little's law holds.
    assert 80 <= df.loc[0, "rps"] <= 101 and 0.75 <= df.loc[0, "littles_ratio"] <= 1.25
    assert df.loc[0, "bytes"] > 0


@pytest.mark.slow
def test_ramp_writes_a_row_per_step_and_a_time_series_with_workers(results_dir, tmp_path):
    path = tmp_path / "short-ramp.toml"
    path.write_text('kind = "ramp"\nwarmup = "0s"\n'
                    '[ramp]\nstart_users = 5\nstep_users = 10\nstep_duration = "3s"\nsteps = 3\nworkers = 2\n')
    df, ts, _ = run_profile(results_dir, "-s", "sleep", "-p", str(path), "--jfr")
    assert list(df["step"]) == [1, 2, 3] and list(df["concurrency"]) == [5, 15, 25]
    # Flight Recorder's evidence per step, over the step's own seconds: each user's request sleeps
    # nearly all its time, so about as many threads are asleep on average as the step has users
    assert df["jfr_error"].isna().all(), df["jfr_error"]
    asleep = df["jfr_sleep_ms"] / 1000 / df["duration_s"]
    assert ((asleep >= 0.5 * df["concurrency"]) & (asleep <= 1.1 * df["concurrency"])).all(), asleep
    assert set(df["driver"]) == {"locust"} and (df["status"] == "ok").all(), df["reason"]
    # Users with no think time on a 100 ms endpoint: about 10 req/s per user.
    for _, row in df.iterrows():
        assert 6 * row["concurrency"] <= row["rps"] <= 10.5 * row["concurrency"], row[["concurrency", "rps"]]
        assert row["latency_p50_ms"] >= 100 and row["server_peak_threads"] > 0
    assert {"t_s", "users", "rps", "failures_per_s", "p95_ms", "server_cpu_pct"} <= set(ts.columns)
    assert ts["users"].max() == 25 and ts["t_s"].is_monotonic_increasing and (ts["p95_ms"].dropna() >= 100).all()
    # The series and the steps count the same requests (the steps leave out no whole second).
    assert ts["rps"].sum() >= df["requests"].sum() > 0


def test_ramp_rejects_options_that_do_not_apply(results_dir):
    r = bench("run", *PORTS, "-f", "fixture:ok", "-p", "ramp", "-c", "64", "--results-dir", str(results_dir))
    assert r.returncode == 2 and "--concurrency does not apply to the ramp profile" in r.stderr
    assert not list(results_dir.iterdir())


def test_a_malformed_profile_file_is_one_line_and_exit_2(results_dir, tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text('kind = "burst"\nrequests = 5\nconcurrency = [50]\n')
    r = bench("run", *PORTS, "-f", "fixture:ok", "-p", str(path), "--results-dir", str(results_dir))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert f"{path}: field 'requests': 5 is fewer than the largest concurrency 50" in " ".join(r.stderr.split())


@pytest.mark.parametrize("profile,said", [
    ("ramp", "'locust' not found: install it with `"),
    # k6 is built on first use (infra/installs.py): with a Go that cannot build it, the run ends before
    # anything starts, naming the build's log and how to build it by hand
    ("burst", "could not build k6: `go install go.k6.io/k6@v1.8.1` exited with 1; its output is in"),
    # pacer is compiled on first use: without a C compiler the run ends before anything starts too
    ("rate", "'cc' not found: install it with `apt-get install -y gcc`")])
def test_a_missing_load_generator_says_how_to_install_it(results_dir, tmp_path, profile, said):
    """bench finds Locust and k6 beside its own Python first (.venv/bin): run it from a Python whose
    folder has neither, with a PATH that has wrk and a `go` that fails, but not the tool."""
    import os
    import shutil
    import subprocess
    import sys
    import sysconfig

    from conftest import ROOT, bench_env
    bin_dir, home = tmp_path / "bin", tmp_path / "home"
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(os.path.realpath(sys.executable))
    shutil.copy(shutil.which("wrk"), bin_dir / "wrk")
    (bin_dir / "go").write_text('#!/bin/sh\necho "go: proxy.golang.org: no such host"\nexit 1\n')
    (bin_dir / "go").chmod(0o755)
    # outside a virtualenv a generator is built into BENCH_HOME's .bench-state/bin, its log beside it
    env = bench_env(PATH=str(bin_dir), PYTHONPATH=f"{ROOT}:{sysconfig.get_paths()['purelib']}", BENCH_HOME=str(home))
    r = subprocess.run([str(bin_dir / "python"), "-m", "orchestrator.cli", "run", *PORTS, "-f", "fixture:ok", "-p",
                        profile, "--results-dir", str(results_dir)], cwd=ROOT, env=env, text=True,
                       capture_output=True, timeout=300)
    assert r.returncode == 2, r.stdout + r.stderr
    line = " ".join(r.stderr.split())
    assert said in line, r.stderr
    if profile == "ramp":
        assert "pip install locust==2.47.0" in line, r.stderr
    elif profile == "burst":
        log = home / ".bench-state" / "k6-build.log"
        assert f"log: {log})" in line and "GOBIN=" in line and "go install go.k6.io/k6@v1.8.1" in line, r.stderr
        assert "no such host" in log.read_text()
    assert not list(results_dir.iterdir())


def test_options_left_out_take_the_presets_settings_and_cpus_go_as_a_pair():
    from orchestrator import REPO_ROOT
    from orchestrator.cli.common import parse_settings as _settings
    redis = presets.load("redis-frameworks", discover(REPO_ROOT / "frameworks"))
    redis_cpus = redis.cpus()
    taken = _settings(None, None, None, 8080, 16379, 13306, preset=redis)
    assert taken.heap == "128m" and (taken.server_cpus, taken.loadgen_cpus) == (redis_cpus or ("1", "0"))
    mine = _settings("1", None, "256m", 8080, 16379, 13306, fresh_jvm_per_scenario=True, preset=redis)
    assert (mine.server_cpus, mine.loadgen_cpus, mine.heap, mine.fresh_jvm_per_scenario) == ("1", "0", "256m", True)
    assert _settings(None, None, None, 8080, 16379, 13306).heap == "512m"
