"""The scenarios of frameworks/CONTRACT.md: the request each one sends, the response it expects,
how an answer is checked, and the backend work of one request.

One table serves the load drivers (what to send), verification (what must come back: CONTRACT.md's
rules 1-4, plus a scenario's own rule, such as db-write's read-back) and the evidence (what Redis
and MariaDB must count per request). A new scenario is one entry here.
"""
from __future__ import annotations

import contextlib
import http.client
import json
import math
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from orchestrator.config.items import CACHE_CHECK_ID, CACHE_IDS, REDIS_SEED, IdCycle, seeded_row
from orchestrator.core.downstream_api import DEFAULT_MS, StatusReader
from orchestrator.core.httpclient import Response, request
from orchestrator.errors import UsageError

# Asks a target to name the thread that served the request (X-Thread), for the thread-model check.
THREAD_HEADERS = {"X-Report-Thread": "1"}
# How long a check waits for each answer: the contract's slowest request (sleep-1s) with room to spare.
ANSWER_TIMEOUT_S = 10.0

HELLO = "Hello, World!"
@dataclass(frozen=True)
class Backends:
    """What a check may read besides the target's answers: the running infrastructure (backends.Infra:
    Redis, MariaDB, the downstream service) and the cache's time to live the target was given.
    own_cpus is False for a target checked on the load generator's CPUs beside another's load (the
    load smoke's next target): a check that reads timing (Scenario.timed) is then left for later."""
    infra: Any
    cache_ttl_s: int
    own_cpus: bool = True


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
    backend_work: dict[str, float] = field(default_factory=dict)
    # The ids the load walks, request by request (cache-aside's misses); None: every request is `path`
    ids: IdCycle | None = None
    # Requests to the endpoint whose parameter the contract answers with 400 (its parameter rule), each with
    # what is wrong with it, e.g. ("/sleep?ms=60001", "ms over 60000").
    rejects: tuple[tuple[str, str], ...] = ()
    # What the endpoint does, in one sentence: run.json records it (runner.py), and the report quotes
    # it from there beside what the backends counted, so an old run keeps the contract it ran under.
    contract: str = ""
    timed: ClassVar[bool] = False  # whether check() reads timing, which a CPU shared with load can spoil

    @property
    def served_as(self) -> str:
        """The scenario name a framework.toml lists for this one's endpoint."""
        return self.endpoint or self.name

    @property
    def wait_ms(self) -> float:
        """What the contract makes the endpoint wait (a sleep scenario's sleep): every latency
        objective is set over it."""
        return float(self.expected.get("sleptMs", 0)) if isinstance(self.expected, dict) else 0.0

    def for_run(self, downstream_ms: float) -> "Scenario":
        """The scenario as a run with this downstream delay loads it (fan-out waits for it)."""
        return self

    @property
    def is_json(self) -> bool:
        return self.media_type == "application/json"

    def check(self, port: int, host: str = "127.0.0.1", backends: Backends | None = None) -> tuple[list[str], Response]:
        """Request the scenario once (asking for the thread that served it) and check the answer;
        returns the broken rules and the response. With `backends`, a scenario checks their side too."""
        r = ask(port, self.method, self.path, self.body, {**self.headers, **THREAD_HEADERS}, host=host)
        problems = [f"{self.method} {self.path}: {p}" for p in check_response(self, r, self.expected)]
        for path, wrong in self.rejects:
            rule = f"the contract rejects {wrong} with 400"
            status = ask(port, "GET", path, host=host, rule=rule).status
            if status != 400:
                problems.append(f"GET {path} gave {status}, expected 400 ({rule})")
        return problems, r


@dataclass(frozen=True)
class DbRead(Scenario):
    def check(self, port: int, host: str = "127.0.0.1", backends: Backends | None = None) -> tuple[list[str], Response]:
        """Also: a row that does not exist is a 404."""
        problems, r = super().check(port, host)
        missing = ask(port, "GET", "/db?id=0", host=host, rule="the contract answers a missing row with 404")
        if missing.status != 404:
            problems.append(f"GET /db?id=0 gave {missing.status}, expected 404")
        return problems, r


