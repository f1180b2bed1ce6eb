"""The events a run publishes, and the hooks to subscribe to them (the shape of Locust's
event.py). The loop only fires events; the store, the console and the progress bar listen.
Listeners run synchronously, in the order they were added: the store is added first, so a cell
is on disk before anything prints it."""
from __future__ import annotations

from typing import Callable


class EventHook:
    """One kind of event: listeners are called with its keyword arguments."""

    def __init__(self) -> None:
        self._listeners: list[Callable[..., None]] = []

    def add_listener(self, listener: Callable[..., None]) -> Callable[..., None]:
        self._listeners.append(listener)
        return listener

    def fire(self, **kwargs) -> None:
        for listener in list(self._listeners):
            listener(**kwargs)


class Events:
    """What happens in a run, in the order it can happen."""

    def __init__(self) -> None:
        self.notice = EventHook()            # text, warning: bool -- a leftover removed, a busy machine
        self.run_started = EventHook()       # cells: int, the cells still to measure
        self.target_starting = EventHook()   # target
        self.target_started = EventHook()    # target, started
        self.cell_starting = EventHook()     # target, cell
        self.cell_progress = EventHook()     # target, text -- within a long cell (a search's probes)
        self.cell_measured = EventHook()     # rows, series
        self.cell_failed = EventHook()       # rows (status failed, with the reason)
        self.infra_restarted = EventHook()   # dead: list of what died
        self.run_interrupted = EventHook()   # kept: rows on disk, run_dir
