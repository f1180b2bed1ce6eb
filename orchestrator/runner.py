"""The pipeline of one run: build -> start infra -> per target: start, verify, cells -> store.

Every finished cell is on disk before the next starts; Ctrl-C, SIGTERM or a failure stops the
load generator, the target and the infrastructure that the run started.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import os
import signal
import sys
import time
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from . import infra as infra_mod
from . import RESULTS_DIR, drivers, parity, runtimes
from .build import build
from .calibrate import ceilings
from .catalog import Framework, Target, discover, resolve
from .checks import busy_processes, cell_flags, littles_law_ratio
from .errors import BenchError, TargetFailed, UsageError
from .evidence import Probe, off_contract
from .hostinfo import git_commit, host_info, tool_versions
from .httpclient import request
from .jdk import Jdk, find_jdk
from .jvm import cpu_count, jvm_options, parse_cpus, read_counters
from .profiles import Profile
from .procs import ensure_port_free, log_tail, public_listeners
from .results import RunStore, new_run_id
from .runtimes import LaunchSpec, Runtime, Server
from .sampling import Sampler, ServerSample
from .scenarios import SCENARIOS
from .schema import LATENCY_STATS, latency_column
from .verify import Verification, verify
from .warmup import warm_up

MiB = 2**20
PROBE_TIMEOUT_S = 10.0


@dataclass
class Settings:
    """How targets are started and loaded; the same for every target of a run."""
    server_cpus: str = "1"
    loadgen_cpus: str = "0"
    heap: str = "512m"
    port: int = 8080
    redis_port: int = 16379
    db_port: int = 13306
    # CONTRACT.md's limits on work in flight, the same for every target unless a variant's env says otherwise
    db_pool_size: int = 16
    redis_pool_size: int = 16
    runtime: str = "process"
    memory: str = "1g"                 # docker runtime: the container's limit (swap included)
    offline: bool = False              # docker runtime: never try to pull base images
    start_timeout_s: float = 120.0
    request_timeout_s: float = 30.0
    # A fresh JVM for each scenario, not one per target: no scenario inherits the heap, threads, JIT
    # state or peak RSS of the ones before it (on in presets whose tables crown RSS or threads).
    fresh_jvm_per_scenario: bool = False


def pool_env(s: Settings, target: Target) -> dict[str, str]:
    """The run's pool limits with the variant's env on top: a variant whose point is another limit sets it
    there (and its parity entry shows it); everything else gets the run's."""
    return {"DB_POOL_SIZE": str(s.db_pool_size), "REDIS_POOL_SIZE": str(s.redis_pool_size), **target.variant.env}


@dataclass
class Plan:
    """What a run measures: each target with its scenarios, under one load profile."""
    matrix: dict[str, list[str] | None]   # target id -> scenarios (None: every scenario it serves), in order
    profile: Profile
    settings: Settings = field(default_factory=Settings)
    preset: str | None = None

    @property
    def targets(self) -> list[str]:
        return list(self.matrix)

    @property
    def repeat(self) -> int:
        return self.profile.repeat

    def scenarios_of(self, target: Target) -> list[str]:
        own = target.framework.scenarios
        return [s for s in (self.matrix.get(target.id) or own) if SCENARIOS[s].served_as in own]

    def cells(self, target: Target) -> list[tuple[str, int, float | None]]:
        """(scenario, concurrency, rate) of each cell of the target, in the order they run."""
        return [(s, c, r) for s in self.scenarios_of(target) for c, r in self.profile.levels()]

    def row_keys(self, target: Target, repeat: int, cell: tuple[str, int, float | None]) -> list[tuple]:
        """The results.CELL_KEY of every row the cell writes."""
        scenario, conc, rate = cell
        return [(target.id, scenario, c, r, step, repeat) for c, r, step in self.profile.row_keys(conc, rate)]

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Plan":
        """The plan of a run.json, also of runs made before profiles (a throughput plan then)."""
        known = {f.name for f in fields(Settings)}
        settings = Settings(**{k: v for k, v in d["settings"].items() if k in known})
        if "matrix" not in d:
            profile = Profile(name="throughput", kind="throughput", driver="wrk",
                              concurrency=tuple(d["concurrency"]), duration_s=d["duration_s"],
                              warmup_s=d["warmup_s"], warmup_max_s=d.get("warmup_max_s", 90.0), repeat=d["repeat"])
            return cls(matrix={t: d.get("scenarios") for t in d["targets"]}, profile=profile, settings=settings)
        return cls(matrix=d["matrix"], profile=Profile.from_dict(d["profile"]), settings=settings,
                   preset=d.get("preset"))


