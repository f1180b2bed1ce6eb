"""`python3 -m orchestrator ARGS`: set up what is missing, then run `bench ARGS` (or the tests).

This file runs on the system Python before any dependency is installed, so it uses the standard
library only. It installs Debian's packages when they are missing (as root; otherwise it prints the
apt-get line and exits 2), creates .venv with the project (and Locust) installed, and then replaces
itself with `.venv/bin/bench ARGS`, or runs pytest for `python3 -m orchestrator test [--fast] [PYTEST
ARGS]`. For the tests and the docker runtime it also installs Docker's engine and debootstrap and
starts the engine. Each step prints one line saying what it does and where its output goes (LOG), not
apt's, pip's or uv's own; a step that fails prints the log's last lines and its path.

It builds no load generator: one built from source (k6, with Go) is built by the first run that
drives it, when that run asks for it before its first cell (config/driver_registry.py's `Tool.build`,
infra/installs.py), so a run that never drives it never waits for it.
"""
from __future__ import annotations

import compileall
import contextlib
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from orchestrator.config.driver_registry import debian_packages

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
STAMP = VENV / ".installed-from"
SETUP_LOG = VENV / "slow-setup.log"   # the slow tier's set-up, run beside the fast tier
LOG = VENV / "install.log"        # the full output of every installer step (apt-get, venv, pip, uv)
DOCKERD_LOG = Path("/tmp/dockerd.log")
TAIL = 20                         # lines of a failed step's log printed before its path
# executable -> Debian package that provides it, for the tools that are not load drivers (each driver
# declares its own in config/driver_registry.py, which imports the standard library only, as this file must)
APT = {"redis-server": "redis-server", "mariadbd": "mariadb-server", "mvn": "maven", "taskset": "util-linux",
       "nginx": "nginx",   # nginx: `bench calibrate` measures each generator's ceiling against it
       # a file, not an executable: the downstream service (infra/downstream.py) is nginx with this module
       "/usr/lib/nginx/modules/ngx_http_echo_module.so": "libnginx-mod-http-echo",
       # topologies (topology.py): namespaces and links, and the C compiler of a link's delay wire
       "ip": "iproute2", "nsenter": "util-linux", "cc": "gcc"}
# Only for the docker runtime (and the tests, which cover it).
APT_DOCKER = {"dockerd": "docker.io", "debootstrap": "debootstrap"}
# Only for the tests: the report test renders report.html in headless Chromium.
APT_TEST = {"chromium": "chromium"}
DOCKERD = ["dockerd", "--iptables=false", "--bridge=none"]
UV = "0.13.8"   # the Python installer (PyPI), pinned so that every clone installs alike
# Every dependency byte-compiled once, at install: where PYTHONDONTWRITEBYTECODE is set (as on the
# machines this project runs on) Python never writes a .pyc, and each `bench` process compiled pandas,
# Arrow and the rest from source again: 2.7-3.2 s of imports a command, against 0.7 s compiled. The
# install takes about 13 s more, once.
UV_INSTALL = ["--compile-bytecode"]


def apt() -> dict[str, str]:
    """Every executable bench needs from Debian -> its package: the load drivers' and the other tools'."""
    return {**debian_packages(), **APT}


def _missing_packages(wanted: dict[str, str]) -> list[str]:
    path = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
    def present(exe: str) -> bool:
        return Path(exe).exists() if exe.startswith("/") else bool(shutil.which(exe, path=path))
    return sorted({pkg for exe, pkg in wanted.items() if not present(exe)})


def _shown(path: Path) -> str:
    """path relative to the current folder when it is under it (.venv/install.log), else in full."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _failed(what: str, log: Path, code: int) -> None:
    """Print the last TAIL lines of log, then what failed and where its full output is; exit with code."""
    try:
        lines = log.read_text(errors="replace").splitlines()[-TAIL:]
    except OSError:
        lines = []
    print("\n".join(lines), file=sys.stderr)
    print(f"{what}; its full output is in {log}", file=sys.stderr)
    sys.exit(code)


def _step(what: str, argv: list[str], code: int, env: dict[str, str] | None = None) -> None:
    """One installer step: a line saying what it does and where its output goes (LOG), ended by the
    seconds it took; on failure the log's last lines, its path, and exit `code`."""
    LOG.parent.mkdir(parents=True, exist_ok=True)
    print(f"{what} (log: {_shown(LOG)}) ...", end="", flush=True)
    started = time.monotonic()
    with open(LOG, "a") as out:
        out.write(f"\n$ {' '.join(argv)}\n")
        out.flush()
        try:
            rc = subprocess.run(argv, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL).returncode
        except OSError as e:
            out.write(f"{e}\n")
            rc = 127
    print(f" {time.monotonic() - started:.0f} s" if rc == 0 else " failed", flush=True)
    if rc != 0:
        _failed(f"`{' '.join(argv)}` exited with {rc}", LOG, code)


