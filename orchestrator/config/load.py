"""A load as every stage speaks of it: what to send (LoadSpec, with a ramp's steps), and what a
driver reports for one measured window (LoadResult, its latency fields and an open model's
arrivals)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator import lazy
from orchestrator.config.scenarios import Scenario
from orchestrator.core.schema import PERCENTILES

np = lazy.module("numpy")


@dataclass(frozen=True)
class Ramp:
    """Stepped users (Locust): the ramp profile's shape, which the drivers execute."""
    start_users: int
    step_users: int
    step_s: float
    steps: int
    workers: int = 0        # Locust worker processes beside a master; 0: one standalone process

    @property
    def duration_s(self) -> float:
        return self.step_s * self.steps

    def users(self, step: int) -> int:
        """Users during step (1-based)."""
        return self.start_users + (step - 1) * self.step_users


@dataclass(frozen=True)
class LoadSpec:
    port: int
    scenario: Scenario
    concurrency: int          # connections (wrk, h2load), VUs (k6), users at the start (Locust)
    duration_s: float
    cpus: str                 # where the generator runs (taskset list)
    timeout_s: float          # per request; far above the worst expected latency
    out_dir: Path             # for the generator's own files
    requests: int = 0         # burst: send this many, then stop
    rate: float | None = None  # open model: arrivals per second
    ramp: Ramp | None = None  # stepped users
    host: str = "127.0.0.1"   # the server's address (another host's in a topology: topology.py)
    # Locust workers on a host of their own (topology.py's `workers`): its namespace, and this
    # machine's address that host reaches the master at (the server's address is `host` for them too)
    workers_netns: str | None = None
    master_host: str = "127.0.0.1"
    # Locust workers on other machines (--locust-master): started there by `bench locust-worker`,
    # they connect to master_host:master_port (0: a free port, for workers started here)
    workers_elsewhere: bool = False
    master_port: int = 0
    # open model (pacer): segments that follow the first `duration_s` at `rate`, (rate, seconds) each,
    # in one window (a spike: 500/s for 10 s, then 2,000/s for 10 s, then 500/s for 30 s)
    then: tuple[tuple[float, float], ...] = ()

    @property
    def total_s(self) -> float:
        """The whole window: the first segment and every one after it."""
        return self.duration_s + sum(seconds for _, seconds in self.then)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}{self.scenario.path}"

    @property
    def stem(self) -> str:
        """A file name stem for this load's files, distinct per scenario and level."""
        level = f"r{self.rate:g}" if self.rate else f"c{self.concurrency}"
        return f"{self.scenario.name}-{level}" + "".join(f"-r{r:g}x{s:g}" for r, s in self.then)


# One arrival of an open model, as LoadResult.arrivals keeps it: due (s from the window's start), its
# latency from then (ms; 0 without an answer) and its HTTP status, or a negative code without an answer
# (NOT_SENT: it was never sent, all connections busy until the timeout).
ARRIVAL = [("due_s", "<f8"), ("latency_ms", "<f8"), ("status", "<i2")]
NOT_SENT = -4


def good(arrivals) -> np.ndarray:
    """The arrivals answered with a status below 400."""
    return (arrivals["status"] > 0) & (arrivals["status"] < 400)


