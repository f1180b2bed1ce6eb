"""framework.toml validation: every bad field gives an error naming the file and the field."""
from __future__ import annotations

import pytest
from conftest import VALID, bench, write

from orchestrator.config.catalog import CONTRACT_ENV, discover, load_manifest, select
from orchestrator.errors import ManifestError, UsageError


def test_valid_manifest_loads(tmp_path):
    fw = load_manifest(write(tmp_path, VALID))
    assert fw.name == "demo" and fw.default_variant.name == "one"
    assert fw.variants["one"].thread_pattern("json") == "worker"
    assert fw.variants["one"].thread_pattern("plaintext") == "^VirtualThread"
    assert fw.variants["two"].thread_pattern("json") is None
    assert fw.health_path == "/plaintext"


BAD = [
    # (what is changed, field named in the error)
    (lambda t: t.replace('name = "demo"\n', ''), "name"),
    (lambda t: t.replace('name = "demo"', 'name = "other"'), "name"),
    (lambda t: t.replace('description = "a demo"\n', ''), "description"),
    (lambda t: t.replace('language = "java"', 'language = 3'), "language"),
    (lambda t: t.replace('["plaintext", "json"]', '["plaintext", "nope"]'), "scenarios"),
    (lambda t: t.replace('["plaintext", "json"]', '[]'), "scenarios"),
    (lambda t: 'colour = "red"\n' + t, "colour"),
    (lambda t: t.replace('command = ["true"]', 'command = []'), "build.command"),
    (lambda t: t.replace('command = ["true"]', 'command = "mvn package"'), "build.command"),
    (lambda t: t.replace('artifact = "target/demo.jar"', 'artifact = "/abs/demo.jar"'), "build.artifact"),
    (lambda t: t.replace('artifact = "target/demo.jar"', 'artifact = "../x.jar"'), "build.artifact"),
    (lambda t: t.replace('artifact = "target/demo.jar"\n', ''), "build.artifact"),
    (lambda t: t.replace('"{artifact}"]', '"{artifact}", "{port}"]'), "start.command"),
    (lambda t: t.replace('"-jar", "{artifact}"', '"-jar={artifact}"'), "start.command"),
    (lambda t: t.replace('default = true\n', ''), "variants.*.default"),
    (lambda t: t.replace('description = "the other"', 'description = "the other"\ndefault = true'), "variants.*.default"),
    (lambda t: t.replace('description = "the one"\n', ''), "variants.one.description"),
    (lambda t: t.replace('env = { A = "b" }', 'env = { A = 1 }'), "variants.one.env.A"),
    (lambda t: t.replace('json = "worker"', 'json = "("'), "variants.one.threads.json"),
    (lambda t: t.replace('json = "worker"', 'cpu = "worker"'), "variants.one.threads.cpu"),
    (lambda t: t.replace('[variants.two]', '[variants.Two]'), "variants.Two"),
    (lambda t: t.replace('[variants.two]', '[variants.two]\nspeed = 3'), "variants.two.speed"),
    (lambda t: 'health_path = "ping"\n' + t, "health_path"),
    (lambda t: 'backend = "spring"\n' + t, "backend"),
    (lambda t: t.replace('[start]', '[start'), "(syntax)"),   # the same word in a profile or a preset
    (lambda t: t.replace('[build]', '[parity]\nspeed = "fast"\n\n[build]'), "parity.speed"),
    (lambda t: t.replace('[build]', '[parity]\nredis = 6\n\n[build]'), "parity.redis"),
    (lambda t: t.replace('[variants.two]', '[variants.two]\nparity = { colour = "red" }'), "variants.two.parity.colour"),
]


@pytest.mark.parametrize("change,field", BAD, ids=[f for _, f in BAD])
def test_bad_field_is_named(tmp_path, change, field):
    path = write(tmp_path, change(VALID))
    with pytest.raises(ManifestError) as e:
        load_manifest(path)
    assert e.value.field == field
    assert str(path) in str(e.value) and f"'{field}'" in str(e.value)


def test_cli_names_file_and_field_and_exits_2(tmp_path):
    write(tmp_path, VALID.replace('language = "java"', 'language = 3'))
    r = bench("list", frameworks=tmp_path)
    assert r.returncode == 2
    assert "framework.toml: field 'language': must be a str" in r.stderr


def test_every_framework_in_the_repo_validates():
    catalog = discover()
    assert {"spring-mvc", "spring-webflux"} <= set(catalog)
    for fw in catalog.values():
        assert fw.default_variant.description
        for v in fw.variants.values():
            assert v.description, f"{fw.name}:{v.name} has no description"


def test_unknown_names_list_the_valid_ones(tmp_path):
    write(tmp_path, VALID)
    catalog = discover(tmp_path)
    with pytest.raises(UsageError, match="unknown framework 'nope'; valid: demo"):
        select(catalog, ["nope"], None)
    with pytest.raises(UsageError, match="unknown variant 'three'.*valid: one, two"):
        select(catalog, ["demo"], ["three"])
    assert [t.id for t in select(catalog, ["demo"], None)] == ["demo:one", "demo:two"]
    assert [t.id for t in select(catalog, ["demo:two"], None)] == ["demo:two"]


@pytest.mark.parametrize("name", ["LD_PRELOAD", "LD_LIBRARY_PATH", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS",
                                  "JDK_JAVA_OPTIONS", "CLASSPATH", *CONTRACT_ENV])
def test_a_variant_may_not_set_what_takes_over_the_jvm_or_the_contracts_variables(tmp_path, name):
    path = write(tmp_path, VALID.replace('env = { A = "b" }', f'env = {{ {name} = "x" }}'))
    with pytest.raises(ManifestError, match=f"field 'variants.one.env.{name}': a variant may not set {name}"):
        load_manifest(path)


def test_a_variant_may_set_its_own_variables_and_the_pool_sizes(tmp_path):
    for name in ("SPRING_PROFILES_ACTIVE", "DB_POOL_SIZE", "REDIS_POOL_SIZE"):
        path = write(tmp_path, VALID.replace('env = { A = "b" }', f'env = {{ {name} = "x" }}'))
        assert load_manifest(path).variants["one"].env == {name: "x"}
