"""What each framework declares: its variants' thread models, its limits for the parity table, and
CONTRACT.md's scenario table against config/scenarios.py."""
from __future__ import annotations

import re

from conftest import ROOT, contract_disagreements

from orchestrator.config.catalog import discover


def test_every_variant_declares_its_thread_model():
    for fw in discover().values():   # a gateway's patterns match its own thread (X-Gateway-Thread)
        for v in fw.variants.values():
            assert v.threads.get("*") or all(v.threads.get(s) for s in fw.scenarios), \
                f"{fw.name}:{v.name} does not say which threads serve it"


def test_every_target_declares_its_limits_for_the_parity_table():
    from orchestrator.config.catalog import PARITY_FIELDS
    for fw in discover().values():
        for v in fw.variants.values():
            declared = {**fw.parity, **v.parity}
            assert set(declared) == set(PARITY_FIELDS), f"{fw.name}:{v.name} declares {sorted(declared)}"
        # what picks its library versions, in words: the numbers are the ones Maven resolved
        assert fw.versions and not re.search(r"\d+\.\d+", fw.versions), f"{fw.name}: versions = {fw.versions!r}"


def test_contract_md_s_scenario_table_and_the_scenarios_say_the_same():
    """Each row of CONTRACT.md's scenario table is a scenario of config/scenarios.py with the same request
    and status, and each scenario with an endpoint of its own has its row (sleep-1s loads sleep's)."""
    from orchestrator.config.scenarios import SCENARIOS
    assert contract_disagreements((ROOT / "frameworks" / "CONTRACT.md").read_text(), SCENARIOS) == []
