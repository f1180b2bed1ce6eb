"""`bench list`, `build`, `parity` and `verify`: the targets themselves, before any load is measured.
Each parses its options and calls the catalog, the build and the environment; what a target is and how
it starts lives in config/ and targets/, so these functions only choose and print."""
from __future__ import annotations

import contextlib
import datetime as dt
import os
import re
import time
from pathlib import Path
from typing import Optional

import typer
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.padding import Padding
from rich.table import Table

from orchestrator import RESULTS_DIR, drivers
from orchestrator.cli.common import (
    DbPoolOpt,
    DbPortOpt,
    DownstreamMsOpt,
    DownstreamPortOpt,
    FrameworkOpt,
    HeapOpt,
    LoadgenCpus,
    MemoryOpt,
    OfflineOpt,
    PortOpt,
    RedisPoolOpt,
    RedisPortOpt,
    RuntimeOpt,
    ServerCpus,
    StartTimeoutOpt,
    VariantOpt,
    console,
    parse_settings,
    select_targets,
)
from orchestrator.config import options
from orchestrator.config.catalog import discover
from orchestrator.config.plan import Settings, pool_env
from orchestrator.errors import UsageError
from orchestrator.infra import backends as infra_mod
from orchestrator.infra import interrupts, run_lock
from orchestrator.infra.procs import ensure_port_free
from orchestrator.report import parity_table
from orchestrator.results import store as results
from orchestrator.targets import parity, smoke
from orchestrator.targets.environment import Environment
from orchestrator.targets.jvm import cpu_count, parse_cpus

PARITY_COLUMN = 28   # the narrowest a target's column of `bench parity` stays readable at


def list_targets() -> None:
    """Every target (framework:variant) with its concurrency model; a folder whose framework.toml does not
    load is named in one line after them, and the command exits 2."""
    catalog = discover()
    table = Table("target", "server", "scenarios", "concurrency model")
    for fw in catalog.values():
        for v in fw.variants.values():
            table.add_row(f"{fw.name}:{v.name}" + (" *" if v.default else ""), fw.server,
                          ",".join(fw.scenarios), v.description)
    console.print(table)
    console.print("* the default variant")
    for error in catalog.broken.values():
        Console(stderr=True).print(f"[red]error:[/] {escape(str(error))}", highlight=False, soft_wrap=True)
    if catalog.broken:
        raise typer.Exit(UsageError.exit_code)


def build(framework: Optional[str] = FrameworkOpt,
          force: bool = typer.Option(False, "--force", help="Rebuild even when the sources did not change.")) -> None:
    """Build the frameworks (skipped when their sources did not change)."""
    targets = select_targets(framework, None)
    logs = RESULTS_DIR / "builds"
    environment = Environment(Settings(), logs, console)
    environment.build_all(targets, force=force)
    if environment.build_failures:
        for name, reason in environment.build_failures.items():
            console.print(f"[red]{name}[/]: {reason}")
        raise typer.Exit(1)


def parity_cmd(run: Optional[str] = typer.Argument(None, help="A run id or folder: its targets, with their thread "
                                                    "pools after load (default: the targets, built as needed)."),
               framework: Optional[str] = FrameworkOpt, variant: Optional[str] = VariantOpt,
               db_pool_size: int = DbPoolOpt, redis_pool_size: int = RedisPoolOpt,
               results_dir: Path = typer.Option(RESULTS_DIR, "--results-dir")) -> None:
    """What each target runs with: declared pools, keep-alive and backlog, resolved library versions; with a
    run, also its threads by pool after load and its GC. Columns that differ are marked ≠."""
    if run:
        meta = results.RunStore(results.find_run(run, results_dir)).meta()
        entries = meta.get("parity") or {}
        if not entries:
            raise UsageError(f"run {run} has no parity table (it was made before runs recorded one)")
    else:
        targets = select_targets(framework, variant)
        settings = Settings(db_pool_size=options.pool_size(db_pool_size, "--db-pool-size"),
                            redis_pool_size=options.pool_size(redis_pool_size, "--redis-pool-size"))
        environment = Environment(settings, RESULTS_DIR / "builds", console)
        environment.build_all(targets)
        entries = {t.id: parity.record(t, pool_env(settings, t)) for t in targets
                   if t.framework.name not in environment.build_failures}
    t = parity_table.table(entries)
    if len(t) * PARITY_COLUMN + PARITY_COLUMN > console.width:
        # more targets than columns of a readable width: one block per property, each value once
        for prop, values in parity_table.by_property(t):
            console.print(f"[bold]{escape(prop)}[/]", soft_wrap=False)
            for value, targets in values:
                console.print(Padding(f"{escape(value or '–')}\n[dim]{escape(', '.join(targets))}[/]", (0, 0, 0, 2)))
    else:
        m = parity_table.matrix(t)
        table = Table(*m.columns, box=box.SIMPLE_HEAD)
        for _, row in m.iterrows():
            table.add_row(*[str(v) for v in row])
        console.print(table)
    console.print("≠: the targets differ in this property")


