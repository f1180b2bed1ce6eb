"""Shared test helpers. Everything is real: JVMs, Redis, MariaDB, wrk."""
from __future__ import annotations

import contextlib
import gc
import glob
import http.server
import inspect
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from pathlib import Path

import psutil
import pytest
from pacer_server import Server

from orchestrator.cli import app
from orchestrator.cli.run_command import run
from orchestrator.cli.run_options import RunOptions
from orchestrator.config import catalog
from orchestrator.results import analysis, store

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "frameworks"
# Ports away from the defaults, so the tests never meet a user's own run or `bench infra up`. The test
# command moves them (PORT_BASE_VAR) for the load smoke, which runs beside other slow tests (__main__.py).
PORT_BASE_VAR = "BENCH_TEST_PORT_BASE"
PORT_BASE = int(os.environ.get(PORT_BASE_VAR, "29000"))
TARGET_PORT = PORT_BASE + 80
PORTS = ["--port", str(TARGET_PORT), "--redis-port", str(PORT_BASE + 379), "--db-port", str(PORT_BASE + 306),
         "--downstream-port", str(PORT_BASE + 280)]
# Where a test lives says which tier runs it: tests/processes/ starts JVMs, Redis, MariaDB, load
# generators, Docker or Chromium (the slow tier, -m slow); every other folder holds a package's fast tests.
# Of the slow tests, those in processes/behaviour/ assert behaviour and never a figure, so the test
# command runs them beside the load smoke (-m behaviour), and the ones that measure after both, alone.
PROCESSES = ROOT / "tests" / "processes"
BEHAVIOUR = PROCESSES / "behaviour"
# The behaviour tests run beside the load smoke, whose bursts need the server's CPU: where a test asserts
# what a run does and not a figure, its closed loop is on sleep (100 ms a request: 40 requests a second at
# 4 connections), which leaves that CPU to the smoke, where json or cpu would hold it for the whole window.
IDLE = "sleep"
SIX_CELLS = "1,2,3,4,5,6"   # connections: six cells of IDLE, for a run stopped after its first


@pytest.hookimpl(tryfirst=True)   # before -m reads the marks
def pytest_collection_modifyitems(items):
    for item in items:
        if PROCESSES in item.path.parents:
            item.add_marker(pytest.mark.slow)
        if BEHAVIOUR in item.path.parents:
            item.add_marker(pytest.mark.behaviour)


def bench_env(frameworks: Path | None = FIXTURES, **extra: str) -> dict[str, str]:
    env = {**os.environ, **extra}
    if "COLUMNS" not in extra:   # the CLI's piped width, which tests read tables at, not the caller's terminal's
        env.pop("COLUMNS", None)
    if frameworks:
        env["BENCH_FRAMEWORKS_DIR"] = str(frameworks)
    else:
        env.pop("BENCH_FRAMEWORKS_DIR", None)
    return env


def bench(*args: str, frameworks: Path | None = FIXTURES, timeout: float = 900, env: dict | None = None,
          **kw) -> subprocess.CompletedProcess:
    """Run the real `bench` CLI in a subprocess; output captured as text."""
    env = env or bench_env(frameworks)
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *args], cwd=ROOT, env=env, text=True,
                          capture_output=True, timeout=timeout, **kw)


