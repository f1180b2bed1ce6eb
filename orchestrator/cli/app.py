"""The `bench` command line: the Typer app, every command registered on it in the order `bench --help`
lists them, and `main`, the entry point. The commands live in modules by what they work on (targets,
runs, catalogs, stored results, this machine); this module only names them, so it is the one place that
shows the whole command line."""
from __future__ import annotations

import os
import sys
import warnings

import typer
from rich.console import Console
from rich.markup import escape

from orchestrator.cli import (
    catalog_commands,
    infra_commands,
    noise_command,
    prune_command,
    report_commands,
    run_command,
    target_commands,
)
from orchestrator.errors import BenchError
from orchestrator.infra import interrupts

app = typer.Typer(help="Build, start, verify and load JVM web frameworks; store tidy results.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)
infra_app = typer.Typer(help="Redis and MariaDB for the targets.", no_args_is_help=True)
app.add_typer(infra_app, name="infra")
images_app = typer.Typer(help="Docker images: local base images and one per framework.", no_args_is_help=True)
app.add_typer(images_app, name="images")

app.command("list")(target_commands.list_targets)
app.command("build")(target_commands.build)
app.command("parity")(target_commands.parity_cmd)
app.command("verify")(target_commands.verify_cmd)
app.command("run")(run_command.run)
app.command("profiles")(catalog_commands.profiles_cmd)
app.command("presets")(catalog_commands.presets_cmd)
app.command("results")(report_commands.results_cmd)
infra_app.command("up")(infra_commands.infra_up)
infra_app.command("down")(infra_commands.infra_down)
infra_app.command("status")(infra_commands.infra_status)
images_app.command("bootstrap")(infra_commands.images_bootstrap)
images_app.command("list")(infra_commands.images_list)
app.command("locust-worker")(infra_commands.locust_worker_cmd)
app.command("clean")(infra_commands.clean)
app.command("calibrate")(infra_commands.calibrate_cmd)
app.command("report")(report_commands.report_cmd)
app.command("compare")(report_commands.compare_cmd)
app.command("noise")(noise_command.noise_cmd)
app.command("prune")(prune_command.prune_cmd)


def main() -> None:
    """Entry point: Typer handles usage errors (exit 2) and Ctrl-C; BenchError becomes one clear line."""
    interrupts.install()
    # Every file and folder bench and its children make is its user's alone (runs are shared by hand:
    # docs/security.md), a run's folder above all: its recordings and logs describe this machine.
    os.umask(0o077)
    warnings.showwarning = _warning_line
    try:
        app()
    except BenchError as e:
        Console(stderr=True).print(f"[red]error:[/] {e}", highlight=False, soft_wrap=True)
        sys.exit(e.exit_code)


def _warning_line(message, *_) -> None:
    """A warning (a run folder or a framework folder skipped) as one line, without Python's source line."""
    Console(stderr=True).print(f"[yellow]warning:[/] {escape(str(message))}", highlight=False, soft_wrap=True)


if __name__ == "__main__":
    main()