@dataclass
class Started:
    server: Server
    startup_s: float
    rss_after_start_mb: float
    backend: "Started | None" = None

    def stop(self) -> None:
        self.server.stop()
        if self.backend:
            self.backend.stop()


def _sigterm_as_interrupt(signum, frame):
    raise KeyboardInterrupt


def wait_ready(server: Server, port: int, path: str, timeout_s: float, started: float) -> float:
    """Seconds from spawn to the first 200 on the health path; TargetFailed on exit or timeout."""
    while True:
        code = server.exit_code()
        if code is not None:
            raise TargetFailed(f"exited with {code} while starting; last lines of {server.log_path}:\n"
                               f"{log_tail(server.log_path)}")
        try:
            if request(port, "GET", path, timeout=2).status == 200:
                return time.monotonic() - started
        except OSError:
            pass
        if time.monotonic() - started > timeout_s:
            raise TargetFailed(f"no 200 on {path} within {timeout_s:.0f} s; last lines of {server.log_path}:\n"
                               f"{log_tail(server.log_path)}")
        time.sleep(0.05)


class Pipeline:
    """What the commands share: the catalog, the JDK, builds, starting targets with their backends."""

    def __init__(self, settings: Settings, logs: Path, console: Console):
        self.settings = settings
        self.logs = logs
        self.console = console
        self.catalog = discover()
        self.runtime: Runtime = runtimes.get(settings.runtime, settings.memory)
        self.runtime.check()
        self.jdk: Jdk = find_jdk()
        self.artifacts: dict[str, Path] = {}
        self.build_failures: dict[str, str] = {}
        self.build_times: dict[str, float | None] = {}
        self.infra_images: dict[str, str] = {}

    def frameworks_for(self, targets: list[Target]) -> list[Framework]:
        names = []
        for t in targets:
            if t.framework.backend:
                names.append(resolve(self.catalog, t.framework.backend).framework.name)
            names.append(t.framework.name)
        return [self.catalog[n] for n in dict.fromkeys(names)]

    def build_all(self, targets: list[Target], force: bool = False) -> None:
        for fw in self.frameworks_for(targets):
            with self.console.status(f"building {fw.name} ({' '.join(fw.build_command)})"):
                try:
                    artifact, seconds = build(fw, self.jdk, self.logs / f"build-{fw.name}.log", force)
                    self.artifacts[fw.name] = artifact
                    self.build_times[fw.name] = seconds
                    self.console.print(f"[green]built[/] {fw.name}" + (f" in {seconds:.1f} s" if seconds
                                                                     else " (up to date)"))
                except TargetFailed as e:
                    self.build_failures[fw.name] = e.reason
                    self.console.print(f"[red]build failed[/] {fw.name}: {e.reason.splitlines()[0]}")
        if self.settings.runtime == "docker":
            self.build_images()

    def build_images(self) -> None:
        """Images for the docker runtime: the bases (bootstrapped once), then one per built artifact."""
        from . import images
        log = lambda msg: self.console.print(msg)  # noqa: E731
        bases = images.bases(self.jdk, self.settings.offline, log)
        self.infra_images = {"redis": bases.redis, "mariadb": bases.mariadb}
        for name, artifact in self.artifacts.items():
            try:
                self.runtime.images[name] = images.framework_image(self.catalog[name], bases.jre, log)
            except BenchError as e:
                self.build_failures[name] = f"image build failed: {e}"
                self.console.print(f"[red]image build failed[/] {name}: {str(e).splitlines()[0]}")

    def infra(self):
        s = self.settings
        return infra_mod.for_run(s.redis_port, s.db_port, s.loadgen_cpus, runtime=s.runtime, images=self.infra_images)

    def _launch(self, target: Target, port: int, cpus: str, env: dict[str, str], run_id: str) -> Started:
        fw = target.framework
        if fw.name in self.build_failures:
            raise TargetFailed(self.build_failures[fw.name])
        try:
            ensure_port_free(port, target.id)
        except UsageError as e:
            raise TargetFailed(str(e)) from None
        s = self.settings
        spec = LaunchSpec(
            target=target, artifact=self.artifacts[fw.name], jvm_opts=jvm_options(target, s.heap, cpus),
            env={**env, **pool_env(s, target), "PORT": str(port), "BIND_ADDRESS": "127.0.0.1"},
            port=port, cpus=cpus, heap=s.heap,
            log_path=self.logs / f"{target.id.replace(':', '-')}-{run_id}.log",
            labels={"bench.run": run_id, "bench.target": target.id})
        t0 = time.monotonic()
        server = self.runtime.start(spec, self.jdk.java)
        try:
            startup = wait_ready(server, port, fw.health_path, s.start_timeout_s, t0)
            usage = server.usage()
            exposed = public_listeners(server.pid)
            if exposed:
                raise TargetFailed(f"listens beyond 127.0.0.1 on {', '.join(exposed)}: every listener must "
                                   f"bind BIND_ADDRESS (see frameworks/CONTRACT.md)")
        except BaseException:
            server.stop()
            raise
        return Started(server, startup, usage.rss_bytes / MiB if usage else float("nan"))

    def start(self, target: Target, env: dict[str, str], run_id: str) -> Started:
        """Start the target (after its backend, if it has one) and wait until it answers."""
        s = self.settings
        backend = None
        env = dict(env)
        if target.framework.backend:
            # The backend is fixed scenery, not the subject: it runs beside the infrastructure.
            backend = self._launch(resolve(self.catalog, target.framework.backend), s.port + 1,
                                   s.loadgen_cpus, env, run_id)
            env["BACKEND_URL"] = f"http://127.0.0.1:{s.port + 1}"
        try:
            started = self._launch(target, s.port, s.server_cpus, env, run_id)
        except BaseException:
            if backend:
                backend.stop()
            raise
        started.backend = backend
        return started

    def cleanup_leftovers(self) -> list[str]:
        """What killed runs left: containers (docker runtime) and infrastructure data directories."""
        from .cleanup import stale_data_dirs
        return self.runtime.cleanup_leftovers() + stale_data_dirs()

    def check_ports(self, targets: list[Target], shared_infra: bool) -> None:
        """Before anything starts: every port the run will listen on must be free (UsageError)."""
        s = self.settings
        ensure_port_free(s.port, "the target")
        if any(t.framework.backend for t in targets):
            ensure_port_free(s.port + 1, "the gateway's backend")
        if not shared_infra:
            ensure_port_free(s.redis_port, "Redis")
            ensure_port_free(s.db_port, "MariaDB")

    def verify(self, target: Target) -> Verification:
        return verify(target, self.settings.port)


