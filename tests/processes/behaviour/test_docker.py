"""The docker runtime end to end: the fixture target and Redis/MariaDB in containers, real limits."""
from __future__ import annotations

import ipaddress
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import pytest
from conftest import FIXTURES, PORTS, ROOT, bench, bench_env, wait_for
from rich.console import Console

from orchestrator.config.catalog import discover, resolve
from orchestrator.config.plan import Settings
from orchestrator.config.topology import LOCAL, Topology
from orchestrator.infra.docker_engine import LABEL_OWNER, client, connect
from orchestrator.infra.network import Network
from orchestrator.infra.procs import in_netns, spawn, stop_pid
from orchestrator.targets import aot_cache
from orchestrator.targets.environment import Environment

DOCKER = ["--runtime", "docker", "--offline"]


def test_run_in_containers_writes_the_same_rows(results_dir):
    """The rows of the process runtime, here of a JVM started from the JDK's AOT cache (one JVM start
    more than the default mode's, for the training) and recorded by Flight Recorder: the suite's time
    is short."""
    r = bench("run", "-f", "fixture:ok", "-s", "json,sleep", "-c", "8", "--warmup", "1s", "--warmup-max", "1s", "-d", "2s",
              "--jvm-mode", "aot-cache", "--jfr", "--memory", "768m", "--results-dir", str(results_dir), *DOCKER,
              *PORTS)
    assert r.returncode == 0, r.stdout + r.stderr
    run = next(results_dir.iterdir())
    df = pd.read_parquet(run / "measurements.parquet")
    assert set(df["runtime"]) == {"docker"} and (df["status"] == "ok").all()
    assert (df["rps"] > 0).all() and (df["server_cpu_s"] > 0).all() and (df["server_peak_threads"] > 5).all()
    assert (df["container_peak_mem_mb"] > 10).all() and df["gc_count"].notna().all()
    sleep = df[df["scenario"] == "sleep"].iloc[0]
    assert 100 <= sleep["latency_p50_ms"] < 200
    assert not client().containers.list(all=True, filters={"label": LABEL_OWNER})
    # the cache, written by the training container's JVM through its mount into the run's folder
    record = json.loads((run / "run.json").read_text())["aot_caches"]["fixture:ok"]
    assert (run / record["cache"]).stat().st_size > 1_000_000 and aot_cache.DONE in (run / record["log"]).read_text()
    # and mapped by the measured one: its own class loading log, written through its mount, says so
    log = run / "logs" / f"fixture-ok-aot-cache-{run.name}{aot_cache.CLASS_LOG_SUFFIX}"
    assert "] Fixture source: shared objects file" in log.read_text()
    assert (df["classes_from_cache"] > 0.5 * df["classes_loaded"]).all(), df[["classes_loaded", "classes_from_cache"]]
    # the JVM writes its recording in the container's /tmp, taken through /proc/<pid>/root: json's
    # window keeps its one CPU busy, so Flight Recorder sampled its server (the JDK's) there
    assert df["jfr_error"].isna().all(), df["jfr_error"]
    assert all((run / f).stat().st_size > 0 for f in df["jfr_file"])
    json_row = df[df["scenario"] == "json"].iloc[0]
    assert json_row["jfr_samples"] > 10 and "sun.net.httpserver" in json_row["jfr_hot_methods"], json_row["jfr_hot_methods"]
    # thread dumps through the container's attach socket: the sleeps wait on no lock of the application's
    assert (df["dump_samples"] >= 2).all() and sleep["dump_app_lock_waiting"] == 0


