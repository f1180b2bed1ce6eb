"""What a run shows on the terminal: one line per stored row, a progress bar with the cell being
measured, and notices. It subscribes to the loop's events (events.py) and measures nothing."""
from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from orchestrator.measure.events import Events


def level_label(row: dict) -> str:
    """How a row's load is named: c=256, 1000/s, step 3 (150 users), or capacity (a search's result),
    and its network level when a topology has several (c=256 app-db rtt 85 ms)."""
    network = f" {row['network']}" if row.get("network") else ""
    if _present(row.get("capacity_low_rps")) and not _present(row.get("rate")):
        return "capacity" + network
    if row.get("rate"):
        return f"{row['rate']:g}/s" + network
    if row.get("step"):
        return f"step {row['step']} u={row['concurrency']}" + network
    return f"c={row['concurrency']}" + network


def _present(value) -> bool:
    return value is not None and value == value


def capacity_line(row: dict) -> str:
    """The result of a search: the interval the capacity lies in, under the objective."""
    low, high = row["capacity_low_rps"], row.get("capacity_high_rps")
    span = f"{low:,.0f} to {high:,.0f}" if _present(high) else f"at least {low:,.0f}"
    past = f"\n{'':<45} past the knee, {escape(row['overload_verdict'])}" if row.get("overload_verdict") else ""
    return (f"{row['target']:<34} {row['scenario']:<10} [bold]capacity {span} req/s[/] with {escape(row['slo'])} "
            f"({row['verdict']}){past}")


def result_line(row: dict) -> str:
    if _present(row.get("capacity_low_rps")) and not _present(row.get("rate")):
        return capacity_line(row)
    if row["status"] != "ok":
        return (f"[red]FAILED[/] {row['target']} {row['scenario']} {level_label(row)}: "
                f"{escape(row['reason'].splitlines()[0][:160])}")
    flags = f" [yellow]{escape('[' + row['check_flags'] + ']')}[/]" if row["check_flags"] else ""

    def num(key: str, spec: str) -> str:
        """A figure, or a dash of the same width where the window had none (a ramp step nobody ran)."""
        value = row.get(key)
        return format(value, spec) if value is not None and value == value else "–".rjust(len(format(0.0, spec)))
    return (f"{row['target']:<34} {row['scenario']:<10} {level_label(row):<10} "
            f"{num('rps', '>10,.0f')} rps  p50 {num('latency_p50_ms', '7.2f')} ms  p99 {num('latency_p99_ms', '8.2f')} ms  "
            f"cpu {num('server_cpu_pct', '4.0f')}%  rss {num('server_peak_rss_mb', '5.0f')} MiB  "
            f"thr {num('server_peak_threads', '.0f')}{flags}"
            + (f"  {escape(row['verdict'])}" if row.get("verdict") else ""))


class ConsoleView:
    """Prints a run's events and keeps its progress bar; a context manager around the loop."""

    def __init__(self, console: Console, events: Events):
        self.console = console
        self.progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(),
                                 console=console, transient=True)
        self.task = None
        events.notice.add_listener(self.notice)
        events.run_started.add_listener(self.run_started)
        events.target_starting.add_listener(lambda target: self._describe(f"starting {target.id}"))
        events.target_started.add_listener(self.target_started)
        events.cell_starting.add_listener(self.cell_starting)
        events.cell_progress.add_listener(lambda target, text: self._describe(f"{target.id} {text}"))
        events.cell_measured.add_listener(lambda rows, series: self.cell_done(rows))
        events.cell_failed.add_listener(self.cell_done)
        events.infra_restarted.add_listener(
            lambda dead: console.print(f"[yellow]{', '.join(dead)} died: restarting the infrastructure[/]"))
        events.run_interrupted.add_listener(
            lambda kept, run_dir: console.print(f"[yellow]interrupted[/]: {kept} cells kept in {run_dir}; "
                                                f"continue with `bench run --resume {run_dir.name}`"))

    def __enter__(self) -> "ConsoleView":
        return self

    def __exit__(self, *exc) -> None:
        if self.task is not None:
            self.progress.stop()

    def notice(self, text: str, warning: bool = False) -> None:
        # a target id before a colon reads as an emoji code (fixture:ok: is 🆗)
        self.console.print(f"[yellow]{text}[/]" if warning else text, emoji=False)

    def run_started(self, cells: int) -> None:
        self.progress.start()
        self.task = self.progress.add_task("starting", total=cells)

    def _describe(self, text: str) -> None:
        if self.task is not None:
            self.progress.update(self.task, description=text)

    def target_started(self, target, started) -> None:
        self.console.print(f"started {target.id} in {started.startup_s:.2f} s, "
                           f"RSS {started.rss_after_start_mb:.0f} MiB")

    def cell_starting(self, target, cell) -> None:
        scenario, conc, rate, network = cell
        self._describe(f"{target.id} {scenario} " + (f"{rate:g}/s" if rate else f"c={conc}")
                       + (f" ({network})" if network else ""))

    def cell_done(self, rows: list[dict]) -> None:
        for row in rows:
            # a mix's scenarios in each probe are in the rows and the table at the end; here, their capacity
            if row.get("mix") and row["scenario"] != row["mix"] and _present(row.get("rate")):
                continue
            self.console.print(result_line(row))
        if self.task is not None:
            self.progress.advance(self.task)