def _failed_row(base: dict, reason: str) -> dict:
    return {**base, "status": "failed", "reason": reason, "requests": 0, "rps": 0.0}


def level_label(row: dict) -> str:
    """How a row's load is named: c=256, 1000/s, or step 3 (150 users)."""
    if row.get("rate"):
        return f"{row['rate']:g}/s"
    if row.get("step"):
        return f"step {row['step']} u={row['concurrency']}"
    return f"c={row['concurrency']}"


def _result_line(row: dict) -> str:
    if row["status"] != "ok":
        return (f"[red]FAILED[/] {row['target']} {row['scenario']} {level_label(row)}: "
                f"{escape(row['reason'].splitlines()[0][:160])}")
    flags = f" [yellow]{escape('[' + row['flags'] + ']')}[/]" if row["flags"] else ""

    def num(key: str, spec: str) -> str:
        """A figure, or a dash of the same width where the window had none (a ramp step nobody ran)."""
        value = row.get(key)
        return format(value, spec) if value is not None and value == value else "–".rjust(len(format(0.0, spec)))
    return (f"{row['target']:<34} {row['scenario']:<10} {level_label(row):<10} "
            f"{num('rps', '>10,.0f')} rps  p50 {num('latency_p50_ms', '7.2f')} ms  p99 {num('latency_p99_ms', '8.2f')} ms  "
            f"cpu {num('server_cpu_pct', '4.0f')}%  rss {num('server_peak_rss_mb', '5.0f')} MiB  "
            f"thr {row['server_peak_threads']}{flags}")


