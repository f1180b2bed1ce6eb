"""Topology files (config/topology.py): checked field by field, a varying link's levels, the wire's units,
the rule for Locust workers on a host of their own, and the report's
reading of levels."""
from __future__ import annotations

import pytest
from conftest import ROOT, bench

from orchestrator.config.catalog import discover, resolve
from orchestrator.config.plan import Plan, Settings
from orchestrator.config.profiles import load as load_profile
from orchestrator.config.topology import Link, Shape, Topology, load
from orchestrator.infra.network import wire_line


@pytest.mark.parametrize("text,problem", [
    ('server = "App"\ndata = "db"', "field 'server': 'App': a host is 'local' or a name"),
    ('server = "app"', "field 'data': the data services stay on the local host"),
    ('server = "app"\ndata = "db"\n[[links]]\nbetween = ["local", "nowhere"]', "links[0].between"),
    ('server = "app"\ndata = "db"\n[[links]]\nbetween = ["app", "db"]\nrate = "fast"', "links[0].rate"),
    ('server = "app"\ndata = "db"\n[[links]]\nbetween = ["app", "db"]\nrtt = "far"', "links[0].rtt"),
    ('server = "app"\ndata = "db"\n[[links]]\nbetween = ["app", "db"]\nrtt = ["1ms", "2ms"]\n'
     '[[links]]\nbetween = ["local", "app"]\nrtt = ["1ms", "2ms"]', "only one link may list"),
    ('server = "app"\ndata = "db"\nlatency = "1ms"', "field 'latency': unknown field"),
])
def test_a_topology_file_is_checked_field_by_field(tmp_path, text, problem):
    path = tmp_path / "t.toml"
    path.write_text(text)
    r = bench("run", "-f", "fixture:ok", "-s", "json", "--topology", str(path))
    assert r.returncode == 2 and problem in r.stdout + r.stderr, r.stdout + r.stderr
    assert len((r.stdout + r.stderr).strip().splitlines()) == 1


def test_a_varying_link_makes_levels_and_each_cell_is_measured_at_each():
    topo = load("far-database")
    assert topo.levels() == [None] and topo.pairs() == [("local", "app"), ("local", "db"), ("app", "db")]
    many = Topology(server="app", data="db", links=(Link("app", "db", (Shape(0.0), Shape(40.0))),))
    assert many.levels() == ["app-db rtt 0 ms", "app-db rtt 40 ms"]
    assert many.shapes_at("app-db rtt 40 ms")["app-db"].rtt_ms == 40.0
    assert Topology.from_dict(many.to_dict()) == many
    target = resolve(discover(ROOT / "tests" / "fixtures" / "frameworks"), "fixture:ok")
    plan = Plan(matrix={"fixture:ok": ["json", "sleep"]}, profile=load_profile("throughput"),
                settings=Settings(topology=many.to_dict()))
    cells = plan.cells(target)
    # the levels outermost: the link is reshaped once per level and JVM
    assert [c[3] for c in cells] == ["app-db rtt 0 ms"] * 2 + ["app-db rtt 40 ms"] * 2
    assert plan.row_keys(target, 1, cells[2])[0][2] == "app-db rtt 40 ms"
    assert Plan.from_dict(plan.to_dict()).cells(target) == cells   # a resumed run has the same levels


def test_a_shape_is_written_for_the_wire_in_its_units():
    # one-way delay and jitter in microseconds, loss in parts per million, rate in bit/s
    assert wire_line(Shape(170.0, 1.0, 0.5, "100mbit")) == "85000 1000 5000 100000000\n"
    assert Shape().plain and not Shape(rate="1gbit").plain






def test_workers_on_a_host_of_their_own_need_a_ramp_with_workers():
    r = bench("run", "-f", "fixture:ok", "-s", "json", "--topology", "locust-workers-host")
    assert r.returncode == 2 and "needs a ramp profile with workers" in r.stdout + r.stderr, r.stdout + r.stderr


def test_the_report_reads_levels_against_the_pool_bound_and_names_only_real_overtakes():
    import pandas as pd

    from orchestrator.report import network as network_report
    near, far = "app-db rtt 0 ms", "app-db rtt 20 ms"
    meta = {"plan": {"settings": {"db_pool_size": 16, "topology": None}}}

    def frame(figures: dict) -> pd.DataFrame:
        """Two repeats of each target's rps near and far, 1 % either side of the figure."""
        return pd.DataFrame([{"target": t, "scenario": "db-read", "network": lv, "status": "ok", "rps": rps * k,
                              "network_rtt_ms": 0.02 if lv == near else 20.0}
                             for t, (n, f) in figures.items() for lv, rps in ((near, n), (far, f)) for k in (0.99, 1.01)])

    said = network_report.verdicts(frame({"a": (10_000, 790), "b": (5_000, 600), "c": (4_000, 780)}),
                                   "db-read", [near, far], meta)
    assert said[0] == "db-read at app-db rtt 0 ms: a leads with 10,000 rps, 100 % ahead of b."
    # 16 connections, 20 ms a statement: 800 a second at most; c ahead of b by 30 % far, behind by 20 % near
    assert said[1].startswith("db-read at app-db rtt 20 ms: a leads with 790 rps, within 10 % of c (780); the "
                              "bound of 16 connections each holding a statement for the probed 20 ms is 800 rps")
    assert said[2:] == ["db-read: c overtakes b at app-db rtt 20 ms: 780 against 600 rps, 20 % behind at "
                        "app-db rtt 0 ms."]
    # a 5 % lead near turned into a 5 % lead the other way is no overtake: 2 repeats 2 % apart cannot
    # tell 5 % (the judge's rule, as for a crown); the same turn with 3 tight repeats a side can
    said = network_report.verdicts(frame({"a": (10_500, 760), "b": (10_000, 800)}), "db-read", [near, far], meta)
    assert said[-1] == "db-read: no target overtakes another beyond the noise of its repeats across the levels."
    tight = pd.concat([frame({"a": (10_500, 760), "b": (10_000, 800)}).assign(rps=lambda d: d["rps"].round(-1))] * 2)
    tight["rps"] += [0, 1, 2, 3] * (len(tight) // 4)
    said = network_report.verdicts(tight, "db-read", [near, far], meta)
    assert said[-1].startswith("db-read: b overtakes a at app-db rtt 20 ms")
    table = network_report.table(frame({"a": (10_500, 760)}), "db-read", [near, far])
    assert list(table.columns) == ["rps by network level", near, far] and table.iloc[-1, 0] == "round trip probed"
