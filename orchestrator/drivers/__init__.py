"""Load drivers: real load generators behind one interface returning one result record."""
from __future__ import annotations

import importlib

from orchestrator.errors import UsageError
from orchestrator.drivers.base import Driver, DriverFailed, LoadResult, LoadSpec

# The one place a driver is registered: name -> (module:class, the profile kinds it can run). A kind's
# default driver is the first listed here that runs it. Modules are imported on use, so that a
# missing generator costs nothing until it is needed.
_REGISTRY: dict[str, tuple[str, tuple[str, ...]]] = {
    "wrk": ("wrk:WrkDriver", ("throughput",)),
    "k6": ("k6:K6Driver", ("throughput", "burst", "rate", "capacity")),
    "h2load": ("h2load:H2loadDriver", ("burst",)),
    "locust": ("locust:LocustDriver", ("ramp",)),
}
DRIVERS = tuple(_REGISTRY)


def drivers_by_kind() -> dict[str, tuple[str, ...]]:
    """Profile kind -> the drivers that can run it, the default first."""
    kinds: dict[str, tuple[str, ...]] = {}
    for name, (_, runs) in _REGISTRY.items():
        for kind in runs:
            kinds[kind] = (*kinds.get(kind, ()), name)
    return kinds


def get(name: str) -> Driver:
    if name not in _REGISTRY:
        raise UsageError(f"unknown driver '{name}'; valid: {', '.join(DRIVERS)}")
    module, cls = _REGISTRY[name][0].split(":")
    return getattr(importlib.import_module(f"{__name__}.{module}"), cls)()


__all__ = ["Driver", "DriverFailed", "LoadResult", "LoadSpec", "DRIVERS", "drivers_by_kind", "get"]
