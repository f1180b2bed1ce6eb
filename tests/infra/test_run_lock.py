"""One run at a time, and cleanup that removes only what this checkout started (issue 45), from a plain
Python process (no JVM) holding the lock in a file of its own (BENCH_RUN_LOCK): owner marks, folders,
atomic writes, and a build's daemons."""
from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT, bench, bench_env, ended, frameworks_built_by, wait_for

from orchestrator.config import profiles
from orchestrator.config.catalog import discover, resolve
from orchestrator.config.plan import Plan
from orchestrator.errors import UsageError
from orchestrator.infra import cleanup, run_lock
from orchestrator.infra.backends import OWNER_FILE
from orchestrator.infra.docker_engine import labelled_owner, owner_labels
from orchestrator.infra.procs import INFRA_UP, OWNER_VAR, Owner, boot_id, start_ticks
from orchestrator.measure import ceilings
from orchestrator.results import store as results
from orchestrator.targets import build
from orchestrator.targets.jdk import Jdk

RUN_ID = "20261127-101500"
HOLDER = ("import sys\nfrom orchestrator.infra import run_lock\nwith run_lock.held(sys.argv[1]):\n"
          "    print('held', flush=True)\n    sys.stdin.read()\n")


@pytest.fixture
def lock(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "run.lock"
    monkeypatch.setenv(run_lock.LOCK_VAR, str(path))
    return path


@pytest.fixture
def holder(lock):
    """Another process holding the run lock for run RUN_ID, until the test ends."""
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, RUN_ID], cwd=ROOT, env=bench_env(), text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdout.readline().strip() == "held"
    yield proc
    proc.stdin.close()
    proc.wait(timeout=30)


def stored_run(results_dir: Path) -> Path:
    """A run folder as a run leaves it: run.json with its plan, so that --resume reads it."""
    target = resolve(discover(FIXTURES), "fixture:ok")
    plan = Plan(matrix={target.id: ["json"]}, profile=profiles.load("throughput"))
    d = results_dir / RUN_ID
    d.mkdir()
    (d / results.RUN_JSON).write_text(json.dumps({"run_id": RUN_ID, "plan": plan.to_dict()}))
    return d


@pytest.mark.parametrize("args", [
    ["run", "-f", "fixture:ok", "-s", "json"],
    ["run", "--resume", RUN_ID],
    ["noise", "-f", "fixture:ok"],
    ["calibrate", "--generators", "wrk"],
    ["infra", "up", "--redis-port", "29479", "--db-port", "29406", "--downstream-port", "29481"],
    ["verify", "-f", "fixture:ok", "--port", "29180"],
    ["prune", "--older-than", "1s"],
], ids=["run", "resume", "noise", "calibrate", "infra-up", "verify", "prune"])
def test_a_command_beside_a_live_holder_stops_at_once_naming_it(holder, results_dir, args):
    stored_run(results_dir)
    if args[0] in ("run", "noise", "calibrate", "prune"):
        args = [*args, "--results-dir", str(results_dir)]
    r = bench(*args, env=bench_env(), timeout=60)
    assert r.returncode == 2, r.stdout + r.stderr
    line = " ".join(r.stderr.split())
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr
    assert f"pid {holder.pid}" in line and f"run {RUN_ID}" in line and " since " in line, line
    assert "one run at a time" in line, line
    assert [p.name for p in results_dir.iterdir()] == [RUN_ID], "a refused command made a run folder"
    assert not (results_dir / RUN_ID / results.MEASUREMENTS).exists()


def test_the_lock_is_released_when_its_holder_is_killed_and_names_a_holder_it_cannot_read(lock):
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, RUN_ID], cwd=ROOT, env=bench_env(), text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdout.readline().strip() == "held"
    with pytest.raises(UsageError, match=f"pid {proc.pid} "):
        with run_lock.held():
            pass
    lock.write_text("not what a holder writes")   # a holder's record half-written, or an older one
    with pytest.raises(UsageError, match=f"another bench command holds the run lock {lock}; one run at a time"):
        run_lock.ensure_free()
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    with run_lock.held("mine"):   # the kernel released it with its holder
        assert json.loads(lock.read_text())["run_id"] == "mine"
        with run_lock.held("inner"):   # re-entered by the same process, as a run inside `bench noise`
            assert json.loads(lock.read_text())["run_id"] == "inner"
        assert json.loads(lock.read_text())["pid"] == os.getpid()
    assert oct(lock.stat().st_mode & 0o777) == "0o666"   # every local user's bench can lock it


@pytest.mark.parametrize("make", [lambda p: p.symlink_to("/etc/hostname"), lambda p: os.mkfifo(p),
                                  lambda p: p.mkdir(), None], ids=["symlink", "fifo", "folder", "no-folder"])
def test_a_lock_path_that_is_not_a_plain_file_is_one_line_and_never_followed(lock, make, monkeypatch):
    if make:
        make(lock)
    else:
        monkeypatch.setenv(run_lock.LOCK_VAR, str(lock / "missing" / "run.lock"))
    with pytest.raises(UsageError, match=str(lock)):
        run_lock.ensure_free()
    assert Path("/etc/hostname").read_text().strip()   # the symlink's target was not truncated


def test_run_folders_of_one_second_are_made_apart_and_never_reused(tmp_path):
    import datetime as dt
    now = dt.datetime(2026, 11, 27, 10, 15, 0)
    dirs = [results.new_run_dir(now, tmp_path) for _ in range(3)]
    assert [d.name for d in dirs] == [RUN_ID, f"{RUN_ID}-2", f"{RUN_ID}-3"]
    assert all(oct(d.stat().st_mode & 0o777) == "0o700" for d in dirs)
    store = results.RunStore(dirs[0])
    store.discard_if_empty()   # a run that stopped before it wrote anything leaves no folder
    assert not dirs[0].exists() and dirs[1].exists()


