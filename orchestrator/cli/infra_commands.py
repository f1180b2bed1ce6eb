"""`bench infra`, `images`, `clean`, `locust-worker` and `calibrate`: commands that tend this machine rather
than measure a target. They keep Redis and MariaDB up between runs, make the Docker images, remove what
crashed runs left, lend this machine's cores to another's run, and measure each load generator's ceiling."""
from __future__ import annotations

import datetime as dt
from typing import Optional

import typer
from rich import box
from rich.table import Table

from orchestrator.cli.common import console, parse_settings
from orchestrator.cli.typer_options import takes
from orchestrator.config import options
from orchestrator.config.option_table import Given
from orchestrator.drivers import locust_worker
from orchestrator.errors import UsageError
from orchestrator.infra import backends as infra_mod
from orchestrator.infra import interrupts, run_lock
from orchestrator.infra.cleanup import clean_leftovers
from orchestrator.infra.docker_engine import remote_address
from orchestrator.measure import calibrate
from orchestrator.targets import images as images_mod
from orchestrator.targets.jdk import find_jdk


@takes("infra up")
def infra_up(*, given: Given) -> None:
    """Start Redis, MariaDB and the downstream service and leave them running for later commands."""
    if infra_mod.load_state():
        console.print("infrastructure is already up (`bench infra status`)")
        return
    run_lock.ensure_free()
    settings = parse_settings(given)
    runtime = settings.runtime
    images = {}
    if runtime == "docker":
        if remote_address():
            raise UsageError(f"DOCKER_HOST names another machine's engine ({remote_address()}): Redis and MariaDB "
                             f"for a run stay on this machine; start them with --runtime process")
        bases = images_mod.bases(find_jdk(), settings.offline, console.print)
        images = {"redis": bases.redis, "mariadb": bases.mariadb}
    infra = infra_mod.start(settings.redis_port, settings.db_port, settings.loadgen_cpus, outlive=True,
                            runtime=runtime, images=images, downstream_port=settings.downstream_port,
                            downstream_ms=settings.downstream_ms)
    infra_mod.save_state(infra)
    console.print(f"Redis on 127.0.0.1:{infra.redis_port}, MariaDB on 127.0.0.1:{infra.db_port}, the downstream "
                  f"on 127.0.0.1:{infra.downstream_port} ({infra.downstream_ms} ms) "
                  f"(seeded; data in {infra.data_dir}); stop with `bench infra down`")


def infra_down() -> None:
    """Stop what `bench infra up` started and delete its data."""
    infra = infra_mod.load_state()
    if infra is None:
        console.print("infrastructure is not up")
        return
    infra_mod.stop(infra)
    infra_mod.clear_state()
    console.print("stopped Redis and MariaDB")


def infra_status() -> None:
    """Whether `bench infra up` left Redis, MariaDB and the downstream running, and where."""
    infra = infra_mod.load_state()
    if infra is None:
        console.print("down")
        raise typer.Exit(1)
    console.print(f"up ({infra.runtime}): Redis 127.0.0.1:{infra.redis_port} (pid {infra.pids.get('redis')}), "
                  f"MariaDB 127.0.0.1:{infra.db_port} (pid {infra.pids.get('mariadb')}), the downstream "
                  f"127.0.0.1:{infra.downstream_port} ({infra.downstream_ms} ms, pid {infra.pids.get('downstream')}), "
                  f"data {infra.data_dir}")


@takes("images bootstrap")
def images_bootstrap(*, given: Given) -> None:
    """Make the base images that are missing (Debian by debootstrap, a JRE by jlink, Redis, MariaDB)."""
    bases = images_mod.bases(find_jdk(), given.offline, console.print)
    console.print(f"bases: {bases.debian}, {bases.jre}, {bases.redis}, {bases.mariadb}")


def images_list() -> None:
    """The images bench made or uses: size and how each was made."""
    table = Table("image", "MB", "created", "made by", box=box.SIMPLE_HEAD)
    for r in images_mod.listing():
        table.add_row(r["tag"], f"{r['size_mb']:.0f}", r["created"], r["made_by"])
    console.print(table)


@takes("locust-worker")
def locust_worker_cmd(
        master: str = typer.Option(..., "--master", help="ADDRESS[:PORT] the run's machine gave as --locust-master "
                                   "(default port 5557)."),
        processes: int = typer.Option(1, "--processes", help="Worker processes on this machine (one core each at "
                                      "most)."),
        cpus: Optional[str] = typer.Option(None, "--cpus", help="CPUs for the workers (taskset list; default: any)."),
        idle: str = typer.Option("30m", "--idle", help="Stop after this long without a master."),
        *, given: Given) -> None:
    """Locust workers on this machine for a run on another one (`bench run --locust-master`): they load
    its targets for each cell's master, until Ctrl-C or --idle without a master."""
    address, port = options.ipv4_and_port(master, "--master")   # its workers' connections are known by it
    if processes < 1:
        raise UsageError("--processes must be 1 or more")
    cpus = options.cpu_list(cpus, "--cpus") if cpus else None
    logs = given.results_dir / "locust-worker" / dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    with interrupts.quiet_sigterm():
        locust_worker.serve(address, port, processes, cpus, options.duration(idle, "--idle"), logs, console.print)


def clean() -> None:
    """Remove what crashed runs of this checkout left: infrastructure, temporary data directories, stray
    processes; other checkouts' are left alone."""
    removed, left = clean_leftovers()
    for r in removed:
        console.print(f"removed {r}")
    for r in left:
        console.print(f"left alone: {r}")
    console.print(f"{len(removed)} leftovers removed")


@takes("calibrate")
def calibrate_cmd(generators: Optional[str] = typer.Option(None, "--generators", help="Comma-separated (default: "
                                                           "every installed one; k6 is built first if Go is there)."),
                  *, given: Given) -> None:
    """Each load generator's ceiling on this machine, against nginx; stored in calibration.json."""
    with run_lock.held():
        calibrated = calibrate.command(given.server_cpus, given.loadgen_cpus, given.duration, generators, given.port,
                                       given.results_dir, console)
    if not calibrated:
        raise typer.Exit(1)
