"""Every target of every framework in the repo starts, passes verification against real Redis and
MariaDB (every scenario's answer and its thread model, the `threads` patterns of its
framework.toml), and survives the load the studies put on a target: a burst of 1,000 requests on
1,000 connections at once on every scenario it declares, every one answered, then verification
again (the load smoke, `bench verify --load`).

One `bench verify` does it all, in one JVM per target, as a user would run it; the bursts are short
and cold, so they prove survival and the contract after load, not a figure. A target that fails is
named with its reason (for a dead one, the cause its log gives)."""
from __future__ import annotations

import re

import pytest
from conftest import PORTS, ROOT, bench

from orchestrator.config.catalog import discover

CATALOG = discover(ROOT / "frameworks")
CONNECTIONS = 1000   # the studies load targets with 500 to 2,000 connections


@pytest.fixture(scope="module")
def smoke() -> str:
    return bench("verify", "--load", str(CONNECTIONS), *PORTS, frameworks=None, timeout=2400).stdout


@pytest.mark.parametrize("framework", sorted(CATALOG))
def test_every_target_survives_a_thousand_connections_on_every_scenario_it_declares(smoke, framework):
    targets = [f"{framework}:{v}" for v in CATALOG[framework].variants]
    # the verdicts are in the table's rows; a failure's reason follows the table on a line of its own
    verdicts = {t: re.search(rf"[│|] {re.escape(t)} +[│|] (\S+)", smoke) for t in targets}
    reasons = "\n\n".join(_reason(smoke, t) for t in targets if f"\n{t}: " in smoke)
    assert all(m and m.group(1) == "ok" for m in verdicts.values()), (reasons or smoke[-4000:])[:6000]


def _reason(said: str, target: str) -> str:
    """A failed target's reason as bench verify prints it: its line and the log's lines after it, up to
    the next target's reason or the count."""
    lines = said.split(f"\n{target}: ", 1)[1].splitlines()
    end = next((i for i, line in enumerate(lines[1:], 1) if re.match(r"[\w-]+:[\w-]+: |\d+ passed, ", line)),
               len(lines))
    return f"{target}: " + "\n".join(lines[:end])
