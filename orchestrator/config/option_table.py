"""Every option the commands share, declared once: its flags, type, default, help, the commands that take
it, its environment variable, and what it gives a run: a setting (`Setting`: config/plan.py's Settings is
made of these, and of what no option sets) or a field of the load profile instead of the profile's own
(`ProfileField`: every kind takes it, or the kinds that list its field in Kind.options, so that a new
kind declares what it takes). The command line takes the table through
cli/typer_options.py (`takes`), a command's options reach it as one `Given` read by name,
`settings_from` and `profile_changes` turn them into settings and profile fields, and docs/options.md is
the table written out (`markdown`, held to the file by a test). A new option is one entry here."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Callable

from orchestrator import RESULTS_DIR
from orchestrator.config import kinds, options
from orchestrator.config.kinds.base import MAX_CONNECTIONS
from orchestrator.config.objective import parse_slo
from orchestrator.core import downstream_api
from orchestrator.errors import UsageError

# The commands that start targets and their infrastructure, and those that also load them (not
# config/modes.py's STARTS, the ways a target meets its load)
STARTING = ("run", "verify", "noise")
LOADING = ("run", "noise")
# Defaults that a help text names as well as a setting holds
HEAP, SERVER_CPUS, LOADGEN_CPUS, POOL_SIZE = "512m", "1", "0", 16
START_TIMEOUT_S, REQUEST_TIMEOUT_S = 120.0, 30.0
# An option's default that is its setting's, as given on the command line: written once, in the Setting
AS_SET = object()


@dataclass(frozen=True)
class Setting:
    """What an option gives the run's Settings: the field, its value when the option is not given (nor
    chosen by a preset, where `preset` lets it), and `parse(value, flag)`, which checks what was given."""
    field: str
    default: object
    parse: Callable[[object, str], object] | None = None
    preset: bool = False


@dataclass(frozen=True)
class ProfileField:
    """What an option sets in the load profile instead of the profile's own value: the Profile field,
    `parse(value, flag)`, which checks what was given, and whether every kind takes it (otherwise the
    kinds that list the field in Kind.options do)."""
    field: str
    parse: Callable[[object, str], object] | None = None
    every_kind: bool = False


@dataclass(frozen=True)
class Option:
    """One option: `name` is the parameter (and Given's attribute), `flags` what the command line takes."""
    name: str
    flags: tuple[str, ...]
    type: type
    default: object          # None: not given (a preset, a profile or the settings decide)
    help: str
    commands: tuple[str, ...]
    envvar: str | None = None
    # a command that takes the option with a default and help of its own: {command: (default, help)}
    own: dict[str, tuple[object, str]] = field(default_factory=dict)
    setting: Setting | None = None
    profile: ProfileField | None = None

    def __post_init__(self):
        if self.default is AS_SET:
            object.__setattr__(self, "default", self.setting.default)

    def default_for(self, command: str) -> object:
        return self.own.get(command, (self.default, ""))[0]

    def help_for(self, command: str) -> str:
        return self.own.get(command, (None, self.help))[1] or self.help


def _within(low: int, high: int) -> Callable[[int, str], int]:
    def check(value: int, flag: str) -> int:
        if not low <= value <= high:
            raise UsageError(f"{flag} {value} must be from {low:,} to {high:,}")
        return value
    return check


def _delay(value: int, flag: str) -> int:
    if not 0 <= value <= downstream_api.MAX_MS:
        raise UsageError(f"{flag} must be 0 to {downstream_api.MAX_MS:,}, not {value}")
    return value


OPTIONS: tuple[Option, ...] = (
    # what to measure
    Option("framework", ("--framework", "-f"), str, None, "Framework(s), comma-separated, or framework:variant.",
           ("run", "verify", "build", "parity", "noise"),
           own={"noise": (..., "The target: a framework or framework:variant (default variant: the framework's own).")}),
    Option("variant", ("--variant", "-v"), str, None, "Variant(s), comma-separated (default: all).",
           ("run", "verify", "parity", "noise"), own={"noise": (None, "Its variant.")}),
    Option("scenario", ("--scenario", "-s"), str, None, "Scenario(s), comma-separated (default: all that each target "
           "serves).", ("run", "noise"), own={"noise": ("json", "One scenario.")}),
    Option("profile", ("--profile", "-p"), str, "throughput", "Load profile: a name from `bench profiles` or a .toml "
           "file of your own.", ("run",)),
    Option("preset", ("--preset",), str, None, "Run a study's targets, scenarios and profile (`bench presets`; a "
           "preset of parts runs each part as a run of its own, NAME:PART one of them); -f, -v, -s and --profile "
           "do not apply.", ("run",)),
    Option("workload", ("--workload",), str, None, "Your service as a file: a mix of scenarios, its objective, the "
           "targets and prices (a shipped one by name: read-mostly, aggregator; docs/workloads.md). Its capacity per "
           "target; -f, -v, -s and --profile do not apply.", ("run",)),
    Option("quick", ("--quick",), bool, False, "With --preset: its short form, for CI.", ("run",)),
    # the load: each overrides the profile's
    Option("concurrency", ("--concurrency", "-c"), str, None, "Connections (VUs for rate), comma-separated; "
           "overrides the profile.", LOADING, own={"noise": ("64", "Connections.")},
           profile=ProfileField("concurrency", lambda v, f: tuple(options.positive_ints(str(v), f, MAX_CONNECTIONS)))),
    Option("rate", ("--rate",), str, None, "rate profile: arrivals per second, comma-separated.", ("run",),
           profile=ProfileField("rates", lambda v, f: tuple(options.positive_ints(v, f, 1_000_000)))),
    Option("slo", ("--slo",), str, None, "capacity profile: the objective, a percentile's bound over the scenario's "
           "own wait, e.g. p99=50ms.", ("run",), profile=ProfileField("slo", lambda v, _: parse_slo(v))),
    Option("requests", ("--requests",), int, None, "burst profile: requests per cell.", ("run",),
           profile=ProfileField("requests", _within(1, 10_000_000))),
    Option("workers", ("--workers",), int, None, "ramp profile: Locust worker processes.", ("run",),
           profile=ProfileField("workers", _within(0, 64))),
    Option("warmup", ("--warmup",), str, None, "Warm-up window, repeated until the last four show no climb in rps "
           "and the JIT is quiet; thrown away. 0s: none.", LOADING,
           profile=ProfileField("warmup_s", lambda v, f: options.duration(v, f, allow_zero=True), every_kind=True)),
    Option("warmup_max", ("--warmup-max",), str, None, "Give up warming up after this long (the cell is flagged "
           "not-steady).", LOADING, profile=ProfileField("warmup_max_s", options.duration, every_kind=True)),
    Option("duration", ("--duration", "-d"), str, None, "Measured window per cell.", (*LOADING, "calibrate"),
           own={"noise": ("10s", "Measured window per repeat."), "calibrate": ("5s", "Each measured window.")},
           profile=ProfileField("duration_s", options.duration)),
    Option("repeat", ("--repeat",), int, None, "Repeats, each in a fresh JVM, interleaved.", LOADING,
           own={"noise": (5, "Repeats, each in a fresh JVM (2 or more).")}, profile=ProfileField("repeat", every_kind=True)),
    # how each target starts
    Option("fresh_jvm_per_scenario", ("--fresh-jvm-per-scenario/--one-jvm-per-target",), bool, None, "A fresh JVM "
           "for each scenario, so that no scenario inherits the heap, threads or JIT state of the ones before it "
           "(default: one JVM per target and repeat; a preset may choose).", ("run",),
           setting=Setting("fresh_jvm_per_scenario", False, preset=True)),
    Option("jvm_mode", ("--jvm-mode",), str, None, "How each target's JVM starts, comma-separated: default, "
           "aot-cache (from a JDK AOT cache the run trains on the target first: classes loaded and linked, method "
           "profiles); each is a target of its own (+aot-cache), measured beside the other (default: default; a "
           "preset may choose).", ("run",)),
    Option("start", ("--start",), str, None, "How each target meets its load, comma-separated: warm (warmed up "
           "until steady), cold (no warm-up: a fresh JVM per cell, loaded seconds after its first answer; +cold), "
           "for profiles of one window a cell (default: warm; a preset may choose).", ("run",)),
    Option("jfr", ("--jfr/--no-jfr",), bool, None, "Record each measured window with Flight Recorder: pinning, "
           "threads, blocking, GC, hot methods and a flame graph per cell in the rows and logs/jfr/ (default: on "
           "in presets, off otherwise).", ("run",), setting=Setting("jfr", False, preset=True)),
    Option("heap", ("--heap",), str, None, f"JVM heap, -Xms = -Xmx (default {HEAP}).", STARTING,
           own={"run": (None, f"JVM heap, -Xms = -Xmx (default {HEAP}); several, comma-separated, make "
                              "each target one per heap (+heap-256m).")},
           setting=Setting("heap", HEAP, lambda v, _: options.heap(v), preset=True)),
    Option("start_timeout", ("--start-timeout",), str, f"{START_TIMEOUT_S:g}s", "How long a target may take to "
           "answer its health path.", STARTING, setting=Setting("start_timeout_s", START_TIMEOUT_S, options.duration)),
    Option("timeout", ("--timeout",), str, f"{REQUEST_TIMEOUT_S:g}s", "Per-request timeout of the load generator.",
           ("run",), setting=Setting("request_timeout_s", REQUEST_TIMEOUT_S, options.duration)),
    # where it all runs
    Option("topology", ("--topology",), str, None, "Where the server and the data services run and the links "
           "between them: a shipped name (orchestrator/config/topologies/) or a .toml file; default: everything on "
           "this machine's loopback. Needs root (it creates network namespaces).", ("run",)),
    Option("locust_master", ("--locust-master",), str, None, "ramp profile with --workers N and targets on a remote "
           "engine: the workers run on other machines (`bench locust-worker --master ADDRESS[:PORT]` there) and "
           "connect to this machine's master at ADDRESS[:PORT] (default port 5557); none start here.", ("run",)),
    Option("server_cpus", ("--server-cpus",), str, None, f"CPUs for the target (taskset list; default "
           f"{SERVER_CPUS}).", (*STARTING, "calibrate"),
           setting=Setting("server_cpus", SERVER_CPUS, options.cpu_list, preset=True)),
    Option("loadgen_cpus", ("--loadgen-cpus",), str, None, "CPUs for the load generator and the infrastructure "
           f"(default {LOADGEN_CPUS}).", (*STARTING, "calibrate", "infra up"),
           setting=Setting("loadgen_cpus", LOADGEN_CPUS, options.cpu_list, preset=True)),
    Option("runtime", ("--runtime",), str, AS_SET, "Where targets and infrastructure run: process or "
           "docker.", ("run", "verify", "infra up"), setting=Setting("runtime", "process")),
    Option("memory", ("--memory",), str, AS_SET, "docker: the memory limit of a target's container (swap "
           "included).", ("run", "verify"), setting=Setting("memory", "1g", lambda v, _: options.memory(v))),
    Option("offline", ("--offline",), bool, AS_SET, "docker: never try to pull; bootstrap missing base images "
           "locally.", ("run", "verify", "infra up", "images bootstrap"), setting=Setting("offline", False)),
    Option("port", ("--port",), int, AS_SET, "Port of the target (a gateway's backend gets port + 1).",
           (*STARTING, "calibrate"), own={"calibrate": (18080, "Port of the calibration nginx.")},
           setting=Setting("port", 8080, options.port)),
    Option("redis_port", ("--redis-port",), int, AS_SET, "Port of the run's Redis.", (*STARTING, "infra up"),
           setting=Setting("redis_port", 16379, options.port)),
    Option("db_port", ("--db-port",), int, AS_SET, "Port of the run's MariaDB.", (*STARTING, "infra up"),
           setting=Setting("db_port", 13306, options.port)),
    Option("downstream_port", ("--downstream-port",), int, AS_SET, "Port of the run's "
           "downstream service (nginx).", (*STARTING, "infra up"),
           setting=Setting("downstream_port", downstream_api.DEFAULT_PORT, options.port)),
    Option("downstream_ms", ("--downstream-ms",), int, None, "What the downstream service waits before each "
           f"answer, the delay of fan-out's calls (CONTRACT.md; default {downstream_api.DEFAULT_MS}).",
           ("run", "verify", "infra up"), setting=Setting("downstream_ms", downstream_api.DEFAULT_MS, _delay)),
    # CONTRACT.md's limits on work in flight
    Option("db_pool_size", ("--db-pool-size",), int, AS_SET, "Database connections of every target, i.e. "
           f"statements in flight (CONTRACT.md; default {POOL_SIZE}).", ("run", "verify", "parity"),
           envvar="DB_POOL_SIZE", setting=Setting("db_pool_size", POOL_SIZE, options.pool_size)),
    Option("redis_pool_size", ("--redis-pool-size",), int, AS_SET, "Redis connections of every pooled client, "
           f"i.e. commands in flight (CONTRACT.md; default {POOL_SIZE}).", ("run", "verify", "parity"),
           envvar="REDIS_POOL_SIZE", setting=Setting("redis_pool_size", POOL_SIZE, options.pool_size)),
    # what a run is kept as
    Option("resume", ("--resume",), str, None, "Continue this run id with its own plan.", ("run",)),
    Option("results_dir", ("--results-dir",), Path, RESULTS_DIR, "Where run folders go.",
           ("run", "noise", "parity", "calibrate", "results", "report", "compare", "prune", "locust-worker"),
           own={"locust-worker": (RESULTS_DIR, "Its logs go to locust-worker/<time>/ in here.")}),
)


def of(command: str) -> tuple[Option, ...]:
    return tuple(o for o in OPTIONS if command in o.commands)


def settings_fields() -> list[tuple[str, type, object]]:
    """(field, type, default) of every setting an option gives, for config/plan.py's Settings."""
    return [(o.setting.field, type(o.setting.default), o.setting.default) for o in OPTIONS if o.setting]


class Given(SimpleNamespace):
    """A command's options from the table, as the user gave them (unchecked), by name."""


def settings_from(given: Given, chosen: dict) -> dict:
    """Every setting the options give: each as given, else as the preset chose it (`chosen`, by field,
    for an option whose setting a preset may choose), else its default; each checked by its setting's
    parse (a default too, where it is written as the option is given: the CPUs one names must exist here)."""
    values = {}
    for o in OPTIONS:
        if not o.setting:
            continue
        value = getattr(given, o.name, None)
        if (value is None or value == "") and o.setting.preset:
            value = chosen.get(o.setting.field)
        if value is None or value == "":
            value = o.setting.default
            if not isinstance(value, o.type):   # a default in the setting's own terms (seconds, not "30s")
                values[o.setting.field] = value
                continue
        values[o.setting.field] = o.setting.parse(value, o.flags[0].split("/")[0]) if o.setting.parse else value
    return values


def profile_changes(given: Given) -> dict:
    """What the options set in the load profile (by Profile field): each given one, checked by its parse."""
    changes = {}
    for o in OPTIONS:
        value = getattr(given, o.name, None) if o.profile else None
        if value is not None and value != "":
            changes[o.profile.field] = o.profile.parse(value, o.flags[0]) if o.profile.parse else value
    return changes


def profile_flags() -> dict[str, str]:
    """Each Profile field the command line can set -> the flag that sets it."""
    return {o.profile.field: o.flags[0] for o in OPTIONS if o.profile}


def kinds_taking(field_name: str) -> list[str]:
    """The profile kinds that take the option setting this Profile field: all, or those that list it."""
    (o,) = [o for o in OPTIONS if o.profile and o.profile.field == field_name]
    return [k.name for k in kinds.KINDS.values() if o.profile.every_kind or field_name in k.options]


def markdown() -> str:
    """docs/options.md: the table, one row an option, with the commands and profile kinds that take it."""
    lines = ["# Options", "", "Every option of `bench run`, and those other commands share, as "
             "`orchestrator/config/option_table.py` declares them: this page is written from it, and "
             "`tests/cli/test_option_table.py` holds the two alike. A command's options of its own are in its "
             "`--help`. An option that sets a field of the load profile applies to the profile kinds named; a "
             "profile of another kind refuses it.", "", "| option | type | default | commands | profile kinds | help |",
             "|---|---|---|---|---|---|"]
    for o in OPTIONS:
        defaults = [] if o.default is None else ["`results/`" if o.default == RESULTS_DIR else f"`{o.default}`"]
        defaults += [f"`{c}`: {'required' if d is ... else 'none' if d is None else d}"
                     for c, (d, _) in o.own.items() if d != o.default]
        env = f" (environment: `{o.envvar}`)" if o.envvar else ""
        taking = ("every kind" if o.profile.every_kind else ", ".join(kinds_taking(o.profile.field))) if o.profile else ""
        lines.append(f"| `{', '.join(o.flags)}` | {o.type.__name__} | {'; '.join(defaults)} | {', '.join(o.commands)} | "
                     f"{taking} | {o.help.replace('|', '/')}{env} |")
    return "\n".join(lines) + "\n"
