"""`bench prune`: old runs' raw files removed, by age or to a total size; every row and report kept.

Raw is what a run's figures were read from and nothing reads again: Flight Recorder recordings (read
into the jfr_* columns), thread dumps (into dump_*), pacer's arrival records and the per-request
files of k6 and h2load (into the latency columns), and AOT caches (a resumed run trains its target's
again). Kept: run.json, the parquet files of rows and series, the reports and their charts, the
flame graphs (the report links them), the logs (capped by infra/log_cap.py) and the generators'
small summaries and scripts.
"""
from __future__ import annotations

import datetime as dt
import json
import time
from dataclasses import dataclass
from pathlib import Path

from orchestrator.results.store import RUN_JSON, run_dirs

# file name endings of raw files, anywhere in a run folder
RAW = (".jfr", "-threads.jsonl", ".records", ".records.parquet", ".requests.csv", ".requests.csv.gz",
       ".requests.tsv", ".requests.tsv.gz", ".aot")


def human_size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n:,.1f} TiB"


@dataclass
class RunFiles:
    """One run folder: its raw files with their sizes, and the size of the whole folder."""
    run: Path
    started: float          # epoch seconds
    raw: list[tuple[Path, int]]
    total: int

    @property
    def raw_bytes(self) -> int:
        return sum(size for _, size in self.raw)


def is_raw(path: Path) -> bool:
    return path.is_file() and not path.is_symlink() and path.name.endswith(RAW)


def started_at(run: Path) -> float:
    """When the run started (run.json's started_at), or its folder's modification time."""
    try:
        return dt.datetime.fromisoformat(json.loads((run / RUN_JSON).read_text())["started_at"]).timestamp()
    except (OSError, ValueError, KeyError, TypeError):
        return run.stat().st_mtime


def survey(run: Path) -> RunFiles:
    files = [p for p in run.rglob("*") if p.is_file() and not p.is_symlink()]
    return RunFiles(run, started_at(run), [(p, p.stat().st_size) for p in sorted(files) if is_raw(p)],
                    sum(p.stat().st_size for p in files))


def choose(root: Path, older_than_s: float | None = None, max_bytes: int | None = None,
           now: float | None = None) -> list[RunFiles]:
    """The runs under root whose raw files go, oldest first, each with those files: every run started
    more than older_than_s ago, then, while all runs together (every file of them) exceed max_bytes,
    the oldest runs that still have raw files."""
    runs = [survey(r) for r in run_dirs(root)]
    now = time.time() if now is None else now
    chosen = [r for r in runs if older_than_s is not None and now - r.started > older_than_s and r.raw]
    if max_bytes is not None:
        total = sum(r.total for r in runs) - sum(r.raw_bytes for r in chosen)
        for r in runs:
            if total <= max_bytes:
                break
            if r.raw and r not in chosen:
                chosen.append(r)
                total -= r.raw_bytes
    return sorted(chosen, key=lambda r: r.started)


def remove(runs: list[RunFiles]) -> int:
    """Delete the chosen raw files; the bytes freed. Folders they leave empty go too."""
    freed = 0
    for r in runs:
        for path, size in r.raw:
            path.unlink(missing_ok=True)
            freed += size
        for folder in sorted({p.parent for p, _ in r.raw}, key=lambda p: len(p.parts), reverse=True):
            if folder != r.run and not any(folder.iterdir()):
                folder.rmdir()
    return freed