@dataclass(frozen=True)
class DbWrite(Scenario):
    def check(self, port: int, host: str = "127.0.0.1", backends: Backends | None = None) -> tuple[list[str], Response]:
        """Two writes give two different ids, and each row reads back as written."""
        problems, ids, first = [], [], None
        for _ in range(2):
            r = ask(port, self.method, self.path, self.body, {**self.headers, **THREAD_HEADERS}, host=host)
            first = first or r
            p = check_response(self, r, None)
            if p:
                return [f"{self.method} {self.path}: {x}" for x in p], r
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
            back = ask(port, "GET", f"/db?id={i}", host=host)
            problems += [f"reading back row {i}: {p}" for p in check_response(read, back, {"id": i, **NEW_ITEM})]
        return problems, first


@dataclass(frozen=True)
class FanOut(Scenario):
    delay_ms: float = DEFAULT_MS   # the downstream's delay, which its calls wait for all at once
    # Its calls overlap only if the target starts them within one delay of each other: on a CPU shared
    # with k6's bursts, spring-mvc:coroutines-virtual's three never did in 25 requests (CI, 2026-11-30),
    # where on its own CPU they do in the first few; and beside another target's fan-out burst the
    # downstream counts that target's calls too, so a check there could pass a sequential target
    timed: ClassVar[bool] = True

    @property
    def wait_ms(self) -> float:
        """Its calls are in flight together: it waits for one downstream delay."""
        return float(self.delay_ms)

    def for_run(self, downstream_ms: float) -> "Scenario":
        return replace(self, delay_ms=downstream_ms)

    def check(self, port: int, host: str = "127.0.0.1", backends: Backends | None = None) -> tuple[list[str], Response]:
        """Also: the downstream sees the calls overlap. Its calls in progress are polled while the
        target answers OVERLAP_TRIES requests; sequential calls never show more than one at a time."""
        problems, r = super().check(port, host)
        infra = backends.infra if backends else None
        if problems or not infra or not infra.downstream_port or infra.downstream_ms < OVERLAP_MIN_MS \
                or not backends.own_cpus:
            return problems, r
        calls = len(self.expected)
        peak = StatusReader(infra.placement.host, infra.downstream_port).peak_in_flight(
            lambda: ask(port, self.method, self.path, host=host), calls, OVERLAP_TRIES)
        if peak < calls:
            problems.append(f"{self.method} {self.path}: the downstream saw at most {peak} of its {calls} calls in "
                            f"flight at once over {OVERLAP_TRIES} requests: the calls must all be in flight at the "
                            f"same time")
        return problems, r


# Requests sent until the downstream has seen one's calls in flight together (5 once missed it on a CPU busy
# with the smoke's bursts); calls made one after another never show together, however many
OVERLAP_TRIES = 25
OVERLAP_MIN_MS = 5   # a shorter delay can end between two polls of the downstream's counters


@dataclass(frozen=True)
class CacheAside(Scenario):
    def check(self, port: int, host: str = "127.0.0.1", backends: Backends | None = None) -> tuple[list[str], Response]:
        """With the backends, on an item no other scenario reads (CACHE_CHECK_ID): the first request a miss
        that stores the row's JSON with the time to live; the second a hit, shown by changing the row in
        the database in between (a hit answers what was cached); a missing row a 404 that caches nothing.
        Each is read off the item itself, not off Redis's or MariaDB's global counters, which another
        target's load may move meanwhile (the load smoke verifies the next target beside the last's bursts)."""
        problems, r = super().check(port, host)
        if problems or not backends:
            return problems, r
        item, path = CACHE_CHECK_ID, f"/cache-aside?id={CACHE_CHECK_ID}"
        key, row = f"item:{item}", seeded_row(item)
        redis = backends.infra.redis_client()
        try:
            redis.delete(key, "item:0")
            problems += [f"GET {path} (a miss): {p}" for p in check_response(self, ask(port, "GET", path, host=host), row)]
            cached, ttl = redis.get(key), redis.ttl(key)
            if cached is None:
                problems.append(f"after a miss, GET {path} left no {key} in Redis: the row is stored on a miss")
            elif not _json_equal(cached, row):
                problems.append(f"after a miss, {key} in Redis holds {cached[:200]!r}, expected the row's JSON {json.dumps(row)}")
            elif not 0 < ttl <= backends.cache_ttl_s:
                problems.append(f"after a miss, {key} in Redis has a time to live of {ttl} s, expected 1 to "
                                f"{backends.cache_ttl_s} (CACHE_TTL_S; -1: no expiry)")
            with _row_changed(backends.infra, item):
                hit = ask(port, "GET", path, host=host)
            problems += [f"GET {path} again (a hit, the row changed in the database meanwhile): {p}"
                         for p in check_response(self, hit, row)]
            missing = ask(port, "GET", "/cache-aside?id=0", host=host, rule="the contract answers a missing row with 404")
            if missing.status != 404:
                problems.append(f"GET /cache-aside?id=0 gave {missing.status}, expected 404")
            if redis.exists("item:0"):
                problems.append("GET /cache-aside?id=0 (no such row) cached item:0: a missing row is not cached")
            return problems, r
        finally:
            redis.close()


