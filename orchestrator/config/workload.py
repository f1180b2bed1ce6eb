"""A workload file (`bench run --workload FILE`, examples in config/workloads/): a team's service as a
mix of the contract's requests, the latency objective it must hold, the targets to compare, and what a
core and a GiB of memory cost it. docs/workloads.md says how to write one.

    description = "A catalogue: reads mostly from the cache, some from the database, a few writes"
    targets = ["spring-mvc:virtual", "quarkus:reactive", "vertx:eventloop"]
    objective = "p99=50ms"                 # over the mix's slowest scenario's own wait
    heaps = ["256m", "512m"]               # optional: each target once per heap
    [mix]                                  # scenario = weight (any positive numbers)
    cache-aside = 70
    db-read = 20
    db-write = 10
    [parameters.cache-aside]               # optional, per scenario
    miss_share = 0.1
    [objectives]                           # optional: a scenario's own objective besides the mix's
    db-write = "p99=100ms"
    [prices]                               # per hour; the defaults are examples, not anyone's bill
    core = 0.04
    gib = 0.005

One reader, as every TOML file of the project (documents.Document): an error is one line naming the
file and the field.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.config import options
from orchestrator.config.catalog import Catalog, resolve
from orchestrator.config.documents import Document
from orchestrator.config.mix import Mix, build, with_parameters
from orchestrator.config.objective import parse_slo
from orchestrator.config.scenarios import SCENARIOS
from orchestrator.errors import UsageError

WORKLOADS_DIR = Path(__file__).resolve().parent / "workloads"
FIELDS = ("description", "targets", "objective", "objectives", "mix", "parameters", "prices", "heaps")
# Example prices per hour, labelled so wherever they are shown: a core and a GiB of an on-demand
# general-purpose instance are of this order (a 4-core 16-GiB one at about 0.19 an hour)
EXAMPLE_PRICES = {"core": 0.04, "gib": 0.005}
MIN_HEAP_MB = 16   # below it a JVM with a framework on it does not start; the run would measure nothing


@dataclass(frozen=True)
class Workload:
    name: str
    description: str
    mix: Mix
    spec: dict                                        # the mix as a plan records it (mix.build)
    objective_text: str
    targets: tuple[str, ...]
    objective: tuple[str, float]                      # (percentile key, bound in ms over the mix's wait)
    objectives: dict[str, tuple[str, float]] = field(default_factory=dict)   # per scenario in the mix
    prices: dict[str, float] = field(default_factory=lambda: dict(EXAMPLE_PRICES))
    prices_are_examples: bool = True
    heaps: tuple[str, ...] = ()


def shipped() -> dict[str, Path]:
    return {p.stem: p for p in sorted(WORKLOADS_DIR.glob("*.toml"))}


def find(name_or_path: str) -> Path:
    """A shipped workload by name, or a file by its path; UsageError names the shipped ones."""
    known = shipped()
    if name_or_path in known:
        return known[name_or_path]
    path = Path(name_or_path)
    if not path.suffix and not path.exists():
        raise UsageError(f"unknown workload '{name_or_path}': neither a shipped one ({', '.join(known)}) nor a file")
    return path


def load(path: Path, catalog: Catalog) -> Workload:
    """The workload in path; ManifestError names the file and field, BadFile a file that is not one."""
    doc = Document.read(path)
    doc.check_keys(FIELDS)
    weights = doc.get("mix", dict)
    params = doc.sub("parameters", {})
    params.check_keys(tuple(weights))
    for name in weights:
        if name not in SCENARIOS:
            doc.fail(f"mix.{name}", f"unknown scenario; valid: {', '.join(SCENARIOS)}")
        if name in params:
            try:
                with_parameters(SCENARIOS[name], params.get(name, dict, nonempty=False))
            except UsageError as e:
                doc.fail(f"parameters.{name}", str(e))
    objective_text = doc.get("objective", str, "p99=50ms")
    objective = _objective(doc, "objective", objective_text)
    per = doc.sub("objectives", {})
    per.check_keys(tuple(weights))
    objectives = {s: _objective(per, s, per.get(s, str)) for s in per.table}
    spec = {"weights": dict(weights), "parameters": {n: dict(v) for n, v in params.table.items()},
            "objectives": {s: list(o) for s, o in objectives.items()}}
    try:
        the_mix = build(path.stem, spec)
    except UsageError as e:
        doc.fail("mix", str(e).partition(": ")[2])
    targets = doc.str_list("targets")
    for i, t in enumerate(targets):
        try:
            target = resolve(catalog, t)
        except UsageError as e:
            doc.fail(f"targets[{i}]", str(e))
        missing = [s for s in weights if SCENARIOS[s].served_as not in target.framework.scenarios]
        if missing:
            doc.fail(f"targets[{i}]", f"{t} does not serve {', '.join(missing)} (its framework.toml's scenarios)")
    if len(set(targets)) < len(targets):
        doc.fail("targets", "names a target twice")
    prices = doc.sub("prices", {})
    prices.check_keys(tuple(EXAMPLE_PRICES))
    chosen = {k: _price(prices, k) for k in EXAMPLE_PRICES if k in prices}
    return Workload(path.stem, doc.get("description", str), the_mix, spec, objective_text, targets, objective, objectives,
                    {**EXAMPLE_PRICES, **chosen}, prices_are_examples=not chosen,
                    heaps=tuple(_heap(doc, i, h) for i, h in enumerate(doc.str_list("heaps", [], nonempty=False))))


def _objective(doc: Document, key: str, text: str) -> tuple[str, float]:
    try:
        return parse_slo(text)
    except UsageError as e:
        doc.fail(key, str(e).replace("--slo ", ""))


def _price(doc: Document, key: str) -> float:
    value = doc.table[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0 or value == float("inf"):
        doc.fail(key, f"must be a price per hour of 0 or more, not {value!r}")
    return float(value)


def _heap(doc: Document, i: int, text: str) -> str:
    """A heap the JVM takes (-Xmx): 512m, 2g; at least MIN_HEAP_MB, and within this machine's memory."""
    try:
        text = options.heap(text)
    except UsageError:
        doc.fail(f"heaps[{i}]", f"{text!r} must look like 512m or 2g")
    mb = int(text[:-1]) * (1024 if text[-1] == "g" else 1)
    total_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20
    if not MIN_HEAP_MB <= mb <= total_mb:
        doc.fail(f"heaps[{i}]", f"{text} is outside what a target can run with here ({MIN_HEAP_MB}m to this "
                                f"machine's {total_mb:,}m)")
    return text
