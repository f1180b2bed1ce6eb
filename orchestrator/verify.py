"""Verification: every scenario a target declares is requested and checked against the contract.

The rules are those of frameworks/CONTRACT.md, in the same order.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from .catalog import Target
from .httpclient import Response, request
from .scenarios import NEW_ITEM, SCENARIOS, Scenario

THREAD_HEADERS = {"X-Report-Thread": "1"}


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


def same_json(actual: Any, expected: Any) -> bool:
    """Equal documents, numbers compared as numbers (10.5 == 10.50, 1 == 1.0)."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return actual is expected
    if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        return math.isclose(actual, expected, rel_tol=0, abs_tol=1e-9)
    if isinstance(expected, dict):
        return isinstance(actual, dict) and actual.keys() == expected.keys() and all(
            same_json(actual[k], expected[k]) for k in expected)
    if isinstance(expected, list):
        return isinstance(actual, list) and len(actual) == len(expected) and all(
            same_json(a, e) for a, e in zip(actual, expected))
    return actual == expected


def check_response(s: Scenario, r: Response, expected: Any, status: int | None = None) -> list[str]:
    """Rules 1-4: status, media type, framing, exact body. Returns the broken rules."""
    status = status or s.status
    problems = []
    if r.status != status:
        return [f"status {r.status}, expected {status} (body: {r.body[:200]!r})"]
    if r.media_type != s.media_type:
        problems.append(f"Content-Type '{r.header('content-type')}', expected {s.media_type}")
    length = r.header("content-length")
    if length is not None:
        if not length.isdigit() or int(length) != len(r.body):
            problems.append(f"Content-Length {length} but the body has {len(r.body)} bytes")
    elif "chunked" not in (r.header("transfer-encoding") or "").lower():
        problems.append("neither Content-Length nor chunked Transfer-Encoding")
    if expected is None:
        return problems
    if s.is_json:
        try:
            doc = json.loads(r.body)
        except ValueError:
            return problems + [f"body is not JSON: {r.body[:200]!r}"]
        if not same_json(doc, expected):
            problems.append(f"body {json.dumps(doc)[:200]}, expected {json.dumps(expected)}")
    elif r.body.decode("utf-8", "replace") != expected:
        problems.append(f"body {r.body[:200]!r}, expected {expected!r}")
    return problems


def _check_db_write(port: int, s: Scenario) -> tuple[list[str], Response]:
    """Two writes give two different ids, and each row reads back as written."""
    problems, ids, first = [], [], None
    for _ in range(2):
        r = request(port, s.method, s.path, s.body, {**s.headers, **THREAD_HEADERS})
        first = first or r
        p = check_response(s, r, None)
        if p:
            return p, r
        try:
            doc = json.loads(r.body)
            ids.append(int(doc["id"]))
            if set(doc) != {"id"}:
                problems.append(f"body {doc}, expected only an 'id'")
        except (ValueError, KeyError, TypeError):
            return [f"body {r.body[:200]!r}, expected {{\"id\": N}}"], r
    if ids[0] == ids[1]:
        problems.append(f"two writes returned the same id {ids[0]}")
    read = SCENARIOS["db-read"]
    for i in ids:
        back = request(port, "GET", f"/db?id={i}")
        problems += [f"reading back row {i}: {p}" for p in check_response(read, back, {"id": i, **NEW_ITEM})]
    return problems, first


def verify(target: Target, port: int) -> Verification:
    """Request every scenario of the target once and check each response (see CONTRACT.md)."""
    v = Verification(target.id)
    for name in target.framework.scenarios:
        s = SCENARIOS[name]
        try:
            if name == "db-write":
                problems, r = _check_db_write(port, s)
            else:
                r = request(port, s.method, s.path, s.body, {**s.headers, **THREAD_HEADERS})
                problems = check_response(s, r, s.expected)
                if name == "db-read":
                    missing = request(port, "GET", "/db?id=0")
                    if missing.status != 404:
                        problems.append(f"GET /db?id=0 gave {missing.status}, expected 404")
        except OSError as e:
            v.failures.append(f"{name}: request failed: {e}")
            continue
        v.failures += [f"{name}: {p}" for p in problems]
        v.headers[name] = {h: r.header(h) for h in ("date", "server") if r.header(h)}
        # a gateway names its own thread apart: the backend's X-Thread passes through it unchanged
        header = "X-Gateway-Thread" if target.framework.backend else "X-Thread"
        thread = r.header(header.lower())
        if thread:
            v.threads[name] = thread
        pattern = target.variant.thread_pattern(name)
        if pattern and not problems:
            if not thread:
                v.failures.append(f"{name}: no {header} header in answer to X-Report-Thread")
            elif not re.search(pattern, thread):
                v.failures.append(f"{name}: served by thread '{thread}', which does not match "
                                  f"the variant's thread model /{pattern}/")
    return v
