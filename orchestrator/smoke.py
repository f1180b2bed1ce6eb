"""The load smoke: does a target survive the load the studies put on it? (`bench verify --load N`)

After a target passes verification, each scenario it declares gets a burst of N requests on N
connections at once (the studies use 500 to 2,000), from k6, back to back in the same JVM; then every
scenario is verified again. The target survives when every request of every burst got a 2xx answer
within DRAIN_S (no socket error, no timeout), it is still running, and its answers still meet the
contract. No figure is kept: the JVM is cold and the burst short, so it proves survival, not speed.
A burst ends when its last answer comes, so a slow scenario's backlog (1,000 cpu-yield requests
behind one core take several seconds here) is part of its burst, not a wait after it. A target that
dies is named with the cause its log gives.

A burst rather than a window of wrk: wrk runs whole seconds and leaves the backlog of its last
requests to drain after it (1.15 s plus 0.6 s a scenario, on average, on 24 targets here), and
within one second a slow scenario could answer nothing and still pass.
"""
from __future__ import annotations

import time
from pathlib import Path

from . import drivers
from .catalog import Target
from .drivers.base import LoadResult, LoadSpec
from .environment import wait_ready
from .errors import TargetFailed
from .procs import server_failure
from .scenarios import SCENARIOS
from .verify import verify

# Each request is answered within this long or fails the target (the slowest burst here, 1,000
# cpu-yield requests behind one core, took 9 s), and the health path after the burst too.
DRAIN_S = 120.0


def _failures(r: LoadResult, asked: int) -> str:
    counts = {"non-2xx": r.errors_status, "connect": r.errors_connect, "no answer": r.errors_read,
              "write": r.errors_write, "timeout": r.errors_timeout,
              "never sent (k6 stopped the burst at its max duration)": max(0, asked - r.requests - r.errors)}
    return ", ".join(f"{n} {what}" for what, n in counts.items() if n)


def survives(target: Target, started, settings, connections: int, logs: Path, host: str = "127.0.0.1") -> str:
    """'' when the started target survived a burst at `connections` on each of its scenarios and
    still answers by the contract afterwards; else why not, naming the scenario."""
    for name in target.framework.scenarios:
        spec = LoadSpec(port=settings.port, scenario=SCENARIOS[name], concurrency=connections, requests=connections,
                        duration_s=0, cpus=settings.loadgen_cpus, timeout_s=DRAIN_S, host=host,
                        out_dir=logs / "smoke" / target.id.replace(":", "-"))
        try:
            r = drivers.get("k6").run(spec)
        except drivers.DriverFailed as e:
            return f"{name} at {connections} connections: load generator failed: {e}"
        try:   # the same wait as a start's
            wait_ready(started.server, settings.port, target.framework.health_path, DRAIN_S, time.monotonic(), host)
            answered = True
        except TargetFailed:
            answered = False
        code = started.server.exit_code()
        if code is not None:
            return server_failure(f"{name} at {connections} connections: target exited with {code}",
                                  started.server.log_path)
        failed = _failures(r, connections)
        if failed:
            return server_failure(f"{name} at {connections} connections: {failed} of {connections} requests failed",
                                  started.server.log_path)
        if not answered:
            return server_failure(f"{name} at {connections} connections: no answer on "
                                  f"{target.framework.health_path} within {DRAIN_S:.0f} s after the burst",
                                  started.server.log_path)
    after = verify(target, settings.port, host)
    if not after.ok:
        code = started.server.exit_code()
        what = f"after {connections} connections, {after.reason}"
        return server_failure(f"{what} (target exited with {code})", started.server.log_path) if code is not None \
            else what
    return ""