def test_atomic_writes_use_a_temporary_name_of_their_own_and_leave_none(tmp_path):
    path, used = tmp_path / "run.json", []

    def write(tmp):
        used.append(tmp)
        tmp.write_text(str(len(used)))
    results.atomic_write(path, write)
    results.atomic_write(path, write)
    assert used[0] != used[1] and all(t.parent == tmp_path for t in used)
    with pytest.raises(RuntimeError):
        results.atomic_write(path, lambda tmp: (tmp.write_text("half"), (_ for _ in ()).throw(RuntimeError())))
    assert path.read_text() == "2" and sorted(p.name for p in tmp_path.iterdir()) == ["run.json"]


def _calibrate(args):
    root, name = args
    host = {"hostname": "h", "cpu_model": "c", "cores": 2}
    ceilings.store(Path(root), host, {name: {"ceiling_rps": 1.0, "loadgen_cpus": "0"}})


def test_calibration_written_at_once_by_many_keeps_every_entry(tmp_path):
    names = [f"gen{i}" for i in range(12)]
    with multiprocessing.get_context("fork").Pool(6) as pool:
        pool.map(_calibrate, [(str(tmp_path), n) for n in names])
    stored = json.loads((tmp_path / ceilings.FILE).read_text())["machines"]
    assert sorted(next(iter(stored.values()))["generators"]) == sorted(names)


def _owner(**changes) -> Owner:
    return Owner(**{**vars(Owner.me()), **changes})


def test_a_leftover_is_ours_only_of_this_checkout_and_an_owner_that_is_gone():
    me = Owner.me()
    assert me.pid == str(os.getpid()) and me.start == start_ticks(os.getpid()) and me.boot == boot_id()
    assert Owner.parse(me.mark()) == me and labelled_owner(owner_labels()) == me
    assert cleanup.why_kept(me, False) == f"its owner, pid {me.pid}, is running"
    assert cleanup.why_kept(_owner(start="1"), False) is None                  # its pid is another process now
    assert cleanup.why_kept(_owner(boot="another boot"), False) is None        # gone with the boot
    assert "checkout /elsewhere" in cleanup.why_kept(_owner(start="1", home="/elsewhere"), False)
    assert "cannot be judged from here" in cleanup.why_kept(_owner(start="1", host="loadgen-2"), False)
    up = Owner.me(outlive=True)
    assert up.pid == INFRA_UP and cleanup.why_kept(up, in_use=False) is None
    assert cleanup.why_kept(up, in_use=True) and cleanup.why_kept(Owner.parse("12345"), False)   # an older mark


def test_stale_data_dirs_remove_this_checkouts_dead_ones_and_no_other_checkouts():
    made = {}
    for name, owner in {"dead-here": _owner(start="1"), "dead-elsewhere": _owner(start="1", home="/elsewhere"),
                        "alive-here": Owner.me(), "older": None}.items():
        d = Path(tempfile.mkdtemp(prefix=f"bench-infra-{name}-"))
        (d / OWNER_FILE).write_text(owner.mark() if owner else "12345")
        made[name] = d
    try:
        removed = cleanup.stale_data_dirs()
        assert f"data directory {made['dead-here']}" in removed
        assert {n for n, d in made.items() if d.exists()} == {"dead-elsewhere", "alive-here", "older"}
    finally:
        for d in made.values():
            subprocess.run(["rm", "-rf", str(d)])


DAEMON = [sys.executable, "-c", "import time; time.sleep(120)", "KotlinCompileDaemon"]


def test_a_build_stops_the_daemon_it_started_and_not_one_that_appeared_meanwhile(tmp_path):
    # the build starts a daemon that detaches (its own session, its parent gone), as Kotlin's does, then
    # goes on until another program (an IDE) has started one of its own
    command = (f"setsid {DAEMON[0]} -c '{DAEMON[2]}' {DAEMON[3]} </dev/null >/dev/null 2>&1 & echo $! > daemon.pid; "
               "for i in $(seq 200); do [ -e ide.pid ] && break; sleep 0.05; done; mkdir -p target && touch target/app.jar")
    (fw,) = frameworks_built_by(tmp_path / "frameworks", {"fixture": command})
    fw_dir = fw.path
    ide = []

    def an_ide_starts_its_daemon():
        wait_for(lambda: (fw_dir / "daemon.pid").exists(), 10, "the build's daemon")
        ide.append(subprocess.Popen(DAEMON, env={k: v for k, v in os.environ.items() if k != OWNER_VAR},
                                    start_new_session=True))
        (fw_dir / "ide.pid").write_text(str(ide[0].pid))
    meanwhile = threading.Thread(target=an_ide_starts_its_daemon)
    meanwhile.start()
    try:
        (_, artifact, _, failure), = build.build_all([fw], Jdk(home=Path("/nonexistent-jdk"), version="21"), tmp_path)
        assert artifact and not failure, failure
        meanwhile.join()
        started = int((fw_dir / "daemon.pid").read_text())   # it sleeps for two minutes unless stopped
        wait_for(lambda: ended(started), 10, "the build's daemon to end")
        with pytest.raises(subprocess.TimeoutExpired):   # a SIGKILL takes a moment to land
            ide[0].wait(timeout=1)   # a daemon that appeared during the build, not of it, runs on
    finally:
        meanwhile.join()
        for p in ide:
            p.kill()
            p.wait()
