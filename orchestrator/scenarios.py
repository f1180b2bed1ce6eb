"""The scenarios of frameworks/CONTRACT.md: the request each one sends and the response it expects.

One table serves the load drivers (what to send) and verification (what must come back).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

HELLO = "Hello, World!"
SEED_ROWS = 10_000
REDIS_SEED = {"bench:1": "value-1", "bench:2": "value-2", "bench:3": "value-3"}


def seeded_row(item_id: int) -> dict[str, Any]:
    return {"id": item_id, "name": f"item-{item_id}", "price": item_id * 0.25}


@dataclass(frozen=True)
class Scenario:
    name: str
    method: str
    path: str
    status: int
    media_type: str
    expected: Any = None           # exact text, or the parsed JSON document
    body: bytes | None = None      # request body
    headers: dict[str, str] = field(default_factory=dict)
    endpoint: str = ""             # the manifest scenario whose endpoint this one loads ("": its own)
    # The backend work of one request (evidence.py counts it under load): redis_commands, db_selects,
    # db_inserts; anything not named is none.
    backend_work: dict[str, int] = field(default_factory=dict)

    @property
    def served_as(self) -> str:
        """The scenario name a framework.toml lists for this one's endpoint."""
        return self.endpoint or self.name

    @property
    def is_json(self) -> bool:
        return self.media_type == "application/json"


NEW_ITEM = {"name": "bench-write", "price": 1.5}
_JSON_BODY = {"Content-Type": "application/json"}

SCENARIOS: dict[str, Scenario] = {s.name: s for s in [
    Scenario("plaintext", "GET", "/plaintext", 200, "text/plain", HELLO),
    Scenario("json", "GET", "/json", 200, "application/json", {"message": HELLO}),
    Scenario("sleep", "GET", "/sleep?ms=100", 200, "application/json", {"sleptMs": 100}),
    # The ramp study's "sleep 1 s": the same endpoint, ten times as long.
    Scenario("sleep-1s", "GET", "/sleep?ms=1000", 200, "application/json", {"sleptMs": 1000}, endpoint="sleep"),
    Scenario("cpu", "GET", "/cpu?n=20000", 200, "application/json", {"n": 20000, "primes": 2262}),
    Scenario("redis", "GET", "/redis", 200, "application/json", list(REDIS_SEED.values()),
             backend_work={"redis_commands": 1}),
    Scenario("db-read", "GET", "/db?id=42", 200, "application/json", seeded_row(42), backend_work={"db_selects": 1}),
    Scenario("db-write", "POST", "/db", 201, "application/json", None,
             body=b'{"name":"bench-write","price":1.5}', headers=_JSON_BODY, backend_work={"db_inserts": 1}),
    Scenario("proxy", "GET", "/proxy/sleep?ms=100", 200, "application/json", {"sleptMs": 100}),
    Scenario("proxy-json", "GET", "/proxy/json", 200, "application/json", {"message": HELLO}),
]}


# What a framework.toml may list: the scenarios with an endpoint of their own.
MANIFEST_SCENARIOS = [name for name, s in SCENARIOS.items() if not s.endpoint]


def parse_list(value: str | None, valid: list[str], what: str) -> list[str] | None:
    """Split "a,b" and check every name against `valid`; None when value is empty."""
    from .errors import UsageError
    if not value:
        return None
    names = [v.strip() for v in value.split(",") if v.strip()]
    unknown = [n for n in names if n not in valid]
    if unknown:
        raise UsageError(f"unknown {what} {', '.join(repr(u) for u in unknown)}; valid: {', '.join(valid)}")
    return names
