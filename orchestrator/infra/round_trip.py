"""The round trip to another host, probed rather than assumed: the time a TCP connect takes to be
answered, by the far kernel's reset (a closed port) or by its SYN-ACK (an open one). Either is one
round trip. The probe runs as its own process so that it can be pinned and put into the probing
host's network namespace; a connect the link lost times out and is left out.
"""
from __future__ import annotations

import statistics
import subprocess
import sys

from orchestrator.errors import BenchError
from orchestrator.infra.procs import in_netns, pinned

PROBES = 10
CLOSED_PORT = 9   # discard: nothing listens on it here, so the far kernel answers with a reset

_SCRIPT = """
import socket, sys, time
addr, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
out = []
for _ in range(n * 2):
    if len(out) == n:
        break
    s = socket.socket(); s.settimeout(5)
    t = time.perf_counter()
    try:
        s.connect((addr, port))
        out.append((time.perf_counter() - t) * 1000)
    except ConnectionRefusedError:
        out.append((time.perf_counter() - t) * 1000)
    except OSError:
        pass
    finally:
        s.close()
print(" ".join(f"{x:.3f}" for x in out))
"""


def probe(address: str, port: int = CLOSED_PORT, *, what: str, netns: str | None = None,
          cpus: str | None = None) -> dict:
    """Median, min and max of PROBES connects to address:port, in ms, from netns (None: this machine's
    stack). `what` names the path in the error when every probe was lost."""
    argv = in_netns(pinned([sys.executable, "-c", _SCRIPT, address, str(port), str(PROBES)], cpus), netns)
    r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    samples = [float(x) for x in r.stdout.split()] if r.returncode == 0 else []
    if not samples:
        raise BenchError(f"the round trip of {what} could not be probed: "
                         f"{r.stderr.strip()[-300:] or 'every probe was lost'}")
    return {"median_ms": round(statistics.median(samples), 3), "min_ms": round(min(samples), 3),
            "max_ms": round(max(samples), 3), "probes": len(samples)}