def _measured_row(base: dict, r: drivers.LoadResult, smp: ServerSample, flags: list[str]) -> dict:
    return {
        **base, "status": "ok", "reason": "", "requests": r.requests, "rps": r.rps,
        "bytes": r.bytes, "errors_connect": r.errors_connect, "errors_read": r.errors_read,
        "errors_write": r.errors_write, "errors_timeout": r.errors_timeout,
        "errors_status": r.errors_status, "dropped": r.dropped, "duration_s": r.duration_s,
        **{latency_column(k): getattr(r, f"latency_{k}") for k in LATENCY_STATS},
        "server_cpu_s": smp.cpu_s,
        "server_cpu_pct": 100.0 * smp.cpu_s / smp.wall_s if smp.wall_s else None,
        "server_peak_rss_mb": smp.peak_rss_bytes / MiB, "server_peak_threads": smp.peak_threads,
        "container_peak_mem_mb": smp.peak_container_mem_bytes / MiB if smp.peak_container_mem_bytes else None,
        "gc_count": smp.gc_count, "gc_time_ms": smp.gc_time_s * 1000 if smp.gc_time_s is not None else None,
        "gc_collector": smp.collector,
        "jit_time_ms": smp.jit_time_s * 1000 if smp.jit_time_s is not None else None,
        "loadgen_cpu_pct": 100.0 * r.loadgen_cpu_s / r.duration_s if r.duration_s else None,
        "loadgen_cpus_busy_pct": smp.loadgen_cpus_busy_pct,
        "co_corrected_mean_ms": _or_none(r.co_corrected_mean), "co_corrected_p99_ms": _or_none(r.co_corrected_p99),
        "littles_ratio": littles_law_ratio(base["concurrency"], r), "flags": ",".join(flags),
        **(smp.evidence.per_request(r.requests) if smp.evidence else {}),
    }


def _or_none(x: float) -> float | None:
    return None if x != x else x


def load_dir(pipeline: Pipeline, target_id: str, repeat: int) -> Path:
    """Where a target's generator files go: one folder per target and repeat (each file is named by
    scenario and level), so that no later target or repeat overwrites them."""
    return pipeline.logs / "load" / f"{target_id.replace(':', '-')}-r{repeat}"


