"""Every option the commands share, declared once: its flags, type, default, help, the commands that take
it and its environment variable. A command's signature is made from the table (`takes`), its options
reach it as one object read by name (`Given`), the usage rules and the settings read them from there
(run_options.py, common.parse_settings), and docs/options.md is the table written out (`markdown`, held
to the file by a test). A new option is one entry here, and a line where it is read."""
from __future__ import annotations

import functools
import inspect
import typing
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Callable, Optional

import typer

from orchestrator import RESULTS_DIR
from orchestrator.config.plan import Settings
from orchestrator.core import downstream_api

# The settings' defaults, written once (config/plan.py's Settings); the options show them
DEFAULTS = Settings()
# The commands that start targets and their infrastructure, and those that also load them
STARTS = ("run", "verify", "noise")
LOADS = ("run", "noise")


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

    def default_for(self, command: str) -> object:
        return self.own.get(command, (self.default, ""))[0]

    def help_for(self, command: str) -> str:
        return self.own.get(command, (None, self.help))[1] or self.help

    def parameter(self, command: str) -> inspect.Parameter:
        default = self.default_for(command)
        return inspect.Parameter(
            # None: left out; ...: required
            self.name, inspect.Parameter.KEYWORD_ONLY, annotation=Optional[self.type] if default is None else self.type,
            default=typer.Option(default, *self.flags, help=self.help_for(command), envvar=self.envvar))


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
           "overrides the profile.", LOADS, own={"noise": ("64", "Connections.")}),
    Option("rate", ("--rate",), str, None, "rate profile: arrivals per second, comma-separated.", ("run",)),
    Option("slo", ("--slo",), str, None, "capacity profile: the objective, a percentile's bound over the scenario's "
           "own wait, e.g. p99=50ms.", ("run",)),
    Option("requests", ("--requests",), int, None, "burst profile: requests per cell.", ("run",)),
    Option("workers", ("--workers",), int, None, "ramp profile: Locust worker processes.", ("run",)),
    Option("warmup", ("--warmup",), str, None, "Warm-up window, repeated until the last four show no climb in rps "
           "and the JIT is quiet; thrown away. 0s: none.", LOADS),
    Option("warmup_max", ("--warmup-max",), str, None, "Give up warming up after this long (the cell is flagged "
           "not-steady).", LOADS),
    Option("duration", ("--duration", "-d"), str, None, "Measured window per cell.", (*LOADS, "calibrate"),
           own={"noise": ("10s", "Measured window per repeat."), "calibrate": ("5s", "Each measured window.")}),
    Option("repeat", ("--repeat",), int, None, "Repeats, each in a fresh JVM, interleaved.", LOADS,
           own={"noise": (5, "Repeats, each in a fresh JVM (2 or more).")}),
    # how each target starts
    Option("fresh_jvm_per_scenario", ("--fresh-jvm-per-scenario/--one-jvm-per-target",), bool, None, "A fresh JVM "
           "for each scenario, so that no scenario inherits the heap, threads or JIT state of the ones before it "
           "(default: one JVM per target and repeat; a preset may choose).", ("run",)),
    Option("jvm_mode", ("--jvm-mode",), str, None, "How each target's JVM starts, comma-separated: default, "
           "aot-cache (from a JDK AOT cache the run trains on the target first: classes loaded and linked, method "
           "profiles); each is a target of its own (+aot-cache), measured beside the other (default: default; a "
           "preset may choose).", ("run",)),
    Option("start", ("--start",), str, None, "How each target meets its load, comma-separated: warm (warmed up "
           "until steady), cold (no warm-up: a fresh JVM per cell, loaded seconds after its first answer; +cold), "
           "for profiles of one window a cell (default: warm; a preset may choose).", ("run",)),
    Option("jfr", ("--jfr/--no-jfr",), bool, None, "Record each measured window with Flight Recorder: pinning, "
           "threads, blocking, GC, hot methods and a flame graph per cell in the rows and logs/jfr/ (default: on "
           "in presets, off otherwise).", ("run",)),
    Option("heap", ("--heap",), str, None, f"JVM heap, -Xms = -Xmx (default {DEFAULTS.heap}).", STARTS,
           own={"run": (None, f"JVM heap, -Xms = -Xmx (default {DEFAULTS.heap}); several, comma-separated, make "
                              "each target one per heap (+heap-256m).")}),
    Option("start_timeout", ("--start-timeout",), str, f"{DEFAULTS.start_timeout_s:g}s", "How long a target may "
           "take to answer its health path.", STARTS),
    Option("timeout", ("--timeout",), str, f"{DEFAULTS.request_timeout_s:g}s", "Per-request timeout of the load "
           "generator.", ("run",)),
    # where it all runs
    Option("topology", ("--topology",), str, None, "Where the server and the data services run and the links "
           "between them: a shipped name (orchestrator/config/topologies/) or a .toml file; default: everything on "
           "this machine's loopback. Needs root (it creates network namespaces).", ("run",)),
    Option("locust_master", ("--locust-master",), str, None, "ramp profile with --workers N and targets on a remote "
           "engine: the workers run on other machines (`bench locust-worker --master ADDRESS[:PORT]` there) and "
           "connect to this machine's master at ADDRESS[:PORT] (default port 5557); none start here.", ("run",)),
    Option("server_cpus", ("--server-cpus",), str, None, f"CPUs for the target (taskset list; default "
           f"{DEFAULTS.server_cpus}).", (*STARTS, "calibrate")),
    Option("loadgen_cpus", ("--loadgen-cpus",), str, None, "CPUs for the load generator and the infrastructure "
           f"(default {DEFAULTS.loadgen_cpus}).", (*STARTS, "calibrate", "infra up")),
    Option("runtime", ("--runtime",), str, DEFAULTS.runtime, "Where targets and infrastructure run: process or "
           "docker.", ("run", "verify", "infra up")),
    Option("memory", ("--memory",), str, DEFAULTS.memory, "docker: the memory limit of a target's container (swap "
           "included).", ("run", "verify")),
    Option("offline", ("--offline",), bool, False, "docker: never try to pull; bootstrap missing base images "
           "locally.", ("run", "verify", "infra up", "images bootstrap")),
    Option("port", ("--port",), int, DEFAULTS.port, "Port of the target (a gateway's backend gets port + 1).",
           (*STARTS, "calibrate"), own={"calibrate": (18080, "Port of the calibration nginx.")}),
    Option("redis_port", ("--redis-port",), int, DEFAULTS.redis_port, "Port of the run's Redis.", (*STARTS, "infra up")),
    Option("db_port", ("--db-port",), int, DEFAULTS.db_port, "Port of the run's MariaDB.", (*STARTS, "infra up")),
    Option("downstream_port", ("--downstream-port",), int, DEFAULTS.downstream_port, "Port of the run's "
           "downstream service (nginx).", (*STARTS, "infra up")),
    Option("downstream_ms", ("--downstream-ms",), int, None, "What the downstream service waits before each "
           f"answer, the delay of fan-out's calls (CONTRACT.md; default {downstream_api.DEFAULT_MS}).",
           ("run", "verify", "infra up")),
    # CONTRACT.md's limits on work in flight
    Option("db_pool_size", ("--db-pool-size",), int, DEFAULTS.db_pool_size, "Database connections of every "
           f"target, i.e. statements in flight (CONTRACT.md; default {DEFAULTS.db_pool_size}).",
           ("run", "verify", "parity"), envvar="DB_POOL_SIZE"),
    Option("redis_pool_size", ("--redis-pool-size",), int, DEFAULTS.redis_pool_size, "Redis connections of every "
           f"pooled client, i.e. commands in flight (CONTRACT.md; default {DEFAULTS.redis_pool_size}).",
           ("run", "verify", "parity"), envvar="REDIS_POOL_SIZE"),
    # what a run is kept as
    Option("resume", ("--resume",), str, None, "Continue this run id with its own plan.", ("run",)),
    Option("results_dir", ("--results-dir",), Path, RESULTS_DIR, "Where run folders go.",
           ("run", "noise", "parity", "calibrate", "results", "report", "compare", "prune", "locust-worker"),
           own={"locust-worker": (RESULTS_DIR, "Its logs go to locust-worker/<time>/ in here.")}),
)


