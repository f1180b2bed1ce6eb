"""Every target of every framework in the repo passes verification against real Redis and MariaDB,
including its thread model (the `threads` patterns of its framework.toml)."""
from __future__ import annotations

import pytest

from orchestrator.catalog import discover

from conftest import PORTS, bench

FRAMEWORKS = sorted(discover())


@pytest.mark.slow
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_framework_verifies(framework):
    r = bench("verify", "--framework", framework, *PORTS, frameworks=None, timeout=1800)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    n = len(discover()[framework].variants)
    assert f"{n} passed, 0 failed" in r.stdout


def test_every_variant_declares_its_thread_model():
    for fw in discover().values():   # a gateway's patterns match its own thread (X-Gateway-Thread)
        for v in fw.variants.values():
            assert v.threads.get("*") or all(v.threads.get(s) for s in fw.scenarios), \
                f"{fw.name}:{v.name} does not say which threads serve it"


def test_every_target_declares_its_limits_for_the_parity_table():
    from orchestrator.catalog import PARITY_FIELDS
    for fw in discover().values():
        for v in fw.variants.values():
            declared = {**fw.parity, **v.parity}
            assert set(declared) == set(PARITY_FIELDS), f"{fw.name}:{v.name} declares {sorted(declared)}"