def measure_cell(pipeline: Pipeline, started: Started, plan: Plan, base: dict, scenario: str,
                 concurrency: int, rate: float | None, infra=None) -> tuple[list[dict], list[dict]]:
    """Warm up, drive the profile's load while sampling the server, check the server still answers;
    returns the measurement rows (one; a ramp: one per step) and the per-second series (ramp).

    The server's figures are those of the generator's own window (each driver reports its start
    and length), not of the whole driver call around it."""
    s, p = plan.settings, plan.profile
    out_dir = load_dir(pipeline, base["target"], base["repeat"])
    spec = drivers.LoadSpec(port=s.port, scenario=SCENARIOS[scenario], cpus=s.loadgen_cpus,
                            timeout_s=s.request_timeout_s, out_dir=out_dir / "warmup",
                            concurrency=p.warmup_connections(concurrency), duration_s=p.warmup_s,
                            rate=rate if p.kind == "rate" else None)
    warm = warm_up(p.warmup_s, p.warmup_max_s, spec, started.server.pid)
    load = replace(spec, concurrency=concurrency, duration_s=p.duration_s, requests=p.requests, rate=rate,
                   ramp=p.ramp, out_dir=out_dir)
    with Sampler(started.server, s.loadgen_cpus, probe=Probe(infra) if infra else None) as sampler:
        result = drivers.get(p.driver).run(load)
    alive = started.server.exit_code() is None
    if not alive:
        raise TargetFailed(f"target exited with {started.server.exit_code()} during the cell; last lines of "
                           f"{started.server.log_path}:\n{log_tail(started.server.log_path)}")
    try:
        request(s.port, "GET", pipeline.catalog[base["framework"]].health_path, timeout=PROBE_TIMEOUT_S)
    except OSError:
        raise TargetFailed(f"target stopped answering: no response to its health path within {PROBE_TIMEOUT_S:.0f} s "
                           f"after the cell ({result.requests} requests answered in the cell); last lines of "
                           f"{started.server.log_path}:\n{log_tail(started.server.log_path)}") from None
    base = {**base, "warmup_s": warm.spent_s, "warmup_windows": len(warm.windows)}
    cores = cpu_count(s.loadgen_cpus)
    ceiling = ceilings(loadgen_cpus=s.loadgen_cpus).get(p.driver)
    # Little's law ties rps and latency to the clients only in a closed loop of fixed size.
    closed = p.kind in ("throughput", "ramp")

    def flags(conc: int, r: drivers.LoadResult, smp) -> list[str]:
        backends = off_contract(SCENARIOS[scenario], smp.evidence.per_request(r.requests)) if smp.evidence else []
        return (cell_flags(conc, r, cores, alive, closed_loop=closed, loadgen_cpus_busy_pct=smp.loadgen_cpus_busy_pct,
                           ceiling=ceiling)
                + backends + r.flags + ([] if warm.steady else ["not-steady"]))

    def window(r: drivers.LoadResult, whole_load: bool = False):
        return sampler.window(r.started_at, r.started_at + r.duration_s, whole_load)

    if p.ramp is None:
        smp = window(result, whole_load=True)
        row = _measured_row({**base, "concurrency": concurrency, "rate": rate}, result, smp, flags(concurrency, result, smp))
        return [row], []
    rows = []
    for step, r in enumerate(result.steps, start=1):
        users = p.ramp.users(step)
        smp = window(r)
        rows.append(_measured_row({**base, "concurrency": users, "step": step, "duration_s": r.duration_s},
                                  r, smp, flags(users, r, smp)))
    series = []
    for rec in result.timeseries:
        smp = sampler.window(rec["epoch_s"], rec["epoch_s"] + 1)
        # the driver names each second's step by the users then running (None: a second in transition)
        series.append({**rec, "run_id": base["run_id"], "target": base["target"], "scenario": scenario,
                       "repeat": base["repeat"],
                       "server_cpu_pct": 100.0 * smp.cpu_s if smp.cpu_s == smp.cpu_s else None,
                       "server_rss_mb": smp.peak_rss_bytes / MiB if smp.peak_rss_bytes else None,
                       "server_threads": smp.peak_threads or None,
                       "loadgen_cpus_busy_pct": smp.loadgen_cpus_busy_pct})
    return rows, series


def execute(plan: Plan, store: RunStore, console: Console, argv: list[str] | None = None) -> int:
    """Run every missing cell of the plan into store; returns the number of failed cells.
    SIGTERM stops it as Ctrl-C does."""
    with quiet_sigterm():
        return _execute(plan, store, console, argv)


