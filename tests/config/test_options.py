"""Option values: durations, and bad values as usage errors."""
from __future__ import annotations

import pytest

from orchestrator.config import options
from orchestrator.errors import UsageError


@pytest.mark.parametrize("value,seconds", [("10s", 10), ("500ms", 0.5), ("2m", 120), ("3", 3), ("1.5s", 1.5)])
def test_durations(value, seconds):
    assert options.duration(value, "--duration") == seconds


@pytest.mark.parametrize("call", [
    lambda: options.duration("0s", "--duration"), lambda: options.duration("-1s", "--duration"),
    lambda: options.duration("ten", "--duration"), lambda: options.positive_ints("0", "-c"),
    lambda: options.positive_ints("64,x", "-c"), lambda: options.positive_ints("-5", "-c"),
    lambda: options.cpu_list("7", "--server-cpus"), lambda: options.cpu_list("1-0", "--server-cpus"),
    lambda: options.cpu_list("a", "--server-cpus"), lambda: options.heap("512"), lambda: options.port(80, "--port"),
    lambda: options.port(40000, "--port"),
])
def test_bad_values_are_usage_errors(call):
    with pytest.raises(UsageError):
        call()


def test_zero_warmup_is_allowed():
    assert options.duration("0s", "--warmup", allow_zero=True) == 0
