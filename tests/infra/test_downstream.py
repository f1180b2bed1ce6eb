"""The downstream service (infra/downstream.py) without starting it: its configuration, its status page,
the flags of a cell off fan-out's contract, and the smoke's reading of 502 and 504."""
from __future__ import annotations

import gzip
from pathlib import Path

from orchestrator.config.load import LoadResult
from orchestrator.config.scenarios import SCENARIOS
from orchestrator.core import downstream_api
from orchestrator.infra import downstream
from orchestrator.measure.evidence import Evidence, off_contract
from orchestrator.targets import smoke


def test_echo_sleep_reads_milliseconds_as_seconds():
    assert [downstream.seconds(ms) for ms in (0, 7, 20, 999, 1000, 1500, 60_000)] == \
        ["0.000", "0.007", "0.020", "0.999", "1.000", "1.500", "60.000"]


def test_the_status_page_less_the_poll_itself():
    page = "Active connections: 5 \nserver accepts handled requests\n 12 12 1040 \nReading: 0 Writing: 4 Waiting: 1 \n"
    assert downstream_api.parse_status(page, polls=40) == downstream_api.Status(calls=1000, in_flight=3, connections=4)


def test_the_config_listens_where_asked_and_nowhere_else(tmp_path):
    conf = downstream.config(tmp_path, 18999, ["127.0.0.1", "198.18.0.2"], 20)
    assert [line.strip() for line in conf.splitlines() if line.strip().startswith("listen")] == \
        ["listen 127.0.0.1:18999;", "listen 198.18.0.2:18999;"]
    assert 'default "0.020";' in conf


def test_a_cell_off_fan_out_s_contract_or_with_a_busy_downstream_is_flagged():
    fan_out, json_ = SCENARIOS["fan-out"], SCENARIOS["json"]
    row = Evidence(downstream_calls=3000.0, downstream_cpu_s=2.0).per_request(1000, duration_s=10.0)
    assert (row["downstream_calls_per_request"], row["downstream_cpu_pct"]) == (3.0, 20.0)
    assert off_contract(fan_out, row) == []
    assert off_contract(fan_out, {"downstream_calls_per_request": 1.0}) == ["downstream-calls-off-contract"]
    assert off_contract(json_, {"downstream_calls_per_request": 0.0, "downstream_cpu_pct": 85.0}) == ["downstream-busy"]


def _burst_csv(folder: Path, name: str, codes: list[str]) -> None:
    header = "metric_name,timestamp,metric_value,status\n"
    rows = "".join(f"http_reqs,1,1,{c}\nhttp_req_duration,1,20,{c}\n" for c in codes)
    with gzip.open(folder / f"k6-{name}-c{len(codes)}.requests.csv.gz", "wt") as f:
        f.write(header + rows)


def test_the_smoke_takes_fan_out_s_502_and_504_as_answers_and_nothing_else(tmp_path):
    """A burst into a fresh JVM can queue calls past the contract's 5 s: the target answered 504 by the
    contract and survived. A 500, or a 504 from a scenario that calls no downstream, is a failure."""
    fan_out = SCENARIOS["fan-out"]
    _burst_csv(tmp_path, "fan-out", ["200", "200", "504", "502"])
    r = LoadResult(requests=4, duration_s=1.0, errors_status=2)
    assert smoke._downstream_answers_only(fan_out, r, tmp_path, 4) == "1 answered 502, 1 answered 504"
    assert "the contract's answer" in (tmp_path / "fan-out-downstream-answers.txt").read_text()
    _burst_csv(tmp_path, "fan-out", ["200", "200", "504", "500"])
    assert smoke._downstream_answers_only(fan_out, r, tmp_path, 4) == ""
    assert smoke._downstream_answers_only(SCENARIOS["json"], r, tmp_path, 4) == ""
    _burst_csv(tmp_path, "fan-out", ["200", "504", "502"])   # one of four never sent: a failure whatever came back
    assert smoke._downstream_answers_only(fan_out, LoadResult(requests=3, duration_s=1.0, errors_status=2), tmp_path, 4) == ""
