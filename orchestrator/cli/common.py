"""What the commands share: the console, the options several of them take, and turning options into a
target list, Settings and a profile."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from orchestrator.config import options, profiles
from orchestrator.config import topology as topology_mod
from orchestrator.config.catalog import discover, select
from orchestrator.config.objective import parse_slo
from orchestrator.config.plan import Settings
from orchestrator.core import downstream_api
from orchestrator.errors import BadFile, UsageError
from orchestrator.infra.docker_engine import remote_address
from orchestrator.targets.runtimes import RUNTIMES

# A terminal's own width. Piped output (CI logs, files) gets lines long enough for a result line
# instead of 80 columns, unless COLUMNS asks for a width.
console = Console(width=None if sys.stdout.isatty() or os.environ.get("COLUMNS", "").isdigit() else 160)
FrameworkOpt = typer.Option(None, "--framework", "-f", help="Framework(s), comma-separated, or framework:variant.")
VariantOpt = typer.Option(None, "--variant", "-v", help="Variant(s), comma-separated (default: all).")
# The settings' defaults, written once (config/plan.py's Settings); the options below show them
DEFAULTS = Settings()
ServerCpus = typer.Option(None, "--server-cpus", help=f"CPUs for the target (taskset list; default {DEFAULTS.server_cpus}).")
LoadgenCpus = typer.Option(None, "--loadgen-cpus", help="CPUs for the load generator and the infrastructure "
                           f"(default {DEFAULTS.loadgen_cpus}).")
HeapOpt = typer.Option(None, "--heap", help=f"JVM heap, -Xms = -Xmx (default {DEFAULTS.heap}).")
PortOpt = typer.Option(DEFAULTS.port, "--port", help="Port of the target (a gateway's backend gets port + 1).")
RedisPortOpt = typer.Option(DEFAULTS.redis_port, "--redis-port", help="Port of the run's Redis.")
DbPortOpt = typer.Option(DEFAULTS.db_port, "--db-port", help="Port of the run's MariaDB.")
RuntimeOpt = typer.Option(DEFAULTS.runtime, "--runtime", help="Where targets and infrastructure run: process or docker.")
MemoryOpt = typer.Option(DEFAULTS.memory, "--memory", help="docker: the memory limit of a target's container (swap included).")
OfflineOpt = typer.Option(False, "--offline", help="docker: never try to pull; bootstrap missing base images locally.")
DbPoolOpt = typer.Option(16, "--db-pool-size", envvar="DB_POOL_SIZE", help="Database connections of every "
                         "target, i.e. statements in flight (CONTRACT.md; default 16).")
RedisPoolOpt = typer.Option(16, "--redis-pool-size", envvar="REDIS_POOL_SIZE", help="Redis connections of every "
                            "pooled client, i.e. commands in flight (CONTRACT.md; default 16).")
DownstreamPortOpt = typer.Option(downstream_api.DEFAULT_PORT, "--downstream-port",
                                 help="Port of the run's downstream service (nginx).")
DownstreamMsOpt = typer.Option(None, "--downstream-ms", help="What the downstream service waits before "
                                "each answer, the delay of fan-out's calls (CONTRACT.md; default 20).")
StartTimeoutOpt = typer.Option("120s", "--start-timeout", help="How long a target may take to answer its health path.")


def select_targets(framework: Optional[str], variant: Optional[str], catalog=None):
    catalog = catalog or discover()
    frameworks = [f.strip() for f in framework.split(",")] if framework else None
    variants = [v.strip() for v in variant.split(",")] if variant else None
    return select(catalog, frameworks, variants)


def parse_settings(server_cpus, loadgen_cpus, heap, port, redis_port, db_port, runtime="process", memory="1g",
              offline=False, start_timeout="120s", db_pool_size=16, redis_pool_size=16, timeout="30s",
              fresh_jvm_per_scenario=None, preset=None, jfr=None, topology=None, locust_master=None,
              downstream_ms=None, downstream_port=downstream_api.DEFAULT_PORT) -> Settings:
    """The options as Settings; those left out take the preset's value, else the default."""
    topo = topology_mod.load(topology) if topology else preset.topology if preset else None
    if locust_master:
        locust_master = "%s:%d" % options.locust_master(locust_master)
        check_workers_elsewhere(runtime, topo)
    if topo and not topo.single_host:
        if runtime != "process":
            raise UsageError(f"topology {topo.name} puts the target in a network namespace: that needs "
                             f"--runtime process")
        if os.geteuid() != 0:
            raise UsageError(f"topology {topo.name} creates network namespaces, which needs root")
    chosen = preset.settings(cpus_given=bool(server_cpus or loadgen_cpus)) if preset else {}
    server_cpus = server_cpus or chosen.get("server_cpus")
    loadgen_cpus = loadgen_cpus or chosen.get("loadgen_cpus")
    heap = heap or chosen.get("heap")
    fresh = chosen.get("fresh_jvm_per_scenario", False) if fresh_jvm_per_scenario is None else fresh_jvm_per_scenario
    jfr = chosen.get("jfr", False) if jfr is None else jfr
    downstream_ms = chosen.get("downstream_ms", downstream_api.DEFAULT_MS) if downstream_ms is None else downstream_ms
    if not 0 <= downstream_ms <= downstream_api.MAX_MS:
        raise UsageError(f"--downstream-ms must be 0 to {downstream_api.MAX_MS:,}, not {downstream_ms}")
    if runtime not in RUNTIMES:
        raise UsageError(f"unknown runtime '{runtime}'; valid: {', '.join(RUNTIMES)}") from None
    return Settings(runtime=runtime, memory=options.memory(memory), offline=offline,
                    start_timeout_s=options.duration(start_timeout, "--start-timeout"),
                    request_timeout_s=options.duration(timeout, "--timeout"), fresh_jvm_per_scenario=fresh, jfr=jfr,
                    topology=topo.to_dict() if topo and not topo.single_host else None, locust_master=locust_master,
                    server_cpus=options.cpu_list(server_cpus or DEFAULTS.server_cpus, "--server-cpus"),
                    loadgen_cpus=options.cpu_list(loadgen_cpus or DEFAULTS.loadgen_cpus, "--loadgen-cpus"),
                    heap=options.heap(heap or DEFAULTS.heap), port=options.port(port, "--port"),
                    redis_port=options.port(redis_port, "--redis-port"),
                    db_port=options.port(db_port, "--db-port"), downstream_ms=downstream_ms,
                    downstream_port=options.port(downstream_port, "--downstream-port"),
                    db_pool_size=options.pool_size(db_pool_size, "--db-pool-size"),
                    redis_pool_size=options.pool_size(redis_pool_size, "--redis-pool-size"))


