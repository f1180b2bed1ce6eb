"""A profile kind added the way docs/adding-a-profile-kind.md says, in the test: one class and one
registry entry. The toy "stairs" climbs its concurrencies inside one cell, a load and a row per stair.
Its profile file loads, a bad field is named, it describes itself, the plan sees its cells and rows,
and measure_cell runs its loop through the real cell (warm-up skipped, sampler, health check, rows).

Stubs, only where the real thing cannot run in the fast tier: the load generator (a driver that
answers at once), the JVM (a server process with nothing to sample) and the environment that would
start it. The target's health check is a real HTTP server on this machine."""
from __future__ import annotations

import http.server
import threading
from dataclasses import replace
from types import SimpleNamespace

import pytest

from orchestrator.config import driver_registry, kinds, profiles
from orchestrator.config.kinds.base import CellRun, Kind, Rows
from orchestrator.config.load import LoadResult
from orchestrator.config.plan import Plan, Settings
from orchestrator.errors import ManifestError, UsageError
from orchestrator.measure.cell import measure_cell


class StairsKind(Kind):
    name = "stairs"
    options = ("concurrency", "duration_s")
    closed_loop = True

    def read(self, doc, p):
        if list(p.concurrency) != sorted(set(p.concurrency)) or len(p.concurrency) < 2:
            doc.fail("concurrency", "stairs climb: at least two concurrencies, each above the last")
        return p

    def levels(self, p):
        return [(p.concurrency[-1], None)]   # one cell per scenario: the whole staircase

    def row_keys(self, p, concurrency, rate):
        return [(c, None, step) for step, c in enumerate(p.concurrency, start=1)]

    def warmup_connections(self, p, concurrency):
        return p.concurrency[0]

    def measured_s(self, p):
        return p.duration_s * len(p.concurrency)

    def describe(self, p):
        return f"{' -> '.join(map(str, p.concurrency))} connections, {p.duration_s:g} s each"

    def measure(self, cell: CellRun) -> Rows:
        rows = []
        for step, c in enumerate(cell.profile.concurrency, start=1):
            name = f"{cell.name}-stair{step}"
            result, sampler = cell.drive(replace(cell.load, concurrency=c), name)
            sample = cell.window(sampler, result, whole_load=True)
            flags = cell.flags(c, result, sample)
            row = cell.row({"concurrency": c, "rate": None, "step": step}, result, sample, flags)
            rows += cell.keep(name, [result], [row])
        return rows, []


@pytest.fixture
def stairs(monkeypatch, tmp_path):
    monkeypatch.setitem(kinds.KINDS, StairsKind.name, StairsKind())   # the registry entry
    # and the kind in the entry of a driver that runs it (config/driver_registry.py): wrk, for the toy
    wrk = driver_registry.info("wrk")
    driver_registry.register(replace(wrk, kinds=(*wrk.kinds, StairsKind.name)))
    path = tmp_path / "stairs.toml"
    path.write_text('kind = "stairs"\nconcurrency = [8, 16, 32]\nduration = "2s"\nwarmup = "0s"\n')
    yield path
    driver_registry.register(wrk)


def test_a_toy_kind_loads_validates_describes_and_plans_its_cells(stairs):
    p = profiles.load(str(stairs))
    assert (p.kind, p.driver, p.concurrency, p.duration_s) == ("stairs", "wrk", (8, 16, 32), 2.0)
    assert p.describe() == "8 -> 16 -> 32 connections, 2 s each"
    assert p.levels() == [(32, None)] and p.measured_s() == 6.0 and p.warmup_connections(32) == 8
    assert p.row_keys(32, None) == [(8, None, 1), (16, None, 2), (32, None, 3)]
    assert p.with_overrides(concurrency=(1, 2), warmup_s=1.0).describe() == "1 -> 2 connections, 2 s each"
    with pytest.raises(UsageError, match=r"--rate does not apply to the stairs profile 'stairs' \(it applies to: rate"):
        p.with_overrides(rates=(100,))
    stairs.write_text('kind = "stairs"\nconcurrency = [32, 8]\n')
    with pytest.raises(UsageError) as e:   # a ManifestError, which names the file and the field
        profiles.load(str(stairs))
    assert isinstance(e.value, ManifestError) and e.value.field == "concurrency" and "stairs climb" in str(e.value)
    stairs.write_text('kind = "stairs"\nconcurrency = [8, 16]\nstairs = 3\n')
    with pytest.raises(ManifestError, match="field 'stairs': unknown field"):
        profiles.load(str(stairs))


class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


class AnswersAtOnce:
    """The load generator's stub: a result for each load it is given, and the loads, to look at."""

    def __init__(self):
        self.loads = []

    def run(self, load):
        self.loads.append(load)
        return LoadResult(requests=1000 * load.concurrency, duration_s=load.duration_s, latency_p50=1.0,
                          started_at=0.0)


def test_the_cell_runs_a_toy_kind_through_its_own_loop(stairs, monkeypatch, tmp_path):
    generator = AnswersAtOnce()
    monkeypatch.setattr(driver_registry, "get", lambda name: generator)
    health = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Health)
    threading.Thread(target=health.serve_forever, daemon=True).start()
    try:
        plan = Plan(matrix={"toy:one": ["plaintext"]}, profile=profiles.load(str(stairs)),
                    settings=Settings(port=health.server_address[1]))
        server = SimpleNamespace(pid=None, log_path=tmp_path / "server.log", usage=lambda: None,
                                 usage_after=lambda at: None, counters=lambda: None, exit_code=lambda: None)
        environment = SimpleNamespace(logs=tmp_path / "logs", results_root=tmp_path / "results",
                                      jdk=SimpleNamespace(home=tmp_path), server_host="127.0.0.1",
                                      local_server_cpus="1",
                                      catalog={"toy": SimpleNamespace(health_path="/health")},
                                      load_placement=dict)
        base = {"run_id": "r", "target": "toy:one", "framework": "toy", "scenario": "plaintext", "repeat": 1}
        rows, series = measure_cell(environment, SimpleNamespace(server=server, launched_at=0.0), plan, base, "plaintext",
                                    *plan.profile.levels()[0])
    finally:
        health.shutdown()
    assert [load.concurrency for load in generator.loads] == [8, 16, 32]
    assert {load.duration_s for load in generator.loads} == {2.0} and series == []
    assert [(r["concurrency"], r["rate"], r["step"]) for r in rows] == plan.profile.row_keys(32, None)
    assert all(r["status"] == "ok" and r["warmup_s"] == 0.0 for r in rows)
    assert [r["rps"] for r in rows] == [4000.0, 8000.0, 16000.0]
