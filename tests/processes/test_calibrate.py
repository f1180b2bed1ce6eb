"""`bench calibrate`: real nginx, real wrk and k6, a calibration.json the rest of the harness reads."""
from __future__ import annotations

import glob
import json
import signal
import socket

import psutil
from conftest import bench, owned, start_bench, wait_for, work_dirs_of

from orchestrator.drivers.pacer import read_records
from orchestrator.infra import nginx
from orchestrator.infra.hostinfo import host_info
from orchestrator.measure import calibrate, ceilings
from orchestrator.measure.checks import near_ceiling

PORT = "29180"


def calibration_nginx() -> list[str]:
    """nginx processes a calibration started (their command line names its temp folder)."""
    found = []
    for p in psutil.process_iter(["name", "cmdline"]):
        if p.info["name"] == "nginx" and "bench-calibrate-" in " ".join(p.info["cmdline"] or []):
            found.append(f"pid {p.pid}")
    return found


def test_calibrate_stores_ceilings_and_leaves_nothing_running(results_dir):
    # wrk only: k6's closed loop is the same measurement with another driver (test_profiles runs k6
    # closed), and pacer's open-model ceiling is measured, stored and checked by the capacity-at-slo
    # preset's run (test_presets), which has none and must measure it first
    r = bench("calibrate", "--duration", "2s", "--generators", "wrk", "--port", PORT,
              "--results-dir", str(results_dir), timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "wrk: " in r.stdout      # a progress line per generator
    assert calibration_nginx() == []

    doc = json.loads((results_dir / ceilings.FILE).read_text())
    (record,) = doc["machines"].values()
    e = record["generators"]["wrk"]
    assert e["ceiling_rps"] > 0 and e["concurrency"] in calibrate.LEVELS
    assert e["bound"] in ("server", "generator", "neither")
    assert e["version"] and e["server"].startswith("nginx")
    assert (e["server_cpus"], e["loadgen_cpus"]) == ("1", "0")
    assert e["generator_cpu_pct"] > 0 and e["server_cpu_pct"] > 0
    assert "open_ceiling_rps" not in e   # wrk runs no arrival rates
    # the downstream service, on the generator's CPU with wrk on the server's: its calls a second with no
    # delay and with the default one, none of them early
    d = record["downstream"]
    assert "downstream: 0 ms delay at 256 connections" in " ".join(r.stdout.split())
    assert [(lv["delay_ms"], lv["connections"]) for lv in d["levels"]] == [(0, 256), (20, 1024)]
    assert d["ceiling_rps"] > 0 and all(lv["errors"] == 0 for lv in d["levels"])
    assert d["levels"][1]["p50_ms"] >= 20 and d["downstream_cpus"] == "0"

    found = ceilings.ceilings(results_dir=results_dir)
    assert set(found) == {"wrk"}
    for ceiling in found.values():
        assert near_ceiling(0.81 * ceiling, ceiling)
        assert not near_ceiling(0.79 * ceiling, ceiling)
    assert not near_ceiling(1e9, found.get("h2load"))   # not calibrated: never near
    # a ceiling measured with the generator on other CPUs is not this pinning's bar
    assert ceilings.ceilings(results_dir=results_dir, loadgen_cpus="0") == found
    assert ceilings.ceilings(results_dir=results_dir, loadgen_cpus="0,1") == {}


def test_not_calibrated_is_empty(tmp_path):
    assert ceilings.ceilings(results_dir=tmp_path) == {}


def test_unknown_generator_is_one_line_and_exit_2(results_dir):
    r = bench("calibrate", "--generators", "wrk,ab", "--port", PORT, "--results-dir", str(results_dir))
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1 and "'ab'" in r.stderr
    assert not (results_dir / ceilings.FILE).exists()


def test_busy_port_is_one_line_and_exit_2(results_dir):
    with socket.socket() as s:
        s.bind(("127.0.0.1", int(PORT) + 1))
        s.listen()
        r = bench("calibrate", "--generators", "wrk", "--port", str(int(PORT) + 1), "--results-dir", str(results_dir))
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1 and "in use" in r.stderr
    assert calibration_nginx() == []


def test_a_killed_calibration_leaves_nothing_after_bench_clean(results_dir):
    run = start_bench("calibrate", "--duration", "5s", "--generators", "wrk", "--port", str(int(PORT) + 2),
                      "--results-dir", str(results_dir))
    wait_for(lambda: owned(run.pid, "wrk"), 120, "the calibration's load")
    work = work_dirs_of(run.pid, "bench-calibrate-*")
    assert len(work) == 1
    run.send_signal(signal.SIGKILL)
    run.wait(timeout=30)
    wait_for(lambda: calibration_nginx() == [], 30, "nginx to end with its orchestrator")   # PR_SET_PDEATHSIG
    r = bench("clean")
    assert r.returncode == 0, r.stdout + r.stderr
    assert not glob.glob(work[0]) and work[0] in r.stdout


def test_an_open_model_ceiling_joins_an_entry_of_the_same_pinning_and_replaces_one_of_another(tmp_path):
    host = host_info()
    ceilings.store(tmp_path, host, {"k6": {"ceiling_rps": 30_000, "loadgen_cpus": "0"}})
    ceilings.store(tmp_path, host, {"k6": {"open_ceiling_rps": 5_000, "loadgen_cpus": "0"}}, merge=True)
    assert ceilings.ceilings(results_dir=tmp_path, loadgen_cpus="0") == {"k6": 30_000}
    assert ceilings.ceilings(results_dir=tmp_path, loadgen_cpus="0", key="open_ceiling_rps") == {"k6": 5_000}
    # measured with k6 on other CPUs: the closed-loop figure of CPU 0 must not pass for theirs
    ceilings.store(tmp_path, host, {"k6": {"open_ceiling_rps": 7_000, "loadgen_cpus": "0-1"}}, merge=True)
    assert ceilings.ceilings(results_dir=tmp_path, loadgen_cpus="0-1") == {}
    assert ceilings.ceilings(results_dir=tmp_path, loadgen_cpus="0-1", key="open_ceiling_rps") == {"k6": 7_000}


def test_pacer_s_open_model_on_a_mix_is_searched_as_on_one_path(tmp_path):
    # up to a cap of 2,000/s (what a quick search here may offer), coarsely: a few seconds. What it keeps
    # is the machine's (a host that stole the CPU made pacer late at 2,000/s in one rehearsal): the full
    # ceiling on the mix beside one path's is `bench calibrate`'s to measure (docs/load-generators.md)
    lines = []
    with nginx.serving(int(PORT), "1", tmp_path) as servers:
        found = calibrate.open_model("pacer", servers, int(PORT), "0", tmp_path, 1.0, lines.append, resolution=0.5,
                                     needed=2_000, scenario=calibrate.MIX)
    assert found["open_probes"] and found["open_ceiling_rps"] > 0, (found, lines)
    assert found["open_ceiling_rps"] == max(p["rate"] for p in found["open_probes"] if p["verdict"].startswith("pass"))
    # the host's timer first (pacer idle between arrivals), said when pacer lagged at all, then each probe
    floor = found["open_timer_floor_ms"]
    assert floor >= 0 and (f"its lag p99 {floor:g} ms is this host's timer" in lines[0]) == (floor > 0), lines
    probes = lines[1:] if floor > 0 else lines
    assert len(probes) == len(found["open_probes"]) and all(" on plaintext+json at " in line for line in probes), lines
    # each arrival drew one of the two paths, half each; its record says which (in its flags: a mixed
    # arrival's record is as large as one path's, 24 bytes)
    kept = sorted((tmp_path / "pacer-open-plaintext+json").glob("*.records.parquet"))
    assert kept, sorted(str(p) for p in tmp_path.rglob("*"))
    part = read_records(kept[-1])["flags"] >> 8
    assert set(part) == {0, 1} and abs((part == 0).mean() - 0.5) < 0.05, part


def test_a_probe_failed_while_the_host_stole_is_probed_again_before_it_counts(tmp_path, monkeypatch):
    # A rate pacer cannot keep here (five times its ceiling on this machine) fails for real; the host's
    # steal is read as 30 % in the two windows after the timer's (host steal cannot be caused on purpose):
    # each is probed again, the third counts, and the search's own second try at a failed rate follows as
    # before. (Four probes at 1,000,000/s took 50 s of CI, most of it reading a million records each.)
    windows, real = [], calibrate.steal_since

    def steal_since(cpus, before=None):
        now, pct = real(cpus, before)
        if before is not None:
            windows.append(pct)
        return now, (30.0 if before is not None and len(windows) in (2, 3) else pct)

    monkeypatch.setattr(calibrate, "steal_since", steal_since)
    monkeypatch.setattr(calibrate, "OPEN_START", 200_000)
    monkeypatch.setattr(calibrate, "OPEN_PROBES", 2)
    lines = []
    with nginx.serving(int(PORT), "1", tmp_path) as servers:
        found = calibrate.open_model("pacer", servers, int(PORT), "0", tmp_path, 1.0, lines.append, resolution=0.5)
    probes = found["open_probes"]
    assert [p["rate"] for p in probes] == [200_000] * 4, probes
    assert [p["verdict"].endswith("; probed again") for p in probes] == [True, True, False, False], probes
    assert all(p["verdict"].startswith("fail") for p in probes) and found["open_ceiling_rps"] < 200_000, probes
    said = [line for line in lines if " at 200,000/s: " in line]
    assert len(said) == 4 and all("the host stole 30 % of the CPUs: probed again" in line for line in said[:2]), lines
    assert not any("probed again" in line for line in said[2:]), lines
