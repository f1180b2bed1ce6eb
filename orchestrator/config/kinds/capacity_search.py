"""Capacity at a latency objective: the highest arrival rate a target sustains with its objective met.

Each probe is an open-model window (pacer by default: arrivals on schedule whatever the server does,
each latency from its intended send time, so no coordinated omission). A probe passes when the objective's percentile is within
its bound, failed plus dropped arrivals are within the error budget, and the rate achieved is the
rate offered. The search brackets (the first probe at the profile's common rate, then doubling
until a probe fails, or halving until one passes) and then bisects until the interval
[highest pass, lowest fail] is narrower than the resolution. A verdict within CLOSE of the bound
is probed once more when it passed, and passes only if both probes pass. A probe failed by pacer's
own lag, while the host stole the CPUs (host-steal) or another process used the server's
(server-cpus-shared), and a failed first probe, are probed once
more too, and the second probe is the rate's verdict: the host that took the load CPU for tens of
milliseconds once should not end a search as the generator's limit, nor a JVM still compiling in
the first probe cap it at the common rate.

A probe the generator could not deliver (its CPUs saturated, a rate above what `bench calibrate`
measured it to keep in an open model here, arrivals it sent late by its own lag (pacer), or arrivals
k6 dropped while the target answered fast) ends
the search: the capacity is then "above what this machine can offer", with the highest passing
rate as its lower bound and no upper bound.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from orchestrator.config.load import LoadResult
from orchestrator.config.mix import Part, parts_of
from orchestrator.config.objective import Objective
from orchestrator.config.scenarios import Scenario
from orchestrator.core.schema import percentile_label

CLOSE = 0.10          # a latency within 10 % of the bound is a close verdict: probed again
RATE_MET = 0.97       # of the offered rate: an open model that achieves less fell behind
MIN_VUS = 50


def vus_for(rate: float, objective: Objective, scenario: Scenario, most: int) -> int:
    """Connections (k6: VUs) for a probe: the requests in flight at the objective by Little's law (rate
    x bound), so that a target within its objective never runs out of them, and no more. Idle ones
    are not free: each holds a connection (pacer opens them as arrivals need them, up to this), and
    at 6,000 req/s of Spring MVC json, 2,000 k6 VUs read p99 73-75 ms where
    600 read 4-17 ms (the server's p50 0.25 ms, its CPU 30 %)."""
    return max(MIN_VUS, min(most, math.ceil(rate * objective.bound_for(scenario) / 1000)))
PASS, FAIL, LIMIT = "pass", "fail", "generator-limit"


@dataclass(frozen=True)
class Verdict:
    state: str     # PASS, FAIL or LIMIT
    why: str
    close: bool = False
    again: bool = False   # probe the rate once more, the second probe deciding (Search._second_decides)


# Flags that say something took the server's or the generator's CPU from under a probe: a probe that
# failed with one is probed again and the second decides. Something else taking 12 % of the server's CPU
# in one 8-s probe cut a Vert.x A/A JVM's capacity on a mix from 6,000-7,500 to 1,938-2,000 (docs/workloads.md).
SPOILED = {"host-steal": "the host stole CPU time meanwhile",
           "server-cpus-shared": "another process used the server's CPU meanwhile"}


def judge(offered: float, r: LoadResult, flags: list[str], objective: Objective, scenario: Scenario,
          most: float | None, vus: int | None = None) -> Verdict:
    """Whether one probe at the offered rate met the objective, and if not, why. most: the highest
    rate the generator can offer here (None: unknown); vus: the VUs (connections) it had. A probe that
    did not pass while the host stole the CPUs (flag host-steal) or another process used the server's
    (server-cpus-shared) is probed once more, and the second decides: something took the server's or the
    generator's CPU from under it.

    pacer says itself when it fell behind its schedule: its own send lag (arrivals that found a
    connection idle) is in every latency, so a probe that met the objective with it passes, and one
    whose latency failed is the generator's only when that lag was above CLOSE of the bound and the
    latency less the lag would have met it (a target 60 ms over the bound with pacer 7 ms late failed
    by itself: MVC on virtual threads read p99 65 ms at 1,000 req/s with pacer's lag p99 7.5 ms, as
    it reads 41-105 ms at 4,000 under k6). So for pacer, other work on its CPUs (Redis and MariaDB
    share them) is a generator limit only through that lag.

    k6 drops an arrival only when every VU is busy, and at `offered` arrivals a second that takes a
    request in flight for at least vus / offered seconds. So when even the slowest answer of the
    window (its max, not its p99: a 0.3-s pause at 4,000 req/s holds 200 VUs and leaves p99 at
    3 ms) was too short to keep half the VUs waiting, the drops were the generator's; otherwise the
    target stalled, and its drops count against it."""
    verdict = _judge(offered, r, flags, objective, scenario, most, vus)
    taken = [f"{why} ({flag})" for flag, why in SPOILED.items() if flag in flags]
    if taken and verdict.state != PASS:
        return replace(verdict, why=f"{verdict.why}; {', '.join(taken)}", again=True)
    return verdict


def _judge(offered: float, r: LoadResult, flags: list[str], objective: Objective, scenario: Scenario,
           most: float | None, vus: int | None) -> Verdict:
    own_lag_known = r.send_lag_p99 == r.send_lag_p99
    if "loadgen-saturated" in flags or ("loadgen-cpus-busy" in flags and not own_lag_known):
        return Verdict(LIMIT, "the load generator's CPUs were saturated")
    if most and offered > most:
        return Verdict(LIMIT, f"{offered:,.0f} req/s is above the {most:,.0f} req/s the generator can offer here "
                              f"(bench calibrate)")
    arrivals = max(1.0, offered * r.duration_s)
    latency, bound = getattr(r, f"latency_{objective.percentile}"), objective.bound_for(scenario)
    if vus and r.dropped > objective.error_budget * arrivals and r.latency_max == r.latency_max \
            and offered * r.latency_max / 1000 < vus / 2:
        return Verdict(LIMIT, f"the generator dropped {r.dropped:,} arrivals while its slowest response took "
                              f"{r.latency_max:,.1f} ms: at most {math.ceil(offered * r.latency_max / 1000)} of "
                              f"its {vus} VUs were ever waiting for the server, so the generator could not keep the rate")
    failed = r.errors + r.errors_status + r.dropped
    if failed > objective.error_budget * arrivals:
        return Verdict(FAIL, f"{100 * failed / arrivals:.2g} % of arrivals failed or dropped "
                             f"(budget {100 * objective.error_budget:g} %)")
    if r.rps < RATE_MET * offered:
        return Verdict(FAIL, f"achieved {r.rps:,.0f} of {offered:,.0f} req/s")
    label = percentile_label(objective.percentile)
    if latency != latency:
        return Verdict(FAIL, f"no {label} latency measured")
    close = abs(latency - bound) <= CLOSE * bound
    if latency > bound and r.send_lag_p99 > CLOSE * bound and latency - r.send_lag_p99 <= bound:
        return Verdict(LIMIT, f"{label} {latency:,.1f} ms > {bound:g} ms, but the generator's own send lag read p99 "
                              f"{r.send_lag_p99:,.1f} ms ({r.late_sends or 0:,} arrivals sent late with a connection "
                              f"idle): without it the objective may have held", again=True)
    if latency > bound:
        return Verdict(FAIL, f"{label} {latency:,.1f} ms > {bound:g} ms", close)
    said = [f"{label} {latency:,.1f} ms <= {bound:g} ms"]
    for part, own in own_objectives(scenario, objective):   # a mix's scenarios with one of their own
        name = part.scenario.name
        if name not in r.parts:
            continue
        value, limit = getattr(r.parts[name], f"latency_{own.percentile}"), own.bound_for(part.scenario)
        what = f"{name}'s {percentile_label(own.percentile)} {value:,.1f} ms"
        close = close or abs(value - limit) <= CLOSE * limit
        if not value <= limit:
            return Verdict(FAIL, f"{what} > {limit:g} ms (its own objective)", close)
        said.append(f"{what} <= {limit:g} ms")
    return Verdict(PASS, "; ".join(said), close)


@dataclass
class Search:
    """Bracketing, then bisection of the arrival rate. Rates are whole requests per second."""
    start: float
    resolution: float             # stop when (upper - low) / low is at most this
    max_probes: int
    max_rate: float | None = None  # the most the generator can offer here by calibration (None: unknown)
    floor: float = 1.0
    low: float = 0.0               # the highest rate that passed
    high: float | None = None      # the lowest rate that failed
    limit: float | None = None     # the lowest rate the generator could not offer
    # best of two: a failed rate is probed once more and passes if either probe passed (for a
    # generator's own ceiling, where a window spoiled by anything else on the machine is not the
    # generator's limit; a target's capacity keeps the strict rule, every probe at a rate must pass)
    retry_failures: bool = False
    probes: list[tuple[float, Verdict]] = field(default_factory=list)

    def next_rate(self) -> float | None:
        """The next rate to probe, or None when the search is over. Below a generator limit the search
        bisects towards it, so that "at least" is as high as this machine can offer."""
        if len(self.probes) >= self.max_probes:
            return None
        last = self.probes[-1][1] if self.probes else None
        if last and not self._repeated() and (last.state == FAIL if self.retry_failures else
                                              (last.close and last.state == PASS) or self._second_decides(-1)):
            return self.probes[-1][0]
        if self.high is None and self.limit is None:
            rate = self.start if not self.probes else 2 * self.low
            if not (self.max_rate and rate > self.max_rate):
                return float(round(rate))
            if self.low >= self.max_rate:
                self.limit = self.max_rate
                return None
            return float(round(self.max_rate))
        upper = min(r for r in (self.high, self.limit) if r is not None)
        if self.low == 0:
            rate = round(upper / 2)
            return float(rate) if rate >= self.floor else None
        if (upper - self.low) / self.low <= self.resolution:
            return None
        return float(round((self.low + upper) / 2))

    def _repeated(self) -> bool:
        return len(self.probes) >= 2 and self.probes[-2][0] == self.probes[-1][0]

    def _second_decides(self, i: int) -> bool:
        """Whether probe i is one the search probes once more, the second deciding: one its judge asked
        again for (failed by the generator's own lag, or under host steal), and a failed first probe,
        which meets a JVM whose warm-up may have ended at its cap still compiling (Spring MVC failed
        500/s with p50 5-6 ms in its first probe and passed 469/s with p50 0.4 ms in its fifth)."""
        verdict = self.probes[i][1]
        return not self.retry_failures and (verdict.again or (verdict.state == FAIL and i in (0, -len(self.probes))))

    def record(self, rate: float, verdict: Verdict) -> None:
        self.probes.append((rate, verdict))
        states = [v.state for r, v in self.probes if r == rate]
        if self._second_decides(-1) and not self._repeated():
            return   # probed once more before the search believes it
        if self._repeated() and self._second_decides(-2):
            states = [verdict.state]   # the probe after it is the rate's verdict
        if verdict.state == LIMIT:
            self.limit = rate if self.limit is None else min(self.limit, rate)
        elif self.retry_failures:
            if PASS in states:
                self.low = max(self.low, rate)
            elif self._repeated():
                self.high = rate if self.high is None else min(self.high, rate)
        elif all(s == PASS for s in states) and (not verdict.close or self._repeated()):
            self.low = max(self.low, rate)
        elif FAIL in states:
            self.high = rate if self.high is None else min(self.high, rate)

    def outcome(self) -> str:
        """found (an interval narrower than the resolution), above-generator (no failure below what the
        generator could offer), below-floor, or unresolved (the probe budget ran out first)."""
        if self.high is not None and self.low == 0:
            return "below-floor"
        if self.limit is not None and (self.high is None or self.high > self.limit):
            return "above-generator"
        if self.high is not None and (self.high - self.low) / self.low <= self.resolution:
            return "found"
        return "unresolved"


def own_objectives(scenario: Scenario, objective: Objective) -> list[tuple[Part, Objective]]:
    """A mix's scenarios that have an objective of their own, each with it (its error budget the mix's)."""
    return [(part, Objective(part.objective[0], part.objective[1], objective.error_budget))
            for part in parts_of(scenario) if part.objective]
