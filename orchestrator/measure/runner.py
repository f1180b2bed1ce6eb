"""The loop of a run: build -> start infra -> per repeat and target: start, verify, cells -> store.

The loop measures and publishes what happens (events.py); the store, the console and the progress
bar subscribe, and nothing here prints. Every finished cell is on disk before the next starts;
Ctrl-C, SIGTERM or a failure stops the load generator, the target and the infrastructure that the
run started.
"""
from __future__ import annotations

import datetime as dt
import functools
import itertools
import os
import sys
from pathlib import Path

from rich.console import Console

from orchestrator import RESULTS_DIR
from orchestrator.config import driver_registry
from orchestrator.config.catalog import Framework, Target, resolve
from orchestrator.config.modes import AOT_CACHE
from orchestrator.config.plan import Cell, Plan, pool_env
from orchestrator.core.cpus import parse_cpus, settle
from orchestrator.drivers.base import DriverFailed
from orchestrator.errors import TargetFailed
from orchestrator.infra import backends as infra_mod
from orchestrator.infra import interrupts, run_lock
from orchestrator.infra.docker_engine import describe_remote
from orchestrator.infra.hostinfo import git_commit, host_info, tool_version, tool_versions
from orchestrator.infra.procs import generator_failure, log_tail
from orchestrator.measure import disk_space
from orchestrator.measure import rows as rows_mod
from orchestrator.measure.calibrate import ensure_open_ceiling
from orchestrator.measure.ceilings import ceilings
from orchestrator.measure.cell import measure_cell
from orchestrator.measure.checks import BusyProcesses
from orchestrator.measure.console import ConsoleView
from orchestrator.measure.events import Events
from orchestrator.measure.flight_recorder import COST
from orchestrator.measure.warmup import generators
from orchestrator.results.store import RunStore, new_run_dir
from orchestrator.targets import aot_cache, parity
from orchestrator.targets.environment import Environment, Started


def execute(plan: Plan, store: RunStore, console: Console, argv: list[str] | None = None,
            catalog: dict[str, Framework] | None = None) -> int:
    """Run every missing cell of the plan into store, shown on console; returns the number of failed
    cells. SIGTERM stops it as Ctrl-C does. catalog: the frameworks the plan was made from (default:
    read again)."""
    events = Events()
    # the store listens first: a cell is on disk before anything shows it
    events.cell_measured.add_listener(lambda rows, series: store.add(rows, series))
    events.cell_failed.add_listener(lambda rows: store.add(rows))
    # the lock first (the command holds it already, which this re-enters: it names the run now)
    with run_lock.held(store.run_id), interrupts.quiet_sigterm(), ConsoleView(console, events):
        try:
            environment = Environment(plan.settings, store.logs, console, catalog, results_root=store.dir.parent)
            return Run(plan, store, environment, events).execute(argv)
        finally:
            store.discard_if_empty()