def _json_equal(text: bytes, expected: Any) -> bool:
    try:
        return same_json(json.loads(text), expected)
    except ValueError:
        return False


@contextlib.contextmanager
def _row_changed(infra, item: int):
    """The item's name changed in the database (as root: the targets' user may not), then put back."""
    conn = infra.db_root()
    try:
        with conn.cursor() as c:
            c.execute("UPDATE bench.item SET name = 'changed-behind-the-cache' WHERE id = %s", (item,))
        yield
    finally:
        with conn.cursor() as c:
            c.execute("UPDATE bench.item SET name = %s WHERE id = %s", (seeded_row(item)["name"], item))
        conn.close()

NEW_ITEM = {"name": "bench-write", "price": 1.5}
_JSON_BODY = {"Content-Type": "application/json"}


def _rejects(path: str, name: str, maximum: int) -> tuple[tuple[str, str], ...]:
    """A plus sign, a minus, a decimal point, another script's digit (Arabic-Indic five), and one above the maximum."""
    wrong = {"%2B5": f"{name} with a plus sign", "-1": f"{name} with a minus sign", "5.0": f"{name} with a decimal "
             "point", "%D9%A5": f"{name} in another script's digits", str(maximum + 1): f"{name} over {maximum}"}
    return tuple((f"{path}?{name}={v}", why) for v, why in wrong.items())


