"""`bench prune`: removes old runs' raw files (results/prune.py says which), by age or to a total size."""
from __future__ import annotations

from typing import Optional

import typer

from orchestrator.cli.common import console
from orchestrator.cli.typer_options import takes
from orchestrator.config.option_table import Given
from orchestrator.config.options import byte_size, duration
from orchestrator.errors import UsageError
from orchestrator.infra import run_lock
from orchestrator.results import prune


@takes("prune")
def prune_cmd(older_than: Optional[str] = typer.Option(None, "--older-than", help="Runs started longer ago than "
                                                       "this, e.g. 30d, 12h."),
              max_size: Optional[str] = typer.Option(None, "--max-size", help="Prune the oldest runs until all "
                                                     "runs together take at most this, e.g. 5G."),
              dry_run: bool = typer.Option(False, "--dry-run", help="List what would go, with sizes; remove nothing."),
              *, given: Given) -> None:
    """Remove old runs' raw files (Flight Recorder recordings, thread dumps, per-request records and CSVs,
    AOT caches); every row, run.json, report, flame graph and log stays."""
    results_dir = given.results_dir
    if older_than is None and max_size is None:
        raise UsageError("bench prune needs --older-than AGE, --max-size SIZE or both (e.g. --older-than 30d)")
    age = duration(older_than, "--older-than") if older_than is not None else None
    cap = byte_size(max_size, "--max-size") if max_size is not None else None
    if not results_dir.is_dir():
        raise UsageError(f"--results-dir {results_dir} is not a folder")
    runs = prune.choose(results_dir, age, cap)
    for r in runs:
        console.print(f"{r.run.name}: {len(r.raw)} raw files, {prune.human_size(r.raw_bytes)}", highlight=False)
        if dry_run:
            for path, size in r.raw:
                console.print(f"  {path.relative_to(r.run)}  {prune.human_size(size)}", highlight=False, soft_wrap=True)
    total = sum(r.raw_bytes for r in runs)
    if dry_run:
        console.print(f"would free {prune.human_size(total)} in {len(runs)} runs (--dry-run: nothing removed)")
        return
    with run_lock.held():   # never beside a run: its raw files are being written and read
        console.print(f"freed {prune.human_size(prune.remove(runs))} in {len(runs)} runs")
