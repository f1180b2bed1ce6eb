"""Processes: a failed target's reason from its log, and a tool's version asked once until it changes."""
from __future__ import annotations

import pytest

UNDERTOW_OOM = """INFO: undertow variant=virtual listening on 127.0.0.1:29080
Nov 24, 2026 9:14:02 PM io.undertow.server.Connectors executeRootHandler
ERROR: UT005071: Undertow request failed HttpServerExchange{ GET /sleep}
java.lang.OutOfMemoryError: Cannot reserve 16364 bytes of direct buffer memory (allocated: 518967897, limit: 518979584)
\tat java.base/java.nio.Bits.reserveMemory(Bits.java:178)
\tat io.undertow.server.DefaultByteBufferPool.allocate(DefaultByteBufferPool.java:154)
Nov 24, 2026 9:14:03 PM org.xnio.nio.WorkerThread run
ERROR: XNIO000011: Task io.undertow.server.Connectors$1@5b2 failed with an exception
java.lang.IllegalStateException: UT000024: Connection closed
\tat io.undertow.server.HttpServerExchange.endExchange(HttpServerExchange.java:1870)
"""
BIND = """Application run failed
org.springframework.context.ApplicationContextException: Failed to start bean 'webServerStartStop'
\tat org.springframework.context.support.DefaultLifecycleProcessor.doStart(DefaultLifecycleProcessor.java:405)
Caused by: java.net.BindException: Address already in use
\tat java.base/sun.nio.ch.Net.bind0(Native Method)
"""
CRASH = """#
# A fatal error has been detected by the Java Runtime Environment:
#
#  SIGSEGV (0xb) at pc=0x00007f3c, pid=4242, tid=4243
"""


@pytest.mark.parametrize("log,cause", [
    (UNDERTOW_OOM, "java.lang.OutOfMemoryError: Cannot reserve 16364 bytes of direct buffer memory"),
    (BIND, "Caused by: java.net.BindException: Address already in use"),
    (CRASH, "# A fatal error has been detected by the Java Runtime Environment:"),
    ("INFO: started in 1.2 s\nINFO: ErrorHandler registered\n", "")])
def test_a_failed_targets_reason_leads_with_the_cause_its_log_names(tmp_path, log, cause):
    from orchestrator.infra.procs import server_failure
    path = tmp_path / "server.log"
    path.write_text(log)
    first = server_failure("target exited with 1 during the cell", path).splitlines()[0]
    assert first.startswith(f"target exited with 1 during the cell{': ' + cause if cause else '; last lines of'}"), first


@pytest.mark.parametrize("log,fatal", [
    (UNDERTOW_OOM, "java.lang.OutOfMemoryError: Cannot reserve 16364 bytes of direct buffer memory"),
    (CRASH, "# A fatal error has been detected by the Java Runtime Environment:"),
    # a bind failure or an application's exception is not the JVM's own failure: a generator that hung
    # beside it hung for a reason of its own
    (BIND, ""), ("WARN: 504 downstream timed out: bench.mvc.DownstreamTimedOut: downstream timed out\n", "")])
def test_a_hung_generator_is_blamed_on_the_jvm_only_when_its_log_says_the_jvm_failed(tmp_path, log, fatal):
    from orchestrator.infra.procs import fatal_cause
    path = tmp_path / "server.log"
    path.write_text(log)
    assert fatal_cause(path).startswith(fatal) and bool(fatal_cause(path)) == bool(fatal), fatal_cause(path)


def test_a_tool_is_asked_its_version_once_until_it_changes(tmp_path, monkeypatch):
    from orchestrator.infra import hostinfo
    monkeypatch.setattr(hostinfo, "VERSIONS_FILE", tmp_path / "versions.json")
    calls, tool = tmp_path / "calls", tmp_path / "wrk"
    tool.write_text(f"#!/bin/sh\necho x >> {calls}\necho 'wrk 4.2.0 [epoll]'\necho second line\n")
    tool.chmod(0o755)
    assert [hostinfo.tool_version(str(tool), "wrk") for _ in range(3)] == ["wrk 4.2.0 [epoll]"] * 3
    assert calls.read_text().count("x") == 1
    tool.write_text(f"#!/bin/sh\necho x >> {calls}\necho 'wrk 4.3.0 [epoll]'\n")   # reinstalled
    assert hostinfo.tool_version(str(tool), "wrk") == "wrk 4.3.0 [epoll]" and calls.read_text().count("x") == 2
