"""Verification: every scenario a target declares is requested and checked against the contract
(each scenario's own check, scenarios.py), and the thread that served it against the variant's
thread model. Every failure names its scenario and the request: method, path with its query, and what
came back (status, the body's start) or did not ("no answer within 10 s"). The rules are those of
frameworks/CONTRACT.md, in the same order.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from orchestrator.config.catalog import Target
from orchestrator.config.scenarios import SCENARIOS, Backends, NoAnswer


@dataclass
class Verification:
    target: str
    failures: list[str] = field(default_factory=list)
    threads: dict[str, str] = field(default_factory=dict)   # scenario -> X-Thread value
    headers: dict[str, dict[str, str]] = field(default_factory=dict)  # scenario -> Date/Server seen

    @property
    def ok(self) -> bool:
        return not self.failures

    @property
    def reason(self) -> str:
        return "verification failed: " + "; ".join(self.failures)


def verify(target: Target, port: int, host: str = "127.0.0.1", backends: Backends | None = None,
           timed_only: bool = False) -> Verification:
    """Request every scenario of the target once (timed_only: those whose check reads timing) and check
    each response (see CONTRACT.md); with the backends, also what they saw (fan-out's calls
    overlapping, cache-aside's miss and hit)."""
    v = Verification(target.id)
    for name in target.framework.scenarios:
        s = SCENARIOS[name]
        if timed_only and not s.timed:
            continue
        try:
            problems, r = s.check(port, host, backends)
        except NoAnswer as e:   # it names the request: the next scenario's requests still tell what works
            v.failures.append(f"{name}: {e}")
            continue
        v.failures += [f"{name}: {p}" for p in problems]
        v.headers[name] = {h: r.header(h) for h in ("date", "server") if r.header(h)}
        asked = f"{name}: {s.method} {s.path}"
        if not r.header("date"):   # the same headers everywhere: a server that omits it sends fewer bytes
            v.failures.append(f"{asked}: no Date header (every response carries one: RFC 9110 section 6.6.1)")
        # a gateway names its own thread apart: the backend's X-Thread passes through it unchanged
        header = "X-Gateway-Thread" if target.framework.backend else "X-Thread"
        thread = r.header(header.lower())
        if thread:
            v.threads[name] = thread
        pattern = target.variant.thread_pattern(name)
        if pattern and not problems:
            if not thread:
                v.failures.append(f"{asked}: no {header} header in answer to X-Report-Thread")
            elif not re.search(pattern, thread):
                v.failures.append(f"{asked}: served by thread '{thread}', which does not match "
                                  f"the variant's thread model /{pattern}/")
    return v