def run_profile(results_dir: Path, *args: str):
    """`bench run` of the fixture's ok variant with args: its rows, its time series and its run.json."""
    r = bench("run", *PORTS, "-f", "fixture:ok", "--results-dir", str(results_dir), *args, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    run = store.find_run(None, results_dir)
    return store.load(run), store.load_timeseries(run), json.loads((run / "run.json").read_text())


def owned_by(pid: int) -> list[psutil.Process]:
    """Processes that bench process `pid` started (the orchestrator's own notion, as `bench clean` uses)."""
    from orchestrator.infra.cleanup import owned_by as owned
    return owned(pid)


def work_dirs_of(pid: int, pattern: str = "bench-infra-*") -> list[str]:
    """Temporary folders (infrastructure data, calibration) whose owner file names bench process `pid`."""
    from orchestrator.infra.procs import Owner
    found = []
    for d in glob.glob(f"/tmp/{pattern}"):
        try:
            owner = Owner.parse(Path(d, "owner").read_text())
        except OSError:
            continue
        if owner is not None and owner.pid == str(pid):
            found.append(d)
    return found


@pytest.fixture
def results_dir(tmp_path) -> Path:
    d = tmp_path / "results"
    d.mkdir()
    return d


def on_a_calm_host(attempt, stolen, what: str):
    """attempt() once more when stolen(its result) says the host stole CPU time from it (host-steal) and
    that could have made the figure under test unmeasurable; skipped, naming the steal, when the second
    is stolen from too. A check of a figure fails on a calm host as it should: CI once read the fixture
    at 1,336 req/s +-119 % (5,827 on a calm day) and pacer falling behind at 125/s with the host
    stealing, where neither a regression nor a capacity could be read."""
    for _ in range(2):
        result = attempt()
        if not stolen(result):
            return result
    pytest.skip(f"{what}: the host stole CPU time from both attempts (host-steal)")


def start_bench(*args: str, frameworks: Path | None = FIXTURES) -> subprocess.Popen:
    """Start `bench` in the background (output to a pipe), for tests that interfere with a run."""
    return subprocess.Popen([sys.executable, "-m", "orchestrator.cli", *args], cwd=ROOT, env=bench_env(frameworks),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def wait_for(predicate, timeout: float = 240, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def frameworks_built_by(root: Path, commands: dict[str, str]) -> list:
    """Framework folders under root, the fixture's manifest each, whose build runs the shell command given
    for its name and whose artifact is target/app.jar; returned as the catalog discovers them."""
    head, rest = (FIXTURES / "fixture" / "framework.toml").read_text().split("[build]")
    for name, command in commands.items():
        (root / name).mkdir(parents=True)
        (root / name / "framework.toml").write_text(
            head.replace('name = "fixture"', f'name = "{name}"') + f'[build]\ncommand = ["sh", "-c", {json.dumps(command)}]\n'
            f'artifact = "target/app.jar"\n\n[start]{rest.split("[start]")[1]}')
    found = catalog.discover(root)
    return [found[name] for name in commands]


def ended(pid: int) -> bool:
    """The process is gone (or a zombie its parent has not reaped)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def owned(pid: int, name: str) -> list[psutil.Process]:
    """Processes started by bench process `pid` whose command line mentions `name`."""
    out = []
    for p in owned_by(pid):
        try:
            if name in " ".join(p.cmdline()):
                out.append(p)
        except psutil.Error:
            pass
    return out


# One real framework under real load with its pools shrunk, as a user would shrink them (the database
# pool by option, the Redis pool by environment): test_evidence reads what the backends counted per
# request, test_parity the versions, pools and threads the run recorded. 32 connections want more
# than 2 Redis and 3 database connections, so both pools are full.
VERTX_LOAD = {"connections": 32, "db_pool": 3, "redis_pool": 2}


@pytest.fixture(scope="session")
def vertx_run(tmp_path_factory) -> Path:
    results_dir = tmp_path_factory.mktemp("vertx-results")
    r = bench("run", "-f", "vertx:eventloop", "-s", "json,redis,db-read,db-write",
              "-c", str(VERTX_LOAD["connections"]), "--warmup", "1s", "--warmup-max", "1s", "-d", "2s",
              "--db-pool-size", str(VERTX_LOAD["db_pool"]), "--results-dir", str(results_dir), *PORTS,
              frameworks=None, env=bench_env(None, REDIS_POOL_SIZE=str(VERTX_LOAD["redis_pool"])))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    return next(results_dir.iterdir())


@pytest.fixture(scope="module")
def warm_command_line(tmp_path_factory):
    """One command in this process before the forks: what the command line imports and builds on its first
    parse (Typer's adapters, about a second) is then done once, not in every child."""
    argv, showwarning, sigint = sys.argv, warnings.showwarning, signal.getsignal(signal.SIGINT)
    try:
        with contextlib.redirect_stderr(io.StringIO()) as said, pytest.raises(SystemExit):
            sys.argv = ["bench", "results", "none", "--results-dir", str(tmp_path_factory.mktemp("none"))]
            app.main()
        assert "no run 'none'" in said.getvalue()
    finally:   # what main sets for a command, given back to pytest
        sys.argv, warnings.showwarning = argv, showwarning
        signal.signal(signal.SIGINT, sigint)
    gc.freeze()   # the children then leave this process's objects untouched (no copy of their pages)


def bench_in_fork(*args: str, frameworks: Path = FIXTURES, env: dict[str, str] | None = None,
                  hang_s: float = 60) -> subprocess.CompletedProcess:
    """`bench ARGS` with its catalog at frameworks (and env set over this process's), in a child forked
    from the test process (which warm_command_line warmed); killed (and the test failed) past hang_s.
    For commands that refuse or read, and start nothing: milliseconds each, where a fresh interpreter
    takes about a second of imports."""
    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.dup2(out.fileno(), 1)
            os.dup2(err.fileno(), 2)
            sys.stdout, sys.stderr = open(1, "w", closefd=False), open(2, "w", closefd=False)
            catalog.FRAMEWORKS_DIR = frameworks   # what BENCH_FRAMEWORKS_DIR sets when bench starts
            os.environ.update(env or {})
            sys.argv = ["bench", *args]
            app.main()
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else int(e.code is not None)
        except BaseException:  # noqa: BLE001  (printed, as an uncaught exception would be, and the child exits 1)
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    deadline = time.monotonic() + hang_s
    while not (done := os.waitpid(pid, os.WNOHANG))[0]:
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail(f"bench {' '.join(args)} did not end within {hang_s} s")
        time.sleep(0.01)
    out.seek(0)
    err.seek(0)
    return subprocess.CompletedProcess(["bench", *args], os.waitstatus_to_exitcode(done[1]),
                                       out.read().decode(errors="replace"), err.read().decode(errors="replace"))


@pytest.fixture(scope="session")
def run_dir(tmp_path_factory) -> Path:
    """A copy of the sample run (the committed folder stays as it is) with its report written by the CLI."""
    sample = analysis.sample_run()
    root = tmp_path_factory.mktemp("results")
    shutil.copytree(sample, root / sample.name, ignore=shutil.ignore_patterns("report*", "logs"))
    r = bench("report", sample.name, "--results-dir", str(root), frameworks=None, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    return root / sample.name


@pytest.fixture
def serve():
    """Starts pacer_server.Server(answer, delay) in the test process; closes each one after the test."""
    servers = []

    def start(answer, delay=lambda n: 0.0):
        servers.append(Server(answer, delay))
        return servers[-1]
    yield start
    for s in servers:
        s.close()


# A framework.toml that loads (tests of manifests and of bad files change one field of it)
VALID = '''
name = "demo"
description = "a demo"
language = "java"
server = "jdk"
scenarios = ["plaintext", "json"]

[build]
command = ["true"]
artifact = "target/demo.jar"

[start]
command = ["{java}", "{jvm_opts}", "-jar", "{artifact}"]

[variants.one]
default = true
description = "the one"
env = { A = "b" }
threads = { "*" = "^VirtualThread", json = "worker" }

[variants.two]
description = "the other"
'''


def write(tmp_path, text: str, folder: str = "demo"):
    d = tmp_path / folder
    d.mkdir(exist_ok=True)
    (d / "framework.toml").write_text(text)
    return d / "framework.toml"


def asked(**given) -> RunOptions:
    """RunOptions as `bench run` makes them when only `given` is on its command line."""
    defaults = {name: p.default.default for name, p in inspect.signature(run).parameters.items()}
    return RunOptions(**{**defaults, **given})


def contract_disagreements(contract_md: str, scenarios: dict) -> list[str]:
    """Where CONTRACT.md's scenario table and `scenarios` differ: a row that is no scenario, a scenario
    with an endpoint of its own and no row, a request or status that is not the scenario's."""
    table = contract_md.split("| scenario | request | response |\n|---|---|---|\n", 1)[1].split("\n\n", 1)[0]
    rows = {}
    for line in table.splitlines():
        name, request, response = (cell.strip() for cell in line.strip("|").split("|", 2))
        rows[name] = (re.match(r"`([^`]+)`", request).group(1), response)
    wanted = {s.name for s in scenarios.values() if not s.endpoint}
    wrong = [f"{n}: a row and no scenario" for n in sorted(set(rows) - wanted)]
    wrong += [f"{n}: a scenario and no row" for n in sorted(wanted - set(rows))]
    for name, (request, response) in rows.items():
        s = scenarios.get(name)
        if s is None:
            continue
        if request != f"{s.method} {s.path}":
            wrong.append(f"{name}: the row asks {request}, the scenario {s.method} {s.path}")
        # "as `cpu`, ...; the same response", or a gateway's "forwards `/json` ... and returns its response"
        like = re.match(r"as `([\w-]+)`", response)
        forwarded = re.match(r"forwards `(/[^`]+)`", response)
        like = scenarios.get(like.group(1)) if like else \
            next((o for o in scenarios.values() if forwarded and o.path == forwarded.group(1)), None)
        if not (re.search(rf"\b{s.status}\b", response) or (like and like.status == s.status)):
            wrong.append(f"{name}: the row answers {response[:60]!r}, the scenario {s.status}")
    return wrong


# A preset whose quick form is another's but for what that one adds is run once, as the other: the
# same cells, kind and driver (test_profiles checks that they stay so)
RUN_AS = {"capacity-at-slo": "cold-start-and-spike:overload"}   # the same search; the part adds its spike


class Answering(http.server.BaseHTTPRequestHandler):
    """A handler of a small HTTP/1.1 server in the test process (keep-alive, as the generators expect),
    quiet, whose do_GET answers with `answer`."""
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True   # headers and body in two writes: no 40-ms delayed ACK between them

    def answer(self, status: int, body: bytes, media_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", media_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass

