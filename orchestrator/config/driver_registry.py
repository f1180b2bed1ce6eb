"""The one registry of load drivers, each entry declaring what the rest of the harness must know of
its driver without running it: the profile kinds it runs, the executables it needs (how each prints
its version, the Debian package that provides it), and the process names it runs. Profiles, `bench
calibrate`, the recorded tool versions, the busy-process check and the installer all read it, so a
new driver is one module under drivers/ and one entry in SHIPPED (docs/adding-a-driver.md).

The installer (orchestrator/__main__.py) reads the Debian packages here on the system Python, before
the virtualenv exists, so this module (and the package's __init__) imports the standard library
only; a driver's class is imported when it is first used, which also costs a missing generator
nothing until then.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass

from orchestrator.errors import UsageError


@dataclass(frozen=True)
class Tool:
    """An executable a driver runs."""
    executable: str
    version_args: tuple[str, ...]   # what makes it print its version (the first line is recorded)
    debian: str | None = None       # the Debian package that provides it: the installer installs it
    install: str = ""               # how to get it when no Debian package does (MissingTool's message)
    # "module:function" that returns its path, building it first when it is missing (infra/installs.py):
    # made on first use by the run that needs it, never up front
    build: str = ""

    @property
    def how(self) -> str:
        """How to install it, for the message that says it is missing."""
        return f"apt-get install -y {self.debian}" if self.debian else self.install


@dataclass(frozen=True)
class DriverInfo:
    """A driver's entry: its name (as profiles and `bench calibrate --generators` say it, and its
    class's `name`), its class ("module:Class"), and what it declares."""
    name: str
    cls: str
    kinds: tuple[str, ...]        # profile kinds it runs, in the order a kind prefers drivers; (): calibrate only
    tools: tuple[Tool, ...]       # the first is the generator itself
    processes: tuple[str, ...]    # its process names: one left running takes CPU from the next figures


# k6 is built from the Go module proxy into .venv/bin when a run first needs it (infra/installs.py's
# k6, its Tool's `build`): the module and version it builds, named once.
K6_MODULE = "go.k6.io/k6@v1.8.1"

# A kind's default driver is the first entry here that runs it. oha runs no profile kind: only `bench
# calibrate` uses it, as one more generator whose ceiling is worth knowing.
SHIPPED = (
    DriverInfo("wrk", "orchestrator.drivers.wrk:WrkDriver", ("throughput",),
               (Tool("wrk", ("--version",), debian="wrk"),), ("wrk",)),
    # pacer is this project's own (drivers/pacer/pacer.c), compiled with cc (Debian's gcc, which the
    # installer installs) on first use
    DriverInfo("pacer", "orchestrator.drivers.pacer:PacerDriver", ("rate", "capacity"),
               (Tool("pacer", ("--version",), build="orchestrator.drivers.pacer:build",
                     install="apt-get install -y gcc"),),
               ("pacer",)),
    DriverInfo("k6", "orchestrator.drivers.k6:K6Driver", ("throughput", "burst", "rate", "capacity"),
               # in no Debian release we use: built from Go into .venv/bin on first use
               (Tool("k6", ("version",), install=f"GOBIN=.venv/bin CGO_ENABLED=0 go install {K6_MODULE}",
                     build="orchestrator.infra.installs:k6"),), ("k6",)),
    DriverInfo("h2load", "orchestrator.drivers.h2load:H2loadDriver", ("burst",),
               (Tool("h2load", ("--version",), debian="nghttp2-client"),), ("h2load",)),
    DriverInfo("locust", "orchestrator.drivers.locust:LocustDriver", ("ramp",),
               # a Python dependency of the project (pyproject.toml), installed into .venv
               (Tool("locust", ("--version",), install="python3 -m orchestrator list` (it installs Locust into "
                                                       ".venv) or `pip install locust==2.47.0"),), ("locust",)),
    DriverInfo("oha", "orchestrator.drivers.oha:OhaDriver", (),
               (Tool("oha", ("--version",), install="cargo install oha"),), ("oha",)),
)
_REGISTRY: dict[str, DriverInfo] = {d.name: d for d in SHIPPED}


def register(entry: DriverInfo) -> None:
    """Add a driver (one outside this package too: `cls` is any importable "module:Class"); an entry
    of the same name is replaced."""
    _REGISTRY[entry.name] = entry


def unregister(name: str) -> None:
    _REGISTRY.pop(name, None)


def names() -> tuple[str, ...]:
    """Every registered driver, those that run no profile kind included."""
    return tuple(_REGISTRY)


def info(name: str) -> DriverInfo:
    if name not in _REGISTRY:
        raise UsageError(f"unknown driver '{name}'; valid: {', '.join(_REGISTRY)}")
    return _REGISTRY[name]


def get(name: str):
    """A new instance of the driver's class (a drivers.base.Driver)."""
    module, cls = info(name).cls.split(":")
    return getattr(importlib.import_module(module), cls)()


def made(tool: Tool) -> str:
    """The path of a tool made on first use (its `build` hook, imported when first called, as `get`
    imports a driver's class), built now when it is missing."""
    module, function = tool.build.split(":")
    return getattr(importlib.import_module(module), function)()


def drivers_by_kind() -> dict[str, tuple[str, ...]]:
    """Profile kind -> the drivers that can run it, the default first."""
    kinds: dict[str, tuple[str, ...]] = {}
    for d in _REGISTRY.values():
        for kind in d.kinds:
            kinds[kind] = (*kinds.get(kind, ()), d.name)
    return kinds


def tools() -> tuple[Tool, ...]:
    """Every driver's executables, in registry order."""
    return tuple(t for d in _REGISTRY.values() for t in d.tools)


def debian_packages() -> dict[str, str]:
    """Executable -> the Debian package that provides it, for the drivers' executables that come from Debian."""
    return {t.executable: t.debian for t in tools() if t.debian}


def processes() -> tuple[str, ...]:
    """The process names of every driver."""
    return tuple(p for d in _REGISTRY.values() for p in d.processes)