def verify_cmd(framework: Optional[str] = FrameworkOpt, variant: Optional[str] = VariantOpt,
               server_cpus: str = ServerCpus, loadgen_cpus: str = LoadgenCpus, heap: str = HeapOpt,
               port: int = PortOpt, redis_port: int = RedisPortOpt, db_port: int = DbPortOpt,
               runtime: str = RuntimeOpt, memory: str = MemoryOpt, offline: bool = OfflineOpt,
               start_timeout: str = StartTimeoutOpt, db_pool_size: int = DbPoolOpt,
               redis_pool_size: int = RedisPoolOpt, downstream_port: int = DownstreamPortOpt,
               downstream_ms: Optional[int] = DownstreamMsOpt,
               load: Optional[int] = typer.Option(None, "--load", help="The load smoke: after verifying, send each "
                                                  "scenario this many requests at once, one per connection (the "
                                                  "studies use 500 to 2,000), each to be answered, then verify "
                                                  "again; no figure is kept.")) -> None:
    """Start each target and check every scenario against the contract (no load, unless --load)."""
    if load is not None and not 1 <= load <= 20_000:
        raise UsageError(f"--load must be 1 to 20,000 connections, not {load}")
    settings = parse_settings(server_cpus, loadgen_cpus, heap, port, redis_port, db_port, runtime, memory, offline,
                         start_timeout, db_pool_size, redis_pool_size, downstream_ms=downstream_ms,
                         downstream_port=downstream_port)
    targets = select_targets(framework, variant)
    logs = RESULTS_DIR / "verify" / dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    run_lock.ensure_free()   # it starts targets and servers: not beside a run
    environment = Environment(settings, logs, console)
    environment.check_ports(targets, shared_infra=infra_mod.load_state() is not None)
    # the smoke starts each next target beside the load on the one before (smoke.in_turn)
    beside = bool(load) and len(targets) > 1 and environment.starts_beside
    if beside:
        second = settings.port + smoke.BESIDE_PORT_OFFSET
        if second in (settings.redis_port, settings.db_port):
            raise UsageError(f"--port {settings.port}: the load smoke starts the next target on port {second}, "
                             f"which is Redis's or MariaDB's here; choose another --port")
        ensure_port_free(second, f"the next target, started beside the load (--port + {smoke.BESIDE_PORT_OFFSET})")
    if load:
        drivers.get(smoke.GENERATOR).executable()   # missing, or built on first use, before any target starts
    environment.build_all(targets)
    table = Table("target", "result" + (f" (load {load:,})" if load else ""), "startup s", "RSS MiB", "threads seen")
    failures: list[tuple[str, str]] = []
    for leftover in environment.cleanup_leftovers():
        console.print(f"[yellow]removed a leftover of an earlier run:[/] {leftover}")
    if load:
        os.sched_setaffinity(0, parse_cpus(settings.loadgen_cpus))   # the smoke's k6 and parsing off the server's CPU
    with interrupts.quiet_sigterm(), environment.infra() as infra, environment.keep_backends(), \
            contextlib.closing(smoke.in_turn(environment, targets, infra[0].env(), "verify", beside)) as turns:
        since, started_beside = time.monotonic(), False
        for i, turn in enumerate(turns, 1):
            t, started, v = turn.target, turn.started, turn.verification
            started_beside |= turn.beside
            if started is None:
                failures.append((t.id, turn.failure))
                table.add_row(t.id, "[red]FAILED[/]", "", "", "")
                console.print(f"[{i}/{len(targets)}] {t.id}: [red]FAILED[/] to start", emoji=False)
                since = time.monotonic()
                continue
            survived, ran_on = "", started.server.cpus()
            try:
                if v.ok and load:
                    survived = smoke.survives(t, started, settings, load, logs, turn.port, environment.server_host)
            finally:
                started.stop()
            reason = v.reason if not v.ok else survived
            if reason:
                failures.append((t.id, reason))
            # a smoke of every target takes many minutes: each one's verdict as it comes
            console.print(f"[{i}/{len(targets)}] {t.id}: {'[red]FAILED[/]' if reason else '[green]ok[/]'}"
                          + (f" at {load:,} connections on {len(t.framework.scenarios)} scenarios"
                             if load and v.ok else "")
                          + (f", on CPU {','.join(map(str, sorted(ran_on)))}" if load and v.ok and ran_on else "")
                          + (f" (started on CPU {settings.loadgen_cpus} beside the previous target's load)"
                             if turn.beside else "")
                          + f" ({time.monotonic() - since:.0f} s)", emoji=False)
            since = time.monotonic()
            table.add_row(t.id, "[red]FAILED[/]" if reason else "[green]ok[/]",
                          f"{started.startup_s:.2f}" + (" †" if turn.beside else ""),
                          f"{started.rss_after_start_mb:.0f}", thread_kinds(v.threads.values()))
    console.print(table)
    if started_beside:
        console.print(f"† started on the load generator's CPU{'s' if cpu_count(settings.loadgen_cpus) > 1 else ''} "
                      f"({settings.loadgen_cpus}) while the target before it took its bursts, then moved to the "
                      f"server's: a start beside that load is slower than alone (`bench verify` without --load "
                      f"starts each target alone)", soft_wrap=True)
    for target_id, reason in failures:
        console.print(f"[red]{target_id}[/]: {escape(reason)}", soft_wrap=True)
    console.print(f"{len(targets) - len(failures)} passed, {len(failures)} failed")
    if failures:
        raise typer.Exit(1)


def thread_kinds(names) -> str:
    """Distinct thread pools from X-Thread values: numbers dropped, so 'exec-1' and 'exec-7' are one."""
    return escape(", ".join(sorted({re.sub(r"\d+", "N", n) for n in names})))
