"""The driver registry: every shipped driver declares what the harness needs to know of it, the
installer can read it with the standard library alone, and a driver added the way
docs/adding-a-driver.md says (one module, one registry entry) is picked up everywhere."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from orchestrator import __main__ as installer
from orchestrator.config import driver_registry as registry
from orchestrator.config import profiles
from orchestrator.config.driver_registry import DriverInfo, Tool, drivers_by_kind, get, info, names, register, unregister
from orchestrator.config.load import LoadSpec
from orchestrator.config.scenarios import SCENARIOS
from orchestrator.drivers.base import Driver
from orchestrator.errors import MissingTool, UsageError
from orchestrator.infra import hostinfo
from orchestrator.measure import calibrate, checks

ROOT = Path(__file__).resolve().parents[2]


def test_every_shipped_driver_declares_its_executables_packages_and_processes():
    for d in registry.SHIPPED:
        assert d.tools and d.processes, d.name
        for tool in d.tools:
            assert tool.executable and tool.version_args, d.name
            # from Debian (the installer installs it), or a line saying how to get it otherwise
            assert tool.debian or (tool.debian is None and tool.install), d.name
        driver = get(d.name)
        assert isinstance(driver, Driver) and driver.name == d.name
    # k6 is built from Go, Locust is a pip dependency and oha comes from cargo: no Debian package
    assert [info(n).tools[0].debian for n in ("wrk", "h2load", "k6", "locust", "oha")] == \
        ["wrk", "nghttp2-client", None, None, None]


def test_each_kind_keeps_its_default_driver_and_oha_runs_no_profile():
    assert {kind: runs[0] for kind, runs in drivers_by_kind().items()} == {
        "throughput": "wrk", "burst": "k6", "rate": "pacer", "capacity": "pacer", "ramp": "locust"}
    assert "h2load" in drivers_by_kind()["burst"] and "k6" in drivers_by_kind()["throughput"]
    assert "k6" in drivers_by_kind()["rate"] and "k6" in drivers_by_kind()["capacity"]   # driver = "k6" runs it
    assert not info("oha").kinds and "oha" in names()   # bench calibrate measures it all the same


def test_an_unknown_driver_is_a_usage_error():
    with pytest.raises(UsageError, match="unknown driver 'ab'"):
        get("ab")


def test_the_installer_imports_the_standard_library_only():
    # -S: no site-packages, as on the system Python before the virtualenv exists
    code = "import sys, orchestrator.__main__ as m; m.apt(); print(sorted(sys.modules))"
    done = subprocess.run([sys.executable, "-S", "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert not [m for m in done.stdout.split() if "psutil" in m or "numpy" in m]


# The toy driver, as a module of its own would hold it (docs/adding-a-driver.md, step 1)
TOY_MODULE = '''
import time

from orchestrator.drivers.base import Driver, DriverFailed, run_generator
from orchestrator.config.load import LoadResult, LoadSpec


class ToyDriver(Driver):
    name = "toy"

    def run(self, spec: LoadSpec) -> LoadResult:
        log, = self.files(spec, "log")
        started = time.time()
        rc, wall_s, cpu_s = run_generator([self.executable(), str(spec.concurrency)], log,
                                          deadline_s=spec.duration_s + 30, cpus=spec.cpus)
        if rc != 0:
            raise DriverFailed(f"toy-gen exited with {rc}")
        requests = int(log.read_text().split()[-1])
        return LoadResult(requests=requests, duration_s=spec.duration_s, loadgen_cpu_s=cpu_s,
                          loadgen_wall_s=wall_s, started_at=started)
'''
# the generator: prints its version only when asked the way its registry entry says, else "sends" requests
TOY_GEN = """#!/bin/sh
if [ "$1" = "--toy-version" ]; then echo "toy-gen 1.2.3"; echo "second line"; exit 0; fi
echo "sent $(( $1 * 10 ))"
"""
TOY = DriverInfo("toy", "toy_driver:ToyDriver", ("throughput",),
                 (Tool("toy-gen", ("--toy-version",), debian="toy-gen-package"),), ("toy-gen",))


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """The toy driver registered (step 2), its module importable and its executable on PATH."""
    (tmp_path / "toy_driver.py").write_text(textwrap.dedent(TOY_MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    exe = tmp_path / "bin" / "toy-gen"
    exe.parent.mkdir()
    exe.write_text(TOY_GEN)
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{exe.parent}:{os.environ['PATH']}")
    monkeypatch.setattr(hostinfo, "VERSIONS_FILE", tmp_path / "versions.json")
    register(TOY)
    yield exe
    unregister("toy")
    sys.modules.pop("toy_driver", None)


def test_a_new_driver_is_picked_up_everywhere(toy, tmp_path):
    # profiles: it runs its kind, after the drivers already there (the kind's default is unchanged)
    assert drivers_by_kind()["throughput"] == ("wrk", "k6", "toy")
    path = tmp_path / "toy.toml"
    path.write_text('kind = "throughput"\ndriver = "toy"\nconcurrency = [4]\n')
    assert profiles.load(str(path)).driver == "toy"
    # its class, its executable, and a run through the interface: a LoadSpec in, a LoadResult out
    driver = get("toy")
    assert driver.executable() == str(toy)
    spec = LoadSpec(port=1, scenario=SCENARIOS["plaintext"], concurrency=4, duration_s=2.0, cpus="0",
                    timeout_s=5.0, out_dir=tmp_path / "out")
    r = driver.run(spec)
    assert r.requests == 40 and r.rps == 20.0
    # the recorded tool versions ask it with its own arguments
    assert hostinfo.version_args()["toy-gen"] == ("--toy-version",)
    assert hostinfo.tool_version(str(toy), "toy-gen") == "toy-gen 1.2.3"
    # a leftover toy-gen process is suspect; the installer installs its Debian package
    assert "toy-gen" in checks.suspects()
    assert installer.apt()["toy-gen"] == "toy-gen-package"
    # `bench calibrate` measures it like any other generator, with a timed closed loop
    assert "toy" in names() and calibrate._chosen("toy", print) == ["toy"]
    assert calibrate._spec("toy", 16, 2.0, "0", 1, tmp_path, 0) == LoadSpec(
        port=1, scenario=calibrate.SCENARIO, concurrency=16, duration_s=2.0, cpus="0", timeout_s=10.0, out_dir=tmp_path)


def test_a_missing_generator_says_how_to_install_it(toy):
    register(DriverInfo("toy", TOY.cls, TOY.kinds, (Tool("no-such-toy-gen", ("-v",), debian="toy-pkg"),), ()))
    with pytest.raises(MissingTool, match="apt-get install -y toy-pkg"):
        get("toy").executable()
