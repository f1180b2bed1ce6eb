"""Presets: one command reruns a published comparison on this machine (`bench run --preset NAME`).

A preset (orchestrator/presets/*.toml) names its targets with their scenarios, a load profile (as in
orchestrator/profiles/), the settings the study used, how it was scaled to this machine, and what
`--quick` shortens so that CI can run it end to end.
"""
from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

from . import options, profiles
from .catalog import Framework, resolve
from .errors import ManifestError, UsageError
from .profiles import Profile

PRESETS_DIR = Path(__file__).resolve().parent / "presets"


@dataclass(frozen=True)
class Preset:
    name: str
    description: str
    scaled: str                          # how this machine's run differs from the study
    matrix: dict[str, list[str]]         # target id -> scenarios
    profile: Profile
    heap: str | None = None
    server_cores: int | None = None      # CPUs the study gave the server
    fresh_jvm_per_scenario: bool = False  # its tables crown RSS or threads: no scenario inherits another's
    source: str = ""

    def cpus(self, have: int | None = None) -> tuple[str, str] | None:
        """(server CPUs, load generator CPUs) for server_cores on this machine, the server on the
        highest CPUs and at least one CPU left for the load generator; None to keep the defaults."""
        if not self.server_cores:
            return None
        have = have or os.cpu_count() or 1
        if have < 2:
            return None
        n = min(self.server_cores, have - 1)
        span = lambda lo, hi: str(lo) if lo == hi else f"{lo}-{hi}"  # noqa: E731
        return span(have - n, have - 1), span(0, have - n - 1)


def shipped() -> dict[str, Path]:
    return {p.stem: p for p in sorted(PRESETS_DIR.glob("*.toml"))}


def _merge(base: dict, changes: dict) -> dict:
    out = dict(base)
    for k, v in changes.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def load(name: str, catalog: dict[str, Framework], quick: bool = False) -> Preset:
    """A shipped preset by name; UsageError lists the valid ones, ManifestError names file and field."""
    known = shipped()
    if name not in known:
        raise UsageError(f"unknown preset '{name}'; valid: {', '.join(known)} (see `bench presets`)")
    path = known[name]
    try:
        doc = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise ManifestError(path, "(syntax)", str(e)) from None
    extra = sorted(set(doc) - {"description", "scaled", "cells", "profile", "settings", "quick"})
    if extra:
        raise ManifestError(path, extra[0], "unknown field; valid: description, scaled, cells, profile, settings, quick")
    for fld in ("description", "cells", "profile"):
        if fld not in doc:
            raise ManifestError(path, fld, "missing")
    matrix: dict[str, list[str]] = {}
    if not isinstance(doc["cells"], list):
        raise ManifestError(path, "cells", "must be an array of tables ([[cells]] with targets and scenarios)")
    for i, group in enumerate(doc["cells"]):
        targets, scen = group.get("targets"), group.get("scenarios")
        if not (isinstance(targets, list) and targets and all(isinstance(t, str) for t in targets)):
            raise ManifestError(path, f"cells[{i}].targets", "must be a list of framework:variant")
        if not (isinstance(scen, list) and scen and all(isinstance(s, str) for s in scen)):
            raise ManifestError(path, f"cells[{i}].scenarios", "must be a list of scenarios")
        for t in targets:
            try:
                target = resolve(catalog, t)
            except UsageError as e:
                raise ManifestError(path, f"cells[{i}].targets", str(e)) from None
            matrix.setdefault(target.id, [])
            matrix[target.id] += [s for s in scen if s not in matrix[target.id]]
    from .scenarios import SCENARIOS
    for t, scen in matrix.items():
        unknown = [s for s in scen if s not in SCENARIOS]
        if unknown:
            raise ManifestError(path, "cells", f"unknown scenario '{unknown[0]}'; valid: {', '.join(SCENARIOS)}")
    profile_doc = doc["profile"]
    if quick:
        profile_doc = _merge(profile_doc, doc.get("quick", {}))
    profile = profiles.parse(profile_doc, path, name=f"{name}{' (quick)' if quick else ''}")
    settings = doc.get("settings", {})
    unknown = sorted(set(settings) - {"heap", "server_cores", "fresh_jvm_per_scenario"})
    if unknown:
        raise ManifestError(path, f"settings.{unknown[0]}", "unknown field; valid: heap, server_cores, "
                                                             "fresh_jvm_per_scenario")
    fresh = settings.get("fresh_jvm_per_scenario", False)
    if not isinstance(fresh, bool):
        raise ManifestError(path, "settings.fresh_jvm_per_scenario", f"must be true or false; got {fresh!r}")
    heap = settings.get("heap")
    if heap is not None:
        try:
            heap = options.heap(str(heap))
        except UsageError as e:
            raise ManifestError(path, "settings.heap", str(e)) from None
    cores = settings.get("server_cores")
    if cores is not None and (not isinstance(cores, int) or cores < 1):
        raise ManifestError(path, "settings.server_cores", f"must be a whole number of at least 1; got {cores!r}")
    return Preset(name=name, description=str(doc["description"]).strip(), scaled=str(doc.get("scaled", "")).strip(),
                  matrix=matrix, profile=profile, heap=heap, server_cores=cores, fresh_jvm_per_scenario=fresh,
                  source=str(path))
