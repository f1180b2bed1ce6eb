"""`bench locust-worker`: Locust workers on a load machine of their own, for runs on another machine
whose masters wait for them (`bench run --locust-master ADDRESS[:PORT]`).

Every cell of a run has a master of its own, which quits its workers when the cell ends; so this
keeps `processes` workers asking for the next master, each a `locust --worker -f <this checkout's
locustfile>` that gets the bench configuration with the master's first spawn message, started again
whenever one ends. Never `-f -`: Locust then runs whatever file the master sends, and it checks
nothing about the master, so whoever answered at its address would run code on this machine. The
master still decides the test's parameters (the target's address, the requests): docs/docker.md
says to reach it only over a trusted network, an SSH tunnel or a VPN. A worker counts as busy while it holds a connection to
the master; after `idle_s` without any busy worker, or on Ctrl-C, everything stops.
"""
from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Callable

import psutil

from orchestrator.drivers.locust import LOCUSTFILE, OTHER_LOCUSTFILE_EXIT, LocustDriver
from orchestrator.errors import BenchError
from orchestrator.infra.procs import log_tail, spawn, stop

NO_MASTER = "Failed to connect to the Locust master"   # Locust's line when no master answered in 5 min
# A worker started as one cell's master quits can fail once for that master's sake (CI saw "No User
# class found!" from a worker restarted at a cell boundary): only a failure that repeats is the
# worker's own, one that starting it again would not cure.
FAILED_STARTS = 3


def connected(proc: subprocess.Popen, address: str, port: int) -> bool:
    """Whether the worker holds a TCP connection to the master."""
    try:
        return any(c.raddr and c.raddr.ip == address and c.raddr.port == port and c.status == psutil.CONN_ESTABLISHED
                   for c in psutil.Process(proc.pid).net_connections(kind="tcp"))
    except psutil.Error:
        return False


def serve(address: str, port: int, processes: int, cpus: str | None, idle_s: float, logs: Path,
          say: Callable[[str], None]) -> int:
    """Keep `processes` workers for the masters at address:port until idle for idle_s; returns the
    number of cells served."""
    argv = [LocustDriver().executable(), "--worker", "-f", str(LOCUSTFILE), "--master-host", address, "--master-port", str(port),
            "--loglevel", "WARNING"]
    logs.mkdir(parents=True, exist_ok=True)
    paths = [logs / f"worker{i + 1}.log" for i in range(processes)]
    procs: list[subprocess.Popen | None] = [None] * processes
    busy = [False] * processes   # whether each worker has been connected to a master since it started
    failed = [0] * processes     # each worker's starts in a row that ended before any master connected
    served, last_busy = 0, time.monotonic()
    say(f"{processes} Locust worker(s) waiting for masters at {address}:{port}; logs in {logs}")
    try:
        while True:
            for i, proc in enumerate(procs):
                if proc is not None and proc.poll() is None:
                    if connected(proc, address, port):
                        busy[i], last_busy = True, time.monotonic()
                    continue
                if proc is not None:
                    tail = log_tail(paths[i], 3)
                    if proc.returncode == OTHER_LOCUSTFILE_EXIT:
                        raise BenchError(f"worker {i + 1}: {tail} (log: {paths[i]})")
                    if busy[i]:
                        served, failed[i] = served + 1, 0
                        last_busy = time.monotonic()
                        say(f"worker {i + 1}: its master quit it (exit {proc.returncode}; {served} served)")
                    elif NO_MASTER not in tail:   # it could not even wait
                        failed[i] += 1
                        if failed[i] >= FAILED_STARTS:
                            raise BenchError(f"a Locust worker exited with {proc.returncode} before any master "
                                             f"connected, {failed[i]} times in a row: {tail or 'no output'} "
                                             f"(log: {paths[i]})")
                procs[i], busy[i] = spawn(argv, log_path=paths[i], cpus=cpus), False
            if time.monotonic() - last_busy > idle_s:
                say(f"no master for {idle_s:.0f} s: stopping")
                return served
            time.sleep(0.5)
    finally:
        for proc in procs:
            if proc is not None:
                stop(proc, grace=5)
