"""The items the contract's backends hold (frameworks/CONTRACT.md): the database's seed rows and
Redis's seed keys, and the items cache-aside's load asks for, so that a fixed share of them miss."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SEED_ROWS = 50_000
REDIS_SEED = {"bench:1": "value-1", "bench:2": "value-2", "bench:3": "value-3"}


def seeded_row(item_id: int) -> dict[str, Any]:
    return {"id": item_id, "name": f"item-{item_id}", "price": item_id * 0.25}


@dataclass(frozen=True)
class IdCycle:
    """The items a load of cache-aside asks for, so that a fixed share of its requests miss the cache.

    Request k of a stream asks for item `hot` but every `every`-th, which asks for the next of `count`
    cold items from `first`: the cycle comes back to a cold item only after every other one, so at up to
    count x every / TTL requests a second (40,000/s at the default 10-s time to live) each of them is
    gone from the cache by then, and misses. pacer's arrivals and k6's iterations (counted over all its
    VUs) are one stream each; wrk's threads and Locust's users, which a closed loop keeps equally busy,
    are a stream each, from offsets spread over the cycle (offset()), so that together they walk it as
    one stream would. The generators compute path(k) in their own language (wrk's Lua, k6's JavaScript,
    pacer's C; Locust calls this class); tests/processes/test_cache_aside_end_to_end.py holds each to it."""
    prefix: str     # the path up to the id
    hot: int
    every: int
    first: int
    count: int

    @property
    def length(self) -> int:
        return self.every * self.count

    @property
    def miss_share(self) -> float:
        return 1.0 / self.every

    def path(self, k: int) -> str:
        k %= self.length
        return f"{self.prefix}{self.first + k // self.every if k % self.every == 0 else self.hot}"

    def offset(self, stream: int, streams: int) -> int:
        """Where stream `stream` (0-based) of `streams` starts in the cycle."""
        return stream * self.length // max(1, streams)


CACHE_KEYS = "item:*"   # the keys cache-aside writes (CONTRACT.md: item:<id>)
CACHE_CHECK_ID = 4242   # a seeded row no scenario's load reads (the cycle's hot item is 42, its cold ones 10,001 on)
# One request in ten misses the cache: a service's hit ratio of 90 %, within the 80-99 % that caches in front
# of a database are sized for. The cold items are the seed's rows above 10,000, which no other load reads.
CACHE_IDS = IdCycle("/cache-aside?id=", hot=42, every=10, first=10_001, count=SEED_ROWS - 10_000)
