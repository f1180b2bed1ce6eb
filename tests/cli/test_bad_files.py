"""Files that are not what their names say, fed to every command that reads that kind of file: each answers
in one line on stderr and exit 2, without a traceback and without waiting (a FIFO opened for reading waits
for a writer forever, so every command runs under a timeout). No JVM starts: these errors come first.

About 130 commands: each runs the real `bench` main in a child forked from this process, which has imported
bench and pandas already, so that a command costs milliseconds rather than the second of imports a fresh
interpreter spends (tests/cli/test_pipeline.py starts `python -m orchestrator.cli` itself)."""
from __future__ import annotations

import os
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pandas  # noqa: F401  (imported before the forks, which then share it)
import pytest
from conftest import FIXTURES, VALID, bench_in_fork, write

from orchestrator.config import profiles, scenarios
from orchestrator.config.catalog import CONTRACT_ENV, Target, discover, load_manifest, select
from orchestrator.errors import BadFile
from orchestrator.infra.backends import Infra
from orchestrator.measure import ceilings
from orchestrator.results import noise
from orchestrator.results import store as results
from orchestrator.targets.verify import verify

# Far beyond the tenths of a second a command takes to fail; one that hangs on a FIFO never returns.
HANG_S = 60


def not_utf8(p: Path) -> None:
    p.write_bytes(b'name = "caf\xe9"\n')


def binary(p: Path) -> None:
    p.write_bytes(bytes(range(256)) * 8)


# Each kind of bad file, made at a path.
BAD = {
    "not UTF-8": not_utf8,
    "a folder": Path.mkdir,
    "a FIFO": os.mkfifo,
    "a device": lambda p: p.symlink_to("/dev/zero"),
    "binary": binary,
    "empty": lambda p: p.write_bytes(b""),
}
# What each kind is called in its line (an empty TOML file is valid TOML that misses its fields).
SAID = {"not UTF-8": "not UTF-8 text", "a folder": "a folder, not a file", "a FIFO": "a FIFO",
        "a device": "a device, not a file", "binary": "binary file"}


@pytest.fixture(scope="module", autouse=True)
def _warm(warm_command_line):
    """Every command of this file runs in a fork of a process that ran one already."""


def bench(*args: str, frameworks: Path = FIXTURES) -> subprocess.CompletedProcess:
    return bench_in_fork(*args, frameworks=frameworks, hang_s=HANG_S)


def one_line(r, *names: str) -> str:
    """The command failed as a usage error in one line on stderr that names what is wrong."""
    said = f"bench {' '.join(r.args[1:])}:\n{r.stdout}{r.stderr}"
    assert r.returncode == 2, said
    assert "Traceback" not in r.stdout + r.stderr, said
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), said
    for name in names:
        assert name in lines[0], said
    return lines[0]


def each_fails(commands: list[list[str]], *names: str, frameworks: Path = FIXTURES) -> None:
    """Every command fails in one line naming names."""
    for args in commands:
        one_line(bench(*args, frameworks=frameworks), *names)


@pytest.fixture
def frameworks(tmp_path) -> Path:
    """A catalog of the fixture framework and one folder, bad/, whose framework.toml a test makes bad."""
    root = tmp_path / "frameworks"
    (root / "bad").mkdir(parents=True)
    (root / "fixture").symlink_to(FIXTURES / "fixture")
    return root


@pytest.mark.parametrize("kind", BAD)
def test_a_bad_framework_toml(frameworks, tmp_path, kind):
    BAD[kind](frameworks / "bad" / "framework.toml")
    said = SAID.get(kind, "field 'name': missing")
    listed = bench("list", frameworks=frameworks)
    one_line(listed, "bad/framework.toml", said)
    assert "fixture:ok" in listed.stdout   # the others are listed
    not_a_folder = tmp_path / "results"
    not_a_folder.write_text("")   # should a run pass the catalog, it stops there, before anything starts
    each_fails([["verify", "-f", "bad"], ["run", "-f", "bad:x", "--results-dir", str(not_a_folder)],
                ["run", "--results-dir", str(not_a_folder)]],   # every framework: the bad one too
               "bad/framework.toml", said, frameworks=frameworks)