def _docker_answers() -> bool:
    return subprocess.run(["docker", "info"], capture_output=True).returncode == 0


def _docker_engine() -> None:
    """Start a Docker engine when none answers on the local socket (as root, the way this machine
    kind needs: no iptables, no bridge; containers use the host network)."""
    if _docker_answers():
        return
    if os.geteuid() != 0:
        print(f"no Docker engine answers: start one with `sudo {' '.join(DOCKERD)} &`", file=sys.stderr)
        sys.exit(2)
    print(f"starting the Docker engine: {' '.join(DOCKERD)} (log: {DOCKERD_LOG}) ...", end="", flush=True)
    started = time.monotonic()
    with open(DOCKERD_LOG, "ab") as log:
        subprocess.Popen(DOCKERD, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                         start_new_session=True)
    for _ in range(120):
        if _docker_answers():
            print(f" {time.monotonic() - started:.0f} s", flush=True)
            return
        time.sleep(0.5)
    print(" failed", flush=True)
    _failed("the Docker engine did not come up within 60 s", DOCKERD_LOG, 2)


def _apt_install(packages: list[str]) -> None:
    line = f"apt-get install -y {' '.join(packages)}"
    if os.geteuid() != 0:
        print(f"missing Debian packages: run `sudo apt-get update && sudo {line}`, then try again", file=sys.stderr)
        sys.exit(2)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    _step("apt-get update: Debian's package lists", ["apt-get", "update"], 2, env)
    _step(f"apt-get install: {' '.join(packages)}", ["apt-get", "install", "-y", *packages], 2, env)


def _venv(test: bool) -> None:
    """.venv with this project, and the test tools only for the tests (Jupyter's kernel among them: a
    first `run` need not wait for them). The stamp names the pyproject it was made from, and ":test"."""
    made = hashlib.sha256((ROOT / "pyproject.toml").read_bytes() + " ".join(UV_INSTALL).encode()).hexdigest()
    wanted = made + (":test" if test else "")
    if STAMP.exists() and STAMP.read_text() in (wanted, made + ":test"):
        return
    _step(f"creating the Python environment {_shown(VENV)}", [sys.executable, "-m", "venv", str(VENV)], 1)
    python = str(VENV / "bin" / "python")
    # uv, not pip, installs the project: pip took 26-29 s here (one download at a time, and every
    # module byte-compiled), uv 3 s from an empty cache, a fifth of a fresh clone's first result line
    _step(f"pip: installing uv {UV} into {_shown(VENV)}",
          [python, "-m", "pip", "install", "--disable-pip-version-check", "--progress-bar", "off", f"uv=={UV}"], 1)
    uv = [str(VENV / "bin" / "uv"), "pip", "install", "--python", python, *UV_INSTALL]
    if test:
        _step(f"uv: installing this project (editable) with Locust and the test tools into {_shown(VENV)}",
              [*uv, "-e", f"{ROOT}[test]"], 1)
    else:
        _step(f"uv: installing this project (editable) with Locust into {_shown(VENV)}", [*uv, "-e", str(ROOT)], 1)
    STAMP.write_text(wanted)


# The slow tier drives every generator: those built on first use are built in its set-up, not in a test's time.
MAKE_ALL = """import sys
from orchestrator.config import driver_registry as registry
from orchestrator.errors import BenchError
try:
    [registry.made(tool) for tool in registry.tools() if tool.build]
except BenchError as e:
    sys.exit(str(e))
"""
# Every run prints its slowest tests, so that a slow newcomer shows in the next run, not as a CI
# run over its limit (the suite's budget: README, "Two commands").
SLOWEST = "--durations=25"


def _tests(args: list[str]) -> None:
    """The fast tier (no JVM, no load: under a minute), then, if it passed, the slow one. `--fast`
    stops after the fast tier; a -m, -k or test path of one's own runs just that."""
    pytest = [str(VENV / "bin" / "python"), "-m", "pytest"]
    fast = "--fast" in args
    args = [a for a in args if a != "--fast"]
    if not any(a.startswith("--durations") for a in args):
        args = [SLOWEST, *args]
    if any(a in ("-m", "-k") or a.startswith(("tests", "-m=", "-k=")) for a in args):
        os.execv(pytest[0], [*pytest, *args])
    # The slow tier's set-up (Maven, Docker's images, k6's build) runs beside the fast tier, whose tests
    # start no JVM and time nothing: the fast tier's minute and more is no longer added to it
    setup = None if fast else _slow_setup_beside()
    print("fast tier: pytest -m 'not slow'", flush=True)
    try:   # Ctrl-C or SIGTERM (_pytests) ends the set-up too, which runs in a session of its own
        (code,) = _pytests([([*pytest, "-m", "not slow", *args], None, None)])
    except BaseException:
        if setup:
            _join(setup, stop=True)
        raise
    if setup:
        _join(setup, stop=bool(code))
    if code or fast:
        sys.exit(code)
    _slow_tier(pytest, args)


