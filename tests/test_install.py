"""A non-editable install (`pip install .` into a fresh environment) carries every data file the
package reads (profiles, presets, topologies, the Flight Recorder reader, the delay wire's source) and
runs from a checkout: `bench list`, `bench profiles`, `bench presets`."""
from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from conftest import ROOT

PACKAGE = ROOT / "orchestrator"


def data_files(package: Path) -> set[str]:
    return {str(p.relative_to(package)) for p in package.rglob("*")
            if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts}


def test_an_installed_package_has_its_data_files_and_runs_from_a_checkout(tmp_path):
    # From a copy of the sources: pip builds a local folder in place, and a stale build/ there would
    # put deleted modules into the wheel.
    source = tmp_path / "source"
    source.mkdir()
    shutil.copy(ROOT / "pyproject.toml", source)
    shutil.copytree(PACKAGE, source / "orchestrator", ignore=shutil.ignore_patterns("__pycache__"))
    env = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    # The project's dependencies come from this environment, not PyPI: only the package is new.
    site = Path(subprocess.run([env / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--prefix", str(env), str(source)],
                   check=True, capture_output=True)
    installed = Path(subprocess.run([env / "bin" / "python", "-c", "import orchestrator; print(orchestrator.PACKAGE_DIR)"],
                                    cwd=tmp_path, capture_output=True, text=True, check=True).stdout.strip())
    assert installed.is_relative_to(env), installed
    assert data_files(installed) == data_files(PACKAGE)
    out = {}
    for command in ("list", "profiles", "presets"):
        # the entry point pip wrote, run by the new environment's Python (its shebang names the installer's)
        r = subprocess.run([env / "bin" / "python", env / "bin" / "bench", command], cwd=ROOT, capture_output=True,
                           text=True, env={"PATH": "/usr/bin:/bin", "COLUMNS": "250"})
        assert r.returncode == 0, r.stdout + r.stderr
        out[command] = r.stdout
    assert "spring-mvc:virtual" in out["list"]
    assert "capacity" in out["profiles"] and "spring-concurrency-models" in out["presets"]
