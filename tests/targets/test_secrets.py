"""A target's environment (the contract's and what a JVM needs, never bench's), the JVM's private
temporary folder, and the attach socket's owner."""
from __future__ import annotations

import os
import pwd
import socket
import stat
import subprocess
from pathlib import Path

import pytest

from orchestrator.measure import thread_dumps
from orchestrator.targets.jvm import private_tmp
from orchestrator.targets.runtimes.process import environment


def test_a_target_s_environment_is_the_contract_s_and_what_a_jvm_needs_never_bench_s(monkeypatch):
    monkeypatch.setenv("BENCH_TEST_CANARY", "x")
    env = environment({"REDIS_PASSWORD": "p", "PORT": "1"}, "/opt/jdk/bin/java")
    assert set(env) == {"REDIS_PASSWORD", "PORT", "PATH", "LANG", "HOME"}
    assert env["PATH"].split(":")[0] == "/opt/jdk/bin" and env["HOME"] == pwd.getpwuid(os.geteuid()).pw_dir
    # a variant's own value wins over what a JVM gets by default
    assert environment({"LANG": "de_DE.UTF-8"}, "/opt/jdk/bin/java")["LANG"] == "de_DE.UTF-8"


@pytest.fixture
def sleeper():
    """A process of another user (nobody) when this one is root, else of this one: the JVM stand-in whose
    /tmp (through /proc/<pid>/root) and user the checks read."""
    other = os.geteuid() == 0
    p = subprocess.Popen(["sleep", "60"], user=65534 if other else None)
    yield p, 65534 if other else os.geteuid()
    p.kill()
    p.wait()


def test_the_jvm_s_temporary_folder_is_fresh_its_user_s_alone_and_removed_after(sleeper):
    p, uid = sleeper
    with private_tmp(p.pid) as (inside, outside):
        assert outside == Path(f"/proc/{p.pid}/root{inside}") and inside.startswith("/tmp/bench-")
        st = outside.stat()
        assert stat.S_IMODE(st.st_mode) == 0o700 and st.st_uid == uid
        (outside / "dump.json").write_text("{}")
    assert not outside.exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root: a socket of another user at the JVM's attach name")
def test_an_attach_socket_that_is_not_the_jvm_s_user_s_is_not_trusted(sleeper):
    p, uid = sleeper
    sock_path = Path(f"/tmp/.java_pid{p.pid}")
    with socket.socket(socket.AF_UNIX) as planted:
        planted.bind(str(sock_path))
        try:
            os.chown(sock_path, uid + 1, -1)
            with pytest.raises(thread_dumps.AttachFailed, match="not trusted"):
                thread_dumps.jcmd(p.pid, "VM.version")
            os.chown(sock_path, uid, -1)   # the JVM's own: trusted (and answers nothing, not being a JVM)
            with pytest.raises(thread_dumps.AttachFailed) as e:
                thread_dumps.jcmd(p.pid, "VM.version", timeout_s=1)
            assert "not trusted" not in str(e.value)
        finally:
            sock_path.unlink()
