"""Ctrl-C and SIGTERM stop a run as a KeyboardInterrupt, and stay remembered.

Python raises the interrupt wherever the main thread happens to be. Landing in a finalizer (a
`__del__`, a logging lock released during garbage collection) it is printed as "Exception ignored"
and lost, and the run went on to finish as if nobody had asked it to stop. The run checks `stop_if_asked`
between cells, so an interrupt lost that way still stops it at the next one."""
from __future__ import annotations

import contextlib
import signal
import threading

_asked = threading.Event()


def on_signal(signum, frame):
    _asked.set()
    raise KeyboardInterrupt


def install() -> None:
    # A shell starts background jobs with SIGINT ignored, and Python keeps that: Ctrl-C (or a
    # supervisor's SIGINT) must still stop a run cleanly, however bench was started.
    signal.signal(signal.SIGINT, on_signal)


def stop_if_asked() -> None:
    if _asked.is_set():
        raise KeyboardInterrupt


@contextlib.contextmanager
def quiet_sigterm():
    previous = signal.signal(signal.SIGTERM, on_signal)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