def check_workers_elsewhere(runtime: str, topo) -> None:
    """Workers on other machines load the server at its address: one they can reach, the remote
    engine's, never this machine's loopback."""
    if runtime != "docker" or not remote_address():
        raise UsageError("--locust-master: Locust workers on other machines cannot reach a target on this "
                         "machine's loopback; run the targets on a remote engine (DOCKER_HOST=ssh://USER@ADDRESS "
                         "with --runtime docker)")
    if topo and topo.workers != topology_mod.LOCAL:
        raise UsageError(f"--locust-master and topology {topo.name} both say where the Locust workers run: "
                         f"choose one")


def override_profile(prof: profiles.Profile, concurrency, rate, requests, workers, warmup, warmup_max, duration,
              repeat, slo=None) -> profiles.Profile:
    """The profile with the command line's options, parsed (the profile checks what applies to it)."""
    if requests is not None and not 1 <= requests <= 10_000_000:
        raise UsageError(f"--requests {requests} must be from 1 to 10,000,000")
    if workers is not None and not 0 <= workers <= 64:
        raise UsageError(f"--workers {workers} must be from 0 to 64")
    return prof.with_overrides(
        concurrency=tuple(options.positive_ints(concurrency, "--concurrency", profiles.MAX_CONNECTIONS))
        if concurrency else None,
        rates=tuple(options.positive_ints(rate, "--rate", 1_000_000)) if rate else None,
        requests=requests, workers=workers, repeat=repeat, slo=parse_slo(slo) if slo else None,
        warmup_s=options.duration(warmup, "--warmup", allow_zero=True) if warmup else None,
        warmup_max_s=options.duration(warmup_max, "--warmup-max") if warmup_max else None,
        duration_s=options.duration(duration, "--duration") if duration else None)


def check_writable(root: Path) -> None:
    if root.exists() and not root.is_dir():
        raise BadFile(root, "not a folder (--results-dir names the folder that run folders go in)")
    try:
        root.mkdir(parents=True, exist_ok=True)
        probe = root / ".write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise UsageError(f"results folder {root} is not writable: {e.strerror}") from None
