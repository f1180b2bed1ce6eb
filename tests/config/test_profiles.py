"""Load profiles and presets as files: they parse, bad ones are named, options that do not apply are
refused, a missing generator says how to install it, and a preset's settings are taken."""
from __future__ import annotations

import dataclasses
import tomllib

import pytest
from conftest import PORTS, RUN_AS, bench

from orchestrator.config import claim_fields, kinds, presets, profiles
from orchestrator.config.catalog import discover
from orchestrator.config.driver_registry import drivers_by_kind
from orchestrator.errors import ManifestError, UsageError


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
        "mvc-vs-reactive-ramp:db", "mvc-vs-reactive-ramp:light", "mvc-vs-reactive-ramp:sleep",
        "cpu-and-io-bursts", "far-database", "cpu-yield", "cold-start-and-spike:cold",
        "cold-start-and-spike:overload", "service-calls:fan-out", "service-calls:cache-aside",
        "service-calls:burst"}
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
    # the ramp study's db part, 4 targets on 2 scenarios, in the one its [quick] scenarios name (no
    # explanation claims); the bursts' two claims' cells and nothing more ([quick] scenarios = [])
    ramp = presets.load("mvc-vs-reactive-ramp:db", catalog, quick=True).matrix
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
    catalog = discover()
    for name, other in RUN_AS.items():
        mine, theirs = presets.load(name, catalog, quick=True), presets.load(other, catalog, quick=True)
        assert (mine.matrix, mine.jvm_modes, mine.starts, mine.jfr) == (theirs.matrix, theirs.jvm_modes, theirs.starts,
                                                                        theirs.jfr), name
        # capacity-at-slo's quick search is the overload part's, which then spikes the target too
        assert dataclasses.replace(theirs.profile, name=mine.profile.name, source=mine.profile.source, spike_s=0,
                                   recovery_window_s=mine.profile.recovery_window_s) == mine.profile, name


def _quick_table(name: str) -> dict:
    """The [quick] table of a shipped preset as written (for NAME:PART, the part's over the preset's)."""
    base, _, part = name.partition(presets.PART)
    doc = tomllib.loads(presets.shipped()[base].read_text())
    mine = next(p for p in doc["parts"] if p["name"] == part).get("quick", {}) if part else {}
    return {**doc.get("quick", {}), **mine}


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
    from orchestrator.config.option_table import Given
    redis = presets.load("redis-frameworks", discover(REPO_ROOT / "frameworks"))
    redis_cpus = redis.cpus()
    taken = _settings(Given(), preset=redis)
    assert taken.heap == "128m" and (taken.server_cpus, taken.loadgen_cpus) == (redis_cpus or ("1", "0"))
    mine = _settings(Given(server_cpus="1", heap="256m", fresh_jvm_per_scenario=True), preset=redis)
    assert (mine.server_cpus, mine.loadgen_cpus, mine.heap, mine.fresh_jvm_per_scenario) == ("1", "0", "256m", True)
    assert _settings(Given()).heap == "512m"