SCENARIOS: dict[str, Scenario] = {s.name: s for s in [
    Scenario("plaintext", "GET", "/plaintext", 200, "text/plain", HELLO,
             contract="answers the text \"Hello, World!\"; no Redis command, no database statement."),
    Scenario("json", "GET", "/json", 200, "application/json", {"message": HELLO},
             contract="answers {\"message\":\"Hello, World!\"}, serialised per request by the framework's JSON "
                      "library; no Redis command, no database statement."),
    Scenario("sleep", "GET", "/sleep?ms=100", 200, "application/json", {"sleptMs": 100},
             rejects=_rejects("/sleep", "ms", 60_000),
             contract="waits 100 ms the variant's way (a blocking sleep, a timer, a delay), then answers "
                      "{\"sleptMs\":100}; no Redis command, no database statement."),
    # The ramp study's "sleep 1 s": the same endpoint, ten times as long.
    Scenario("sleep-1s", "GET", "/sleep?ms=1000", 200, "application/json", {"sleptMs": 1000}, endpoint="sleep",
             contract="waits 1,000 ms the variant's way (a blocking sleep, a timer, a delay), then answers "
                      "{\"sleptMs\":1000}; no Redis command, no database statement."),
    Scenario("cpu", "GET", "/cpu?n=20000", 200, "application/json", {"n": 20000, "primes": 2262},
             rejects=_rejects("/cpu", "n", 10_000_000),
             contract="counts the primes up to 20,000 by trial division and answers their number (2,262); no "
                      "Redis command, no database statement."),
    # The same count with Thread.yield() after each prime: study 003's context-switch experiment.
    Scenario("cpu-yield", "GET", "/cpu-yield?n=20000", 200, "application/json", {"n": 20000, "primes": 2262},
             contract="counts the primes up to 20,000 as cpu does, calling Thread.yield() after each one found; "
                      "no Redis command, no database statement."),
    Scenario("redis", "GET", "/redis", 200, "application/json", list(REDIS_SEED.values()),
             backend_work={"redis_commands": 1},
             contract="one MGET of the three seeded keys, answered as a JSON array of their values; no database "
                      "statement."),
    DbRead("db-read", "GET", "/db?id=42", 200, "application/json", seeded_row(42), backend_work={"db_selects": 1},
           rejects=(("/db", "a missing id"), ("/db?id=", "an empty id"), *_rejects("/db", "id", 2_147_483_647)),
           contract="one SELECT of the seeded row by its id, answered as JSON; no Redis command, no PREPARE per "
                    "request."),
    DbWrite("db-write", "POST", "/db", 201, "application/json", None,
             body=b'{"name":"bench-write","price":1.5}', headers=_JSON_BODY, backend_work={"db_inserts": 1},
             contract="one INSERT of the row sent, answered with its generated id; no Redis command, no PREPARE "
                      "per request."),
    FanOut("fan-out", "GET", "/fan-out?calls=3", 200, "application/json", [{"call": i} for i in (1, 2, 3)],
             backend_work={"downstream_calls": 3},
             rejects=(*_rejects("/fan-out", "calls", 16), ("/fan-out?calls=0", "calls of 0")),
             contract="three GETs to the downstream service, all in flight at once, each answering after the run's "
                      "downstream delay; their bodies answered as a JSON array in order; no Redis command, no "
                      "database statement."),
    CacheAside("cache-aside", "GET", "/cache-aside?id=42", 200, "application/json", seeded_row(42),
               rejects=(("/cache-aside", "a missing id"), *_rejects("/cache-aside", "id", 2_147_483_647)),
               # Under load one request in ten misses (CACHE_IDS): a GET each, a SELECT and a SET a miss.
               backend_work={"redis_commands": 1 + CACHE_IDS.miss_share, "db_selects": CACHE_IDS.miss_share},
               ids=CACHE_IDS,
               contract="one Redis GET of the item; on a miss, one SELECT of its row and one SET with the cache's "
                        "time to live; answered as db-read answers the row. The load asks for item 42 but one "
                        "request in ten, which asks for an item it has not asked for within the time to live "
                        "(a miss); the cache is emptied before each load."),
    Scenario("proxy", "GET", "/proxy/sleep?ms=100", 200, "application/json", {"sleptMs": 100},
             contract="forwards /sleep?ms=100 to the backend target and returns its response; the gateway sends "
                      "no Redis command, no database statement."),
    Scenario("proxy-json", "GET", "/proxy/json", 200, "application/json", {"message": HELLO},
             contract="forwards /json to the backend target and returns its response; the gateway sends no Redis "
                      "command, no database statement."),
]}



class NoAnswer(OSError):
    """A request of a check that got no HTTP answer; the message names the request and what happened."""


def ask(port: int, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None,
        host: str = "127.0.0.1", rule: str = "") -> Response:
    """One request of a check; NoAnswer names it ("GET /sleep?ms=60001: no answer within 10 s") and the
    contract's rule it tests, if any, so that a target that hangs on it knows what it was asked."""
    try:
        return request(port, method, path, body, headers, timeout=ANSWER_TIMEOUT_S, host=host)
    except (OSError, http.client.HTTPException) as e:
        raise NoAnswer(f"{method} {path}: {_no_answer(e)}" + (f" ({rule})" if rule else "")) from None


def _no_answer(e: Exception) -> str:
    if isinstance(e, TimeoutError):
        return f"no answer within {ANSWER_TIMEOUT_S:g} s"
    if isinstance(e, ConnectionRefusedError):
        return "connection refused"
    if isinstance(e, http.client.RemoteDisconnected):
        return "the connection closed without an answer"
    if isinstance(e, http.client.HTTPException):
        return f"not an HTTP answer ({type(e).__name__}: {str(e)[:100]})"
    return e.strerror or str(e)


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


def manifest_scenarios() -> list[str]:
    """What a framework.toml may list: the scenarios with an endpoint of their own (read when asked)."""
    return [name for name, s in SCENARIOS.items() if not s.endpoint]


def parse_list(value: str | None, valid: list[str], what: str) -> list[str] | None:
    """Split "a,b" and check every name against `valid`; None when value is empty."""
    if not value:
        return None
    names = [v.strip() for v in value.split(",") if v.strip()]
    unknown = [n for n in names if n not in valid]
    if unknown:
        raise UsageError(f"unknown {what} {', '.join(repr(u) for u in unknown)}; valid: {', '.join(valid)}")
    return names
