"""Topologies running: network namespaces of this machine joined by links that carry a round trip, a run
on three hosts, a link that changes between levels, and nothing left after a run, a Ctrl-C or a
SIGKILL followed by `bench clean`; and a probe that waits until the server's and the load generator's
CPUs are quiet (it needs the machine to itself: the fast tier runs beside the builds)."""
from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import psutil
from conftest import PORTS, ROOT, bench, owned, start_bench, wait_for

from orchestrator.config.topology import parse
from orchestrator.core.cpus import settle
from orchestrator.infra.network import Network
from orchestrator.report.network import describe
from orchestrator.results import store as results
from orchestrator.targets.runtimes.process import ProcessServer


def network_traces(owner: int) -> list[str]:
    """The namespaces, links and wires that run `owner` made and that still exist."""
    namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    wires = [p for p in psutil.process_iter(["cmdline"]) if "delay_wire" in " ".join(p.info["cmdline"] or [])
             and p.pid != owner]
    return ([ln for ln in namespaces.splitlines() if f"bench-{owner}-" in ln]
            + [ln for ln in links.splitlines() if f"b{owner}x" in ln] + [str(w.pid) for w in wires])


def test_a_link_delays_by_its_round_trip_and_is_removed_after(tmp_path):
    path = tmp_path / "t.toml"
    path.write_text('server = "app"\ndata = "db"\n[[links]]\nbetween = ["app", "db"]\nrtt = ["0ms", "30ms"]\n')
    topo = parse(path)
    net = Network(topo, os.getpid(), cpus="0")
    net.up()
    try:
        for level in topo.levels():
            net.shape(level, functools.partial(settle, None))
        assert all(0 < p["settled_s"] < 30 for p in net.probes)   # each probed once CPU 0 was quiet
        near, far = (p["rtt"]["app-db"] for p in net.probes)
        # the wire's own cost near, and 30 ms of round trip far (15 ms each way, probed through the
        # kernels): never less, and the fastest probe within 2 ms of it (a busy or stolen CPU only adds)
        assert near["median_ms"] < 1.0 and 30.0 <= far["min_ms"] < 32.0 and far["median_ms"] < 40.0, net.probes
        plain = net.probes[-1]["rtt"]["local-app"]["median_ms"]
        assert plain < 1.0   # a veth link without a shape adds nothing
        assert net.address("db", "app") != net.address("db", "local")   # each link its own addresses
        assert network_traces(os.getpid())
    finally:
        net.down()
    assert network_traces(os.getpid()) == []


def test_a_killed_owner_leaves_namespaces_that_bench_clean_removes(tmp_path):
    script = textwrap.dedent(f"""
        import os, sys, time
        sys.path.insert(0, {str(ROOT)!r})
        from orchestrator.config.topology import load
        from orchestrator.infra.network import Network
        net = Network(load("far-database"), os.getpid(), cpus="0")
        net.up()
        print("up", flush=True)
        time.sleep(600)
    """)
    owner = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert owner.stdout.readline().strip() == "up"
    assert network_traces(owner.pid)
    owner.send_signal(signal.SIGKILL)
    owner.wait(timeout=30)
    # its wire dies with it (PR_SET_PDEATHSIG); its namespaces and links stay until cleaned
    wait_for(lambda: not [t for t in network_traces(owner.pid) if t.isdigit()], 30, "the wire to die")
    assert network_traces(owner.pid)
    r = bench("clean")
    assert r.returncode == 0 and f"network namespace bench-{owner.pid}-app" in r.stdout, r.stdout + r.stderr
    assert network_traces(owner.pid) == []


def test_a_run_on_three_hosts_serves_its_load_across_the_links(results_dir):
    r = bench("run", *PORTS, "-f", "fixture:ok", "-s", "json,sleep", "-c", "8", "--warmup", "0s", "-d", "2s",
              "--topology", "far-database", "--results-dir", str(results_dir))
    assert r.returncode == 0, r.stdout + r.stderr
    run = results.find_run(None, results_dir)
    df = results.load(run)
    assert (df["status"] == "ok").all() and (df["requests"] > 0).all(), df[["scenario", "reason"]]
    assert df["network"].isna().all()   # one level: run.json says where everything ran
    # the row carries the link's round trip as probed (20 ms and the wire's cost), not as configured
    meta = results.load_meta(run)
    probe = meta["network"]["rtt_probes"][0]["rtt"]["app-db"]
    assert (df["network_rtt_ms"] == probe["median_ms"]).all() and 20.0 <= probe["min_ms"] < 22.0, probe
    assert set(meta["network"]["links"]) == {"local-app", "local-db", "app-db"}
    # the target listened at its own host's end of the load's link, in 198.18.0.0/15
    server = meta["network"]["links"]["local-app"]["ends"][1]
    assert server["host"] == "app" and server["address"].startswith("198.1")
    assert (run / "logs" / "verify-fixture-ok-r1.txt").read_text().startswith("ok")
    r = bench("report", run.name, "--results-dir", str(results_dir))
    assert r.returncode == 0 and "Topology far-database" in (run / "report.md").read_text()
    owner = int(server["device"][1:].split("x")[0])   # b<pid>x<link><end>
    assert network_traces(owner) == []


