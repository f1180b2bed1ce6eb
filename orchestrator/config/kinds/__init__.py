"""Profile kinds: throughput, burst, rate, capacity, ramp, each one object (a Kind, base.py) in a
module of its own that owns everything the kind decides: the fields of a profile file only it reads
and their validation, the command line's options that apply to it, its cells and their rows, its
warm-up, its description, whether it is a closed loop or an open model, and the loop that measures
one of its cells. KINDS below is the one place a kind is registered; nothing else in the package
branches on a kind's name (docs/adding-a-profile-kind.md).

Why the kinds live in config/ and are handed the cell rather than living in measure/: the plan
(config) needs a kind's levels and rows to know its cells, `bench profiles` its description, and
measure/cell.py imports config, so kinds in measure/ would close a cycle. As with k6's executors (one
file per kind with its config and its run loop), a kind's measure() holds its own loop, but drives its
loads through the CellRun that measure/cell.py hands it (drive, window, flags, row, keep): the kinds
import nothing that starts a process, and a new kind with a loop of its own touches no file of
measure/, and import nothing from it: the capacity kind's search arithmetic is a module of its own here
(config/kinds/capacity_search.py: Search, judge, vus_for; pure), which `bench calibrate` also uses; the
objective it searches against is config's (config/objective.py)."""
from __future__ import annotations

from orchestrator.config.kinds.base import Kind
from orchestrator.config.kinds.burst import BurstKind
from orchestrator.config.kinds.capacity import CapacityKind
from orchestrator.config.kinds.ramp import RampKind
from orchestrator.config.kinds.rate import RateKind
from orchestrator.config.kinds.throughput import ThroughputKind
from orchestrator.errors import UsageError

# name -> kind, in the order errors list them
KINDS: dict[str, Kind] = {k.name: k for k in (ThroughputKind(), BurstKind(), RateKind(), CapacityKind(), RampKind())}


def having(attribute: str) -> set[str]:
    """The names of the kinds whose `attribute` is true: what reading a run's rows asks of their kind
    column, rather than naming a kind."""
    return {name for name, kind in KINDS.items() if getattr(kind, attribute)}


def measured_words(prof: dict) -> str:
    """What a cell of a stored profile measured, in words; a kind no longer known: its window."""
    return KINDS.get(prof.get("kind"), Kind()).measured_words(prof)


def get(name: str) -> Kind:
    if name not in KINDS:
        raise UsageError(f"unknown profile kind '{name}'; valid: {', '.join(KINDS)}")
    return KINDS[name]