def test_a_bad_framework_folder_leaves_the_others_with_a_warning(frameworks):
    (frameworks / "bad" / "framework.toml").mkdir()
    catalog = discover(frameworks)
    assert list(catalog) == ["fixture"] and list(catalog.broken) == ["bad"]
    with pytest.warns(UserWarning, match="frameworks folder 'bad' skipped: .*bad/framework.toml: a folder"):
        assert select(catalog, ["fixture:ok"], None)[0].id == "fixture:ok"
    with pytest.raises(BadFile, match="a folder, not a file"):
        select(catalog, None, None)


@pytest.mark.parametrize("kind", BAD)
def test_a_bad_profile_or_topology_file(tmp_path, kind):
    path, not_a_folder = tmp_path / "p.toml", tmp_path / "results"
    BAD[kind](path)
    not_a_folder.write_text("")   # should a file read as a good one, the run stops there, before anything starts
    run = ["run", "-f", "fixture:ok", "--results-dir", str(not_a_folder)]
    each_fails([[*run, "--profile", str(path)]], "p.toml", SAID.get(kind, "'kind'"))
    # an empty file is a topology of every default (everything here), so --topology says the results folder
    each_fails([[*run, "--topology", str(path)]], "p.toml" if kind != "empty" else "not a folder")
    if kind != "empty":
        with pytest.raises(BadFile, match=SAID[kind]):
            profiles.load(str(path))


def row(**kw) -> dict:
    return {"run_id": "r1", "target": "a:b", "framework": "a", "variant": "b", "scenario": "json", "concurrency": 64,
            "repeat": 1, "status": "ok", "reason": "", "requests": 1000, "rps": 100.0, "latency_p99_ms": 3.5,
            "check_flags": "", **kw}


def make_run(root: Path, run_id: str, second: int) -> results.RunStore:
    store = results.RunStore(root / run_id)
    store.create({"run_id": run_id, "started_at": f"2026-01-01T00:00:0{second}", "status": "done",
                  "git_commit": "0" * 40, "host": {}, "plan": {}})
    store.add(row(run_id=run_id), series=[{"run_id": run_id, "target": "a:b", "scenario": "json", "second": 0}])
    return store


