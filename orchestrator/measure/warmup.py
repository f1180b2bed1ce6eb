"""Warming a target up until it is steady, at the load its cell will measure.

On one core a JVM's JIT competes with the requests and needs far longer than a fixed few seconds
(Spring WebFlux on json: 1.4k rps after 5 s, 10.6k after a minute), so a fixed warm-up would
publish a cold JVM. Two windows that agree are not enough either: a slow climb passes that test.
A target is steady when, over the last STEADY_WINDOWS windows,
  - its pace no longer climbs (rps in a closed loop; in an open model, whose rps is its rate, the
    inverse of its median latency): the least-squares slope is at most CLIMB of their median per
    window (a JIT still at work climbs by 20-50 % a window here; windows of a warmed-up JVM scatter by about 5 %
    at 500 connections, so a rule on the spread of a few windows, as before, called 4 of 15
    warmed-up JVMs not steady, while a slope over four windows has a noise of about 2 %),
  - the JIT compilers were quiet in the last one (compiling at most JIT_QUIET of its time, read from
    the JVM's own counters; a JVM still compiling is still getting faster).
A fall in rps is not a warm-up, and neither are stalls: the measured window's own checks (Little's
law in a closed loop) and the repeats show them. Little's law is kept per window in windows.json;
it is not a condition here, because a server that makes connections wait by design (Tomcat's
accept queue of 100 at 2,000 connections: rps x mean = 0.25 x connections) would never be steady.
Every profile warms up this way: wrk at the cell's connections (a ramp: its first step's users),
or, for an open-model rate, the rate kind's default generator (pacer) at the cell's rate.
After every window the server drains: the next window opens only once its CPU is quiet (up to DRAIN_MAX_S).
A generator that stops closes its connections, but a server finishes the requests it had taken, and a
window shorter than their latency left almost all of them: Spring MVC on virtual threads, fan-out at
2,000 connections (p50 4.7 s), had 3,200-3,700 requests alive after back-to-back 5-s windows and ran
out of its 512-MB heap, where one cold burst alone (at most 2,000 in flight) left it 712 MiB of RSS.
"""
from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, replace
from statistics import median

from orchestrator.config import driver_registry
from orchestrator.config.load import LoadResult, LoadSpec
from orchestrator.core.cpus import settle
from orchestrator.core.schema import CLIMB, JIT_QUIET, STEADY_WINDOWS
from orchestrator.measure.checks import littles_law_holds
from orchestrator.targets.runtimes import Server


@dataclass(frozen=True)
class Window:
    rps: float
    littles_ok: bool
    jit_s: float | None      # JIT compilation time during the window (None: counters unreadable)
    duration_s: float
    # An open model's rps is its rate whatever the server does: a JVM warming up there answers sooner
    # instead, so its windows are judged by their median latency (None: a closed loop, judged by rps).
    latency_p50_ms: float | None = None
    drain_s: float = 0.0     # the wait after it until the server was quiet

    @property
    def pace(self) -> float:
        """What a warming JVM raises: rps in a closed loop; in an open model, the inverse of the
        median latency (a window that answered nothing has the slowest pace)."""
        if self.latency_p50_ms is None:
            return self.rps
        return 1000.0 / self.latency_p50_ms if self.latency_p50_ms > 0 else 0.0


@dataclass(frozen=True)
class WarmUp:
    spent_s: float
    steady: bool
    windows: tuple[Window, ...]

    @property
    def quiet_gap_s(self) -> float:
        """The pause before the measured window: the last window's drain."""
        return self.windows[-1].drain_s if self.windows else 0.0


def climb(rps: list[float]) -> float:
    """The least-squares slope of rps over consecutive windows, in parts of their median per window."""
    n, mid = len(rps), median(rps)
    x_mean, y_mean = (n - 1) / 2, sum(rps) / n
    slope = sum((i - x_mean) * (y - y_mean) for i, y in enumerate(rps)) / sum((i - x_mean) ** 2 for i in range(n))
    return slope / mid if mid > 0 else float("inf")


