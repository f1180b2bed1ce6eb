"""Faults during a run, each against the real thing: the run goes on, the affected cells are stored as
failed with a reason a person understands, finished cells stay, and nothing is left running."""
from __future__ import annotations

import os
import signal
import socket
import time

import pandas as pd
import psutil
import pytest
from conftest import IDLE, PORTS, SIX_CELLS, TARGET_PORT, bench, owned, owned_by, start_bench, wait_for, work_dirs_of

from orchestrator.results import store as results

FAST = ["--warmup", "0s", "-d", "2s", "-c", "4"]


def rows(results_dir) -> pd.DataFrame:
    return results.load(next(results_dir.iterdir()))


def nothing_left(pid: int) -> None:
    wait_for(lambda: not owned_by(pid), 30, "the run's processes to stop")
    leftovers = work_dirs_of(pid)
    assert not leftovers, leftovers


def run_and_interfere(results_dir, args, interfere, frameworks=None):
    """Start a run, call interfere(run) once the target serves load, and wait for the run to end."""
    kw = {} if frameworks is None else {"frameworks": frameworks}
    run = start_bench("run", *args, "--results-dir", str(results_dir), *PORTS, **kw)
    wait_for(lambda: owned(run.pid, "wrk"), what="the first cell's load")
    interfere(run)
    out, _ = run.communicate(timeout=600)
    nothing_left(run.pid)
    return out


@pytest.mark.parametrize("sig,reason", [(signal.SIGKILL, "target exited with -9 during the cell"),
                                        (signal.SIGSTOP, "target stopped answering")])
def test_target_killed_or_frozen_mid_cell(results_dir, sig, reason):
    def interfere(run):
        os.kill(owned(run.pid, "Fixture")[0].pid, sig)
    out = run_and_interfere(results_dir, ["-f", "fixture:ok", "-s", f"{IDLE},json", "--repeat", "2", *FAST], interfere)
    df = rows(results_dir).sort_values(["repeat", "scenario"])
    first, second = df[df["repeat"] == 1], df[df["repeat"] == 2]
    assert (first["status"] == "failed").all(), out
    assert all(reason in r for r in first["reason"]), first["reason"].tolist()
    assert (second["status"] == "ok").all() and (second["requests"] > 0).all(), out


# Each target that cannot start, with the reason its cells are stored with; one run tries them all in
# turn (with the start timeout the slow one needs), and the good target after them is measured.
CANNOT_START = {"fixture:bad-jvm-option": "exited with 1 while starting",
                "fixture:slow-start": "no 200 on /plaintext within 4 s",
                "broken": "build of broken failed",
                "fixture:exposed": f":{TARGET_PORT}: every listener must bind BIND_ADDRESS"}


def test_targets_that_cannot_start_fail_with_their_reasons_and_the_next_is_measured(results_dir):
    r = bench("run", "-f", ",".join([*CANNOT_START, "fixture:ok"]), "--start-timeout", "4s", "-s", f"{IDLE},plaintext",
              *FAST, "--results-dir", str(results_dir), *PORTS)
    assert r.returncode == 1, r.stdout + r.stderr
    df = rows(results_dir)
    for bad, reason in CANNOT_START.items():
        failed = df[df["target"].str.startswith(bad)]
        assert len(failed) >= 1 and (failed["status"] == "failed").all(), (bad, r.stdout)
        assert reason in failed.iloc[0]["reason"], failed.iloc[0]["reason"]
    # a failed build names its log, with the lines that say why
    broken = df[df["target"].str.startswith("broken")].iloc[0]["reason"]
    assert "last lines of" in broken and "DoesNotExist.java" in broken, broken
    good = df[df["target"] == "fixture:ok"]
    assert len(good) == 2 and (good["status"] == "ok").all()


@pytest.mark.parametrize("server,target,scenarios,died", [
    ("redis-server", "vertx:eventloop", "redis,db-read", "redis died during the cell"),
    ("mariadbd", "vertx:eventloop", "db-read,redis", "mariadb died during the cell")])
