"""Every target of every framework in the repo starts, passes verification against real Redis and
MariaDB (every scenario's answer and its thread model, the `threads` patterns of its
framework.toml), and survives the load the studies put on a target: a burst of 1,000 requests on
1,000 connections at once on every scenario it declares, every one answered, then verification
again (the load smoke, `bench verify --load`).

One `bench verify` does it all, in one JVM per target, as a user would run it; the bursts are short
and cold, so they prove survival and the contract after load, not a figure. A target that fails is
named with its reason (for a dead one, the cause its log gives)."""
from __future__ import annotations

import re
import subprocess
import time

import pytest
from conftest import PORTS, ROOT, bench, wait_for

from orchestrator.config.catalog import discover
from orchestrator.targets import parity

CATALOG = discover(ROOT / "frameworks")
CONNECTIONS = 1000   # the studies load targets with 500 to 2,000 connections


@pytest.fixture(scope="module")
def smoke() -> str:
    return bench("verify", "--load", str(CONNECTIONS), *PORTS, frameworks=None, timeout=2400).stdout


@pytest.mark.parametrize("framework", sorted(CATALOG))
def test_every_target_survives_a_thousand_connections_on_every_scenario_it_declares(smoke, framework):
    targets = [f"{framework}:{v}" for v in CATALOG[framework].variants]
    # the verdicts are in the table's rows; a failure's reason follows the table on a line of its own
    verdicts = {t: re.search(rf"[│|] {re.escape(t)} +[│|] (\S+)", smoke) for t in targets}
    reasons = "\n\n".join(_reason(smoke, t) for t in targets if f"\n{t}: " in smoke)
    assert all(m and m.group(1) == "ok" for m in verdicts.values()), (reasons or smoke[-4000:])[:6000]


def _reason(said: str, target: str) -> str:
    """A failed target's reason as bench verify prints it: its line and the log's lines after it, up to
    the next target's reason or the count."""
    lines = said.split(f"\n{target}: ", 1)[1].splitlines()
    end = next((i for i, line in enumerate(lines[1:], 1) if re.match(r"[\w-]+:[\w-]+: |\d+ passed, ", line)),
               len(lines))
    return f"{target}: " + "\n".join(lines[:end])


def test_the_smoke_fails_a_target_that_dies_under_it_and_names_the_cause():
    # the fixture's variant runs out of direct memory at 64 requests in flight, and verification
    # sends one at a time: the smoke's bursts of 200 kill it
    r = bench("verify", "-f", "fixture:dies-under-load,fixture:ok", "--load", "200", *PORTS)
    assert r.returncode == 1 and "1 passed, 1 failed" in r.stdout, r.stdout[-3000:]
    said = " ".join(r.stdout.split())
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
