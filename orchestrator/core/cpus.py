"""CPU lists as taskset writes them ("1", "0-1", "0,2-3"): which CPUs the server, the load generator
and the infrastructure are pinned to; and the time each CPU spent, from /proc/stat (busy, stolen by the
host, running a process), with the wait for the machine to be quiet that every load starts after."""
from __future__ import annotations

import os
import time

from orchestrator.core.schema import HOST_STEAL

TICKS_PER_S = os.sysconf("SC_CLK_TCK")   # /proc/stat's unit


def parse_cpus(cpus: str) -> set[int]:
    """The CPUs of a taskset list such as "1", "0-1" or "0,2-3"."""
    out: set[int] = set()
    for part in cpus.split(","):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def cpu_count(cpus: str) -> int:
    return len(parse_cpus(cpus))


def cpu_jiffies() -> dict[int, list[int]]:
    """Each CPU's jiffies since boot, from /proc/stat: user nice system idle iowait irq softirq steal."""
    out = {}
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("cpu") and not line.startswith("cpu "):
                name, *fields = line.split()
                out[int(name[3:])] = [int(v) for v in fields[:8]]
    return out


def cpu_ticks(cpus: set[int], jiffies: dict[int, list[int]] | None = None) -> tuple[int, int]:
    """(busy, total) jiffies of the given CPUs since boot: everything that ran there (every process,
    the kernel's softirq and interrupts, steal) counts as busy; idle and iowait do not."""
    values = [v for cpu, v in (jiffies or cpu_jiffies()).items() if cpu in cpus]
    return sum(sum(v) - v[3] - v[4] for v in values), sum(sum(v) for v in values)


def steal_ticks(cpus: set[int], jiffies: dict[int, list[int]]) -> tuple[int, int]:
    """(stolen, total) jiffies of the given CPUs since boot: time the host gave their vCPUs to others."""
    values = [v for cpu, v in jiffies.items() if cpu in cpus]
    return sum(v[7] for v in values), sum(sum(v) for v in values)


def run_ticks(cpus: set[int], jiffies: dict[int, list[int]]) -> int:
    """Jiffies the given CPUs ran a process since boot: user, nice and system (a guest's time is inside
    user). Not irq and softirq: a kernel with IRQ time accounting charges them to no process, and they
    are mostly the target's own sockets (1-17 % of CPU 1 over 5-s intervals of a Vert.x run), which
    would flag every busy cell; a kernel without it charges a tick that lands in a softirq to the
    process it interrupted, so the target's own time can then exceed what its CPU ran by that much."""
    return sum(v[0] + v[1] + v[2] for cpu, v in jiffies.items() if cpu in cpus)


def steal_since(cpus: set[int], before: tuple[int, int] | None = None) -> tuple[tuple[int, int], float | None]:
    """The given CPUs' (stolen, total) jiffies now, and the % of their time stolen since `before`."""
    now = steal_ticks(cpus, cpu_jiffies())
    total = now[1] - before[1] if before else 0
    return now, (100.0 * (now[0] - before[0]) / total if total > 0 else None)


IDLE_SERVER = 0.05   # of one core: a JVM with no load (GC, JIT, timers) stays well below it
IDLE_CPUS = 0.10     # of the load-generator CPUs' time: idle Redis, MariaDB and wires stay well below it


def settle(server, loadgen_cpus: set[int], max_s: float = 30.0, step_s: float = 0.5,
           steal_cpus: set[int] | None = None) -> float:
    """Wait until the server (a running target, read by its usage(); None if none runs) and the
    load-generator CPUs are quiet for step_s (up to max_s), and the host steals no more than HOST_STEAL
    of steal_cpus (the load-generator CPUs unless given: the server's too, where they are this
    machine's; none, an empty set); returns the seconds waited. Requests the last load left queued keep the server or the
    database busy after the generator stops, and a round trip probed meanwhile (on those CPUs, through
    wires that run there) reads their contention, not the link; a host that holds the vCPUs makes any
    probe read the host."""
    def cpu_s() -> float | None:
        u = server.usage() if server else None
        return u.cpu_s if u else (None if server else 0.0)

    steal_cpus = loadgen_cpus if steal_cpus is None else steal_cpus
    t0 = time.monotonic()
    last, jiffies = cpu_s(), cpu_jiffies()
    while last is not None and time.monotonic() - t0 < max_s:
        time.sleep(step_s)
        now, now_jiffies = cpu_s(), cpu_jiffies()
        if now is None:
            break
        (busy0, total0), (busy1, total1) = cpu_ticks(loadgen_cpus, jiffies), cpu_ticks(loadgen_cpus, now_jiffies)
        own = steal_ticks(loadgen_cpus, now_jiffies)[0] - steal_ticks(loadgen_cpus, jiffies)[0]
        (stolen0, all0), (stolen1, all1) = steal_ticks(steal_cpus, jiffies), steal_ticks(steal_cpus, now_jiffies)
        # steal counts as busy in cpu_ticks: a quiet CPU the host holds is told apart by it
        if now - last <= IDLE_SERVER * step_s and busy1 - busy0 - own <= IDLE_CPUS * (total1 - total0) \
                and stolen1 - stolen0 <= HOST_STEAL * (all1 - all0):
            break
        last, jiffies = now, now_jiffies
    return round(time.monotonic() - t0, 2)
