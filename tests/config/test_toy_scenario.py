"""A scenario added the way docs/adding-a-scenario.md says, in the test: a `Scenario` in SCENARIOS and its
row in CONTRACT.md. A manifest may then list it, verification holds a server to its answer and its
parameter rule, every generator's request is made from it, and a cell that does backend work it does
not declare is flagged. The server is a real HTTP server in this process; nothing else is stubbed."""
from __future__ import annotations

import http.server
import json
import threading
from pathlib import Path

import pytest
from conftest import ROOT, VALID, Answering, contract_disagreements, write

from orchestrator.config import scenarios
from orchestrator.config.catalog import load_manifest
from orchestrator.config.load import LoadSpec
from orchestrator.config.scenarios import SCENARIOS, Scenario
from orchestrator.drivers import k6, pacer, wrk
from orchestrator.errors import ManifestError
from orchestrator.measure.evidence import off_contract

# The docs' example, as written there
UPPER = Scenario("upper", "GET", "/upper?text=abc", 200, "application/json", {"upper": "ABC"},
                 rejects=(("/upper", "a missing text"),),
                 contract="answers the text it was given in upper case, as {\"upper\": ...}; no Redis command, no "
                          "database statement.")
ROW = "| upper | `GET /upper?text=abc` | 200 `application/json`: `{\"upper\":\"ABC\"}` |"


@pytest.fixture
def added(monkeypatch):
    monkeypatch.setitem(SCENARIOS, "upper", UPPER)
    return UPPER


class _Upper(Answering):
    shout = True   # False: answers the text as it came, which the contract does not want

    def do_GET(self):   # the standard library names it
        path, _, query = self.path.partition("?")
        text = dict(p.split("=", 1) for p in query.split("&") if "=" in p).get("text")
        status, doc = (400, {"error": "text is missing"}) if path == "/upper" and text is None else \
            (200, {"upper": text.upper() if self.shout else text}) if path == "/upper" else (404, {})
        self.answer(status, json.dumps(doc).encode())


@pytest.fixture
def server():
    s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Upper)
    threading.Thread(target=s.serve_forever, daemon=True).start()
    yield s.server_address[1]
    s.shutdown()
    s.server_close()


def test_the_contract_table_wants_its_row(added):
    contract = (ROOT / "frameworks" / "CONTRACT.md").read_text()
    assert contract_disagreements(contract, SCENARIOS) == ["upper: a scenario and no row"]
    header = "| scenario | request | response |\n|---|---|---|\n"
    with_row = contract.replace(header, header + ROW + "\n", 1)
    assert contract_disagreements(with_row, SCENARIOS) == []


def test_a_manifest_may_list_it_once_it_is_a_scenario(tmp_path, monkeypatch):
    manifest = write(tmp_path, VALID.replace('scenarios = ["plaintext", "json"]', 'scenarios = ["plaintext", "json", "upper"]'))
    with pytest.raises(ManifestError, match="unknown scenario 'upper'"):
        load_manifest(manifest)
    monkeypatch.setitem(SCENARIOS, "upper", UPPER)
    assert load_manifest(manifest).scenarios == ("plaintext", "json", "upper")


def test_verification_holds_a_server_to_its_answer_and_its_parameter_rule(added, server, monkeypatch):
    problems, _ = added.check(server)
    assert problems == []
    monkeypatch.setattr(_Upper, "shout", False)
    problems, _ = added.check(server)
    assert problems == ['GET /upper?text=abc: body {"upper": "abc"}, expected {"upper": "ABC"}']
    # a parameter rule the server does not keep is named with the rule
    monkeypatch.setattr(_Upper, "shout", True)
    strict = Scenario(**{**UPPER.__dict__, "rejects": (("/upper?text=", "an empty text"),)})
    problems, _ = strict.check(server)
    assert problems == ["GET /upper?text= gave 200, expected 400 (the contract rejects an empty text with 400)"]


def test_every_generator_sends_its_request(added, tmp_path):
    spec = LoadSpec(port=29081, scenario=added, concurrency=4, duration_s=1.0, cpus="0", timeout_s=5.0,
                    out_dir=tmp_path)
    assert pacer.request_bytes(added, "127.0.0.1", 29081).startswith(b"GET /upper?text=abc HTTP/1.1\r\n")
    assert 'METHOD = "GET"' in k6.script(spec, str(tmp_path / "out.json")) and spec.url.endswith("/upper?text=abc")
    assert 'wrk.method = "GET"' in wrk.lua_script(spec, Path(tmp_path / "out.json"))


def test_a_cell_that_does_work_the_scenario_does_not_declare_is_flagged(added):
    assert off_contract(added, {"redis_commands_per_request": 0.0, "db_selects_per_request": 0.0}) == []
    assert off_contract(added, {"redis_commands_per_request": 1.0}) == ["redis-commands-off-contract"]
    assert "upper" in scenarios.manifest_scenarios()
