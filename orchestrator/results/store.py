"""Results: the run folder layout, the tidy measurements table, and the pandas API to load them.

    results/<run-id>/run.json              what ran, where, with which versions and settings
    results/<run-id>/measurements.parquet  one row per cell (a ramp: per step), rewritten atomically after each cell
    results/<run-id>/timeseries.parquet    time-resolved cells (a ramp, a capacity spike): one row per second
    results/<run-id>/logs/                 build, server, verification and load generator logs

`load()` is the only way the reports and notebooks read results. A file of a run that is not what its name
says (a folder, a FIFO, a truncated Parquet file, run.json that is not a JSON object) raises BadFile, one line
naming it; listing the runs skips a folder whose run.json does not read, with a warning.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
import warnings
from functools import cache
from pathlib import Path
from typing import Iterable

from orchestrator import RESULTS_DIR, lazy
from orchestrator.config.documents import read_text, regular_file

# The columns are schema.py's; results.COLUMNS stays, for notebooks that read it beside load().
from orchestrator.core.schema import CELL_KEY, COLUMNS, RENAMED, ROW_TYPES, TIMESERIES_KEY, TIMESERIES_TYPES
from orchestrator.errors import BadFile, UsageError

pd = lazy.module("pandas")
pa = lazy.module("pyarrow")
pq = lazy.module("pyarrow.parquet")


@cache
def row_schema() -> pa.Schema:
    """measurements.parquet's Arrow schema: schema.py's columns, in order."""
    return pa.schema([(name, getattr(pa, kind)()) for name, kind in ROW_TYPES])


@cache
def timeseries_schema() -> pa.Schema:
    """timeseries.parquet's Arrow schema."""
    return pa.schema([(name, getattr(pa, kind)()) for name, kind in TIMESERIES_TYPES])


MEASUREMENTS = "measurements.parquet"
TIMESERIES = "timeseries.parquet"
RUN_JSON = "run.json"
# run.json holds a plan, a host and a parity table: a few hundred KiB at most
MAX_RUN_JSON_BYTES = 64 << 20


MACHINE_KEYS = ("hostname", "cpu_model", "cores")


def machine_key(host: dict) -> str:
    """How files kept per machine (calibration.json, noise-floor.json) name one: hostname, CPU, cores."""
    return f"{host.get('hostname', '?')} / {host.get('cpu_model', '?')} / {host.get('cores', '?')} CPUs"


def atomic_write(path: Path, write) -> None:
    """Write through a temporary file, fsync, rename: a reader or a crash sees old or new, never half.
    The temporary name is unique (mkstemp, mode 0600, in the same folder so the rename is atomic): two
    writers never write into each other's file, and a crash's leftover is never reused."""
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    tmp = Path(name)
    try:
        write(tmp)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def updating(path: Path):
    """Hold an exclusive lock on path (a lock file beside it, `.NAME.lock`) for a read-modify-write of a
    file kept across runs (calibration.json, noise-floor.json): a second writer waits, then reads what
    the first wrote, rather than both reading the old file and the last rename losing the other's entry."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path.with_name(f".{path.name}.lock"), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


class RunStore:
    """The folder of one run; `add` puts a finished cell on disk before the next one starts."""

    def __init__(self, run_dir: Path):
        self.dir = Path(run_dir)
        self.logs = self.dir / "logs"
        self.rows: list[dict] = []
        self.series: list[dict] = []
        if os.path.lexists(self.dir / MEASUREMENTS):
            self.rows = _read_parquet(self.dir / MEASUREMENTS, row_schema()).to_pylist()
        if os.path.lexists(self.dir / TIMESERIES):
            self.series = _read_parquet(self.dir / TIMESERIES, timeseries_schema()).to_pylist()

    @property
    def run_id(self) -> str:
        return self.dir.name

    def create(self, meta: dict) -> None:
        self.logs.mkdir(parents=True, exist_ok=True)
        self.write_meta(meta)

    def discard_if_empty(self) -> None:
        """Remove the folder of a run that stopped before it wrote anything (a busy port, a missing tool)."""
        for d in (self.logs, self.dir):
            with contextlib.suppress(OSError):
                d.rmdir()   # only ever an empty folder

    def meta(self) -> dict:
        return read_meta(self.dir)

    def write_meta(self, meta: dict) -> None:
        atomic_write(self.dir / RUN_JSON, lambda p: p.write_text(json.dumps(meta, indent=2, default=str) + "\n"))

    def done(self) -> set[tuple]:
        return {tuple(r.get(k) for k in CELL_KEY) for r in self.rows}   # .get: runs from before a key column

    def add(self, row: dict | list[dict], series: list[dict] | None = None) -> None:
        """Store the rows of one cell (and its time series) on disk, replacing any with the same key.

        The time series goes first: a cell counts as done once its rows are in measurements.parquet."""
        rows = [row] if isinstance(row, dict) else row
        for r in rows:
            unknown = set(r) - set(COLUMNS)
            if unknown:
                raise ValueError(f"not in the results schema: {sorted(unknown)}")
        if series:
            keys = {tuple(r.get(k) for k in TIMESERIES_KEY) for r in series}
            self.series = [r for r in self.series if tuple(r.get(k) for k in TIMESERIES_KEY) not in keys] + [
                {c: r.get(c) for c in timeseries_schema().names} for r in series]
            ts = pa.Table.from_pylist(self.series, schema=timeseries_schema())
            atomic_write(self.dir / TIMESERIES, lambda p: pq.write_table(ts, p))
        keys = {tuple(r.get(k) for k in CELL_KEY) for r in rows}
        self.rows = [r for r in self.rows if tuple(r.get(k) for k in CELL_KEY) not in keys] + [
            {c: r.get(c) for c in COLUMNS} for r in rows]
        table = pa.Table.from_pylist(self.rows, schema=row_schema())
        atomic_write(self.dir / MEASUREMENTS, lambda p: pq.write_table(table, p))


def _with_schema(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """Runs stored before a column existed load with it empty, and a renamed column under its new name, so
    that every frame has the whole schema."""
    table = table.rename_columns([RENAMED.get(n, n) if RENAMED.get(n) not in table.column_names else n
                                  for n in table.column_names])
    for f in schema:
        if f.name not in table.column_names:
            table = table.append_column(f, pa.nulls(len(table), f.type))
    return table


def _read_parquet(path: Path, schema: pa.Schema) -> pa.Table:
    """A Parquet file of a run with every column of schema; BadFile when it is not one."""
    regular_file(path)
    try:
        return _with_schema(pq.read_table(path), schema)
    except (OSError, pa.ArrowException) as e:
        said = (str(e).strip().splitlines() or [type(e).__name__])[0]
        said = said.replace(f"Could not open Parquet input source '{path}': ", "")   # the path is said once
        raise BadFile(path, f"not a readable Parquet file ({said})") from None


def read_meta(run_dir: Path) -> dict:
    """A run folder's run.json; BadFile when it is not a JSON object."""
    return read_json(Path(run_dir) / RUN_JSON)