# The slow tier in two steps. The load smoke keeps no figure and leaves about a third of the load
# generator's CPU idle for its 11-13 minutes, so the slow tests that assert behaviour, never a figure
# (tests/processes/behaviour/, marked BEHAVIOUR), run beside it in a second pytest; the tests that
# measure run after both, alone.
# On 2026-11-30 the smoke and the 37 behaviour tests took 837 s beside each other, where one after the
# other they took about 1,250 s; with 51 beside it, on a slower host, the smoke still ended last (docs/testing.md).
SMOKE = "tests/processes/test_frameworks_end_to_end.py"
BEHAVIOUR = "behaviour"
# The smoke's ports (tests/conftest.py: PORT_BASE_VAR) and run lock, so that it and the tests beside it,
# each with servers of its own, never meet: the tests beside it take the machine's run lock as runs do,
# which `bench verify` would find held. Its ports stay under 32768, where the kernel's ephemeral ones start.
SMOKE_LANE = {"BENCH_TEST_PORT_BASE": "19000", "BENCH_RUN_LOCK": str(VENV / "smoke-lane.lock")}
BESIDE_LOG = VENV / "slow-beside-smoke.log"
# The smoke's own lock hides a user's run from it, so the machine's lock is tried once before the tier
LOCK_FREE = """import sys
from orchestrator.errors import UsageError
from orchestrator.infra.run_lock import ensure_free
try:
    ensure_free()
except UsageError as e:
    sys.exit(f"the slow tier runs alone on this machine: {e}")
"""


def _slow_tier(pytest: list[str], args: list[str]) -> None:
    """The load smoke with the behaviour tests beside it (their lines in BESIDE_LOG, printed once they
    end), then every other slow test; exits non-zero when any of them failed, 2 when a run holds the lock."""
    if subprocess.run([pytest[0], "-c", LOCK_FREE], cwd=ROOT).returncode:
        sys.exit(2)
    print(f"slow tier (JVMs, Redis, MariaDB, load generators, Docker, Chromium): the load smoke ({SMOKE}), "
          f"and beside it the tests that assert no figure, pytest -m {BEHAVIOUR} (their lines: {_shown(BESIDE_LOG)}, "
          "printed when they end)", flush=True)
    codes = _pytests([([*pytest, "-m", "slow", SMOKE, *args], {**os.environ, **SMOKE_LANE}, None),
                      ([*pytest, "-m", BEHAVIOUR, *args], None, BESIDE_LOG)])
    print(f"\nthe tests beside the load smoke, pytest -m {BEHAVIOUR} ({_shown(BESIDE_LOG)}):", flush=True)
    print(BESIDE_LOG.read_text(errors="replace"), end="", flush=True)
    print(f"slow tier, the tests that measure, alone: pytest -m 'slow and not {BEHAVIOUR}'", flush=True)
    codes += _pytests([([*pytest, "-m", f"slow and not {BEHAVIOUR}", "--ignore", SMOKE, *args], None, None)])
    sys.exit(next((code for code in codes if code), 0))


def _pytests(runs: list[tuple[list[str], dict[str, str] | None, Path | None]]) -> list[int]:
    """Each (argv, environment, log or None for this terminal) at once, each in a session of its own;
    their exit codes once all have ended. Ctrl-C or SIGTERM here reaches each as Ctrl-C, so that pytest
    ends its tests and each test its bench as a user's Ctrl-C would, and nothing stays running."""
    procs = []
    for argv, env, log in runs:
        with log.open("w") if log else contextlib.nullcontext() as out:
            # Ctrl-C at its default in each, whatever this process inherited: started in the background by
            # a shell without job control, SIGINT comes ignored, and pytest would then ignore it too
            procs.append(subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT if out else None,
                                          stdin=subprocess.DEVNULL, cwd=ROOT, start_new_session=True,
                                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)))
    stopped = []

    def stop(signum, _frame):
        stopped.append(signum)
        for proc in procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGINT)
    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        codes = [proc.wait() for proc in procs]
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if stopped:
        sys.exit(128 + stopped[0])
    return codes


# The set-up yields the CPUs to the fast tier: pacer's tests there send on a schedule, and with four
# Maven builds, k6's compile and debootstrap at the same priority pacer fell 43 ms behind (2026-11-30).
SETUP_NICE = 10


