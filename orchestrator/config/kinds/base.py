"""What every profile kind is: a Kind owns the fields of a profile file that only it reads, the command
line's options that apply to it, its cells (levels) and the rows each writes, its warm-up, how it is
described, and the loop that measures one of its cells; CellRun is what that loop drives its loads
through. Kinds are stateless objects that take the Profile (the stored data) as an argument, so that a
run.json keeps the same flat profile whatever kinds exist. The defaults are those of a closed loop at
each concurrency for a fixed time, measured in one window: a kind overrides only where it differs."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, Protocol

from orchestrator.config.documents import Document
from orchestrator.config.load import LoadResult, LoadSpec
from orchestrator.config.scenarios import Scenario

MAX_CONNECTIONS = 20_000

Level = tuple[int, "float | None"]                 # (concurrency, rate) of a cell
RowKey = tuple[int, "float | None", "int | None"]  # (concurrency, rate, step) of a row
Rows = tuple[list[dict], list[dict]]               # measurement rows, per-second series


class CellRun(Protocol):
    """A cell under way, its target warmed up (measure/cell.py's WarmedUpCell): all a kind's measure()
    may use. It lives in measure/ and is handed in, so that a kind needs nothing from measure/ to say
    how its cells run."""
    profile: Any                    # the run's Profile
    scenario: Scenario
    base: dict                      # the columns every row of the cell carries (identity, warm-up)
    load: LoadSpec                  # the cell's own load: its concurrency, rate, duration, requests, ramp
    name: str                       # the cell's generator and recording files are named by it
    progress: Callable[[str], None]  # a line for the console while the cell runs

    def drive(self, load: LoadSpec, name: str) -> tuple[LoadResult, Any]:
        """Run one load while sampling the server; (its result, the sampler); TargetFailed if the
        target died or stopped answering."""

    def window(self, sampler: Any, result: LoadResult, whole_load: bool = False) -> Any:
        """The server's figures over a result's own window (whole_load: the sampler saw only it)."""

    def flags(self, concurrency: int, result: LoadResult, sample: Any) -> list[str]:
        """What is suspect about a window (checks.py, evidence.py, the warm-up's steadiness)."""

    def row(self, columns: dict, result: LoadResult, sample: Any, flags: list[str]) -> dict:
        """A measurement row: the cell's columns, these, and the window's figures."""

    def keep(self, name: str, results: list, rows: list[dict]) -> list[dict]:
        """The rows with the Flight Recorder columns of the load named name (when it records); a mix's
        window followed by a row per scenario in it."""

    def parts(self, row: dict, result: LoadResult) -> list[dict]:
        """A mix's window's rows per scenario in it (measure/rows.py's part_rows); [] for one scenario."""

    def cold_series(self, result: LoadResult, sampler: Any) -> list[dict]:
        """A cold cell's per-second series of answers (see measure/cell.py); [] for a warm one."""

    def second(self, record: dict, sampler: Any, at: float | None = None) -> dict:
        """The per-second series row of a driver's one-second record (the server's figures from `at`,
        epoch seconds, when given)."""

    def calm(self) -> float:
        """Wait until the server and the load CPUs are quiet and the host steals none of them (up to
        30 s); the seconds waited."""

    def open_ceiling(self) -> float | None:
        """The highest arrival rate `bench calibrate` measured the driver to keep here (None: unknown)."""


class Kind:
    """A kind of load profile; one instance per kind, registered in config/kinds/__init__.py."""
    name = ""
    fields: tuple[str, ...] = ()     # its own keys in a profile file, beyond profiles.COMMON_FIELDS
    options: tuple[str, ...] = ()    # Profile fields the command line may set for it, beyond every kind's (option_table)
    default_concurrency: tuple[int, ...] = (256,)
    # A fixed number of clients, each waiting for its answer: Little's law ties rps and latency to them.
    closed_loop = False
    # Arrivals on a schedule: a cell is held against the generator's open-model ceiling, not its closed-loop one.
    open_model = False
    # Its cells are capped by that ceiling: the run measures it first when it is not yet known.
    needs_open_ceiling = False
    # A cell is one window of load: it can meet a cold JVM (modes.STARTS), where a ramp's steps or a
    # search's probes would each meet a JVM the ones before had warmed.
    single_window = True
    # Its cells search for a capacity: its rows are probes and each search's capacity row (report/capacity.py).
    searches = False
    # What its level column counts, in a chart's words: connections, or a ramp's users.
    level_word = "concurrency"
    # A cell at one rate run with several VU counts is one cell per VU count (analysis.tidy): p99 2 ms at
    # 100 VUs and 40 ms at 1,000 are different cells, never repeats of one.
    cells_by_vus = False

    def read(self, doc: Document, profile):
        """The profile with the fields only this kind reads, validated (ManifestError names the field)."""
        return profile

    def conflict(self, profile) -> tuple[str, str] | None:
        """(field, why) when the profile's values make it impossible to run; None when it can run."""
        return None

    def override(self, profile, changes: dict):
        """The profile with what the command line set (Profile fields, or an option this kind reads)."""
        return replace(profile, **changes)

    def levels(self, profile) -> list[Level]:
        """(concurrency, rate) of each cell per scenario."""
        return [(c, None) for c in profile.concurrency]

    def row_keys(self, profile, concurrency: int, rate: float | None) -> list[RowKey]:
        """(concurrency, rate, step) of the measurement rows one cell writes."""
        return [(concurrency, rate, None)]

    def open_ceiling_needed(self, profile) -> float | None:
        """A kind that needs its generator's open-model ceiling (needs_open_ceiling): the rate up to
        which knowing it is enough (None: the whole ceiling)."""
        return None

    def warmup_rate(self, profile, rate: float | None) -> float | None:
        """The arrival rate of the warm-up (None: a closed loop)."""
        return rate

    def warmup_connections(self, profile, concurrency: int) -> int:
        """Connections (VUs for a rate) of the warm-up when the profile does not set them."""
        return concurrency

    def measured_s(self, profile) -> float:
        """Seconds of load per cell, for estimates."""
        return profile.duration_s

    def describe(self, profile) -> str:
        """The load of its cells in one line (`bench profiles`, the start of `bench run`)."""
        raise NotImplementedError(self.name)

    def measured_words(self, prof: dict) -> str:
        """What a cell measures, from the profile as run.json stores it (the report's facts)."""
        return f"{prof.get('duration_s', '?')} s measured"

    def closed_loop_probe(self, common: dict, requests: int) -> LoadSpec | None:
        """A closed loop of common's concurrency in this kind's shape, for `bench calibrate` to find a
        generator's ceiling with (None: its loads are not a closed loop)."""
        return None

    def measure(self, cell: CellRun) -> Rows:
        """Measure one cell: here one load, one row over all of it."""
        load = cell.load
        result, sampler = cell.drive(load, cell.name)
        sample = cell.window(sampler, result, whole_load=True)
        row = cell.row({"concurrency": load.concurrency, "rate": load.rate}, result, sample,
                       cell.flags(load.concurrency, result, sample))
        return cell.keep(cell.name, [result], [row]), cell.cold_series(result, sampler)
