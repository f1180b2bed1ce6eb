"""Load drivers: real load generators behind one interface (drivers/base.py: a LoadSpec in, a
LoadResult out), found through one registry (drivers/registry.py).

Only the registry is imported here: the installer imports this package on the system Python before
any third-party library is installed, and the interface's module needs psutil.
"""
from __future__ import annotations

from orchestrator.drivers.registry import (
                                           DriverInfo,
                                           Tool,
                                           debian_packages,
                                           drivers_by_kind,
                                           get,
                                           info,
                                           names,
                                           processes,
                                           register,
                                           tools,
                                           unregister,
)

__all__ = ["DriverInfo", "Tool", "debian_packages", "drivers_by_kind", "get", "info", "names", "processes",
           "register", "tools", "unregister"]
