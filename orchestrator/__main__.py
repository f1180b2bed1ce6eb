"""`python3 -m orchestrator ARGS`: set up what is missing, then run `bench ARGS` (or the tests).

This file runs on the system Python before any dependency is installed, so it uses the standard
library only. It installs Debian's packages when they are missing (as root; otherwise it prints the
apt-get line and exits 2), creates .venv with the project (and Locust) installed, builds k6 into
.venv/bin with Go when it is missing there, and then replaces itself with
`.venv/bin/bench ARGS`, or with pytest for `python3 -m orchestrator test [--fast] [PYTEST ARGS]`. For the
tests and the docker runtime it also installs Docker's engine and debootstrap and starts the engine.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from orchestrator.drivers import debian_packages
from orchestrator.drivers.registry import K6_MODULE as K6  # built from the Go module proxy: ~2.5 min once

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
STAMP = VENV / ".installed-from"
# executable -> Debian package that provides it, for the tools that are not load drivers (each driver
# declares its own in drivers/registry.py, which imports the standard library only, as this file must)
APT = {"redis-server": "redis-server", "mariadbd": "mariadb-server", "mvn": "maven", "taskset": "util-linux",
       "nginx": "nginx",   # nginx: `bench calibrate` measures each generator's ceiling against it
       # topologies (topology.py): namespaces and links, and the C compiler of a link's delay wire
       "ip": "iproute2", "nsenter": "util-linux", "cc": "gcc"}
# Only for the docker runtime (and the tests, which cover it).
APT_DOCKER = {"dockerd": "docker.io", "debootstrap": "debootstrap"}
# Only for the tests: the report test renders report.html in headless Chromium.
APT_TEST = {"chromium": "chromium"}
DOCKERD = ["dockerd", "--iptables=false", "--bridge=none"]


def apt() -> dict[str, str]:
    """Every executable bench needs from Debian -> its package: the load drivers' and the other tools'."""
    return {**debian_packages(), **APT}


def _missing_packages(wanted: dict[str, str]) -> list[str]:
    path = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
    return sorted({pkg for exe, pkg in wanted.items() if not shutil.which(exe, path=path)})


def _docker_engine() -> None:
    """Start a Docker engine when none answers on the local socket (as root, the way this machine
    kind needs: no iptables, no bridge; containers use the host network)."""
    if subprocess.run(["docker", "info"], capture_output=True).returncode == 0:
        return
    if os.geteuid() != 0:
        print(f"no Docker engine answers: start one with `sudo {' '.join(DOCKERD)} &`", file=sys.stderr)
        sys.exit(2)
    print(f"starting the Docker engine: {' '.join(DOCKERD)} (log in /tmp/dockerd.log)", flush=True)
    with open("/tmp/dockerd.log", "ab") as log:
        subprocess.Popen(DOCKERD, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                         start_new_session=True)
    for _ in range(120):
        if subprocess.run(["docker", "info"], capture_output=True).returncode == 0:
            return
        time.sleep(0.5)
    print("the Docker engine did not come up: see /tmp/dockerd.log", file=sys.stderr)
    sys.exit(2)


def _apt_install(packages: list[str]) -> None:
    line = f"apt-get install -y {' '.join(packages)}"
    if os.geteuid() != 0:
        print(f"missing Debian packages: run `sudo apt-get update && sudo {line}`, then try again", file=sys.stderr)
        sys.exit(2)
    print(f"installing {' '.join(packages)} (apt-get)", flush=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for argv in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", *packages]):
        if subprocess.run(argv, env=env).returncode != 0:
            print(f"`{' '.join(argv)}` failed", file=sys.stderr)
            sys.exit(2)


def _venv() -> None:
    wanted = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if STAMP.exists() and STAMP.read_text() == wanted:
        return
    print("setting up the Python environment in .venv", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    pip = [str(VENV / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, "--upgrade", "pip"], check=True)
    subprocess.run([*pip, "-e", f"{ROOT}[test]"], check=True)
    STAMP.write_text(wanted)


def _k6() -> None:
    """Build k6 into .venv/bin when it is missing there (the stamp names the version it was built from)."""
    stamp = VENV / ".k6-from"
    if (VENV / "bin" / "k6").exists() and stamp.exists() and stamp.read_text() == K6:
        return
    go = shutil.which("go") or shutil.which("go", path="/usr/local/go/bin")
    if not go:
        print(f"note: no Go toolchain, so no k6 (the rate profile needs it): install Go from https://go.dev/dl, "
              f"then `GOBIN={VENV / 'bin'} go install {K6}`", file=sys.stderr)
        return
    print(f"building k6 into .venv/bin (go install {K6}, once)", flush=True)
    env = {**os.environ, "GOBIN": str(VENV / "bin"), "CGO_ENABLED": "0"}
    if subprocess.run([go, "install", K6], env=env).returncode != 0:
        print(f"`go install {K6}` failed; the rate profile will say k6 is missing", file=sys.stderr)
        return
    stamp.write_text(K6)


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
    print("fast tier: pytest -m 'not slow'", flush=True)
    code = subprocess.run([*pytest, "-m", "not slow", *args]).returncode
    if code or fast:
        sys.exit(code)
    _slow_setup()
    print("slow tier: pytest -m slow (JVMs, Redis, MariaDB, load generators, Docker, Chromium)", flush=True)
    os.execv(pytest[0], [*pytest, "-m", "slow", *args])


def _slow_setup() -> None:
    """What the slow tier needs before its first test, as `bench` does it for a user: Maven's
    downloads and every framework's build (the repo's and the tests' fixture), and Docker's local
    base images. Timed apart, so that the tier's own time is the tests'; a failure here is left to
    the test that meets it, with its log."""
    bench, started = str(VENV / "bin" / "bench"), time.monotonic()
    print("set-up for the slow tier: bench build (every framework), bench images bootstrap", flush=True)
    fixtures = {**os.environ, "BENCH_FRAMEWORKS_DIR": str(ROOT / "tests" / "fixtures" / "frameworks")}
    for argv, env in (([bench, "build"], None), ([bench, "build", "-f", "fixture"], fixtures),
                      ([bench, "images", "bootstrap"], None)):
        if subprocess.run(argv, env=env).returncode:
            print(f"set-up: `{' '.join(argv[1:])}` failed; the tests that need it will say why", flush=True)
    print(f"set-up for the slow tier took {time.monotonic() - started:.0f} s", flush=True)


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
    _venv()
    _k6()
    os.chdir(ROOT)
    if args[:1] == ["test"]:
        _tests(args[1:])
    bench = str(VENV / "bin" / "bench")
    os.execv(bench, [bench, *args])


if __name__ == "__main__":
    main(sys.argv[1:])
