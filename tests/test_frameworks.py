"""Every target of every framework in the repo passes verification against real Redis and MariaDB,
including its thread model (the `threads` patterns of its framework.toml).

A run verifies each target as it starts it, with the same check as `bench verify` (Environment.
start_verified), and a target that fails it fails its cells. So the targets that a preset's quick
form starts are verified by test_presets (every cell ok); this file verifies every other one."""
from __future__ import annotations

import pytest

from orchestrator import presets
from orchestrator.catalog import discover

from conftest import PORTS, ROOT, bench

CATALOG = discover(ROOT / "frameworks")
IN_PRESETS = {t for name in presets.shipped() for t in presets.load(name, CATALOG, quick=True).matrix}
UNVERIFIED = {name: [v for v in fw.variants if f"{name}:{v}" not in IN_PRESETS] for name, fw in CATALOG.items()}


@pytest.mark.slow
@pytest.mark.parametrize("framework", sorted(f for f, variants in UNVERIFIED.items() if variants))
def test_framework_verifies(framework):
    variants = UNVERIFIED[framework]
    r = bench("verify", "--framework", framework, "--variant", ",".join(variants), *PORTS, frameworks=None,
              timeout=1800)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert f"{len(variants)} passed, 0 failed" in r.stdout


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