def _slow_setup_beside() -> subprocess.Popen:
    """_slow_setup in a process of its own (and session: stopped as one, niced by SETUP_NICE with all it
    starts), its lines kept in SETUP_LOG."""
    SETUP_LOG.parent.mkdir(exist_ok=True)
    with SETUP_LOG.open("w") as log:
        return subprocess.Popen([str(VENV / "bin" / "python"), "-c", "from orchestrator.__main__ import _slow_setup; "
                                 "_slow_setup()"], stdout=log, stderr=subprocess.STDOUT, cwd=ROOT,
                                start_new_session=True, preexec_fn=lambda: os.nice(SETUP_NICE))


def _join(setup: subprocess.Popen, stop: bool) -> None:
    """Wait for the set-up (or, with stop, end it: the fast tier failed) and print its lines."""
    if stop:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(setup.pid, signal.SIGTERM)
    elif setup.poll() is None:
        print("waiting for the slow tier's set-up ...", flush=True)
    setup.wait()
    if not stop:
        print(SETUP_LOG.read_text(errors="replace"), end="", flush=True)


def _slow_setup() -> None:
    """What the slow tier needs before its first test, as `bench` does it for a user: Maven's
    downloads and every framework's build (the repo's and the tests' fixture), Docker's local base
    images, and the load generators built on first use (k6), which its tests drive. Timed apart, so
    that the tier's own time is the tests'; a failure here is left to the test that meets it, with its
    log.

    Three lanes at once, each printed whole when all are done: on a machine whose caches are empty
    each waits on its own downloads (Maven Central, Debian's mirror, the Go module proxy), and k6's
    compile alone took 137 s there (212 s of CPU); one after the other, they added up."""
    bench, python, started = str(VENV / "bin" / "bench"), str(VENV / "bin" / "python"), time.monotonic()
    fixtures = {**os.environ, "BENCH_FRAMEWORKS_DIR": str(ROOT / "tests" / "fixtures" / "frameworks")}
    lanes = {"bench build (every framework)": [([bench, "build"], None), ([bench, "build", "-f", "fixture"], fixtures)],
             "bench images bootstrap": [([bench, "images", "bootstrap"], None)],
             "the load generators built on first use (k6)": [([python, "-c", MAKE_ALL], None)]}
    print(f"set-up for the slow tier, three lanes at once: {', '.join(lanes)}", flush=True)
    with ThreadPoolExecutor(len(lanes)) as pool:
        done = list(pool.map(_lane, lanes.values()))
    for what, (said, seconds, failed) in zip(lanes, done):
        print(said, end="", flush=True)
        print(f"set-up: {what} took {seconds:.0f} s" + (f"; {failed} failed, the tests that need it will say why"
                                                          if failed else ""), flush=True)
    print(f"set-up for the slow tier took {time.monotonic() - started:.0f} s", flush=True)


def _lane(steps: list[tuple[list[str], dict[str, str] | None]]) -> tuple[str, float, str]:
    """Steps (argv, environment) run one after the other: what they printed, how long they took, and the
    first that failed."""
    said, started, failed = [], time.monotonic(), ""
    for argv, env in steps:
        done = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              errors="replace", stdin=subprocess.DEVNULL)
        said.append(done.stdout)
        if done.returncode and not failed:
            failed = "building the load generators" if argv[-1] == MAKE_ALL else f"`{' '.join(argv[1:])}`"
    return "".join(said), time.monotonic() - started, failed


def _compile_own() -> None:
    """The project's own modules byte-compiled where they changed (for the same reason as UV_INSTALL:
    an editable install leaves them to Python, which may never write them): a few hundredths of a
    second when nothing changed, and an edited module is compiled again here, never read stale."""
    with contextlib.redirect_stdout(None):
        compileall.compile_dir(ROOT / "orchestrator", quiet=1)


def main(args: list[str]) -> None:
    if sys.version_info < (3, 11):
        sys.exit("Python 3.11 or newer is needed (tomllib)")
    docker = args[:1] in (["test"], ["images"]) or "docker" in args
    missing = _missing_packages({**apt(), **(APT_DOCKER if docker else {}),
                                 **(APT_TEST if args[:1] == ["test"] else {})})
    if missing:
        _apt_install(missing)
    if docker:
        _docker_engine()
    _venv(test=args[:1] == ["test"])
    _compile_own()
    os.chdir(ROOT)
    if args[:1] == ["test"]:
        _tests(args[1:])
    bench = str(VENV / "bin" / "bench")
    os.execv(bench, [bench, *args])


if __name__ == "__main__":
    main(sys.argv[1:])
