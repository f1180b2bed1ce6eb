"""`bench run`: build, verify and measure targets under a load profile. The options become a Plan by the
rules in run_options.py (or come from the run folder with --resume); this module prints what the plan
will load and what its repeats can judge, hands it to the runner and prints the rows it stored."""
from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape

from orchestrator import RESULTS_DIR
from orchestrator.cli.common import (
    DbPoolOpt,
    DbPortOpt,
    DownstreamMsOpt,
    DownstreamPortOpt,
    FrameworkOpt,
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
)
from orchestrator.cli.results_table import print_results, print_workload_answer
from orchestrator.cli.run_options import RunOptions, resumed_plan
from orchestrator.config.catalog import discover, resolve
from orchestrator.config.plan import Plan
from orchestrator.infra import run_lock
from orchestrator.infra.hostinfo import host_info
from orchestrator.measure import runner
from orchestrator.results import compare, judge, noise
from orchestrator.results import store as results


def run(framework: Optional[str] = FrameworkOpt, variant: Optional[str] = VariantOpt,
        scenario: Optional[str] = typer.Option(None, "--scenario", "-s", help="Scenario(s), comma-separated "
                                               "(default: all that each target serves)."),
        profile: str = typer.Option("throughput", "--profile", "-p", help="Load profile: a name from `bench "
                                    "profiles` or a .toml file of your own."),
        preset: Optional[str] = typer.Option(None, "--preset", help="Run a study's targets, scenarios and profile "
                                             "(`bench presets`; a preset of parts runs each part as a run of its "
                                             "own, NAME:PART one of them); -f, -v, -s and --profile do not apply."),
        workload: Optional[str] = typer.Option(None, "--workload", help="Your service as a file: a mix of "
                                               "scenarios, its objective, the targets and prices (a shipped one by "
                                               "name: read-mostly, aggregator; docs/workloads.md). Its capacity per "
                                               "target; -f, -v, -s and --profile do not apply."),
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
        jvm_mode: Optional[str] = typer.Option(
            None, "--jvm-mode", help="How each target's JVM starts, comma-separated: default, aot-cache (from a "
            "JDK AOT cache the run trains on the target first: classes loaded and linked, method profiles); each "
            "is a target of its own (+aot-cache), measured beside the other (default: default; a preset may choose)."),
        start: Optional[str] = typer.Option(
            None, "--start", help="How each target meets its load, comma-separated: warm (warmed up until steady), "
            "cold (no warm-up: a fresh JVM per cell, loaded seconds after its first answer; +cold), for profiles of "
            "one window a cell (default: warm; a preset may choose)."),
        jfr: Optional[bool] = typer.Option(
            None, "--jfr/--no-jfr", help="Record each measured window with Flight Recorder: pinning, threads, "
            "blocking, GC, hot methods and a flame graph per cell in the rows and logs/jfr/ (default: on in "
            "presets, off otherwise)."),
        topology: Optional[str] = typer.Option(
            None, "--topology", help="Where the server and the data services run and the links between them: "
            "a shipped name (orchestrator/config/topologies/) or a .toml file; default: everything on this machine's "
            "loopback. Needs root (it creates network namespaces)."),
        locust_master: Optional[str] = typer.Option(
            None, "--locust-master", help="ramp profile with --workers N and targets on a remote engine: the "
            "workers run on other machines (`bench locust-worker --master ADDRESS[:PORT]` there) and connect "
            "to this machine's master at ADDRESS[:PORT] (default port 5557); none start here."),
        resume: Optional[str] = typer.Option(None, "--resume", help="Continue this run id with its own plan."),
        server_cpus: Optional[str] = ServerCpus, loadgen_cpus: Optional[str] = LoadgenCpus,
        heap: Optional[str] = typer.Option(None, "--heap", help="JVM heap, -Xms = -Xmx (default 512m); several, "
                                           "comma-separated, make each target one per heap (+heap-256m)."),
        port: int = PortOpt, redis_port: int = RedisPortOpt,
        db_port: int = DbPortOpt, runtime: str = RuntimeOpt, memory: str = MemoryOpt, offline: bool = OfflineOpt,
        start_timeout: str = StartTimeoutOpt, db_pool_size: int = DbPoolOpt, redis_pool_size: int = RedisPoolOpt,
        downstream_ms: Optional[int] = DownstreamMsOpt, downstream_port: int = DownstreamPortOpt,
        timeout: str = typer.Option("30s", "--timeout", help="Per-request timeout of the load generator."),
        results_dir: Path = typer.Option(RESULTS_DIR, "--results-dir", help="Where run folders go.")) -> None:
    """Build, verify and measure targets under a load profile; every finished cell is stored at once."""
    asked = RunOptions(**locals())   # first, while the parameters are all the locals there are
    catalog = discover()
    if resume:
        store = results.RunStore(results.find_run(resume, results_dir))
        plan = resumed_plan(store)
        console.print(f"resuming {store.run_id}: {len(store.rows)} rows already measured")
        runs = [(plan, store)]
    else:
        runs = [(plan, None) for plan in asked.plans(catalog, console.print)]
    failed = 0
    with run_lock.held(resume):   # before any folder is made: a resumed run is refused while it is live
        for i, (plan, store) in enumerate(runs):
            if len(runs) > 1:
                console.rule(f"part {i + 1} of {len(runs)}: preset {plan.preset}")
            try:
                failed += _measure(plan, store or runner.new_store(root=results_dir), catalog, results_dir)
            except KeyboardInterrupt:
                left = [p.preset for p, _ in runs[i + 1:]]
                if left:
                    console.print(f"not run: {', '.join(left)} (`bench run --preset NAME:PART` runs one part)")
                raise
    if failed:
        raise typer.Exit(1)


def _measure(plan: Plan, store: results.RunStore, catalog: dict, results_dir: Path) -> int:
    """Run the plan into store and print its rows; the number of failed cells."""
    p = plan.profile
    console.print(f"profile {p.name} ({p.kind}, {p.driver}): {p.describe()}, {p.repeat} repeat(s)")
    console.print(f"[dim]{escape(judge_notice(plan, catalog, results_dir))}[/]", soft_wrap=True)
    started = dt.datetime.now()
    failed = runner.execute(plan, store, console, catalog=catalog)
    took = (dt.datetime.now() - started).total_seconds()
    print_results(results.load(store.dir))
    if plan.workload:
        print_workload_answer(results.load(store.dir), plan.workload)
    console.print(f"run {store.run_id}: {len(store.rows)} rows ({failed} failed cells) in {took:.0f} s -> "
                  f"{store.dir / results.MEASUREMENTS}")
    return failed


def judge_notice(plan: Plan, catalog: dict, results_dir: Path) -> str:
    """What the plan's repeats can tell, before it measures: at the noise this machine's floor measured
    on the plan's scenarios (the noisiest), else a typical CV; `bench compare` of two such runs judges
    every cell's rps and p99 at once."""
    cells = [(t, cell) for t in map(lambda t: resolve(catalog, t), plan.targets) for cell in plan.cells(t)]
    scenarios = {cell[0] for _, cell in cells}
    measured = [f.cv for (s, m), f in noise.floors(host_info(), results_dir).items() if m == "rps" and s in scenarios]
    return judge.plan_notice(plan.repeat, len(cells) * len(compare.DEFAULT_METRICS),
                             max(measured) if measured else judge.TYPICAL_CV)
