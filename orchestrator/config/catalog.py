"""The catalog: framework folders, their validated framework.toml, and the targets they offer."""
from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator import FRAMEWORKS_DIR
from orchestrator.config.documents import Document
from orchestrator.config.modes import AOT_CACHE, AOT_TRAINING, COLD, DEFAULT_JVM, MODES, heap_of, is_mode, ordered, slug
from orchestrator.config.parity_fields import PARITY_FIELDS
from orchestrator.config.scenarios import manifest_scenarios
from orchestrator.errors import UsageError

NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
PLACEHOLDERS = {"{java}", "{jvm_opts}", "{artifact}"}
TOP_KEYS = {"name", "description", "language", "server", "health_path", "scenarios", "backend",
            "build", "start", "variants", "parity", "versions"}
VARIANT_KEYS = {"description", "default", "env", "properties", "jvm_opts", "threads", "parity"}
# What a variant's env may not set: what takes over the JVM or the process before the framework's code runs
# (the dynamic loader's LD_* variables, such as LD_PRELOAD; JVM options and classes beside the run's), and
# the contract's variables (frameworks/CONTRACT.md), which the run sets: the infrastructure's addresses and
# credentials, the port and address to listen on. The pool sizes are the contract's too, but a variant
# whose point is another limit sets them (plan.pool_env).
TAKES_OVER = ("JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "CLASSPATH")
CONTRACT_ENV = ("PORT", "BIND_ADDRESS", "BACKEND_URL", "REDIS_HOST", "REDIS_PORT", "REDIS_PASSWORD", "DB_HOST",
                "DB_PORT", "DB_NAME", "DB_USER", "DB_PASSWORD")


@dataclass(frozen=True)
class Variant:
    name: str
    description: str
    default: bool = False
    env: dict[str, str] = field(default_factory=dict)
    properties: dict[str, str] = field(default_factory=dict)
    jvm_opts: tuple[str, ...] = ()
    threads: dict[str, str] = field(default_factory=dict)
    parity: dict[str, str] = field(default_factory=dict)

    def thread_pattern(self, scenario: str) -> str | None:
        return self.threads.get(scenario, self.threads.get("*"))


@dataclass(frozen=True)
class Framework:
    name: str
    path: Path
    description: str
    language: str
    server: str
    health_path: str
    scenarios: tuple[str, ...]
    build_command: tuple[str, ...]
    artifact: str
    start_command: tuple[str, ...]
    variants: dict[str, Variant]
    backend: str | None = None
    parity: dict[str, str] = field(default_factory=dict)
    versions: str = ""   # what picks its library versions (a BOM, or the newest that resolve), as declared

    @property
    def default_variant(self) -> Variant:
        return next(v for v in self.variants.values() if v.default)

    @property
    def artifact_path(self) -> Path:
        return self.path / self.artifact


@dataclass(frozen=True)
class Target:
    framework: Framework
    variant: Variant
    modes: tuple[str, ...] = ()   # of MODES, in its order (or AOT_TRAINING alone)

    @property
    def id(self) -> str:
        return "+".join((self.base_id, *self.modes))

    @property
    def slug(self) -> str:
        """The id as a file or container name ([a-z0-9_.-]): spring-mvc-platform-aot-cache."""
        return slug(self.id)

    @property
    def base_id(self) -> str:
        """framework:variant, whatever the modes: the code and configuration the target runs."""
        return f"{self.framework.name}:{self.variant.name}"

    @property
    def jvm_mode(self) -> str:
        return next((m for m in (AOT_CACHE, AOT_TRAINING) if m in self.modes), DEFAULT_JVM)

    @property
    def cold(self) -> bool:
        return COLD in self.modes

    def heap(self, run_heap: str) -> str:
        """Its heap (-Xmx): its heap mode's, else the run's."""
        return heap_of(self.id) or run_heap


def _parity(f: Document) -> dict[str, str]:
    declared = f.str_map("parity")
    for key in declared:
        if key not in PARITY_FIELDS:
            f.fail(f"parity.{key}", f"unknown field; valid: {', '.join(PARITY_FIELDS)}")
    return declared


def _relative(f: Document, key: str) -> str:
    value = f.get(key, str)
    if Path(value).is_absolute() or ".." in Path(value).parts:
        f.fail(key, "must be a path inside the framework folder")
    return value


def refused_env(name: str) -> str | None:
    """Why a variant's env may not set name (None: it may)."""
    if name in CONTRACT_ENV:
        return "the contract's variable, which the run sets (frameworks/CONTRACT.md)"
    if name.startswith("LD_") or name in TAKES_OVER:
        return "it takes over the JVM or the process before the framework's code runs"
    return None


def _env(v: Document) -> dict[str, str]:
    env = v.str_map("env")
    for key in env:
        why = refused_env(key)
        if why:
            v.fail(f"env.{key}", f"a variant may not set {key}: {why} (a JVM option goes in jvm_opts)")
    return env


def _variant(f: Document, name: str, scenarios: tuple[str, ...]) -> Variant:
    if not NAME_RE.match(name):
        f.fail(name, "variant names are lower-case words joined by '-'")
    v = f.sub(name)
    v.check_keys(sorted(VARIANT_KEYS))
    threads = v.str_map("threads")
    for key, pattern in threads.items():
        if key != "*" and key not in scenarios:
            v.fail(f"threads.{key}", f"not a scenario of this framework ({', '.join(scenarios)}) or '*'")
        try:
            re.compile(pattern)
        except re.error as e:
            v.fail(f"threads.{key}", f"not a regular expression: {e}")
    return Variant(name=name, description=v.get("description", str), default=v.get("default", bool, False),
                   env=_env(v), properties=v.str_map("properties"),
                   jvm_opts=v.str_list("jvm_opts", (), nonempty=False), threads=threads, parity=_parity(v))


def load_manifest(path: Path) -> Framework:
    path = Path(path)
    f = Document.read(path)
    f.check_keys(sorted(TOP_KEYS))
    name = f.get("name", str)
    if name != path.parent.name:
        f.fail("name", f"must equal the folder name '{path.parent.name}'")
    if not NAME_RE.match(name):
        f.fail("name", "must be lower-case words joined by '-'")
    health = f.get("health_path", str, "/plaintext")
    if not health.startswith("/"):
        f.fail("health_path", "must start with '/'")
    scenarios = f.str_list("scenarios")
    for s in scenarios:
        if s not in manifest_scenarios():
            f.fail("scenarios", f"unknown scenario '{s}'; valid: {', '.join(manifest_scenarios())}")
    backend = f.get("backend", str, None)
    if backend is not None and not re.match(r"^[a-z0-9-]+:[a-z0-9-]+$", backend):
        f.fail("backend", "must be a target 'framework:variant'")
    build, start = f.sub("build"), f.sub("start")
    build.check_keys(("artifact", "command"))
    start.check_keys(("command",))
    start_command = start.str_list("command")
    for arg in start_command:
        for ph in re.findall(r"\{[^}]*\}", arg):
            if ph not in PLACEHOLDERS or arg != ph:
                start.fail("command", f"'{arg}': placeholders are whole arguments, one of {', '.join(sorted(PLACEHOLDERS))}")
    vf = f.sub("variants")
    variants = {n: _variant(vf, n, scenarios) for n in vf.table}
    defaults = [v.name for v in variants.values() if v.default]
    if len(defaults) != 1:
        vf.fail("*.default", f"exactly one variant must have default = true "
                             f"(found {len(defaults)}: {', '.join(defaults) or 'none'})")
    return Framework(
        name=name, path=path.parent.resolve(), description=f.get("description", str),
        language=f.get("language", str), server=f.get("server", str), health_path=health,
        scenarios=scenarios, build_command=build.str_list("command"), artifact=_relative(build, "artifact"),
        start_command=start_command, variants=variants, backend=backend, parity=_parity(f),
        versions=f.get("versions", str, ""))


class Catalog(dict):
    """Frameworks by name, and the folders whose framework.toml does not load (`broken`: folder name ->
    the error), so that one broken folder stops the commands that ask for it, not those about others."""

    def __init__(self, frameworks: dict[str, Framework], broken: dict[str, UsageError]):
        super().__init__(frameworks)
        self.broken = broken


def discover(root: Path | None = None) -> Catalog:
    """Every folder below root (default: FRAMEWORKS_DIR) that has a framework.toml, by name (those that do not
    load in `broken`)."""
    frameworks, broken = {}, {}
    for p in sorted(Path(root or FRAMEWORKS_DIR).glob("*/framework.toml")):
        try:
            frameworks[p.parent.name] = load_manifest(p)
        except UsageError as e:
            broken[p.parent.name] = e
    return Catalog(frameworks, broken)


def resolve(catalog: Catalog, target_id: str) -> Target:
    """'framework', 'framework:variant', either with '+mode' suffixes (MODES) -> Target, with
    UsageError listing the valid names."""
    name, *modes = target_id.split("+")
    for m in modes:
        if not is_mode(m):
            raise UsageError(f"unknown mode '{m}' of target {target_id}; valid: {', '.join(MODES)}, heap-SIZE "
                             f"(heap-256m)")
    modes = ordered(modes)
    fw_name, _, variant_name = name.partition(":")
    fw = catalog.get(fw_name)
    if fw_name in catalog.broken:
        raise catalog.broken[fw_name]
    if fw is None:
        raise UsageError(f"unknown framework '{fw_name}'; valid: {', '.join(catalog) or '(none found)'}")
    if not variant_name:
        return Target(fw, fw.default_variant, modes)
    if variant_name not in fw.variants:
        raise UsageError(f"unknown variant '{variant_name}' of {fw_name}; valid: {', '.join(fw.variants)}")
    return Target(fw, fw.variants[variant_name], modes)


def select(catalog: Catalog, frameworks: list[str] | None, variants: list[str] | None) -> list[Target]:
    """Targets for --framework/--variant: every variant of the named frameworks unless variants are named.

    A variant name may be plain ('virtual', applied to every named framework that has it) or a full
    'framework:variant'. A broken folder is an error when it is asked for, by name or as one of all the
    frameworks (a comparison of "every framework" that left one out would not say so in its figures),
    and a warning otherwise.
    """
    names = frameworks or [*catalog, *catalog.broken]
    for n in names:
        resolve(catalog, n)
    for name, error in catalog.broken.items():
        warnings.warn(f"frameworks folder {name!r} skipped: {error}", stacklevel=2)
    targets: list[Target] = []
    for n in names:
        fw = catalog[n.partition(":")[0]]
        if ":" in n:
            targets.append(resolve(catalog, n))
        elif variants:
            targets += [Target(fw, fw.variants[v]) for v in variants if v in fw.variants]
        else:
            targets += [Target(fw, v) for v in fw.variants.values()]
    if variants:
        known = {v for n in names for v in catalog[n.partition(":")[0]].variants}
        unknown = [v for v in variants if v not in known]
        if unknown:
            raise UsageError(f"unknown variant {', '.join(repr(u) for u in unknown)} for {', '.join(names)}; "
                             f"valid: {', '.join(sorted(known))}")
    if not targets:
        raise UsageError("no target matches the given --framework and --variant")
    return _dedupe(targets)


def _dedupe(targets: list[Target]) -> list[Target]:
    seen, out = set(), []
    for t in targets:
        if t.id not in seen:
            seen.add(t.id)
            out.append(t)
    return out
