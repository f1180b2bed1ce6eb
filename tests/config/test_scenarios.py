"""Scenarios' data: JSON compared number by number, and the seed file that holds the rows they read."""
from __future__ import annotations

from orchestrator.config.scenarios import same_json


def test_json_comparison_treats_numbers_as_numbers():
    assert same_json({"price": 10.50, "id": 42}, {"id": 42, "price": 10.5})
    assert same_json([1, 2.0], [1.0, 2])
    assert not same_json({"price": 10.51}, {"price": 10.5})
    assert not same_json({"a": 1, "b": 2}, {"a": 1})
    assert not same_json(["1"], [1])
    assert not same_json(True, 1)


def test_the_seed_file_seeds_the_rows_the_scenarios_expect():
    from orchestrator.config.items import SEED_ROWS
    from orchestrator.infra.backends import seed_statements
    statements = seed_statements()
    assert statements[0] == "CREATE DATABASE IF NOT EXISTS bench"
    assert any(f"FROM seq_1_to_{SEED_ROWS}" in st for st in statements)
    assert not any("--" in st for st in statements)
