"""Target modes: how a target's JVM starts and meets its load, beside the default (a JVM of its own,
warmed up until steady). "aot-cache" starts it from a JDK AOT cache trained on it
(targets/aot_cache.py), "cold" meets its load with no warm-up, a fresh JVM per cell, and "heap-256m"
gives it that heap (-Xmx) instead of the run's. Each is a target of its own in a run: "+" joins them to
the id (spring-mvc:platform+aot-cache+cold, quarkus:reactive+heap-128m), and the target is measured and
judged beside the others. Plain strings, so that reading results needs nothing else."""
from __future__ import annotations

import re

# Each mode's name, written here only
DEFAULT_JVM, AOT_CACHE = "default", "aot-cache"
WARM, COLD = "warm", "cold"
JVM_MODES = (DEFAULT_JVM, AOT_CACHE)
STARTS = (WARM, COLD)
MODES = (AOT_CACHE, COLD)
HEAP_MODE = re.compile(r"heap-([1-9][0-9]*[mg])")   # a heap of its own, as --heap writes it (512m, 2g)
# the JVM that trains a target's AOT cache (targets/aot_cache.py): a mode of the orchestrator's own, never
# asked for in an id nor measured, so that a start carries what it is and no flag need follow it
AOT_TRAINING = "aot-training"


def slug(target_id: str) -> str:
    """A target id as a file or container name: ':' and '+' become '-'."""
    return target_id.replace(":", "-").replace("+", "-")


def base_id(target_id: str) -> str:
    """The framework:variant of a target id, its modes left out."""
    return target_id.partition("+")[0]


def warm_twin(target_id: str) -> str:
    """The id of the same target in the same JVM mode, warmed up (a cold one's reference)."""
    return "+".join(m for m in target_id.split("+") if m != COLD)


def is_mode(mode: str) -> bool:
    return mode in MODES or bool(HEAP_MODE.fullmatch(mode))


def ordered(modes) -> tuple[str, ...]:
    """A target's modes in the one order its id writes them: MODES', then its heap."""
    return tuple(m for m in MODES if m in modes) + tuple(m for m in modes if HEAP_MODE.fullmatch(m))


def heap_of(target_id: str) -> str | None:
    """The heap a target id's mode gives it (quarkus:reactive+heap-128m: 128m); None: the run's."""
    return next((m.group(1) for m in map(HEAP_MODE.fullmatch, target_id.split("+")[1:]) if m), None)


def with_modes(matrix: dict[str, list[str] | None], jvm_modes=(DEFAULT_JVM,), starts=(WARM,), heaps=()) -> dict:
    """The matrix with each target once per JVM mode, start and heap (JVM_MODES, STARTS; heaps: none,
    or two or more, each a target of its own): the default mode, the warm start and the run's one heap
    add nothing to the id."""
    extra = [tuple(m for m in (AOT_CACHE if j == AOT_CACHE else None, COLD if s == COLD else None,
                               f"heap-{h}" if len(heaps) > 1 else None) if m)
             for j in jvm_modes for s in starts for h in (heaps if len(heaps) > 1 else (None,))]
    return {"+".join((t, *modes)): scenarios for t, scenarios in matrix.items() for modes in extra}
