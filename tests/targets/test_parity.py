"""The parity table: thread pools counted by pool, placeholders filled with the values a target starts
with, and the columns in which targets differ."""
from __future__ import annotations

from dataclasses import replace

from conftest import bench, bench_env

from orchestrator.config.catalog import discover, select
from orchestrator.config.parity_fields import PARITY_FIELDS
from orchestrator.config.plan import Settings, pool_env
from orchestrator.report import parity_table, sections
from orchestrator.targets import parity

DUMP = '''"main" #1 [1234] prio=5 os_prio=0 cpu=1.00ms elapsed=1.00s tid=0x1 nid=1 waiting on condition
"http-nio-29080-exec-1" #40 [1300] daemon prio=5
"http-nio-29080-exec-2" #41 [1301] daemon prio=5
"http-nio-29080-exec-13" #52 [1312] daemon prio=5
"http-nio-29080-Poller" #60 [1320] daemon prio=5
'''


def test_threads_are_counted_by_pool_largest_first():
    assert parity.thread_pools(DUMP) == {"http-nio-N-exec-N": 3, "main": 1, "http-nio-N-Poller": 1}
    assert parity.merge_pools({"a": 2, "b": 5}, {"a": 4}) == {"b": 5, "a": 4}


def test_what_picks_a_target_s_versions_is_a_column_and_undeclared_where_its_manifest_is_silent():
    t = parity_table.table({"x:a": {"server": "Tomcat", "versions": "Spring Boot's BOM",
                              "libraries": {"netty": "netty-codec-http 4.2.17.Final"}},
                      "y:b": {"server": "Tomcat"}})
    assert list(t["versions from"]) == ["Spring Boot's BOM", parity_table.UNDECLARED]
    assert list(t["netty"]) == ["netty-codec-http 4.2.17.Final", ""]


def test_the_columns_that_differ_are_named():
    t = parity_table.table({"x:a": {"server": "Tomcat", "declared": {"backlog": "100"}, "heap": "512m", "gc": "Serial"},
                      "y:b": {"server": "Netty", "declared": {"backlog": "100"}, "heap": "512m", "gc": "Serial"}})
    assert list(t["target"]) == ["x:a", "y:b"]
    assert parity_table.differing(t) == ["server"]


def test_placeholders_take_the_values_the_target_starts_with():
    fw = discover()["spring-webflux"]
    target = select(discover(), ["spring-webflux"], ["jdbc-elastic"])[0]
    env = pool_env(Settings(db_pool_size=5, redis_pool_size=7), target)
    assert env["DB_POOL_SIZE"] == "5" and env["REDIS_POOL_SIZE"] == "7"
    declared = parity.declared(target, env)
    assert "5 connections" in declared["db"] and "{" not in declared["db"]
    assert declared["redis"] == fw.parity["redis"]        # no placeholder: Lettuce pipelines


def test_the_downstream_pool_placeholder_is_the_contracts_default_unless_the_environment_sets_it():
    target = select(discover(), ["spring-mvc"], ["platform"])[0]
    assert "{DOWNSTREAM_POOL_SIZE}" in target.framework.parity["downstream"]
    declared = parity.declared(target, pool_env(Settings(), target))["downstream"]
    assert "512 connections" in declared and "{" not in declared
    assert "64 connections" in parity.declared(target, {"DOWNSTREAM_POOL_SIZE": "64"})["downstream"]


def test_a_variant_env_wins_over_the_run_limits():
    target = select(discover(), ["vertx"], ["eventloop"])[0]
    shrunk = replace(target, variant=replace(target.variant, env={**target.variant.env, "DB_POOL_SIZE": "2"}))
    assert pool_env(Settings(db_pool_size=16), shrunk)["DB_POOL_SIZE"] == "2"


def test_a_pool_size_out_of_range_is_a_usage_error():
    r = bench("run", "-f", "vertx", "--redis-pool-size", "0", frameworks=None)
    assert r.returncode == 2 and "--redis-pool-size must be from 1 to 1000" in r.stdout + r.stderr


def test_a_target_that_declares_nothing_reads_undeclared_and_the_report_warns():
    # issue 31: a framework.toml without [parity] showed blank cells, with no warning
    entries = {"x:a": {"server": "Tomcat", "declared": {f: "stated" for f in PARITY_FIELDS}},
               "stranger:b": {"server": "Netty", "declared": {"backlog": "128"}}}
    t = parity_table.table(entries).set_index("target")
    assert t.loc["stranger:b", PARITY_FIELDS["db"]] == "undeclared"
    assert t.loc["stranger:b", PARITY_FIELDS["backlog"]] == "128"
    assert t.loc["x:a", PARITY_FIELDS["db"]] == "stated"
    assert parity_table.undeclared(entries) == {"stranger:b": [f for f in PARITY_FIELDS if f != "backlog"]}
    warned = sections.warnings({"parity": entries, "warnings": ["loadgen busy"]})
    assert warned[0] == "loadgen busy" and len(warned) == 2
    assert warned[1].startswith("stranger:b declares no workers, redis, db, downstream, keep_alive in its framework.toml"), warned


def test_bench_parity_of_many_targets_reads_at_100_columns():
    # issue 31: 25 targets squeezed into columns a few characters wide; one block per property instead
    r = bench("parity", "-f", "fixture", env=bench_env(COLUMNS="100"))
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert max(map(len, lines)) <= 100, max(lines, key=len)
    assert "threads that run a request's work" in lines and "accept backlog" in lines, r.stdout[:2000]
    # the fixture declares no [parity]: each field's "undeclared" is written once, with every variant under it
    assert r.stdout.count("undeclared") == len(PARITY_FIELDS), r.stdout[:3000]
