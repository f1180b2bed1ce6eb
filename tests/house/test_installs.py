"""Load generators made on first use (infra/installs.py): the installer builds none up front, a run
asks only for the generators it drives, the first use builds one once (a fake `go` here: no real
build), a failed build says where its output is, and recording tool versions builds nothing."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from orchestrator import __main__ as installer
from orchestrator.config import driver_registry as registry
from orchestrator.config import profiles
from orchestrator.config.driver_registry import K6_MODULE, get
from orchestrator.errors import MissingTool
from orchestrator.infra import hostinfo, installs
from orchestrator.measure.warmup import generators

# `go install MODULE` as far as these tests need it: records the call, then writes a k6 into GOBIN
FAKE_GO = """#!/bin/sh
echo "$@ GOBIN=$GOBIN CGO_ENABLED=$CGO_ENABLED" >> "{calls}"
echo "go: downloading go.k6.io/k6 v1.8.1"
printf '#!/bin/sh\\necho "k6 v1.8.1"\\n' > "$GOBIN/k6"
chmod +x "$GOBIN/k6"
"""
FAILING_GO = """#!/bin/sh
echo "$@" >> "{calls}"
echo "go: downloading go.k6.io/k6 v1.8.1"
echo "go: go.k6.io/k6@v1.8.1: Get https://proxy.golang.org/: dial tcp: lookup proxy.golang.org: no such host"
exit 1
"""


@pytest.fixture
def venv(tmp_path, monkeypatch):
    """An empty virtualenv's bin folder as where generators are built, and a PATH with no k6 on it
    but a fake `go`; returns (bin folder, the file the fake go records its calls in, the go script)."""
    bin_dir, tools = tmp_path / "venv" / "bin", tmp_path / "tools"
    bin_dir.mkdir(parents=True)
    tools.mkdir()
    calls = tmp_path / "go-calls"
    go = tools / "go"
    go.write_text(FAKE_GO.format(calls=calls))
    go.chmod(0o755)
    monkeypatch.setattr(installs, "bin_dir", lambda: bin_dir)
    monkeypatch.setattr(sys, "executable", str(bin_dir / "python"))   # require_tool looks beside it first
    monkeypatch.setenv("PATH", f"{tools}:/usr/bin:/bin")
    return bin_dir, calls, go


def _calls(calls: Path) -> list[str]:
    return calls.read_text().splitlines() if calls.exists() else []


def test_the_installer_builds_no_load_generator(venv, monkeypatch):
    _, calls, _ = venv
    steps = []
    monkeypatch.setattr(installer, "_missing_packages", lambda wanted: [])
    monkeypatch.setattr(installer, "_venv", lambda test: steps.append("venv with test tools" if test else "venv"))
    monkeypatch.setattr(installer, "_docker_engine", lambda: steps.append("docker"))
    monkeypatch.setattr(os, "chdir", lambda path: None)

    class Replaced(Exception):
        pass

    def execv(path, argv):
        steps.append(argv[1:])
        raise Replaced

    monkeypatch.setattr(os, "execv", execv)
    with pytest.raises(Replaced):
        installer.main(["run", "--framework", "spring-webflux"])
    # the environment (without the test tools), then bench itself: no go install on the way, though
    # Go is there and k6 is not
    assert steps == ["venv", ["run", "--framework", "spring-webflux"]]
    assert _calls(calls) == []


def test_a_run_asks_only_for_the_generators_it_drives():
    shipped = {name: generators(profiles.load(name)) for name in ("throughput", "burst", "rate", "capacity", "ramp")}
    # the default throughput run warms up and measures with wrk: k6 is never asked for (nor built)
    # nor by the open-model kinds: pacer runs them, compiled on first use
    assert shipped == {"throughput": ["wrk"], "burst": ["wrk", "k6"], "rate": ["pacer"], "capacity": ["pacer"],
                       "ramp": ["wrk", "locust"]}
    # no warm-up, no warm-up generator
    assert generators(profiles.load("burst").with_overrides(warmup_s=0.0)) == ["k6"]


def test_a_generator_made_on_first_use_is_built_once_and_stamped(venv, capsys):
    bin_dir, calls, _ = venv
    k6 = get("k6")
    assert k6.executable() == str(bin_dir / "k6")
    assert k6.executable() == str(bin_dir / "k6")   # found the second time, not built again
    assert _calls(calls) == [f"install {K6_MODULE} GOBIN={bin_dir} CGO_ENABLED=0"]
    stamp, log = bin_dir.parent / ".k6-from", bin_dir.parent / "k6-build.log"
    assert stamp.read_text() == K6_MODULE
    assert "go: downloading go.k6.io/k6 v1.8.1" in log.read_text()   # go's output in the log, not on the terminal
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith(f"building k6 into {bin_dir} (go install {K6_MODULE}, about a minute, once; log: {log})")
    # a new version in the registry builds anew; the stamp then names it
    assert installs.go_install("k6", "go.k6.io/k6@v9.9.9") == str(bin_dir / "k6")
    assert len(_calls(calls)) == 2 and stamp.read_text() == "go.k6.io/k6@v9.9.9"


def test_a_k6_on_path_is_used_as_it_is(venv, tmp_path):
    bin_dir, calls, _ = venv
    elsewhere = tmp_path / "tools" / "k6"
    elsewhere.write_text("#!/bin/sh\necho k6 v1.0.0\n")
    elsewhere.chmod(0o755)
    assert get("k6").executable() == str(elsewhere)
    assert _calls(calls) == [] and not (bin_dir / "k6").exists()


def test_a_failing_build_names_its_log_and_how_to_install_by_hand(venv):
    bin_dir, calls, go = venv
    go.write_text(FAILING_GO.format(calls=calls))
    log = bin_dir.parent / "k6-build.log"
    with pytest.raises(MissingTool) as failed:
        get("k6").executable()
    message = str(failed.value)
    assert message.startswith(f"could not build k6: `go install {K6_MODULE}` exited with 1; its output is in {log}")
    assert "lookup proxy.golang.org: no such host" in message          # go's last line of its own
    assert f"GOBIN={bin_dir} CGO_ENABLED=0 go install {K6_MODULE}" in message
    assert "\n" not in message and not (bin_dir.parent / ".k6-from").exists()
    assert "no such host" in log.read_text()


def test_without_go_a_missing_k6_says_where_to_get_go(venv, monkeypatch):
    monkeypatch.setattr(installs, "_go", lambda: None)
    with pytest.raises(MissingTool, match=r"no Go toolchain to build it with: install Go from https://go.dev/dl"):
        get("k6").executable()


def test_recording_tool_versions_builds_nothing(venv, monkeypatch, tmp_path):
    _, calls, _ = venv
    monkeypatch.setattr(hostinfo, "VERSIONS_FILE", tmp_path / "versions.json")
    recorded = hostinfo.tool_versions()
    assert recorded["k6"] == "" and _calls(calls) == []   # absent, as it is, and not built to find out
    assert set(recorded) >= {t.executable for t in registry.tools()}


def test_an_installer_step_is_one_line_and_its_output_goes_to_the_log(tmp_path, monkeypatch, capsys):
    log = tmp_path / ".venv" / "install.log"
    monkeypatch.setattr(installer, "LOG", log)
    installer._step("pip: installing things", ["sh", "-c", "echo Collecting locust; echo Downloading 12 MB"], 1)
    out, err = capsys.readouterr()
    assert out.count("\n") == 1 and err == ""
    assert out.startswith(f"pip: installing things (log: {log}) ... ") and out.endswith(" s\n")
    assert "Collecting locust\nDownloading 12 MB" in log.read_text()   # the tool's own output, in the log only


def test_a_failed_installer_step_prints_the_logs_last_lines_and_its_path(tmp_path, monkeypatch, capsys):
    log = tmp_path / ".venv" / "install.log"
    monkeypatch.setattr(installer, "LOG", log)
    with pytest.raises(SystemExit) as ended:
        installer._step("apt-get install: wrk", ["sh", "-c", "for i in $(seq 1 30); do echo apt line $i; done; exit 100"], 2)
    assert ended.value.code == 2
    out, err = capsys.readouterr()
    assert out == f"apt-get install: wrk (log: {log}) ... failed\n"
    shown = err.splitlines()
    assert shown[:-1] == [f"apt line {i}" for i in range(11, 31)]   # the last 20 lines of the log
    assert shown[-1] == f"`sh -c for i in $(seq 1 30); do echo apt line $i; done; exit 100` exited with 100; " \
                        f"its full output is in {log}"


def test_the_installer_installs_the_downstream_s_echo_module_a_file_not_a_command(tmp_path):
    """The downstream service needs a file no executable names (nginx's echo module): the installer
    looks for that file, so a fresh machine with nginx alone still gets the module."""
    from orchestrator.infra import downstream
    assert installer.apt()[str(downstream.ECHO_MODULE)] == downstream.INSTALL.split()[-1]
    wanted = {str(tmp_path / "absent.so"): "a-module", str(tmp_path): "present-folder", "sh": "dash"}
    assert installer._missing_packages(wanted) == ["a-module"]
