"""Presets: one command reruns a published comparison on this machine (`bench run --preset NAME`).

A preset (orchestrator/config/presets/*.toml) names its targets with their scenarios, a load profile (as in
orchestrator/config/profiles/), the settings the study used, how it was scaled to this machine, and what
`--quick` shortens so that CI can run it end to end. The quick form also measures fewer cells
(quick_cover): each claim's cell, and the scenarios its [quick] table names (else every one), on few targets;
its [quick] table may also set [settings] and [topology] fields.

A study that loads its targets in two ways (cold bursts, then a capacity search with overload and a spike),
or whose cells take hours in one run, is a preset of [[parts]]: each part is a run of its own (NAME:PART,
its own run folder, report and --resume), with whatever it sets over the preset's tables (a part whose
profile is of another kind than the preset's brings its own profile and [quick] whole); `--preset NAME`
runs them one after the other (`runs`).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from orchestrator.config import options, profiles, topology
from orchestrator.config.catalog import Framework, resolve
from orchestrator.config.claim_fields import RECORDED, check
from orchestrator.config.claim_fields import targets as claim_targets
from orchestrator.config.documents import Document
from orchestrator.config.modes import DEFAULT_JVM, JVM_MODES, STARTS, WARM
from orchestrator.config.profiles import Profile
from orchestrator.config.scenarios import SCENARIOS
from orchestrator.errors import UsageError

PRESETS_DIR = Path(__file__).resolve().parent / "presets"
PART = ":"   # NAME:PART names one part of a preset of [[parts]]
FIELDS = ("description", "scaled", "cells", "profile", "settings", "quick", "claims", "topology")


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
    claims: tuple[dict, ...] = ()        # the study's claims with the evidence that tests each (claims.py)
    topology: topology.Topology | None = None   # where the study ran its server and database
    jfr: bool = True                     # Flight Recorder on, for its flame graphs and evidence
    jvm_modes: tuple[str, ...] = (DEFAULT_JVM,)   # how each target's JVM starts (modes.JVM_MODES)
    starts: tuple[str, ...] = (WARM,)          # and meets its load (modes.STARTS)

    def settings(self, cpus_given: bool) -> dict:
        """The run settings the study used, for the options the user left out. CPUs go as a pair: a
        user's --server-cpus never meets the preset's load generator CPUs."""
        chosen: dict = {"heap": self.heap, "fresh_jvm_per_scenario": self.fresh_jvm_per_scenario, "jfr": self.jfr}
        cpus = None if cpus_given else self.cpus()
        if cpus:
            chosen["server_cpus"], chosen["loadgen_cpus"] = cpus
        return {k: v for k, v in chosen.items() if v is not None}

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


def runs(name: str) -> list[str]:
    """The presets, one run each, that `--preset name` runs: each part of a preset of [[parts]] (NAME:PART),
    else the preset itself. UsageError for an unknown name."""
    base, _, part = name.partition(PART)
    doc = _read(base)
    return [name] if part else [f"{base}{PART}{p}" for p in _part_names(doc)] or [name]


def names() -> list[str]:
    """Every preset a run can measure: each shipped one, or each of its parts."""
    return [n for base in shipped() for n in runs(base)]


def _read(base: str) -> Document:
    known = shipped()
    if base not in known:
        raise UsageError(f"unknown preset '{base}'; valid: {', '.join(known)} (see `bench presets`)")
    doc = Document.read(known[base])
    doc.check_keys(FIELDS + ("parts",))
    return doc


def _part_names(doc: Document) -> list[str]:
    found = doc.get("parts", list, [], nonempty=False)
    for i, part in enumerate(found):
        name = part.get("name") if isinstance(part, dict) else None
        if not isinstance(name, str) or not re.fullmatch(r"[a-z0-9][a-z0-9-]*", name):
            doc.fail(f"parts[{i}]", "must be a table ([[parts]]) with a name of lower-case letters, digits and -")
        Document(doc.path, part, f"parts[{i}].").check_keys(FIELDS + ("name",))
    return [p["name"] for p in found]


def _part(doc: Document, base: str, part: str) -> Document:
    """The document of one part: the part's tables over the preset's (a table merged key by key, any
    other value replaced; descriptions joined; a profile of another kind replaces the preset's and its
    [quick])."""
    parts = _part_names(doc)
    if not part:
        if parts:
            raise UsageError(f"preset '{base}' runs in parts ({', '.join(base + PART + p for p in parts)}): "
                             f"`--preset {base}` runs them all, NAME:PART one")
        return doc
    if part not in parts:
        raise UsageError(f"preset '{base}' has no part '{part}'; valid: {', '.join(parts) or 'none (it has no parts)'}")
    table = dict(doc.table["parts"][parts.index(part)])
    del table["name"]
    shared = {k: v for k, v in doc.table.items() if k != "parts"}
    # a part that loads its targets in another way: none of the preset's profile fields (nor its quick
    # form's) apply to it
    if _kind(table) not in (None, _kind(shared)):
        shared = {k: v for k, v in shared.items() if k not in ("profile", "quick")}
    merged = _merge(shared, table)
    if "description" in table:
        merged["description"] = f"{doc.table.get('description', '').strip()}: {table['description'].strip()}"
    return Document(doc.path, merged)


def _kind(table: dict) -> object:
    profile = table.get("profile")
    return profile.get("kind") if isinstance(profile, dict) else None


def _merge(base: dict, changes: dict) -> dict:
    out = dict(base)
    for k, v in changes.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def load(name: str, catalog: dict[str, Framework], quick: bool = False) -> Preset:
    """A shipped preset by name (NAME:PART for a part of one); UsageError lists the valid ones,
    ManifestError names file and field."""
    base, _, part = name.partition(PART)
    doc = _part(_read(base), base, part)
    description = doc.get("description", str)
    matrix = _matrix(doc, catalog)
    profile_doc = doc.sub("profile")
    quick_table = dict(doc.get("quick", dict, {}, nonempty=False)) if quick else {}
    topology_doc = doc.sub("topology", {})
    topology_doc.table = _merge(topology_doc.table, quick_table.pop("topology", {}))
    settings = doc.sub("settings", {})
    settings.table = _merge(settings.table, quick_table.pop("settings", {}))
    # the scenarios the quick form covers beside its claims' (default: every scenario of the preset)
    quick_scenarios = quick_table.pop("scenarios", None)
    if quick_scenarios is not None:
        quick_scenarios = Document(doc.path, {"scenarios": quick_scenarios}, "quick.").str_list("scenarios", nonempty=False)
        unknown = sorted(set(quick_scenarios) - {s for scen in matrix.values() for s in scen})
        if unknown:
            doc.fail("quick.scenarios", f"{', '.join(unknown)}: not among the preset's scenarios")
    topo = topology.from_document(topology_doc, name) if topology_doc.table else None
    if quick:
        profile_doc.table = _merge(profile_doc.table, quick_table)
    profile = profiles.parse(profile_doc, name=f"{name}{' (quick)' if quick else ''}")
    jvm_modes, starts, heap, cores = _settings(settings)
    claims = _claims(doc, matrix, catalog)
    return Preset(name=name, description=description.strip(), scaled=doc.get("scaled", str, "").strip(),
                  matrix=quick_cover(matrix, claims, quick_scenarios) if quick else matrix, profile=profile,
                  heap=heap, server_cores=cores,
                  # the quick form smokes the pipeline: one JVM per target (a fresh one per scenario is
                  # test_pipeline's to prove, on a JVM that starts in a second, not Spring's 15 s)
                  fresh_jvm_per_scenario=settings.get("fresh_jvm_per_scenario", bool, False) and not quick,
                  source=str(doc.path),
                  # the quick form records only when a claim reads Flight Recorder's evidence (its
                  # dump, reading and flame graph cost about a second a cell)
                  jfr=not quick or any(c.get("evidence") in RECORDED for c in claims),
                  claims=claims, topology=topo, jvm_modes=jvm_modes, starts=starts)


def _matrix(doc: Document, catalog: dict[str, Framework]) -> dict[str, list[str]]:
    """The preset's [[cells]]: each target id -> its scenarios, in the order given."""
    cells = doc.get("cells", list)
    matrix: dict[str, list[str]] = {}
    for i in range(len(cells)):
        if not isinstance(cells[i], dict):
            doc.fail("cells", "must be an array of tables ([[cells]] with targets and scenarios)")
        group = Document(doc.path, cells[i], f"cells[{i}].")
        group.check_keys(("targets", "scenarios"))
        targets, scen = group.str_list("targets"), group.str_list("scenarios")
        for s in scen:
            if s not in SCENARIOS:
                group.fail("scenarios", f"unknown scenario '{s}'; valid: {', '.join(SCENARIOS)}")
        for t in targets:
            try:
                target = resolve(catalog, t)
            except UsageError as e:
                group.fail("targets", str(e))
            matrix.setdefault(target.id, [])
            matrix[target.id] += [s for s in scen if s not in matrix[target.id]]
    return matrix