def of(command: str) -> tuple[Option, ...]:
    return tuple(o for o in OPTIONS if command in o.commands)


def takes(command: str) -> Callable:
    """Decorator: the command's signature is its own parameters (its arguments and the options only it takes),
    then the table's options of `command`; it is called with its own and `given`, a Given of the table's."""
    def wrap(fn: Callable) -> Callable:
        hints = typing.get_type_hints(fn)
        own = [p.replace(annotation=hints.get(p.name, p.annotation)) for p in inspect.signature(fn).parameters.values()
               if p.name != "given"]
        table = [o.parameter(command) for o in of(command)]

        @functools.wraps(fn)
        def call(**values):
            mine = {p.name: values.pop(p.name) for p in own if p.name in values}
            return fn(**mine, given=Given(**values))
        call.__signature__ = inspect.Signature(own + table)
        call.__annotations__ = {p.name: p.annotation for p in own + table}
        del call.__wrapped__   # Typer reads the signature made here, not the function's own
        return call
    return wrap


class Given(SimpleNamespace):
    """A command's options from the table, as the user gave them (unchecked), by name."""


def markdown() -> str:
    """docs/options.md: the table, one row an option, with the commands that take it."""
    lines = ["# Options", "", "Every option of `bench run`, and those other commands share, as "
             "`orchestrator/cli/option_table.py` declares them: this page is written from it, and "
             "`tests/cli/test_option_table.py` holds the two alike. A command's options of its own are in its "
             "`--help`.", "", "| option | type | default | commands | help |", "|---|---|---|---|---|"]
    for o in OPTIONS:
        defaults = [] if o.default is None else ["`results/`" if o.default == RESULTS_DIR else f"`{o.default}`"]
        defaults += [f"`{c}`: {'required' if d is ... else 'none' if d is None else d}"
                     for c, (d, _) in o.own.items() if d != o.default]
        env = f" (environment: `{o.envvar}`)" if o.envvar else ""
        lines.append(f"| `{', '.join(o.flags)}` | {o.type.__name__} | {'; '.join(defaults)} | {', '.join(o.commands)} | "
                     f"{o.help.replace('|', '/')}{env} |")
    return "\n".join(lines) + "\n"