def test_the_jvm_in_the_container_sees_its_cpu_and_memory_limits(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCH_FRAMEWORKS_DIR", str(FIXTURES))
    settings = Settings(runtime="docker", offline=True, memory="768m", server_cpus="1", port=29080)
    environment = Environment(settings, tmp_path, Console(quiet=True))
    environment.catalog = discover(FIXTURES)
    target = resolve(environment.catalog, "fixture:ok")
    environment.build_all([target])
    started = environment.start(target, {}, "limits")
    try:
        c = started.server.container
        c.reload()
        host = c.attrs["HostConfig"]
        assert host["CpusetCpus"] == "1" and host["NetworkMode"] == "host"
        assert host["Memory"] == host["MemorySwap"] == 768 * 2**20
        assert c.attrs["Config"]["User"] == "10001:10001"
        assert "-XX:ActiveProcessorCount=1" in c.attrs["Config"]["Cmd"]
        # A JVM in the same container reports the limits the container gives it.
        code, out = c.exec_run(["java", "-XshowSettings:system", "-version"])
        text = out.decode()
        assert code == 0, text
        assert re.search(r"Effective CPU Count: 1\b", text), text
        assert re.search(r"Memory Limit: 768\.00M", text), text
        whoami = c.exec_run(["id", "-u"]).output.decode().strip()
        assert whoami == "10001"
    finally:
        started.stop()


def test_sigkill_mid_run_then_clean_leaves_no_container(results_dir):
    argv = [sys.executable, "-m", "orchestrator.cli", "run", "-f", "fixture:ok", "-s", "plaintext,json,cpu",
            "-c", "4,8", "--warmup", "0s", "-d", "3s", "--results-dir", str(results_dir), *DOCKER, *PORTS]
    env = {**os.environ, "BENCH_FRAMEWORKS_DIR": str(FIXTURES)}
    proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not list(results_dir.glob("*/measurements.parquet")):
        time.sleep(0.2)
    mine = {"label": f"{LABEL_OWNER}={proc.pid}"}
    assert client().containers.list(filters=mine), "the run should have a target and infrastructure in containers"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    # Containers are not children of the orchestrator: they outlive it until `bench clean`.
    assert client().containers.list(all=True, filters=mine)
    r = bench("clean")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "removed container" in r.stdout
    assert not client().containers.list(all=True, filters=mine)
    kept = pd.read_parquet(next(results_dir.glob("*/measurements.parquet")))
    assert len(kept) >= 1 and (kept["status"] == "ok").all()


def tls_files(folder: Path, address: str) -> Path:
    """A CA, the engine's certificate for address and a client's, as dockerd and DOCKER_CERT_PATH
    (ca.pem, cert.pem, key.pem) want them."""
    folder.mkdir()

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=folder, check=True, capture_output=True)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl("req", "-x509", *ec, "-keyout", "ca-key.pem", "-out", "ca.pem", "-days", "1", "-subj", "/CN=bench-ca")
    for name, usage, alt in (("server", "serverAuth", f"subjectAltName=IP:{address}\n"), ("", "clientAuth", "")):
        (folder / f"{name}ext.cnf").write_text(f"{alt}extendedKeyUsage={usage}\n")
        openssl("req", *ec, "-keyout", f"{name}key.pem", "-out", f"{name}.csr", "-subj", f"/CN={name or 'client'}")
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca-key.pem", "-CAcreateserial",
                "-out", f"{name}cert.pem", "-days", "1", "-extfile", f"{name}ext.cnf")
    return folder


@pytest.fixture(scope="module")
def engine_host():
    """A second Docker engine on another host: a network namespace of this machine, reached only over
    its link, with a data root of its own (so it starts without any image), over TLS on 2376 as
    docs/docker.md says. Yields (the variables that name it: DOCKER_HOST, DOCKER_TLS_VERIFY,
    DOCKER_CERT_PATH; the host's namespace; this machine's address toward it). One for the module:
    the first test that uses it finds it without images, the next finds the image that test shipped."""
    topo = Topology(name="engine-host", server="engine")
    net = Network(topo, os.getpid(), cpus="0")
    net.up()
    root = Path(tempfile.mkdtemp(prefix="bench-engine-"))
    address = net.address("engine", LOCAL)
    engine = None
    try:
        certs = tls_files(root / "certs", address)
        # on the load CPU: the engine's own work must not land on the server's
        engine = spawn(["dockerd", "--iptables=false", "--bridge=none", "--ip-masq=false", "--tlsverify",
                        "--tlscacert", str(certs / "ca.pem"), "--tlscert", str(certs / "servercert.pem"),
                        "--tlskey", str(certs / "serverkey.pem"), "-H", f"tcp://{address}:2376",
                        "--data-root", str(root / "data"), "--exec-root", str(root / "exec"),
                        "--pidfile", str(root / "dockerd.pid")],
                       log_path=root / "dockerd.log", cpus="0", netns=net.namespace("engine"))
        engine_env = {"DOCKER_HOST": f"tcp://{address}:2376", "DOCKER_TLS_VERIFY": "1", "DOCKER_CERT_PATH": str(certs)}
        wait_for(lambda: _answers(engine_env), 90, "the second engine")
        yield engine_env, net.namespace("engine"), net.address(LOCAL, "engine")
    finally:
        if engine:
            engine.terminate()
            try:
                engine.wait(timeout=60)
            except subprocess.TimeoutExpired:
                stop_pid(engine.pid, grace=5)
        # the engine leaves its namespace handle mounted under its exec root
        for mount in reversed(Path("/proc/mounts").read_text().splitlines()):
            if mount.split()[1].startswith(str(root)):
                subprocess.run(["umount", "-l", mount.split()[1]], check=False)
        shutil.rmtree(root, ignore_errors=True)
        net.down()


@pytest.fixture
def remote_engine(engine_host):
    return engine_host[0]


def _answers(engine_env: dict[str, str]) -> bool:
    try:
        return bool(connect(engine_env, timeout=5).ping())
    except Exception:  # noqa: BLE001 - not up yet
        return False


