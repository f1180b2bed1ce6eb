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
    subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
    # The new environment's own pip: this environment's would first uninstall the editable install here.
    subprocess.run([env / "bin" / "python", "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
                    str(source)], check=True, capture_output=True)
    # The project's dependencies come from this environment, not PyPI (added once the package is in,
    # so that pip never sees this environment's editable install).
    site = Path(subprocess.run([env / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    installed = Path(subprocess.run([env / "bin" / "python", "-c", "import orchestrator; print(orchestrator.PACKAGE_DIR)"],
                                    cwd=tmp_path, capture_output=True, text=True, check=True).stdout.strip())
    assert installed.is_relative_to(env), installed
    assert data_files(installed) == data_files(PACKAGE)
    out = {}
    for command in ("list", "profiles", "presets"):
        r = subprocess.run([env / "bin" / "bench", command], cwd=ROOT, capture_output=True,
                           text=True, env={"PATH": "/usr/bin:/bin", "COLUMNS": "250"})
        assert r.returncode == 0, r.stdout + r.stderr
        out[command] = r.stdout
    assert "spring-mvc:virtual" in out["list"]
    assert Path(sys.executable).with_name("bench").exists(), "installing elsewhere removed this environment's bench"
    assert "capacity" in out["profiles"] and "spring-concurrency-models" in out["presets"]


def test_a_bench_process_reads_every_module_it_imports_from_bytecode():
    """Where PYTHONDONTWRITEBYTECODE is set, Python compiles from source whatever has no .pyc, in every
    process: the install byte-compiles the dependencies, and the installer the project's own modules
    (orchestrator/__main__.py). A command's imports, and the figures and storage it loads, each have a
    .pyc that matches its source's time and size."""
    from orchestrator import __main__ as installer
    installer._compile_own()   # as `python3 -m orchestrator` does before each command
    probe = ("import importlib.util, struct, sys, os\n"
             "import orchestrator.cli.app, orchestrator.measure.runner, orchestrator.results.store, pandas, pyarrow\n"
             "for m in list(sys.modules.values()):\n"
             "    f = getattr(m, '__file__', None) or ''\n"
             "    if not f.endswith('.py'): continue\n"
             "    c, st = importlib.util.cache_from_source(f), os.stat(f)\n"
             "    head = open(c, 'rb').read(16) if os.path.exists(c) else bytes(16)\n"
             "    (flags,) = struct.unpack('<4xI8x', head)\n"
             "    ok = head[8:] == importlib.util.source_hash(open(f, 'rb').read()) if flags & 1 else "
             "struct.unpack('<8x2I', head) == (int(st.st_mtime) & 0xFFFFFFFF, st.st_size & 0xFFFFFFFF)\n"
             "    if not ok: print(f)\n")
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                       env={"PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"}, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    uncompiled = r.stdout.split()
    assert not uncompiled, f"{len(uncompiled)} modules compiled from source in every process (an environment " \
                           f"made before the install compiled bytecode: `python3 -m orchestrator test` makes it " \
                           f"again), e.g. {uncompiled[:5]}"
