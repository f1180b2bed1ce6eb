"""The `bench` command line: it parses, then calls the environment. No logic of its own."""
from __future__ import annotations

import contextlib
import datetime as dt
import os
import re
import sys
import time
from pathlib import Path
from typing import Optional

import typer
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.padding import Padding
from rich.table import Table

from orchestrator import REPO_ROOT, RESULTS_DIR
from orchestrator.measure import capacity, runner
from orchestrator.infra import backends as infra_mod, interrupts
from orchestrator.config import options, presets, profiles
from orchestrator.results import store as results
from orchestrator.targets import smoke
from orchestrator.config import topology as topology_mod
from orchestrator.config.catalog import discover, resolve, select
from orchestrator.measure.console import level_label
from orchestrator.targets.environment import Environment
from orchestrator.targets.jvm import cpu_count, parse_cpus
from orchestrator.errors import BenchError, TargetFailed, UsageError
from orchestrator.config.plan import Plan, Settings, pool_env
from orchestrator.infra.procs import ensure_port_free
from orchestrator.config.scenarios import SCENARIOS, parse_list
from orchestrator.results import compare, judge, noise
from orchestrator.infra.hostinfo import host_info
from orchestrator.cli.noise_command import noise_cmd
from orchestrator.cli.report_commands import register as register_reports
from orchestrator.cli.common import (console, FrameworkOpt, VariantOpt, ServerCpus, LoadgenCpus, HeapOpt, PortOpt, RedisPortOpt, DbPortOpt, RuntimeOpt, MemoryOpt, OfflineOpt, DbPoolOpt, RedisPoolOpt, StartTimeoutOpt, select_targets, parse_settings, override_profile, check_writable)