def _execute(plan: Plan, store: RunStore, console: Console, argv: list[str] | None) -> int:
    s = plan.settings
    pipeline = Pipeline(s, store.logs, console)
    targets = [resolve(pipeline.catalog, t) for t in plan.targets]
    for name in dict.fromkeys(["wrk", plan.profile.driver]):
        drivers.get(name).executable()   # MissingTool before anything starts
    for leftover in pipeline.cleanup_leftovers():
        console.print(f"[yellow]removed a leftover of an earlier run:[/] {leftover}")
    pipeline.check_ports(targets, shared_infra=infra_mod.load_state() is not None)
    resumed = (store.dir / "run.json").exists()
    meta = store.meta() if resumed else {}
    if not resumed:
        warnings_ = busy_processes()
        for w in warnings_:
            console.print(f"[yellow]warning: busy machine:[/] {w}")
        meta = {"run_id": store.run_id, "started_at": dt.datetime.now().isoformat(timespec="seconds"),
                "command": argv or sys.argv, "git_commit": git_commit(), "host": host_info(),
                "jdk": {"home": str(pipeline.jdk.home), "version": pipeline.jdk.version},
                "tools": tool_versions(), "plan": plan.to_dict(), "warnings": [f"busy: {w}" for w in warnings_],
                # what `bench calibrate` measured each generator to reach here: the near-generator-ceiling flag's bar
                "generator_ceilings": ceilings(loadgen_cpus=s.loadgen_cpus),
                "status": "running"}
        store.create(meta)
    done = store.done()
    todo = [(r, t, cell) for r in range(1, plan.repeat + 1) for t in targets for cell in plan.cells(t)
            if not set(plan.row_keys(t, r, cell)) <= done]
    failed = 0
    try:
        pipeline.build_all(targets)
        meta["builds"] = {k: v for k, v in pipeline.build_times.items()}
        # what each target runs with (parity.py); its threads after load are added as it finishes
        meta["parity"] = {t.id: {**parity.record(t, pool_env(s, t)), "heap": s.heap,
                                 **meta.get("parity", {}).get(t.id, {})}
                          for t in targets}
        store.write_meta(meta)
        # From here on the orchestrator (its sampler, its parsing of generator files) runs where the
        # load runs, never on a server CPU; builds above still had every CPU.
        os.sched_setaffinity(0, parse_cpus(s.loadgen_cpus))
        if not todo:
            console.print("nothing to do: every cell of this run is measured")
            return 0
        with pipeline.infra() as infra, Progress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                TextColumn("eta"), TimeRemainingColumn(), console=console, transient=True) as progress:
            task = progress.add_task("starting", total=len(todo))
            for repeat in range(1, plan.repeat + 1):
                for target in targets:
                    cells = [cell for r, t, cell in todo if r == repeat and t.id == target.id]
                    if cells:
                        failed += _run_target(pipeline, plan, store, infra, target, repeat, cells, progress, task)
        meta["status"] = "finished"
        return failed
    except KeyboardInterrupt:
        meta["status"] = "interrupted"
        console.print(f"[yellow]interrupted[/]: {len(store.rows)} cells kept in {store.dir}; "
                      f"continue with `bench run --resume {store.run_id}`")
        raise
    finally:
        meta["finished_at"] = dt.datetime.now().isoformat(timespec="seconds")
        # each finished target added its threads to the stored parity table (observe, in _run_target)
        meta["parity"] = store.meta().get("parity") or meta.get("parity", {})
        store.write_meta(meta)