def truncated(p: Path) -> None:
    data = p.read_bytes()
    p.write_bytes(data[: len(data) // 2])


def replace(p: Path, kind: str) -> None:
    p.unlink()
    BAD[kind](p)


def run_commands(root: Path) -> list[list[str]]:
    """Every command that reads a run folder's files, each given run1 (compare: beside run2)."""
    where = ["--results-dir", str(root)]
    return [["results", "run1", *where], ["report", "run1", *where], ["compare", "run1", "run2", *where],
            ["run", "--resume", "run1", *where]]


@pytest.mark.parametrize("kind", [*BAD, "not JSON", "a JSON list"])
def test_a_bad_run_json(tmp_path, kind):
    bad, _ = make_run(tmp_path, "run1", 1), make_run(tmp_path, "run2", 2)
    path = bad.dir / results.RUN_JSON
    if kind == "not JSON":
        path.write_text('{"run_id": "run1", "started_')
    elif kind == "a JSON list":
        path.write_text("[]\n")
    else:
        replace(path, kind)
    said = {"not JSON": "not valid JSON", "a JSON list": "not the object bench writes", "empty": "not valid JSON"}
    each_fails([*run_commands(tmp_path), ["parity", "run1", "--results-dir", str(tmp_path)]], "run1/run.json",
               {**SAID, **said}[kind])
    # listing the runs skips it, with a warning line, and shows the newest that reads
    r = bench("results", "--results-dir", str(tmp_path))
    assert r.returncode == 0 and "run run2" in r.stdout, r.stdout + r.stderr
    assert r.stderr.strip().splitlines() == [r.stderr.strip()] and "skipping run folder run1" in r.stderr, r.stderr


@pytest.mark.parametrize("kind", ["truncated", *BAD])
def test_a_bad_parquet_file(tmp_path, kind):
    bad, _ = make_run(tmp_path, "run1", 1), make_run(tmp_path, "run2", 2)
    path = bad.dir / results.MEASUREMENTS
    truncated(path) if kind == "truncated" else replace(path, kind)
    said = SAID[kind] if kind in ("a folder", "a FIFO", "a device") else "not a readable Parquet file"
    each_fails(run_commands(tmp_path), "run1/measurements.parquet", said)
    with pytest.raises(BadFile, match=said):
        results.load(bad.dir)


def test_a_truncated_timeseries(tmp_path):
    bad = make_run(tmp_path, "run1", 1)
    truncated(bad.dir / results.TIMESERIES)
    each_fails([["report", "run1", "--results-dir", str(tmp_path)], ["run", "--resume", "run1", "--results-dir",
                                                                        str(tmp_path)]],
               "run1/timeseries.parquet", "not a readable Parquet file")
    with pytest.raises(BadFile, match="not a readable Parquet file"):
        results.load_timeseries(bad.dir)


@pytest.mark.parametrize("kind", [*BAD, "a JSON list"])
def test_a_bad_noise_floor_or_calibration_file(tmp_path, kind):
    make_run(tmp_path, "run1", 1)
    said = {**SAID, "a JSON list": "not the object bench writes", "empty": "not valid JSON"}[kind]
    for name in (noise.FLOOR_FILE, ceilings.FILE):
        path = tmp_path / name
        path.write_text("[]") if kind == "a JSON list" else BAD[kind](path)
    # the report and a comparison read the machine's noise floor; a run reads the calibration
    each_fails([["report", "run1", "--results-dir", str(tmp_path)], ["compare", "run1", "run1", "--results-dir",
                                                                        str(tmp_path)]], noise.FLOOR_FILE, said)
    with pytest.raises(BadFile, match=said):
        ceilings.entries(tmp_path)


def test_results_dir_that_is_a_file(tmp_path):
    file = tmp_path / "results"
    file.write_text("")
    each_fails([[*args, "--results-dir", str(file)] for args in (
        ["results"], ["results", "run1"], ["report"], ["compare", "a", "b"], ["run", "--resume", "run1"],
        ["run", "-f", "fixture:ok"], ["noise", "-f", "fixture"])], str(file), "not a folder")


def test_a_run_json_without_a_plan_is_named_on_resume(tmp_path):
    store = make_run(tmp_path, "run1", 1)
    meta = store.meta()
    del meta["plan"]
    store.write_meta(meta)
    one_line(bench("run", "--resume", "run1", "--results-dir", str(tmp_path)),
             "run1/run.json: holds no plan that loads (KeyError")


def test_the_refused_names_cover_every_variable_the_run_sets():
    """The contract's variables are those the run hands a target (backends.Infra.env, environment.py)."""
    given = Infra(redis_port=1, db_port=2, password="p", data_dir="/tmp").env()
    assert set(given) | {"PORT", "BIND_ADDRESS", "BACKEND_URL"} <= set(CONTRACT_ENV)


class OldContract(BaseHTTPRequestHandler):
    """A stranger's target written to an older contract: /sleep right, but it sleeps whatever ms it is
    given (60001 too) instead of answering 400."""
    released = threading.Event()

    def do_GET(self):
        if self.path == "/sleep?ms=60001":
            self.released.wait(30)
            return
        ok = self.path == "/sleep?ms=100"
        body = b'{"sleptMs":100}' if ok else b"bad parameter"
        self.send_response(200 if ok else 400)
        self.send_header("Content-Type", "application/json" if ok else "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_):
        pass


def test_verification_names_the_request_a_target_did_not_answer(tmp_path, monkeypatch):
    fw = load_manifest(write(tmp_path, VALID.replace('scenarios = ["plaintext", "json"]', 'scenarios = ["sleep"]')
                                        .replace(', json = "worker"', '')))
    monkeypatch.setattr(scenarios, "ANSWER_TIMEOUT_S", 0.5)   # the contract's 10 s, shortened for the test
    server = ThreadingHTTPServer(("127.0.0.1", 0), OldContract)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        v = verify(Target(fw, fw.default_variant), server.server_address[1])
    finally:
        OldContract.released.set()
        server.shutdown()
        server.server_close()
    assert v.failures == ["sleep: GET /sleep?ms=60001: no answer within 0.5 s (the contract rejects ms over 60000 "
                          "with 400)"]
