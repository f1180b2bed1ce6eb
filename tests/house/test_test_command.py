"""The test command's own plumbing (orchestrator/__main__.py): pytests run side by side (the load smoke and
the behaviour tests beside it), their exit codes kept, and a signal to the command reaching each as Ctrl-C.
Plain Python children stand in for pytest: what is tested is the plumbing, not pytest."""
from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

import psutil
from conftest import ROOT, wait_for

# a child that says it is ready, then waits; on Ctrl-C it writes which signal ended it and exits as pytest does
CHILD = textwrap.dedent("""
    import pathlib, signal, sys, time
    out = pathlib.Path(sys.argv[1])
    def interrupted(*_):
        out.write_text("SIGINT")
        sys.exit(2)
    signal.signal(signal.SIGINT, interrupted)
    out.write_text("ready")
    time.sleep(60)
""")


def _command(runs: list[tuple[list[str], str | None]]) -> subprocess.Popen:
    """_pytests on runs of (argv, log or None), in a process of its own that prints their exit codes."""
    code = ("from pathlib import Path\nfrom orchestrator.__main__ import _pytests\n"
            f"print(_pytests([(argv, None, Path(log) if log else None) for argv, log in {runs!r}]))")
    return subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, text=True)


def test_pytests_side_by_side_keep_each_exit_code_and_the_log_of_the_one_that_has_one(tmp_path):
    log = tmp_path / "beside.log"
    command = _command([([sys.executable, "-c", "print('beside'); exit(3)"], str(log)), ([sys.executable, "-c", "pass"], None)])
    out, _ = command.communicate(timeout=60)
    assert command.returncode == 0 and out.strip() == "[3, 0]", out
    assert log.read_text() == "beside\n"


def test_a_sigterm_to_the_test_command_reaches_each_pytest_as_ctrl_c_and_leaves_nothing_running(tmp_path):
    said = [tmp_path / "first", tmp_path / "second"]
    command = _command([([sys.executable, "-c", CHILD, str(f)], None) for f in said])
    wait_for(lambda: all(f.exists() and f.read_text() == "ready" for f in said), timeout=30, what="both children ready")
    children = psutil.Process(command.pid).children()
    command.send_signal(signal.SIGTERM)
    command.wait(timeout=30)
    assert command.returncode == 128 + signal.SIGTERM
    assert [f.read_text() for f in said] == ["SIGINT", "SIGINT"]
    assert len(children) == 2 and not [c for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]
