"""The downstream service as the rest of bench meets it: its port and delay by default, and its status
page (nginx's stub_status), whose counters are each cell's evidence of the calls made and whose calls in
flight prove a fan-out's calls overlap. Running it is infra/downstream.py's."""
from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from orchestrator.core import httpclient
from orchestrator.errors import BenchError

DEFAULT_PORT = 18280
DEFAULT_MS = 20
MAX_MS = 60_000
STATUS_PATH = "/status"


@dataclass(frozen=True)
class Status:
    """One poll of stub_status, less the poll itself."""
    calls: int         # requests answered or in progress since the start, polls not counted
    in_flight: int     # calls in progress now
    connections: int   # client connections open now


def parse_status(text: str, polls: int) -> Status:
    """stub_status's page ("Active connections: 2 / server accepts handled requests / 2 2 9 /
    Reading: 0 Writing: 1 Waiting: 1"); `polls` is how many polls (this one included) it counted."""
    lines = text.split("\n")
    active = int(lines[0].split(":")[1])
    requests = int(lines[2].split()[2])
    words = lines[3].split()
    writing = int(words[words.index("Writing:") + 1])
    return Status(calls=requests - polls, in_flight=writing - 1, connections=active - 1)


class StatusReader:
    """Polls the downstream's counters, one connection each time (nginx counts every poll as a
    request, subtracted here)."""

    def __init__(self, host: str, port: int):
        self.host, self.port, self.polls = host, port, 0

    def read(self) -> Status:
        self.polls += 1
        r = httpclient.request(self.port, "GET", STATUS_PATH, host=self.host, timeout=1)
        if r.status != 200:
            raise BenchError(f"the downstream's {STATUS_PATH} answered {r.status}")
        return parse_status(r.body.decode("ascii", "replace"), self.polls)

    def peak_in_flight(self, send: Callable[[], object], calls: int, tries: int) -> int:
        """The most calls the downstream had in progress at one poll while `send` ran, `tries` times at
        most and until it had seen `calls` at once (polled from a thread of its own meanwhile)."""
        done, peak = threading.Event(), [0]

        def poll():
            while not done.is_set():
                try:
                    peak[0] = max(peak[0], self.read().in_flight)
                except OSError:
                    return
        poller = threading.Thread(target=poll, daemon=True)
        poller.start()
        try:
            for _ in range(tries):
                send()
                if peak[0] >= calls:
                    break
        finally:
            done.set()
            poller.join(timeout=5)
        return peak[0]