def test_targets_on_a_remote_engine_are_loaded_from_here(results_dir, remote_engine):
    remote = connect(remote_engine)
    assert not remote.images.list()   # it gets its images from this machine's engine
    env = bench_env(**remote_engine)
    r = bench("run", "-f", "fixture:ok,fixture:exposed", "-s", "json,sleep", "-c", "8", "--warmup", "1s",
              "--warmup-max", "1s", "-d", "2s",
              "--jfr", "--results-dir", str(results_dir), *DOCKER, *PORTS, env=env)
    assert r.returncode == 1, r.stdout + r.stderr   # the exposed target fails its check
    run = next(results_dir.iterdir())
    df = pd.read_parquet(run / "measurements.parquet")
    ok, exposed = df[df["target"] == "fixture:ok"], df[df["target"] == "fixture:exposed"]
    # the listener check reads the remote container's own sockets: the other target binds every address
    assert (exposed["status"] == "failed").all() and exposed["reason"].str.contains("listens beyond").all()
    assert set(ok["runtime"]) == {"docker"} and (ok["status"] == "ok").all() and len(ok) == 2
    # CPU, threads and memory from the stats API; GC counters from the JVM's file fetched through it
    assert (ok["server_cpu_s"] > 0).all() and (ok["server_peak_threads"] > 5).all()
    assert (ok["server_peak_rss_mb"] > 10).all() and (ok["gc_collector"].str.len() > 0).all()
    assert ok["gc_count"].notna().all() and ok["jfr_error"].str.contains("remote Docker engine").all()
    assert ok["server_switches_per_request"].isna().all()   # its threads' schedstat is not in sight
    sleep = ok[ok["scenario"] == "sleep"].iloc[0]
    assert 100 <= sleep["latency_p50_ms"] < 200
    meta = json.loads((run / "run.json").read_text())
    engine = meta["docker_engine"]
    address = remote_engine["DOCKER_HOST"].split("//")[1].split(":")[0]
    assert engine["address"] == address and ipaddress.ip_address(address) in ipaddress.ip_network("198.18.0.0/15")
    assert 0 < engine["rtt_ms"] < 5
    # the JVM ran there: it served at an address that exists only in the engine's namespace
    assert (ok["rps"] > 0).all() and address not in subprocess.run(["ip", "-o", "addr"], capture_output=True,
                                                                   text=True).stdout
    assert any(i.tags and i.tags[0].startswith("bench/fixture:") for i in remote.images.list())
    assert not remote.containers.list(all=True) and not client().containers.list(all=True, filters={"label": LABEL_OWNER})
    report = bench("report", run.name, "--results-dir", str(results_dir), env=env)
    assert report.returncode == 0 and "remote Docker engine" in (run / "report.md").read_text()


def test_locust_workers_on_another_host_load_a_target_on_a_remote_engine(results_dir, tmp_path, engine_host):
    """The study's layout beyond one machine: the target on a remote engine, the ramp's Locust worker
    on a load machine of its own (`bench locust-worker`, started there with nothing but the master's
    address), the master here."""
    engine_env, netns, here = engine_host
    worker = subprocess.Popen(in_netns([sys.executable, "-m", "orchestrator.cli", "locust-worker", "--master",
                                        f"{here}:5557", "--cpus", "0", "--idle", "120s", "--results-dir",
                                        str(tmp_path)], netns),
                              cwd=ROOT, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        profile = tmp_path / "ramp.toml"
        profile.write_text('kind = "ramp"\ndriver = "locust"\nwarmup = "0s"\n'
                           '[ramp]\nstart_users = 4\nstep_users = 4\nstep_duration = "4s"\nsteps = 2\nworkers = 1\n')
        r = bench("run", "-f", "fixture:ok", "-s", "sleep", "-p", str(profile), "--locust-master", here,
                  "--results-dir", str(results_dir), *DOCKER, *PORTS, env=bench_env(**engine_env))
        assert r.returncode == 0, r.stdout + r.stderr
    finally:
        worker.terminate()
        said, _ = worker.communicate(timeout=60)
    assert "its master quit it" in said, said
    run = next(results_dir.iterdir())
    df = pd.read_parquet(run / "measurements.parquet")
    assert len(df) == 2 and (df["status"] == "ok").all()
    assert (df[["errors_connect", "errors_read", "errors_timeout", "errors_status"]].sum(axis=1) == 0).all()
    # 4 and 8 users on a 100 ms answer: about 40 and 80 req/s, all of it from the other host's worker
    assert all(0.6 * 10 * u <= rps <= 10.5 * u for u, rps in zip(df["concurrency"], df["rps"])), df[["concurrency", "rps"]]
    doc = json.loads(next(run.glob("**/locust-*buckets.json")).read_text())
    assert len(doc["workers"]) == 1 and len(doc["cpu"]) == 2
    assert not list(run.glob("**/locust-*worker1.log"))   # none started here
    meta = json.loads((run / "run.json").read_text())
    assert meta["plan"]["settings"]["locust_master"] == f"{here}:5557"
    report = bench("report", run.name, "--results-dir", str(results_dir), env=bench_env(**engine_env))
    assert report.returncode == 0 and "Locust worker on other machines" in (run / "report.md").read_text()
