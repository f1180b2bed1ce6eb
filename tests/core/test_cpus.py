"""CPU lists counted as the options give them."""
from __future__ import annotations

from orchestrator.core.cpus import cpu_count


def test_cpu_count():
    assert cpu_count("1") == 1 and cpu_count("0-1") == 2 and cpu_count("0,2-3") == 3
