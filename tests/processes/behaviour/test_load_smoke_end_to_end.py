"""The load smoke's failures, on the fixture's targets: a target that dies under its bursts, one whose
fan-out calls never overlap though it started beside the load, and a burst that hangs."""
from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

from conftest import PORTS, ROOT, bench, wait_for

from orchestrator.targets import parity


def test_the_smoke_fails_a_target_that_dies_under_it_or_whose_calls_never_overlap_and_names_the_cause():
    # the fixture's variant runs out of direct memory at 64 requests in flight, and verification
    # sends one at a time: the smoke's bursts of 200 kill it
    r = bench("verify", "-f", "fixture:dies-under-load,fixture:ok,fixture:fan-out-sequential", "--load", "200", *PORTS)
    assert r.returncode == 1 and "1 passed, 2 failed" in r.stdout, r.stdout[-3000:]
    said = " ".join(r.stdout.split())
    # the third started and was verified beside the second's bursts, where a CPU shared with k6 can
    # keep calls that overlap apart: the overlap was checked once it had moved to the server's CPU
    assert "[3/3] fixture:fan-out-sequential: FAILED (started on CPU 0 beside" in said, said
    assert ("fixture:fan-out-sequential: verification failed: fan-out: GET /fan-out?calls=3: the downstream saw at "
            "most 1 of its 3 calls in flight at once") in said, said
    # each check's own log, in the folder the command names last (the load smoke beside this test has its own)
    folder = Path(re.search(r"each target's log and checks, and the smoke's bursts: (\S+)\n", r.stdout).group(1))
    assert folder.parent == ROOT / "results" / "verify", folder
    moved = folder / "verify-fixture-fan-out-sequential-verify-moved.txt"
    assert moved.read_text().startswith("verification failed: fan-out:")
    assert (folder / "verify-fixture-fan-out-sequential-verify.txt").read_text().startswith("ok\n")
    assert (folder / "smoke" / "fixture-ok").is_dir()   # the bursts' files of the target that took them
    # the next target started on the generator's CPU while the one before took its bursts, and took
    # its own on the server's (CPU 1; conftest's PORTS leave the smoke --port + 2 for it)
    assert "fixture:ok: ok at 200 connections on 6 scenarios, on CPU 1 (started on CPU 0 beside the previous " \
           "target's load)" in said, said
    assert re.search(r"fixture:dies-under-load: \S+ \(GET /\S+\) at 200 connections: target exited with 3: "
                     r"java\.lang\.OutOfMemoryError: Cannot reserve 16384 bytes of direct buffer memory", said), said


def test_a_burst_that_hangs_leaves_the_jvm_s_threads_named_in_its_failure(tmp_path, monkeypatch):
    from orchestrator.targets import smoke
    from orchestrator.targets.jdk import find_jdk
    jdk = find_jdk().home
    source = tmp_path / "Hung.java"   # a request handler stuck where a hang would be: asleep, holding a lock
    source.write_text("class Hung { public static void main(String[] a) throws Exception {"
                      " synchronized (Hung.class) { Thread.sleep(60_000); } } }")
    jvm = subprocess.Popen([str(jdk / "bin" / "java"), str(source)])
    try:
        jcmd = jdk / "bin" / "jcmd"
        wait_for(lambda: parity.thread_dump(jcmd, jvm.pid, 5).count("Hung.main") >= 1, 60, "the JVM's main thread")
        monkeypatch.setattr(smoke, "STUCK_S", 0.5)
        with smoke._threads_if_stuck(jcmd, jvm.pid, tmp_path / "quick.txt") as quick:
            pass   # a burst that ended in time leaves nothing
        with smoke._threads_if_stuck(jcmd, jvm.pid, tmp_path / "smoke" / "redis-threads.txt") as dump:
            time.sleep(3)
    finally:
        jvm.kill()
        jvm.wait()
    assert not quick.exists()
    text = dump.read_text()
    assert "Hung.main" in text and "- locked <" in text and "java.lang.Class for Hung" in text, text[:2000]
    reason = smoke._with_threads("redis (GET /redis): 28 non-2xx of 1000 requests failed; last lines of x.log:\n"
                                 "a line of the log", dump)
    assert reason.splitlines() == [f"redis (GET /redis): 28 non-2xx of 1000 requests failed; its threads 0.5 s "
                                   f"into the burst: {dump}; last lines of x.log:", "a line of the log"]
