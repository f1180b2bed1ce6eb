"""Load drivers: real load generators behind one interface returning one result record."""
from __future__ import annotations

from ..errors import UsageError
from .base import Driver, LoadResult, LoadSpec

DRIVERS = ("wrk",)


def get(name: str) -> Driver:
    if name == "wrk":
        from .wrk import WrkDriver
        return WrkDriver()
    raise UsageError(f"unknown driver '{name}'; valid: {', '.join(DRIVERS)}")


__all__ = ["Driver", "LoadResult", "LoadSpec", "DRIVERS", "get"]