def _run_target(pipeline: Pipeline, plan: Plan, store: RunStore, infra: list, target: Target, repeat: int,
                cells: list[tuple[str, int, float | None]], progress: Progress, task) -> int:
    s, p = plan.settings, plan.profile
    console = pipeline.console

    def base(scenario: str, started: Started | None) -> dict:
        return {"run_id": store.run_id, "started_at": dt.datetime.now().isoformat(timespec="seconds"),
                "target": target.id, "framework": target.framework.name, "variant": target.variant.name,
                "runtime": s.runtime, "scenario": scenario, "driver": p.driver, "profile": p.name,
                "kind": p.kind, "repeat": repeat, "warmup_s": p.warmup_s, "duration_s": p.measured_s(),
                "heap": s.heap, "server_cpus": s.server_cpus, "loadgen_cpus": s.loadgen_cpus,
                "startup_s": started.startup_s if started else None,
                "rss_after_start_mb": started.rss_after_start_mb if started else None}

    def failed_rows(cell, reason: str, started=None) -> list[dict]:
        scenario, conc, rate = cell
        return [_failed_row({**base(scenario, started), "concurrency": c, "rate": r, "step": step}, reason)
                for c, r, step in p.row_keys(conc, rate)]

    def store_cell(rows: list[dict], series: list[dict] | None = None) -> int:
        store.add(rows, series)
        for row in rows:
            console.print(_result_line(row))
        progress.advance(task)
        return any(row["status"] != "ok" for row in rows)

    def fail_rest(rest, reason, started=None) -> int:
        return sum(store_cell(failed_rows(cell, reason, started)) for cell in rest)

    def restart_dead_infra() -> str:
        """Restart Redis/MariaDB if one died; returns what died with its log tail, or ''."""
        dead = infra[0].dead()
        if not dead:
            return ""
        tails = "\n".join(f"{name}: {log_tail(Path(infra[0].data_dir) / f'{name}.log', 5)}" for name in dead)
        console.print(f"[yellow]{', '.join(dead)} died: restarting the infrastructure[/]")
        infra[0] = infra_mod.restart(infra[0])
        return f"{' and '.join(dead)} died during the cell; last lines of its log:\n{tails}"

    def start_and_verify(rest) -> tuple[Started | None, int]:
        """Start the target and verify it; on failure its remaining cells are stored as failed."""
        progress.update(task, description=f"starting {target.id}")
        try:
            started = pipeline.start(target, infra[0].env(), store.run_id)
        except TargetFailed as e:
            return None, fail_rest(rest, e.reason)
        console.print(f"started {target.id} in {started.startup_s:.2f} s, RSS {started.rss_after_start_mb:.0f} MiB")
        v = pipeline.verify(target)
        (store.logs / f"verify-{target.id.replace(':', '-')}-r{repeat}.txt").write_text(
            f"{'ok' if v.ok else v.reason}\nthreads: {v.threads}\nheaders: {v.headers}\n")
        if not v.ok:
            started.stop()
            return None, fail_rest(rest, v.reason, started)
        return started, 0

    def measure_cells(cells, started: Started | None) -> int:
        """Measure the cells on one started JVM; a target that dies fails the rest of them."""
        failed, i = 0, 0
        try:
            while started and i < len(cells):
                cell = cells[i]
                scenario, conc, rate = cell
                progress.update(task, description=f"{target.id} {scenario} " + (f"{rate:g}/s" if rate else f"c={conc}"))
                series: list[dict] = []
                try:
                    rows, series = measure_cell(pipeline, started, plan, base(scenario, started), scenario, conc, rate,
                                                infra[0])
                except TargetFailed as e:
                    failed += fail_rest(cells[i:], e.reason, started)
                    break
                except drivers.DriverFailed as e:
                    rows = failed_rows(cell, f"load generator failed: {e}", started)
                died = restart_dead_infra()
                if died:
                    # The target's connections (and password) were to the dead servers: start it afresh too.
                    rows, series = failed_rows(cell, died, started), []
                failed += store_cell(rows, series)
                i += 1
                if died and i < len(cells):
                    started.stop()
                    started, lost = start_and_verify(cells[i:])
                    failed += lost
            if started and i:
                observe(started)   # not on Ctrl-C: stopping comes first
        finally:
            if started:
                started.stop()
        return failed

    def observe(started: Started) -> None:
        """The JVM's thread pools and collector after its load, into run.json's parity table."""
        pools = parity.observe_threads(pipeline.jdk.home / "bin" / "jcmd", started.server.pid)
        counters = read_counters(started.server.pid)
        meta = store.meta()
        entry = meta.setdefault("parity", {}).setdefault(target.id, {})
        entry["threads"] = parity.merge_pools(entry.get("threads", {}), pools)
        if counters:
            entry["gc"] = counters.collector
        store.write_meta(meta)

    failed = 0
    # One JVM for all the target's cells, or one per scenario; the db table goes back to its seed
    # before each, so that no JVM reads or writes a table an earlier one grew.
    chunks = [[c for c in cells if c[0] == sc] for sc in dict.fromkeys(c[0] for c in cells)] \
        if s.fresh_jvm_per_scenario else [cells]
    for chunk in chunks:
        restart_dead_infra()
        infra_mod.reset_db(infra[0])
        started, lost = start_and_verify(chunk)
        failed += lost
        failed += measure_cells(chunk, started)
    return failed


def new_store(now: dt.datetime | None = None, root: Path = RESULTS_DIR) -> RunStore:
    run_id = new_run_id(now or dt.datetime.now())
    d = root / run_id
    n = 1
    while d.exists():
        n += 1
        d = root / f"{run_id}-{n}"
    return RunStore(d)


@contextlib.contextmanager
def quiet_sigterm():
    previous = signal.signal(signal.SIGTERM, _sigterm_as_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