def test_a_link_that_varies_runs_each_cell_at_each_level_with_the_round_trip_probed_there(results_dir, tmp_path):
    # the data host 0 and then 20 ms from the server: each /redis crosses the link once, for its MGET
    path = tmp_path / "varying.toml"
    path.write_text('server = "app"\ndata = "db"\n[[links]]\nbetween = ["app", "db"]\nrtt = ["0ms", "20ms"]\n')
    r = bench("run", *PORTS, "-f", "fixture:ok", "-s", "redis", "-c", "8", "--warmup", "0s", "-d", "2s",
              "--topology", str(path), "--results-dir", str(results_dir))
    assert r.returncode == 0, r.stdout + r.stderr
    run = results.find_run(None, results_dir)
    df, meta = results.load(run).set_index("network"), results.load_meta(run)
    near, far = parse(path).levels()
    assert sorted(df.index) == sorted([near, far]) and (df["status"] == "ok").all(), df[["status", "reason"]]
    # each row carries the round trip probed at its own level, the wire's cost only ever added
    probes = {p["level"]: p["rtt"]["app-db"] for p in meta["network"]["rtt_probes"]}
    assert df.loc[near, "network_rtt_ms"] == probes[near]["median_ms"] and probes[near]["min_ms"] < 2.0, probes
    assert df.loc[far, "network_rtt_ms"] == probes[far]["median_ms"] and 20.0 <= probes[far]["min_ms"] < 22.0, probes
    # far away each request waits the 20-ms round trip at least: at most 400 a second on 8 connections
    # (near: 3,010 here, with a median of 1.2 ms)
    assert df.loc[near, "latency_p50_ms"] < 20.0 <= df.loc[far, "latency_p50_ms"], df["latency_p50_ms"]
    assert df.loc[far, "rps"] <= 8 / 0.020 * 1.05, df["rps"]
    assert subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.count("bench-") == 0


def test_ctrl_c_in_a_run_on_three_hosts_leaves_no_namespace(results_dir):
    run = start_bench("run", *PORTS, "-f", "fixture:ok", "-s", "json", "-c", "8", "--warmup", "0s", "-d", "20s",
                      "--topology", "far-database", "--results-dir", str(results_dir))
    wait_for(lambda: owned(run.pid, "wrk"), what="the first cell's load")
    assert network_traces(run.pid)
    run.send_signal(signal.SIGINT)
    out, _ = run.communicate(timeout=120)
    assert run.returncode != 0, out
    assert network_traces(run.pid) == [], out


def test_a_ramp_with_its_locust_worker_on_another_host(results_dir, tmp_path):
    profile = tmp_path / "ramp.toml"
    profile.write_text('kind = "ramp"\ndriver = "locust"\nwarmup = "0s"\n'
                       '[ramp]\nstart_users = 4\nstep_users = 4\nstep_duration = "4s"\nsteps = 2\nworkers = 1\n')
    run = start_bench("run", *PORTS, "-f", "fixture:ok", "-s", "json", "-p", str(profile),
                      "--topology", "locust-workers-host", "--results-dir", str(results_dir))
    # the worker runs in the workers' namespace, its master on this machine's own stack
    worker = wait_for(lambda: [p for p in owned(run.pid, "--worker")], what="the Locust worker")[0]
    master = owned(run.pid, "--master")[0]
    assert os.readlink(f"/proc/{worker.pid}/ns/net") != os.readlink("/proc/self/ns/net")
    assert os.readlink(f"/proc/{master.pid}/ns/net") == os.readlink("/proc/self/ns/net")
    out, _ = run.communicate(timeout=600)
    assert run.returncode == 0, out
    df = results.load(results.find_run(None, results_dir))
    assert (df["status"] == "ok").all() and len(df) == 2 and (df["requests"] > 0).all(), df
    meta = results.load_meta(results.find_run(None, results_dir))
    assert {"local-gen", "gen-app"} <= set(meta["network"]["links"])
    assert "the Locust master on this machine's own stack and its 1 worker on host gen" in describe(meta)
    assert network_traces(run.pid) == []


def _counting(seconds: float | None, done: Path | None = None, cpu: int | None = None) -> subprocess.Popen:
    """A real process that counts for `seconds` (None: for ever) on `cpu`, then touches `done` and idles."""
    code = (f"import os, pathlib, time\nif {cpu!r} is not None: os.sched_setaffinity(0, {{{cpu!r}}})\n"
            f"t = time.time()\nwhile {seconds!r} is None or time.time() - t < {seconds!r}: pass\n"
            f"pathlib.Path({str(done)!r}).touch()\ntime.sleep(60)")
    return subprocess.Popen([sys.executable, "-c", code])


def test_a_probe_waits_until_the_server_and_the_load_generator_cpus_are_quiet(tmp_path):
    # what the last load left in flight: the server still working off its queue, or (the server
    # waiting) the database counting on the load generator's CPU; settle returns once both are done
    idle = _counting(0, tmp_path / "idle")
    try:
        wait_for(lambda: (tmp_path / "idle").exists(), 30, "an idle process")
        quiet = ProcessServer(idle, tmp_path / "log")
        for busy_server in (True, False):
            done = tmp_path / f"done-{busy_server}"
            busy = _counting(1.5, done, None if busy_server else 0)
            try:
                server = ProcessServer(busy, tmp_path / "log") if busy_server else quiet
                assert settle(server, {0}, max_s=30) < 30 and done.exists()
            finally:
                busy.kill()
                busy.wait()
        spinning = _counting(None, cpu=0)
        try:
            assert settle(quiet, {0}, max_s=1.0) >= 1.0   # never quiet: the cap
        finally:
            spinning.kill()
            spinning.wait()
    finally:
        idle.kill()
        idle.wait()
