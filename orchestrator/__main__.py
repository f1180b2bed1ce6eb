"""`python3 -m orchestrator ARGS`: set up what is missing, then run `bench ARGS` (or the tests).

This file runs on the system Python before any dependency is installed, so it uses the standard
library only. It installs Debian's packages when they are missing (as root; otherwise it prints the
apt-get line and exits 2), creates .venv with the project installed, and then replaces itself with
`.venv/bin/bench ARGS`, or with pytest for `python3 -m orchestrator test [PYTEST ARGS]`.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
STAMP = VENV / ".installed-from"
# executable -> Debian package that provides it
APT = {"redis-server": "redis-server", "mariadbd": "mariadb-server", "wrk": "wrk", "mvn": "maven",
       "taskset": "util-linux"}


def _missing_packages() -> list[str]:
    path = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
    return sorted({pkg for exe, pkg in APT.items() if not shutil.which(exe, path=path)})


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


def main(args: list[str]) -> None:
    if sys.version_info < (3, 11):
        sys.exit("Python 3.11 or newer is needed (tomllib)")
    missing = _missing_packages()
    if missing:
        _apt_install(missing)
    _venv()
    os.chdir(ROOT)
    if args[:1] == ["test"]:
        python = str(VENV / "bin" / "python")
        os.execv(python, [python, "-m", "pytest", *args[1:]])
    bench = str(VENV / "bin" / "bench")
    os.execv(bench, [bench, *args])


if __name__ == "__main__":
    main(sys.argv[1:])