def _settings(settings: Document) -> tuple[tuple[str, ...], tuple[str, ...], str | None, int | None]:
    """The preset's [settings] (quick's merged in): its JVM modes, starts, heap and server cores."""
    settings.check_keys(("heap", "server_cores", "fresh_jvm_per_scenario", "jvm_modes", "starts"))
    jvm_modes, starts = (tuple(settings.str_list(key, default)) for key, default in
                         (("jvm_modes", (DEFAULT_JVM,)), ("starts", (WARM,))))
    for key, given, valid in (("jvm_modes", jvm_modes, JVM_MODES), ("starts", starts, STARTS)):
        if set(given) - set(valid):
            settings.fail(key, f"{', '.join(sorted(set(given) - set(valid)))}: valid: {', '.join(valid)}")
    heap = settings.get("heap", str, None)
    if heap is not None:
        try:
            heap = options.heap(heap)
        except UsageError as e:
            settings.fail("heap", str(e))
    cores = settings.whole("server_cores") if "server_cores" in settings else None
    return jvm_modes, starts, heap, cores


def quick_cover(matrix: dict[str, list[str]], claims: tuple[dict, ...],
                scenarios: tuple[str, ...] | None = None) -> dict[str, list[str]]:
    """The quick form's cells: each explanation claim's cell, then the scenarios no kept cell measures (those
    its [quick] table lists, else every scenario of the preset), each on a target already kept that
    serves it, else on the target that serves the most of those still missing (the first on a tie).
    Every claim is judged, in as few JVMs as that allows: the quick form is a smoke of the preset's
    pipeline. That every target starts, passes verification and survives load on every scenario it
    declares is the load smoke's to show (tests/processes/test_frameworks_end_to_end.py), not each preset's."""
    kept: dict[str, set[str]] = {t: set() for t in matrix}
    # an explanation's evidence is the quick form's to smoke; an order or a trend needs every target
    # and level at full repeats, which a smoke has not (their judge is tested on made-up repeats)
    for claim in claims:
        if claim.get("form", "explanation") == "explanation":
            kept[claim["target"]].add(claim["scenario"])
    wanted = scenarios if scenarios is not None else dict.fromkeys(s for cells in matrix.values() for s in cells)
    missing = [s for s in wanted if not any(s in cells for cells in kept.values())]
    while missing:
        serves = {t: {s for s in missing if s in matrix[t]} for t in matrix}
        target = max(matrix, key=lambda t: (bool(kept[t] and serves[t]), len(serves[t])))
        kept[target] |= serves[target]
        missing = [s for s in missing if s not in serves[target]]
    return {t: [s for s in scenarios if s in kept[t]] for t, scenarios in matrix.items() if kept[t]}


def _claims(doc: Document, matrix: dict[str, list[str]], catalog: dict[str, Framework]) -> tuple[dict, ...]:
    """The preset's [[claims]], each about a target and scenario it measures."""
    found = doc.get("claims", list, [], nonempty=False)
    for i, claim in enumerate(found):
        if not isinstance(claim, dict):
            doc.fail("claims", "must be an array of tables ([[claims]])")
        problem = check(claim)
        unmeasured = [] if problem else [t for t in claim_targets(claim)
                                          if claim["scenario"] not in matrix.get(_resolved(t, catalog), [])]
        if unmeasured:
            problem = f"{', '.join(unmeasured)} on {claim['scenario']} is not among the preset's cells"
        if problem:
            doc.fail(f"claims[{i}]", problem)
    return tuple({**c, **{k: [_resolved(t, catalog) for t in c[k]] for k in ("targets", "over") if k in c},
                  **({"target": _resolved(c["target"], catalog)} if "target" in c else {})} for c in found)


def _resolved(target: str, catalog: dict[str, Framework]) -> str:
    try:
        return resolve(catalog, target).id
    except UsageError:
        return target