def steady(windows: list[Window] | tuple[Window, ...]) -> bool:
    last = list(windows)[-STEADY_WINDOWS:]
    if len(last) < STEADY_WINDOWS or climb([w.pace for w in last]) > CLIMB:
        return False
    final = last[-1]
    return final.jit_s is None or final.jit_s <= JIT_QUIET * final.duration_s


DRAIN_MAX_S = 30.0


def quiet_gap_s(last: LoadResult | None) -> float:
    """The pause after a window for a server whose CPU is not read here: about its slowest answers."""
    if last is None or last.latency_p99 != last.latency_p99:
        return 1.0
    return min(5.0, max(1.0, 2 * last.latency_p99 / 1000.0))


def drain(server: Server, last: LoadResult | None) -> float:
    """Wait until the server has finished what the window left in flight (its CPU quiet); the seconds
    waited. Not the load CPUs nor the host's steal: whatever else keeps those busy (a test's burner, a
    neighbour) would hold every window for DRAIN_MAX_S."""
    if server.usage() is None:
        gap = quiet_gap_s(last)
        time.sleep(gap)
        return gap
    return settle(server, set(), max_s=DRAIN_MAX_S, steal_cpus=set())


def _median_ms(r: LoadResult) -> float:
    """The window's median latency; 0 when nothing was answered (its pace is then the slowest)."""
    return r.latency_p50 if r.latency_p50 == r.latency_p50 else 0.0


def _jit_s(server: Server) -> float | None:
    c = server.counters()
    return c.jit_time_s if c else None


def generator(rate: float | None) -> str:
    """The driver that warms a cell up: at a rate (an open model, at the cell's own rate) the rate kind's
    default (pacer), else wrk."""
    return driver_registry.drivers_by_kind()["rate"][0] if rate else "wrk"


def generators(profile) -> list[str]:
    """The drivers a run of the profile drives: each cell's warm-up's (none without a warm-up), then
    the profile's own. The run asks each for its executable before anything starts, which builds one
    made on first use (k6, pacer) then and never in a measured window, and never one the run does not use."""
    warm = [generator(profile.warmup_rate(rate)) for _, rate in profile.levels()] if profile.warmup_s > 0 else []
    return list(dict.fromkeys([*warm, profile.driver]))


def warm_up(window_s: float, max_s: float, spec: LoadSpec, server: Server) -> WarmUp:
    """Load in windows of window_s, each followed by its drain, until steady (or max_s of windows is
    spent); the last drain is the quiet gap before the measured window."""
    if window_s <= 0:
        return WarmUp(0.0, True, ())
    driver = driver_registry.get(generator(spec.rate))
    spent, windows, last = 0.0, [], None
    closed = not spec.rate
    while True:
        jit0 = _jit_s(server)
        last = driver.run(replace(spec, duration_s=window_s))
        jit1 = _jit_s(server)
        spent += window_s
        windows.append(Window(rps=last.rps,
                              littles_ok=not closed or littles_law_holds(spec.concurrency, last),
                              jit_s=jit1 - jit0 if jit0 is not None and jit1 is not None else None,
                              duration_s=window_s,
                              latency_p50_ms=None if closed else _median_ms(last),
                              drain_s=drain(server, last)))
        done = steady(windows)
        if done or spent + window_s > max_s:
            warm = WarmUp(spent, done, tuple(windows))
            _keep(spec, warm)
            return warm


def _keep(spec: LoadSpec, warm: WarmUp) -> None:
    """Every window's figures beside the generator's files: why a cell was (not) called steady."""
    spec.out_dir.mkdir(parents=True, exist_ok=True)
    (spec.out_dir / f"{spec.stem}.windows.json").write_text(json.dumps(
        {"steady": warm.steady, "quiet_gap_s": warm.quiet_gap_s, "windows": [asdict(w) for w in warm.windows]},
        indent=1) + "\n")
