"""The load smoke: does a target survive the load the studies put on it? (`bench verify --load N`)

After a target passes verification, each scenario it declares gets one short window of wrk at N
connections (the studies use 500 to 2,000), back to back in the same JVM, and then every scenario
is verified again. The target survives when no request of any window failed (a socket error or a
non-2xx answer), it is still running, and its answers still meet the contract. No figure is kept:
the windows are short and the JVM cold, so they prove survival, not speed; a window may even end
before a slow scenario answers anything (a pool of 16 threads sleeping 100 ms behind 1,000
connections), which is no failure. A target that dies is named with the cause its log gives.
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

WINDOW_S = 1.0
# After a window the target still owes an answer to each of its connections' last requests (1,000
# cpu-yield requests queued behind one core take tens of seconds here): it has survived when it
# answers its health path again within this long, and is verified only then.
DRAIN_S = 120.0


def _failures(r: LoadResult) -> str:
    counts = {"non-2xx": r.errors_status, "connect": r.errors_connect, "read": r.errors_read,
              "write": r.errors_write, "timeout": r.errors_timeout}
    return ", ".join(f"{n} {what}" for what, n in counts.items() if n)


def survives(target: Target, started, settings, connections: int, logs: Path, host: str = "127.0.0.1") -> str:
    """'' when the started target survived a window at `connections` on each of its scenarios and
    still answers by the contract afterwards; else why not, naming the scenario."""
    for name in target.framework.scenarios:
        spec = LoadSpec(port=settings.port, scenario=SCENARIOS[name], concurrency=connections, duration_s=WINDOW_S,
                        cpus=settings.loadgen_cpus, timeout_s=settings.request_timeout_s, host=host,
                        out_dir=logs / "smoke" / target.id.replace(":", "-"))
        try:
            r = drivers.get("wrk").run(spec)
        except drivers.DriverFailed as e:
            return f"{name} at {connections} connections: load generator failed: {e}"
        try:   # the same wait as a start's, for the health path after the window's backlog
            wait_ready(started.server, settings.port, target.framework.health_path, DRAIN_S, time.monotonic(), host)
            answered = True
        except TargetFailed:
            answered = False
        code = started.server.exit_code()
        if code is not None:
            return server_failure(f"{name} at {connections} connections: target exited with {code}",
                                  started.server.log_path)
        failed = _failures(r)
        if failed:
            return f"{name} at {connections} connections: {failed} of {r.requests + r.errors} requests failed"
        if not answered:
            return server_failure(f"{name} at {connections} connections: no answer on "
                                  f"{target.framework.health_path} within {DRAIN_S:.0f} s after the load",
                                  started.server.log_path)
    after = verify(target, settings.port, host)
    if not after.ok:
        code = started.server.exit_code()
        what = f"after {connections} connections, {after.reason}"
        return server_failure(f"{what} (target exited with {code})", started.server.log_path) if code is not None \
            else what
    return ""