app = typer.Typer(help="Build, start, verify and load JVM web frameworks; store tidy results.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)
infra_app = typer.Typer(help="Redis and MariaDB for the targets.", no_args_is_help=True)
app.add_typer(infra_app, name="infra")
images_app = typer.Typer(help="Docker images: local base images and one per framework.", no_args_is_help=True)
app.add_typer(images_app, name="images")
PARITY_COLUMN = 28   # the narrowest a target's column of `bench parity` stays readable at




@app.command("list")
def list_targets() -> None:
    """Every target (framework:variant) with its concurrency model."""
    table = Table("target", "server", "scenarios", "concurrency model")
    for fw in discover().values():
        for v in fw.variants.values():
            table.add_row(f"{fw.name}:{v.name}" + (" *" if v.default else ""), fw.server,
                          ",".join(fw.scenarios), v.description)
    console.print(table)
    console.print("* the default variant")


@app.command()
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


@app.command("parity")
def parity_cmd(run: Optional[str] = typer.Argument(None, help="A run id or folder: its targets, with their thread "
                                                    "pools after load (default: the targets, built as needed)."),
               framework: Optional[str] = FrameworkOpt, variant: Optional[str] = VariantOpt,
               db_pool_size: int = DbPoolOpt, redis_pool_size: int = RedisPoolOpt,
               results_dir: Path = typer.Option(RESULTS_DIR, "--results-dir")) -> None:
    """What each target runs with: declared pools, keep-alive and backlog, resolved library versions; with a
    run, also its threads by pool after load and its GC. Columns that differ are marked ≠."""
    from orchestrator.targets import parity
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
    t = parity.table(entries)
    if len(t) * PARITY_COLUMN + PARITY_COLUMN > console.width:
        # more targets than columns of a readable width: one block per property, each value once
        for prop, values in parity.by_property(t):
            console.print(f"[bold]{escape(prop)}[/]", soft_wrap=False)
            for value, targets in values:
                console.print(Padding(f"{escape(value or '–')}\n[dim]{escape(', '.join(targets))}[/]", (0, 0, 0, 2)))
    else:
        m = parity.matrix(t)
        table = Table(*m.columns, box=box.SIMPLE_HEAD)
        for _, row in m.iterrows():
            table.add_row(*[str(v) for v in row])
        console.print(table)
    console.print("≠: the targets differ in this property")


@app.command("verify")
def verify_cmd(framework: Optional[str] = FrameworkOpt, variant: Optional[str] = VariantOpt,
               server_cpus: str = ServerCpus, loadgen_cpus: str = LoadgenCpus, heap: str = HeapOpt,
               port: int = PortOpt, redis_port: int = RedisPortOpt, db_port: int = DbPortOpt,
               runtime: str = RuntimeOpt, memory: str = MemoryOpt, offline: bool = OfflineOpt,
               start_timeout: str = StartTimeoutOpt, db_pool_size: int = DbPoolOpt,
               redis_pool_size: int = RedisPoolOpt,
               load: Optional[int] = typer.Option(None, "--load", help="The load smoke: after verifying, send each "
                                                  "scenario this many requests at once, one per connection (the "
                                                  "studies use 500 to 2,000), each to be answered, then verify "
                                                  "again; no figure is kept.")) -> None:
    """Start each target and check every scenario against the contract (no load, unless --load)."""
    if load is not None and not 1 <= load <= 20_000:
        raise UsageError(f"--load must be 1 to 20,000 connections, not {load}")
    settings = parse_settings(server_cpus, loadgen_cpus, heap, port, redis_port, db_port, runtime, memory, offline,
                         start_timeout, db_pool_size, redis_pool_size)
    targets = select_targets(framework, variant)
    logs = RESULTS_DIR / "verify" / dt.datetime.now().strftime("%Y%m%d-%H%M%S")
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
                          + (f" at {load:,} connections on {len(t.framework.scenarios)} scenarios" if load and v.ok else "")
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


@app.command()
def run(framework: Optional[str] = FrameworkOpt, variant: Optional[str] = VariantOpt,
        scenario: Optional[str] = typer.Option(None, "--scenario", "-s", help="Scenario(s), comma-separated "
                                               "(default: all that each target serves)."),
        profile: str = typer.Option("throughput", "--profile", "-p", help="Load profile: a name from `bench "
                                    "profiles` or a .toml file of your own."),
        preset: Optional[str] = typer.Option(None, "--preset", help="Run a study's targets, scenarios and profile "
                                             "(`bench presets`); -f, -v, -s and --profile do not apply."),
        quick: bool = typer.Option(False, "--quick", help="With --preset: its short form, for CI."),
        concurrency: Optional[str] = typer.Option(None, "--concurrency", "-c", help="Connections (VUs for rate), "
                                                  "comma-separated; overrides the profile."),
        rate: Optional[str] = typer.Option(None, "--rate", help="rate profile: arrivals per second, comma-separated."),
        slo: Optional[str] = typer.Option(None, "--slo", help="capacity profile: the objective, a percentile's "
                                          "bound over the scenario's own wait, e.g. p99=50ms."),
        requests: Optional[int] = typer.Option(None, "--requests", help="burst profile: requests per cell."),
        workers: Optional[int] = typer.Option(None, "--workers", help="ramp profile: Locust worker processes."),
        warmup: Optional[str] = typer.Option(None, "--warmup", help="Warm-up window, repeated until the last four "
                                             "show no climb in rps and the JIT is quiet; thrown away. 0s: none."),
        warmup_max: Optional[str] = typer.Option(None, "--warmup-max", help="Give up warming up after this long "
                                                 "(the cell is flagged not-steady)."),
        duration: Optional[str] = typer.Option(None, "--duration", "-d", help="Measured window per cell."),
        repeat: Optional[int] = typer.Option(None, "--repeat", help="Repeats, each in a fresh JVM, interleaved."),
        fresh_jvm_per_scenario: Optional[bool] = typer.Option(
            None, "--fresh-jvm-per-scenario/--one-jvm-per-target", help="A fresh JVM for each scenario, so that no "
            "scenario inherits the heap, threads or JIT state of the ones before it (default: one JVM per target "
            "and repeat; a preset may choose)."),
        jfr: Optional[bool] = typer.Option(
            None, "--jfr/--no-jfr", help="Record each measured window with Flight Recorder: pinning, threads, "
            "blocking, GC, hot methods and a flame graph per cell in the rows and logs/jfr/ (default: on in "
            "presets, off otherwise)."),
        topology: Optional[str] = typer.Option(
            None, "--topology", help="Where the server and the data services run and the links between them: "
            "a shipped name (orchestrator/topologies/) or a .toml file; default: everything on this machine's "
            "loopback. Needs root (it creates network namespaces)."),
        locust_master: Optional[str] = typer.Option(
            None, "--locust-master", help="ramp profile with --workers N and targets on a remote engine: the "
            "workers run on other machines (`bench locust-worker --master ADDRESS[:PORT]` there) and connect "
            "to this machine's master at ADDRESS[:PORT] (default port 5557); none start here."),
        resume: Optional[str] = typer.Option(None, "--resume", help="Continue this run id with its own plan."),
        server_cpus: Optional[str] = ServerCpus, loadgen_cpus: Optional[str] = LoadgenCpus,
        heap: Optional[str] = HeapOpt, port: int = PortOpt, redis_port: int = RedisPortOpt,
        db_port: int = DbPortOpt, runtime: str = RuntimeOpt, memory: str = MemoryOpt, offline: bool = OfflineOpt,
        start_timeout: str = StartTimeoutOpt, db_pool_size: int = DbPoolOpt, redis_pool_size: int = RedisPoolOpt,
        timeout: str = typer.Option("30s", "--timeout", help="Per-request timeout of the load generator."),
        results_dir: Path = typer.Option(RESULTS_DIR, "--results-dir", help="Where run folders go.")) -> None:
    """Build, verify and measure targets under a load profile; every finished cell is stored at once."""
    catalog = discover()
    if resume:
        store = results.RunStore(results.find_run(resume, results_dir))
        plan = Plan.from_dict(store.meta()["plan"])
        console.print(f"resuming {store.run_id}: {len(store.rows)} rows already measured")
    else:
        if quick and not preset:
            raise UsageError("--quick goes with --preset")
        if repeat is not None and repeat < 1:
            raise UsageError("--repeat must be 1 or more")
        chosen = None
        if preset:
            if framework or variant or scenario or profile != "throughput":
                raise UsageError("--preset chooses the targets, scenarios and profile: leave out -f, -v, -s and "
                                 "--profile")
            chosen = presets.load(preset, catalog, quick=quick)
            matrix, prof = chosen.matrix, chosen.profile
            console.print(f"preset {chosen.name}: {chosen.description}")
            if chosen.scaled:
                console.print(f"[dim]{escape(' '.join(chosen.scaled.split()))}[/]")
            if quick:
                study = sum(len(s) for s in presets.load(preset, catalog).matrix.values())
                cells = "; ".join(f"{t} {','.join(s)}" for t, s in matrix.items())
                console.print(f"quick form, a smoke of the preset: {sum(len(s) for s in matrix.values())} of its "
                              f"{study} cells ({cells}), one JVM per target"
                              + ("" if chosen.jfr else ", Flight Recorder off (no claim of it reads its evidence)"))
        else:
            scenarios = parse_list(scenario, list(SCENARIOS), "scenario")
            matrix = {t.id: scenarios for t in select_targets(framework, variant, catalog)}
            prof = profiles.load(profile)
        prof = override_profile(prof, concurrency, rate, requests, workers, warmup, warmup_max, duration, repeat, slo)
        settings = parse_settings(server_cpus, loadgen_cpus, heap, port, redis_port, db_port, runtime, memory, offline,
                             start_timeout, db_pool_size, redis_pool_size, timeout, fresh_jvm_per_scenario, chosen,
                             jfr, topology, locust_master)
        plan = Plan(matrix=matrix, profile=prof, settings=settings, preset=preset,
                    claims=list(chosen.claims) if chosen else [])
        plan.check_served(catalog)
        if plan.topology.workers != topology_mod.LOCAL and not (prof.ramp and prof.ramp.workers):
            raise UsageError(f"topology {plan.topology.name} puts Locust workers on host {plan.topology.workers}: "
                             f"that needs a ramp profile with workers (-p ramp --workers N)")
        if locust_master and not (prof.ramp and prof.ramp.workers):
            raise UsageError("--locust-master waits for Locust workers: that needs a ramp profile with workers "
                             "(-p ramp --workers N)")
        check_writable(results_dir)
        store = runner.new_store(root=results_dir)
    p = plan.profile
    console.print(f"profile {p.name} ({p.kind}, {p.driver}): {p.describe()}, {p.repeat} repeat(s)")
    console.print(f"[dim]{escape(judge_notice(plan, catalog, results_dir))}[/]", soft_wrap=True)
    started = dt.datetime.now()
    failed = runner.execute(plan, store, console, catalog=catalog)
    took = (dt.datetime.now() - started).total_seconds()
    _print_results(results.load(store.dir))
    console.print(f"run {store.run_id}: {len(store.rows)} rows ({failed} failed cells) in {took:.0f} s -> "
                  f"{store.dir / results.MEASUREMENTS}")
    if failed:
        raise typer.Exit(1)


def judge_notice(plan: Plan, catalog: dict, results_dir: Path) -> str:
    """What the plan's repeats can tell, before it measures: at the noise this machine's floor measured
    on the plan's scenarios (the noisiest), else a typical CV; `bench compare` of two such runs judges
    every cell's rps and p99 at once."""
    cells = [(t, cell) for t in map(lambda t: resolve(catalog, t), plan.targets) for cell in plan.cells(t)]
    scenarios = {cell[0] for _, cell in cells}
    measured = [f.cv for (s, m), f in noise.floors(host_info(), results_dir).items() if m == "rps" and s in scenarios]
    return judge.plan_notice(plan.repeat, len(cells) * len(compare.DEFAULT_METRICS),
                             max(measured) if measured else judge.TYPICAL_CV)


@app.command("profiles")
def profiles_cmd() -> None:
    """The load profiles shipped in orchestrator/profiles/ (copy one and pass it to --profile)."""
    table = Table("profile", "kind", "driver", "load", "file", box=box.SIMPLE_HEAD)
    for name, path in profiles.shipped().items():
        p = profiles.load(str(path))
        table.add_row(name, p.kind, p.driver, p.describe(), str(path.relative_to(REPO_ROOT)))
    console.print(table)


@app.command("presets")
def presets_cmd() -> None:
    """The studies `bench run --preset NAME` reruns, one line each."""
    catalog = discover()
    table = Table("preset", "profile", "targets", "what it compares", box=box.SIMPLE_HEAD)
    table.columns[-1].overflow = "fold"
    for name in presets.shipped():
        pr = presets.load(name, catalog)
        scen = sorted({s for v in pr.matrix.values() for s in v})
        table.add_row(name, f"{pr.profile.kind} ({pr.profile.driver})", f"{len(pr.matrix)} x {','.join(scen)}",
                      pr.description)
    console.print(table)


def _print_results(df) -> None:
    table = Table("target", "scenario", "load", "rep", "rps", "p50 ms", "p99 ms", "errors", "cpu %", "RSS MiB",
                  "threads", "GC ms", "flags / reason", box=box.SIMPLE_HEAD, pad_edge=False)
    for col in table.columns:
        col.no_wrap = True
    table.columns[-1].max_width = 40
    for _, r in df.iterrows():
        cells = [r["target"], r["scenario"], level_label(_present(r)), str(r["repeat"])]
        if r["status"] != "ok":
            table.add_row(*cells, *[""] * 8, f"[red]{escape(str(r['reason']).splitlines()[0][:70])}[/]")
            continue
        errors = sum(r[c] for c in ("errors_connect", "errors_read", "errors_write", "errors_timeout", "errors_status"))
        table.add_row(*cells, _fmt(r["rps"], ",.0f"), _fmt(r["latency_p50_ms"], ".2f"), _fmt(r["latency_p99_ms"], ".2f"),
                      _fmt(errors, ".0f"), _fmt(r["server_cpu_pct"], ".0f"), _fmt(r["server_peak_rss_mb"], ".0f"),
                      _fmt(r["server_peak_threads"], ".0f"), _fmt(r["gc_time_ms"], ".0f"),
                      f"[yellow]{r['flags']}[/]" if r["flags"] else "")
    console.print(table)


def _present(row) -> dict:
    """A results row with NaN turned into None, as level_label expects of an absent rate or step."""
    return {k: (None if isinstance(v, float) and v != v else v) for k, v in row.items()}


def _fmt(value, spec: str) -> str:
    """A figure, or blank where the row has none: a capacity row whose search passed no probe
    carries no window's figures."""
    return "" if value is None or value != value else format(value, spec)


@app.command("results")
def results_cmd(run_id: Optional[str] = typer.Argument(None, help="Run id (default: the newest run)."),
                results_dir: Path = typer.Option(RESULTS_DIR, "--results-dir")) -> None:
    """Print the measurements of a run."""
    d = results.find_run(run_id, results_dir)
    meta = results.load_meta(d)
    console.print(f"run {d.name}, started {meta.get('started_at')}, {meta.get('status')}, "
                  f"commit {meta.get('git_commit', '')[:12]}")
    for w in meta.get("warnings", []):
        console.print(f"[yellow]warning:[/] {w}")
    _print_results(results.load(d))


@infra_app.command("up")
def infra_up(loadgen_cpus: str = LoadgenCpus, redis_port: int = RedisPortOpt, db_port: int = DbPortOpt,
             runtime: str = RuntimeOpt, offline: bool = OfflineOpt) -> None:
    """Start Redis and MariaDB and leave them running for later commands."""
    if infra_mod.load_state():
        console.print("infrastructure is already up (`bench infra status`)")
        return
    settings = parse_settings("1", loadgen_cpus, "512m", 8080, redis_port, db_port, runtime, "1g", offline)
    images = {}
    if runtime == "docker":
        from orchestrator.infra.docker_engine import remote_address
        if remote_address():
            raise UsageError(f"DOCKER_HOST names another machine's engine ({remote_address()}): Redis and MariaDB "
                             f"for a run stay on this machine; start them with --runtime process")
        from orchestrator.targets import images as images_mod
        from orchestrator.targets.jdk import find_jdk
        bases = images_mod.bases(find_jdk(), offline, console.print)
        images = {"redis": bases.redis, "mariadb": bases.mariadb}
    infra = infra_mod.start(settings.redis_port, settings.db_port, settings.loadgen_cpus, outlive=True,
                            runtime=runtime, images=images)
    infra_mod.save_state(infra)
    console.print(f"Redis on 127.0.0.1:{infra.redis_port}, MariaDB on 127.0.0.1:{infra.db_port} "
                  f"(seeded; data in {infra.data_dir}); stop with `bench infra down`")


@infra_app.command("down")
def infra_down() -> None:
    """Stop what `bench infra up` started and delete its data."""
    infra = infra_mod.load_state()
    if infra is None:
        console.print("infrastructure is not up")
        return
    infra_mod.stop(infra)
    infra_mod.clear_state()
    console.print("stopped Redis and MariaDB")


@infra_app.command("status")
def infra_status() -> None:
    """Whether `bench infra up` left Redis and MariaDB running, and where."""
    infra = infra_mod.load_state()
    if infra is None:
        console.print("down")
        raise typer.Exit(1)
    console.print(f"up ({infra.runtime}): Redis 127.0.0.1:{infra.redis_port} (pid {infra.pids.get('redis')}), "
                  f"MariaDB 127.0.0.1:{infra.db_port} (pid {infra.pids.get('mariadb')}), data {infra.data_dir}")


@images_app.command("bootstrap")
def images_bootstrap(offline: bool = OfflineOpt) -> None:
    """Make the base images that are missing (Debian by debootstrap, a JRE by jlink, Redis, MariaDB)."""
    from orchestrator.targets import images
    from orchestrator.targets.jdk import find_jdk
    bases = images.bases(find_jdk(), offline, console.print)
    console.print(f"bases: {bases.debian}, {bases.jre}, {bases.redis}, {bases.mariadb}")


@images_app.command("list")
def images_list() -> None:
    """The images bench made or uses: size and how each was made."""
    from orchestrator.targets import images
    table = Table("image", "MB", "created", "made by", box=box.SIMPLE_HEAD)
    for r in images.listing():
        table.add_row(r["tag"], f"{r['size_mb']:.0f}", r["created"], r["made_by"])
    console.print(table)


@app.command("locust-worker")
def locust_worker_cmd(
        master: str = typer.Option(..., "--master", help="ADDRESS[:PORT] the run's machine gave as --locust-master "
                                   "(default port 5557)."),
        processes: int = typer.Option(1, "--processes", help="Worker processes on this machine (one core each at "
                                      "most)."),
        cpus: Optional[str] = typer.Option(None, "--cpus", help="CPUs for the workers (taskset list; default: any)."),
        idle: str = typer.Option("30m", "--idle", help="Stop after this long without a master."),
        results_dir: Path = typer.Option(RESULTS_DIR, "--results-dir", help="Its logs go to "
                                         "locust-worker/<time>/ in here.")) -> None:
    """Locust workers on this machine for a run on another one (`bench run --locust-master`): they load
    its targets for each cell's master, until Ctrl-C or --idle without a master."""
    from orchestrator.drivers.locust_worker import serve
    address, port = options.ipv4_and_port(master, "--master")   # its workers' connections are known by it
    if processes < 1:
        raise UsageError("--processes must be 1 or more")
    cpus = options.cpu_list(cpus, "--cpus") if cpus else None
    logs = results_dir / "locust-worker" / dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    with interrupts.quiet_sigterm():
        serve(address, port, processes, cpus, options.duration(idle, "--idle"), logs, console.print)


@app.command()
def clean() -> None:
    """Remove what crashed runs left: infrastructure, temporary data directories, stray processes."""
    from orchestrator.infra.cleanup import clean_leftovers
    removed = clean_leftovers()
    for r in removed:
        console.print(f"removed {r}")
    console.print(f"{len(removed)} leftovers removed")


@app.command("calibrate")
def calibrate_cmd(server_cpus: Optional[str] = ServerCpus, loadgen_cpus: Optional[str] = LoadgenCpus,
                  duration: str = typer.Option("5s", "--duration", "-d", help="Each measured window."),
                  generators: Optional[str] = typer.Option(None, "--generators", help="Comma-separated "
                                                           "(default: every installed one)."),
                  port: int = typer.Option(18080, "--port", help="Port of the calibration nginx."),
                  results_dir: Path = typer.Option(RESULTS_DIR, "--results-dir")) -> None:
    """Each load generator's ceiling on this machine, against nginx; stored in calibration.json."""
    from orchestrator.measure import calibrate
    if not calibrate.command(server_cpus, loadgen_cpus, duration, generators, port, results_dir, console):
        raise typer.Exit(1)


register_reports(app)
app.command("noise")(noise_cmd)


def main() -> None:
    """Entry point: Typer handles usage errors (exit 2) and Ctrl-C; BenchError becomes one clear line."""
    interrupts.install()
    try:
        app()
    except BenchError as e:
        Console(stderr=True).print(f"[red]error:[/] {e}", highlight=False, soft_wrap=True)
        sys.exit(e.exit_code)


if __name__ == "__main__":
    main()