# (the downstream, which dies and is restarted the same way, is stopped instead: it then answers nothing
# and its calls time out, the test after this one)
def test_infrastructure_killed_mid_cell(results_dir, server, target, scenarios, died):
    def interfere(run):
        os.kill(owned(run.pid, server)[0].pid, signal.SIGKILL)
    out = run_and_interfere(results_dir, ["-f", target, "-s", scenarios, *FAST], interfere,
                            frameworks=None if target.startswith("fixture") else False)
    df = rows(results_dir)
    first, second = df.iloc[0], df.iloc[1]
    assert first["status"] == "failed" and died in first["reason"], (first["reason"], out)
    assert second["status"] == "ok" and second["requests"] > 0 and second["errors_status"] == 0, out
    assert "restarting the infrastructure" in out


def test_a_downstream_that_stops_answering_is_named_and_the_target_answers_once_it_is_back(results_dir):
    """nginx frozen for 6 s in a fan-out cell: the target's calls time out after the contract's 5 s and
    it answers 504, the cell names the downstream, and the next cell, on the same JVM, is clean."""
    def interfere(run):
        (nginx,) = owned(run.pid, "nginx")   # one process (master_process off)
        nginx.suspend()
        time.sleep(6)
        nginx.resume()
    out = run_and_interfere(results_dir, ["-f", "fixture:ok", "-s", "fan-out", "--warmup", "0s", "-d", "8s",
                                          "-c", "1,2"], interfere)
    df = rows(results_dir)
    frozen, after = df.iloc[0], df.iloc[1]
    assert frozen["status"] == "ok" and frozen["errors_status"] > 0, out
    assert {"non-2xx", "downstream-unanswered"} <= set(frozen["check_flags"].split(",")), frozen["check_flags"]
    assert frozen["downstream_polls_unanswered"] > 0
    assert after["status"] == "ok" and after["errors_status"] == 0 and after["requests"] > 0, out
    assert "downstream-unanswered" not in after["check_flags"]


def test_orchestrator_sigkilled_then_resumed(results_dir):
    run = start_bench("run", "-f", "fixture:ok", "-s", IDLE, "-c", SIX_CELLS, "--warmup", "0s",
                      "-d", "2s", "--results-dir", str(results_dir), *PORTS)
    wait_for(lambda: list(results_dir.glob("*/measurements.parquet")), what="the first cell")
    run.send_signal(signal.SIGKILL)
    run.wait(timeout=30)
    # The kernel ends the children with it (PR_SET_PDEATHSIG): no JVM, wrk, Redis or MariaDB stays.
    wait_for(lambda: not owned_by(run.pid), 30, "the killed run's processes to die")
    run_dir = next(results_dir.iterdir())
    kept = pd.read_parquet(run_dir / "measurements.parquet")
    r = bench("run", "--resume", run_dir.name, "--results-dir", str(results_dir))
    assert r.returncode == 0, r.stdout + r.stderr
    df = pd.read_parquet(run_dir / "measurements.parquet")
    assert len(df) == 6 and not df.duplicated(["scenario", "concurrency", "repeat"]).any()
    assert (df.set_index(["scenario", "concurrency"]).loc[kept.set_index(["scenario", "concurrency"]).index,
                                                         "requests"].values == kept["requests"].values).all()
    # the resumed run removed the killed run's infrastructure data directory
    assert not work_dirs_of(run.pid)


def test_a_port_taken_before_the_run_is_named(results_dir):
    with socket.socket() as s:
        # as servers do: the previous test's target closed its connections last, and their TIME_WAIT
        # on this port refuses a plain bind (EADDRINUSE), though nothing listens there any more
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", TARGET_PORT))
        s.listen()
        r = bench("run", "-f", "fixture:ok", "-s", IDLE, *FAST, "--results-dir", str(results_dir), *PORTS)
    assert r.returncode == 2
    assert f"port {TARGET_PORT} for the target is already in use by pid {os.getpid()}" in " ".join(r.stderr.split())
    assert not list(results_dir.iterdir())


def test_every_listener_of_a_run_is_on_loopback(results_dir):
    """Sockets of the target, Redis and MariaDB, listed while the run is under way."""
    seen = set()

    def interfere(run):
        for p in owned_by(run.pid):
            try:
                seen.update((p.name(), c.laddr.ip) for c in p.net_connections("inet") if c.status == psutil.CONN_LISTEN)
            except psutil.Error:
                pass
    run_and_interfere(results_dir, ["-f", "fixture:ok", "-s", IDLE, *FAST], interfere)
    names = {n for n, _ in seen}
    assert {"java", "redis-server", "mariadbd"} <= names, seen
    from orchestrator.infra.procs import is_loopback
    assert seen and all(is_loopback(ip) for _, ip in seen), seen