class Run:
    """One run of a plan into a store."""

    def __init__(self, plan: Plan, store: RunStore, environment: Environment, events: Events):
        self.plan, self.store, self.environment, self.events = plan, store, environment, events
        self.infra: list = []   # the running infrastructure, replaced when it is restarted
        self.net = None         # the topology's hosts and links (infra/network.py's Network), when it has several
        self.busy = None        # a new run's watch over other processes' CPU (checks.BusyProcesses)
        self.generators: dict[str, str] = {}   # executable -> path of each generator the run drives

    def execute(self, argv: list[str] | None) -> int:
        plan, store, environment, s = self.plan, self.store, self.environment, self.plan.settings
        targets = [resolve(environment.catalog, t) for t in plan.targets]
        # MissingTool, or a build on first use, before anything starts; their versions from the very
        # executables the run drives (one made on first use is on no PATH)
        self.generators = {driver_registry.info(name).tools[0].executable: driver_registry.get(name).executable()
                           for name in generators(plan.profile)}
        self._before_anything_starts(targets)
        meta = store.meta() if (store.dir / "run.json").exists() else self._new_meta(argv, targets)
        todo = plan.todo(targets, store.done())
        failed = 0
        try:
            environment.build_all(targets)
            meta["builds"] = dict(environment.build_times)
            # what each target runs with (parity.py); its threads after load are added as it finishes
            meta["parity"] = {t.id: {**parity.record(t, pool_env(s, t)), "heap": t.heap(s.heap),
                                     **meta.get("parity", {}).get(t.id, {})}
                              for t in targets}
            store.write_meta(meta)
            # From here on the orchestrator (its sampler, its parsing of generator files) runs where the
            # load runs, never on a server CPU; builds above still had every CPU.
            os.sched_setaffinity(0, parse_cpus(s.loadgen_cpus))
            if not todo:
                self.events.notice.fire(text="nothing to do: every cell of this run is measured")
                return 0
            with environment.network() as net, environment.infra() as infra:
                self.infra, self.net = infra, net
                self._busy_warnings(meta)
                if net:
                    meta["network"] = net.describe()   # the round trips probed at the start
                    store.write_meta(meta)
                    self.events.notice.fire(text=net.summary(), warning=False)
                self.events.run_started.fire(cells=len(todo))
                # in the plan's rounds: each repeat, the targets in that round's random order
                for (repeat, target), cells in itertools.groupby(todo, lambda w: (w[0], w[1])):
                    failed += self._run_target(target, repeat, [cell for _, _, cell in cells])
            interrupts.stop_if_asked()
            meta["status"] = "finished"
            return failed
        except KeyboardInterrupt:
            meta["status"] = "interrupted"
            self.events.run_interrupted.fire(kept=len(store.rows), run_dir=store.dir)
            raise
        finally:
            self._finish_meta(meta)

    def _before_anything_starts(self, targets: list[Target]) -> None:
        """What must hold before a process starts: no leftover of a killed run, free ports, the open-model
        generator's ceiling where the profile needs it, and disk space for the plan."""
        plan, environment, s = self.plan, self.environment, self.plan.settings
        for leftover in environment.cleanup_leftovers():
            self.events.notice.fire(text=f"removed a leftover of an earlier run: {leftover}", warning=True)
        environment.check_ports(targets, shared_infra=infra_mod.load_state() is not None)
        if plan.profile.rules.needs_open_ceiling:
            ensure_open_ceiling(plan.profile.driver, s.server_cpus, s.loadgen_cpus, s.port, environment.results_root,
                                plan.profile.duration_s, plan.profile.resolution,
                                lambda text: self.events.notice.fire(text=text, warning=False),
                                plan.profile.rules.open_ceiling_needed(plan.profile))
        disk_space.check(plan, environment.results_root)

    def _finish_meta(self, meta: dict) -> None:
        """run.json at the end of execute, however it ended: when, the network's probes, and what the
        finished targets stored meanwhile (their threads in the parity table, _observe; AOT caches, _train)."""
        meta["finished_at"] = dt.datetime.now().isoformat(timespec="seconds")
        if self.net:
            meta["network"] = self.net.describe()   # with the probes of every level
        stored = self.store.meta()
        meta["parity"] = stored.get("parity") or meta.get("parity", {})
        if stored.get("aot_caches"):
            meta["aot_caches"] = stored["aot_caches"]
        self.store.write_meta(meta)

    def _busy_warnings(self, meta: dict) -> None:
        """Warn of, and keep in run.json, other processes that burned CPU since the run began."""
        if self.busy is None:
            return
        busy, self.busy = self.busy.found(), None
        for w in busy:
            self.events.notice.fire(text=f"warning: busy machine: {w}", warning=True)
        if busy:
            meta["warnings"] = [f"busy: {w}" for w in busy] + meta["warnings"]
            self.store.write_meta(meta)

    def _new_meta(self, argv: list[str] | None, targets: list[Target]) -> dict:
        """run.json of a new run: what ran, where, with which versions, and warnings about the machine."""
        # other processes' CPU is read over the build and the infrastructure's start (_busy_warnings)
        self.busy = BusyProcesses()
        s = self.plan.settings
        # a capacity run has its generator's open-model ceiling by now (ensure_open_ceiling)
        recorded = [COST + ": compare these figures with runs recorded alike"] if s.jfr else []
        for w in recorded:
            self.events.notice.fire(text=f"warning: {w}", warning=True)
        meta = {"run_id": self.store.run_id, "started_at": dt.datetime.now().isoformat(timespec="seconds"),
                "command": argv or sys.argv, "git_commit": git_commit(), "host": host_info(),
                "jdk": {"home": str(self.environment.jdk.home), "version": self.environment.jdk.version},
                "tools": {**tool_versions(), **{tool: tool_version(path, tool) for tool, path in self.generators.items()}},
                "plan": self.plan.to_dict(), "warnings": recorded,
                # what each scenario's endpoint does: the report quotes the contract the run ran under
                "contracts": {sc: self.plan.scenario(sc).contract for t in targets for sc in self.plan.scenarios_of(t)},
                # what `bench calibrate` measured each generator to reach here: the near-generator-ceiling flag's bar
                "generator_ceilings": ceilings(results_dir=self.environment.results_root, loadgen_cpus=s.loadgen_cpus),
                # and the highest arrival rate each keeps here: a capacity search's cap
                "generator_open_ceilings": ceilings(results_dir=self.environment.results_root, loadgen_cpus=s.loadgen_cpus,
                                                   key="open_ceiling_rps"),
                "status": "running"}
        if self.environment.runtime.host:
            meta["docker_engine"] = describe_remote()
        self.store.create(meta)
        return meta

    def _run_target(self, target: Target, repeat: int, cells: list[Cell]) -> int:
        """The target's cells of one repeat: one JVM for all of them, or one per scenario; the db table
        goes back to its seed before each, so that no JVM reads or writes a table an earlier one grew. A
        cold target gets a JVM per cell: one that served a cell before is no longer cold."""
        if target.cold:
            chunks = [[c] for c in cells]
        elif self.plan.settings.fresh_jvm_per_scenario:
            chunks = [[c for c in cells if c[0] == sc] for sc in dict.fromkeys(c[0] for c in cells)]
        else:
            chunks = [cells]
        failed = 0
        if target.jvm_mode == AOT_CACHE:
            try:
                self._train(target)
            except TargetFailed as e:
                return self._fail(target, repeat, cells, e.reason)
        for chunk in chunks:
            interrupts.stop_if_asked()
            self._restart_dead_infra()
            infra_mod.reset_db(self.infra[0])
            started, lost = self._start_and_verify(target, repeat, chunk)
            failed += lost
            failed += self._measure_cells(target, repeat, chunk, started)
        return failed

    def _train(self, target: Target) -> None:
        """The target's AOT cache, trained unless the run has it (aot_cache.py); into run.json."""
        say = lambda text: self.events.notice.fire(text=text, warning=False)  # noqa: E731
        record = aot_cache.train(self.environment, target, self.infra[0].env(), self.plan.scenarios_of(target), say)
        if record:
            say(f"AOT cache of {target.base_id}: {record['mb']:,.0f} MiB in {record['took_s']:.0f} s")
            meta = self.store.meta()
            meta.setdefault("aot_caches", {})[target.base_id] = record
            self.store.write_meta(meta)

    def _store(self, rows: list[dict], series: list[dict] | None = None) -> int:
        """Publish a finished cell (the store writes it); 1 if it failed."""
        if any(row["status"] != "ok" for row in rows):
            self.events.cell_failed.fire(rows=rows)
            return 1
        self.events.cell_measured.fire(rows=rows, series=series or [])
        return 0

    def _fail(self, target: Target, repeat: int, cells: list[Cell], reason: str, started=None) -> int:
        """Store each of the cells as failed for the reason; returns how many."""
        return sum(self._store(rows_mod.failed(self.plan, self._identity(target, repeat, cell, started),
                                               cell, reason))
                   for cell in cells)

    def _identity(self, target: Target, repeat: int, cell: Cell, started) -> dict:
        net = self.net
        rtt = net.subject_rtt_ms() if net and net.level == cell[3] else None
        return rows_mod.identity(self.plan, self.store.run_id, target, repeat, cell[0], started, cell[3], rtt)

    def _restart_dead_infra(self) -> str:
        """Restart Redis/MariaDB if one died; returns what died with its log tail, or ''."""
        dead = self.infra[0].dead()
        if not dead:
            return ""
        tails = "\n".join(f"{name}: {log_tail(Path(self.infra[0].data_dir) / f'{name}.log', 5)}" for name in dead)
        self.events.infra_restarted.fire(dead=dead)
        self.infra[0] = infra_mod.restart(self.infra[0])
        return f"{' and '.join(dead)} died during the cell; last lines of its log:\n{tails}"

    def _start_and_verify(self, target: Target, repeat: int, cells: list[Cell]) -> tuple[Started | None, int]:
        """Start the target and verify it; on failure its cells are stored as failed."""
        self.events.target_starting.fire(target=target)
        try:
            started, v = self.environment.start_verified(target, self.infra[0].env(), self.store.run_id,
                                                         f"r{repeat}")
        except TargetFailed as e:
            return None, self._fail(target, repeat, cells, e.reason)
        self.events.target_started.fire(target=target, started=started)
        if not v.ok:
            return None, self._fail(target, repeat, cells, v.reason, started)
        return started, 0

    def _measure_cells(self, target: Target, repeat: int, cells: list[Cell], started: Started | None) -> int:
        """Measure the cells on one started JVM; a target that dies fails the rest of them."""
        failed, i = 0, 0
        try:
            while started and i < len(cells):
                interrupts.stop_if_asked()
                cell = cells[i]
                scenario, conc, rate, network = cell
                if self.net:
                    # In place: the JVM keeps its connections; the probe waits for it and the database to go quiet.
                    self.net.shape(network, functools.partial(settle, started.server))
                self.events.cell_starting.fire(target=target, cell=cell)
                identity = self._identity(target, repeat, cell, started)
                series: list[dict] = []
                try:
                    rows, series = measure_cell(self.environment, started, self.plan, identity, scenario, conc,
                                                rate, self.infra[0],
                                                lambda text: self.events.cell_progress.fire(target=target,
                                                                                            text=text))
                except TargetFailed as e:
                    failed += self._fail(target, repeat, cells[i:], e.reason, started)
                    break
                except DriverFailed as e:
                    reason, jvm_failed = generator_failure(e, started.server.log_path)
                    if jvm_failed:   # the rest of its cells go with it
                        failed += self._fail(target, repeat, cells[i:], reason, started)
                        break
                    rows = rows_mod.failed(self.plan, identity, cell, reason)
                died = self._restart_dead_infra()
                if died:
                    # The target's connections (and password) were to the dead servers: start it afresh too.
                    rows, series = rows_mod.failed(self.plan, identity, cell, died), []
                failed += self._store(rows, series)
                i += 1
                if died and i < len(cells):
                    started.stop()
                    started, lost = self._start_and_verify(target, repeat, cells[i:])
                    failed += lost
            if started and i:
                self._observe(target, started)   # not on Ctrl-C: stopping comes first
        finally:
            if started:
                started.stop()
        return failed

    def _observe(self, target: Target, started: Started) -> None:
        """The JVM's thread pools and collector after its load, into run.json's parity table."""
        pid = started.server.pid
        pools = parity.observe_threads(self.environment.jdk.home / "bin" / "jcmd", pid) if pid else {}
        counters = started.server.counters()
        meta = self.store.meta()
        entry = meta.setdefault("parity", {}).setdefault(target.id, {})
        entry["threads"] = parity.merge_pools(entry.get("threads", {}), pools)
        if counters:
            entry["gc"] = counters.collector
        self.store.write_meta(meta)


def new_store(now: dt.datetime | None = None, root: Path = RESULTS_DIR) -> RunStore:
    """A new run's store, its folder made now (results.store.new_run_dir)."""
    return RunStore(new_run_dir(now or dt.datetime.now(), root))
