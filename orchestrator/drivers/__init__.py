"""Load drivers: real load generators behind one interface returning one result record."""
from __future__ import annotations

import importlib

from ..errors import UsageError
from .base import Driver, DriverFailed, LoadResult, LoadSpec

# name -> module:class, imported on use so that a missing generator costs nothing until it is needed
_REGISTRY = {"wrk": "wrk:WrkDriver", "h2load": "h2load:H2loadDriver", "locust": "locust:LocustDriver",
             "k6": "k6:K6Driver"}
DRIVERS = tuple(_REGISTRY)


def get(name: str) -> Driver:
    if name not in _REGISTRY:
        raise UsageError(f"unknown driver '{name}'; valid: {', '.join(DRIVERS)}")
    module, cls = _REGISTRY[name].split(":")
    return getattr(importlib.import_module(f"{__name__}.{module}"), cls)()


__all__ = ["Driver", "DriverFailed", "LoadResult", "LoadSpec", "DRIVERS", "get"]