def read_json(path: Path) -> dict:
    """A JSON object bench wrote (run.json, calibration.json, noise-floor.json); BadFile when it is not one."""
    try:
        doc = json.loads(read_text(path, MAX_RUN_JSON_BYTES))
    except json.JSONDecodeError as e:
        raise BadFile(path, f"not valid JSON ({e})") from None
    if not isinstance(doc, dict):
        raise BadFile(path, f"a JSON {type(doc).__name__}, not the object bench writes")
    return doc


def new_run_dir(now, root: Path = RESULTS_DIR) -> Path:
    """A new run's folder, made now (0700): the id of its start time, or with -2, -3... when a folder of
    that second exists. mkdir without exist_ok, so a folder is never shared or reused, even by two
    commands that start in the same second."""
    Path(root).mkdir(parents=True, exist_ok=True)
    run_id, n = now.strftime("%Y%m%d-%H%M%S"), 1
    while True:
        d = Path(root) / (run_id if n == 1 else f"{run_id}-{n}")
        try:
            d.mkdir(mode=0o700)
            return d
        except FileExistsError:
            n += 1


def run_dirs(root: Path = RESULTS_DIR) -> list[Path]:
    """Run folders under root, oldest first (by run.json's start time, then name). A folder whose run.json
    does not read is skipped with a warning: one broken run does not hide the others."""
    root = Path(root)
    if os.path.lexists(root) and not root.is_dir():
        raise BadFile(root, "not a folder (the results folder holds one folder per run)")
    started = {}
    for p in root.iterdir() if root.exists() else ():
        if os.path.lexists(p / RUN_JSON):
            try:
                started[p] = str(read_meta(p).get("started_at", ""))
            except BadFile as e:
                warnings.warn(f"skipping run folder {p.name}: {e}", stacklevel=2)
    return sorted(started, key=lambda p: (started[p], p.name))


def find_run(run: str | Path | None, root: Path = RESULTS_DIR) -> Path:
    """A run folder from an id, a path, or None for the newest run."""
    if run is None:
        dirs = run_dirs(root)
        if not dirs:
            raise UsageError(f"no runs under {root}: start one with `bench run`")
        return dirs[-1]
    for candidate in (Path(run), Path(root) / str(run)):
        if os.path.lexists(candidate / RUN_JSON):
            return candidate
    raise UsageError(f"no run '{run}' (looked for {Path(root) / str(run)}/{RUN_JSON}); "
                     f"runs: {', '.join(p.name for p in run_dirs(root)) or 'none'}")


def load(runs: str | Path | Iterable[str | Path] | None = None, root: Path = RESULTS_DIR) -> pd.DataFrame:
    """The measurements of one run (id or path; None: the newest) or of several, as one DataFrame.

    One row per cell, columns as in row_schema(). A run without the file (no cell finished yet) adds no
    row; a file that does not read raises BadFile (a partial frame would read as a run that measured less).
    """
    if runs is None or isinstance(runs, (str, Path)):
        runs = [runs]
    frames = []
    for run in runs:
        path = find_run(run, root) / MEASUREMENTS
        if os.path.lexists(path):
            frames.append(_read_parquet(path, row_schema()).to_pandas())
    if not frames:
        return pd.DataFrame({c: pd.Series(dtype=row_schema().field(c).type.to_pandas_dtype()) for c in COLUMNS})
    return pd.concat(frames, ignore_index=True)


def load_timeseries(runs: str | Path | Iterable[str | Path] | None = None, root: Path = RESULTS_DIR) -> pd.DataFrame:
    """The per-second series of time-resolved cells (ramp profiles) of one run or several; columns as in
    timeseries_schema(), empty when no run has any. A file that does not read raises BadFile."""
    if runs is None or isinstance(runs, (str, Path)):
        runs = [runs]
    frames = []
    for run in runs:
        path = find_run(run, root) / TIMESERIES
        if os.path.lexists(path):
            frames.append(_read_parquet(path, timeseries_schema()).to_pandas())
    if not frames:
        return pd.DataFrame({c: pd.Series(dtype=timeseries_schema().field(c).type.to_pandas_dtype())
                             for c in timeseries_schema().names})
    return pd.concat(frames, ignore_index=True)


def load_meta(run: str | Path | None = None, root: Path = RESULTS_DIR) -> dict:
    return read_meta(find_run(run, root))
