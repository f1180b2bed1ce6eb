"""Frameworks build at once (build_all), and a build still running when the caller stops is killed."""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

from conftest import ROOT, bench_env, ended, frameworks_built_by, wait_for

from orchestrator.targets import build
from orchestrator.targets.jdk import Jdk

NO_JDK = Jdk(home=Path("/nonexistent-jdk"), version="21")


def test_builds_run_at_once_and_each_is_reported_as_it_ends(tmp_path):
    # each build waits until the other has started: one after the other, neither would end
    wait_other = "for i in $(seq 200); do [ -e ../{other}/started ] && break; sleep 0.05; done; [ -e ../{other}/started ]"
    frameworks = frameworks_built_by(tmp_path / "frameworks", {
        "one": "touch started; " + wait_other.format(other="two") + " && mkdir -p target && touch target/app.jar",
        "two": "touch started; " + wait_other.format(other="one") + " && exit 3"})
    ends = {fw.name: (artifact, seconds, failure) for fw, artifact, seconds, failure
            in build.build_all(frameworks, NO_JDK, tmp_path / "logs")}
    assert ends["one"][0] == frameworks[0].artifact_path and ends["one"][1] > 0 and ends["one"][2] == ""
    assert ends["two"][0] is None and ends["two"][2].startswith("build of two failed (exit 3); last lines of "
                                                                  f"{tmp_path / 'logs' / 'build-two.log'}")
    # current now: not built again
    (again,) = build.build_all(frameworks[:1], NO_JDK, tmp_path / "logs")
    assert again[1:] == (frameworks[0].artifact_path, None, "")


def test_a_caller_that_stops_leaves_no_build_running(tmp_path):
    frameworks = frameworks_built_by(tmp_path / "frameworks", {
        "quick": "mkdir -p target && touch target/app.jar",
        # a command's child, as `sh -c` leaves one: it goes with the build
        "stuck": "sleep 300 & echo $! > child.pid; wait"})
    ends = build.build_all(frameworks, NO_JDK, tmp_path / "logs")
    first = next(ends)
    assert first[0].name == "quick" and first[3] == ""
    pid_file = tmp_path / "frameworks" / "stuck" / "child.pid"
    wait_for(lambda: pid_file.exists() and pid_file.read_text().strip(), 10, "the stuck build's child")
    child = int(pid_file.read_text())
    ends.close()   # what a Ctrl-C in the caller's loop does to the generator
    wait_for(lambda: ended(child), 10, "the stuck build's child to end")


def test_bench_build_stopped_with_its_process_group_leaves_no_build_running(tmp_path):
    # as the test command stops its set-up when the fast tier fails: SIGTERM to the group `bench build` leads
    frameworks = frameworks_built_by(tmp_path / "frameworks", {"stuck": "sleep 300 & echo $! > child.pid; wait"})
    build_cli = subprocess.Popen([sys.executable, "-m", "orchestrator.cli", "build"], cwd=ROOT,
                                 env=bench_env(tmp_path / "frameworks"), stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, start_new_session=True)
    pid_file = frameworks[0].path / "child.pid"
    try:
        wait_for(lambda: pid_file.exists() and pid_file.read_text().strip(), 30, "the build's child")
        child = int(pid_file.read_text())
        os.killpg(build_cli.pid, signal.SIGTERM)
        build_cli.wait(timeout=10)
        wait_for(lambda: ended(child), 10, "the build's child to end")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(build_cli.pid, signal.SIGKILL)
