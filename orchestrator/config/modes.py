"""Target modes: how a target's JVM starts and meets its load, beside the default (a JVM of its own,
warmed up until steady). "aot-cache" starts it from a JDK AOT cache trained on it
(targets/aot_cache.py), "cold" meets its load with no warm-up, a fresh JVM per cell. Each is a target
of its own in a run: "+" joins them to the id (spring-mvc:platform+aot-cache+cold), and the target is
measured and judged beside the others. Plain strings, so that reading results needs nothing else."""
from __future__ import annotations

JVM_MODES = ("default", "aot-cache")
STARTS = ("warm", "cold")
MODES = ("aot-cache", "cold")
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
    return "+".join(m for m in target_id.split("+") if m != "cold")


def with_modes(matrix: dict[str, list[str] | None], jvm_modes=("default",), starts=("warm",)) -> dict:
    """The matrix with each target once per JVM mode and start (JVM_MODES, STARTS): the default mode
    and the warm start add nothing to the id."""
    extra = [tuple(m for m in ("aot-cache" if j == "aot-cache" else None, "cold" if s == "cold" else None) if m)
             for j in jvm_modes for s in starts]
    return {"+".join((t, *modes)): scenarios for t, scenarios in matrix.items() for modes in extra}