@dataclass
class LoadResult:
    """What every driver reports for one measured window. Latencies in milliseconds."""
    requests: int
    duration_s: float
    bytes: int = 0
    errors_connect: int = 0
    errors_read: int = 0
    errors_write: int = 0
    errors_timeout: int = 0
    errors_status: int = 0    # responses with a status >= 400
    latency_min: float = float("nan")
    latency_mean: float = float("nan")
    latency_stdev: float = float("nan")
    latency_p50: float = float("nan")
    latency_p75: float = float("nan")
    latency_p90: float = float("nan")
    latency_p95: float = float("nan")
    latency_p99: float = float("nan")
    latency_p999: float = float("nan")
    latency_max: float = float("nan")
    loadgen_cpu_s: float = float("nan")   # all of the generator's processes, from start to exit
    loadgen_wall_s: float = float("nan")  # how long they ran: start-up, the window and the drain
    # Locust with workers (one single-threaded process each): the busiest process's CPU in % of one
    # core, and how many of them could send at once (each is one core at most; workers here share
    # the load-generator CPUs). None and 1 for a generator that is one process.
    loadgen_busiest_pct: float | None = None
    loadgen_processes: int = 1
    # wrk only: its coordinated-omission-corrected mean and p99 (synthetic samples included), kept
    # apart from the raw figures above so that the two are never mixed up
    co_corrected_mean: float = float("nan")
    co_corrected_p99: float = float("nan")
    dropped: int = 0          # open model: arrivals the generator could not send (all VUs busy)
    # open model, pacer: arrivals it sent later than its tolerance although a connection was idle, and
    # the p99 of those arrivals' send lag in ms (its own lag: a wait for a busy connection is the
    # server's); None/NaN: not known
    late_sends: int | None = None
    send_lag_p99: float = float("nan")
    users_answered: int | None = None   # ramp: the users that got at least one response in the window
    # open model, pacer: every arrival of the window (ARRIVAL: when it was due, its latency from then,
    # its status), for goodput at an objective and per-second series; None: the driver keeps none
    arrivals: np.ndarray | None = None
    # burst (k6): when each answered request ended (epoch s), for the answers per second of a cold cell
    answered_at: list[float] | None = None
    flags: list[str] = field(default_factory=list)   # what the driver itself found suspect
    started_at: float = float("nan")                 # epoch seconds of the window's start
    steps: list["LoadResult"] = field(default_factory=list)   # ramp: one result per step
    timeseries: list[dict] = field(default_factory=list)      # ramp: one record per second
    # a mix (config/mix.py): each scenario's own result, from its requests alone, by name
    parts: dict[str, "LoadResult"] = field(default_factory=dict)

    @property
    def rps(self) -> float:
        return self.requests / self.duration_s if self.duration_s > 0 else 0.0

    @property
    def loadgen_cpus_used(self) -> float:
        """The generator's CPU time per second that it ran, in CPUs (NaN: not known). Its CPU time is
        its whole run's (rusage), so it is divided by its whole run: over the window alone, the
        start-up and drain of a short burst (k6 setting up 1,000 VUs) read as more than its CPUs."""
        span = max(self.duration_s, self.loadgen_wall_s) if self.loadgen_wall_s == self.loadgen_wall_s \
            else self.duration_s
        return self.loadgen_cpu_s / span if span > 0 else float("nan")

    def goodput(self, bound_ms: float) -> float:
        """Answers per second within bound_ms of their arrival's time, status below 400, of the arrivals
        due in the window (NaN: the driver keeps no arrivals). Past its capacity a server's rps holds
        while its latencies grow without bound: goodput says how much of that traffic still met the objective."""
        if self.arrivals is None or self.duration_s <= 0:
            return float("nan")
        a = self.arrivals
        return float((good(a) & (a["latency_ms"] <= bound_ms)).sum()) / self.duration_s

    def per_second(self, bound_ms: float) -> list[dict]:
        """One record per second of the window, by the arrivals due in it: offered, answered (status
        below 400), goodput (of those, within bound_ms), failed (no answer, or status >= 400; dropped
        included), dropped, and the p50, p95 and p99 of the answered (None: nothing answered)."""
        if self.arrivals is None:
            return []
        a, out = self.arrivals, []
        second = np.floor(a["due_s"]).astype(int)
        for t in range(int(math.ceil(self.duration_s))):
            mine = a[second == t]
            ok = mine[good(mine)]
            figures = latency_fields(ok["latency_ms"]) if len(ok) else {}
            out.append({"t_s": t, "offered": len(mine), "answered": len(ok),
                        "goodput": int((ok["latency_ms"] <= bound_ms).sum()), "failed": len(mine) - len(ok),
                        "dropped": int((mine["status"] == NOT_SENT).sum()),
                        "p50_ms": figures.get("latency_p50"), "p95_ms": figures.get("latency_p95"),
                        "p99_ms": figures.get("latency_p99")})
        return out

    def answered_per_second(self) -> list[int] | None:
        """Answers (status below 400) that ended in each second of the window, by when they ended (the
        last second may be part of one); None where the driver keeps no per-request times (wrk, Locust)."""
        if self.answered_at is not None:
            ends = np.asarray(self.answered_at, dtype=float) - self.started_at
        elif self.arrivals is not None:
            ok = self.arrivals[good(self.arrivals)]
            ends = ok["due_s"] + ok["latency_ms"] / 1000
        else:
            return None
        n = max(1, int(math.ceil(self.duration_s)))
        return np.bincount(np.clip(np.floor(ends), 0, n - 1).astype(int), minlength=n).tolist()

    @property
    def errors(self) -> int:
        return self.errors_connect + self.errors_read + self.errors_write + self.errors_timeout


def latency_fields(values_ms, counts=None) -> dict[str, float]:
    """min, mean, stdev, max and the PERCENTILES (nearest rank) of latencies, as LoadResult fields.

    values_ms are single latencies, or histogram buckets when counts gives how many fell in each."""
    v = np.asarray(values_ms, dtype=float)
    n = np.ones_like(v) if counts is None else np.asarray(counts, dtype=float)
    if v.size == 0 or n.sum() == 0:
        return {}
    order = np.argsort(v)
    v, n = v[order], n[order]
    cum, total = np.cumsum(n), n.sum()
    mean = float((v * n).sum() / total)
    out = {"latency_min": float(v[0]), "latency_max": float(v[-1]), "latency_mean": mean,
           "latency_stdev": float(np.sqrt((n * (v - mean) ** 2).sum() / total))}
    for key, p in PERCENTILES.items():
        # rounded first: 99.9 / 100 * 1000 is 999.0000000000001 in floating point, one rank high
        rank = max(1.0, np.ceil(round(p / 100.0 * total, 6)))
        out[f"latency_{key}"] = float(v[np.searchsorted(cum, rank)])
    return out
