"""The parity table: what each target runs with, side by side, so that a difference in the figures
can be told from a difference in the set-up.

Three sources, none typed twice:
  - declared: each framework.toml's `parity` table (a variant's own overrides it): the limits and
    modes that code and configuration set (Redis and database pools, keep-alive, accept backlog),
    and its `versions`: what picks its library versions (a BOM, or the newest that resolve), in
    words, never a version number;
  - resolved: the library versions Maven resolved for the build (`dependency:list`, run after each
    Maven build into target/dependencies.txt), never a version written by hand;
  - observed: the JVM's threads by pool, counted by `jcmd Thread.print` after a target's last cell
    (pools grow under load, so the count after load is the one that served it), with the GC and heap
    the run used.
"""
from __future__ import annotations

import re
import subprocess
from collections import Counter
from pathlib import Path

from orchestrator import lazy
from orchestrator.config.catalog import PARITY_FIELDS, Target

pd = lazy.module("pandas")

VERSIONS_FILE = "target/dependencies.txt"
# `mvn dependency:list`, pinned: Maven 3.8 would otherwise pick the newest plugin, which needs a newer Maven.
MVN_LIST = ["org.apache.maven.plugins:maven-dependency-plugin:3.8.1:list", "-DincludeScope=runtime",
            f"-DoutputFile={VERSIONS_FILE}", "-DoutputAbsoluteArtifactFilename=false"]

# The libraries a reader compares, by role: of a framework, an HTTP server and a JSON library the first
# found in the build is shown (the one its code uses); of clients and pools every one (a framework's
# variants may use different ones: Quarkus reactive the Vert.x MySQL client, blocking JDBC).
LIBRARIES = {
    "framework": ["spring-cloud-gateway-server-webflux", "spring-cloud-gateway-server-webmvc", "spring-webmvc",
                  "spring-webflux", "quarkus-core", "ktor-server-core-jvm", "vertx-web", "undertow-core"],
    "http server": ["tomcat-embed-core", "reactor-netty-http", "vertx-core", "undertow-core", "netty-codec-http"],
    "redis client": ["lettuce-core", "quarkus-redis-client", "vertx-redis-client"],
    "db client": ["r2dbc-mariadb", "vertx-mysql-client", "mariadb-java-client"],
    "db pool": ["HikariCP", "r2dbc-pool", "agroal-pool"],
    "json": ["jackson-databind", "kotlinx-serialization-json-jvm", "jackson-core"],
    "netty": ["netty-codec-http", "netty-transport"],
}
EVERY_ONE = {"redis client", "db client", "db pool"}
_LINE = re.compile(r"^\s*([\w.\-]+):([\w.\-]+):[\w\-]+(?::[\w.\-]+)?:([^:\s]+):(?:compile|runtime)\b")


def versions_command(fw) -> list[str] | None:
    """The command that writes the resolved versions for a Maven build (None for other builds)."""
    cmd = list(fw.build_command)
    return [cmd[0], "-B", "-q", *MVN_LIST] if cmd and Path(cmd[0]).name == "mvn" else None


def resolved(fw) -> dict[str, str]:
    """artifactId -> version, as Maven resolved them for the last build ({} when unknown)."""
    path = fw.path / VERSIONS_FILE
    if not path.exists():
        return {}
    out = {}
    for line in path.read_text().splitlines():
        m = _LINE.match(line)
        if m:
            out.setdefault(m.group(2), m.group(3))
    return out


def libraries(fw) -> dict[str, str]:
    """Role -> "artifact version" for the roles this build has."""
    found = resolved(fw)
    out = {}
    for role, names in LIBRARIES.items():
        present = [f"{name} {found[name]}" for name in names if name in found]
        if present:
            out[role] = ", ".join(present) if role in EVERY_ONE else present[0]
    return out


_PLACEHOLDER = re.compile(r"\{([A-Z_]+)\}")


def declared(target: Target, env: dict[str, str]) -> dict[str, str]:
    """The framework's parity table with its variant's overrides, the `{DB_POOL_SIZE}`-style placeholders
    filled in from the environment the target is started with: a pool shrunk by an override shows as such."""
    out = {}
    for key, text in {**target.framework.parity, **target.variant.parity}.items():
        out[key] = _PLACEHOLDER.sub(lambda m: env.get(m.group(1), m.group(0)), text)
    return out


def record(target: Target, env: dict[str, str]) -> dict:
    """What run.json keeps of a target before it runs: its server, declared limits and libraries."""
    return {"server": target.framework.server, "declared": declared(target, env),
            "libraries": libraries(target.framework), "versions": target.framework.versions}


_DIGITS = re.compile(r"\d+")


def thread_pools(thread_dump: str) -> dict[str, int]:
    """Platform threads by pool, from `jcmd Thread.print`: names with their numbers replaced by N
    ("http-nio-N-exec-N": 200), largest first. Virtual threads are not listed there; their carriers are."""
    names = re.findall(r'^"([^"]+)" #\d+', thread_dump, flags=re.M)
    return dict(Counter(_DIGITS.sub("N", n) for n in names).most_common())


def observe_threads(jcmd: Path, pid: int, timeout: float = 20.0) -> dict[str, int]:
    """The JVM's thread pools now ({} when jcmd could not attach, e.g. to a container's JVM)."""
    try:
        out = subprocess.run([str(jcmd), str(pid), "Thread.print"], capture_output=True, text=True,
                             timeout=timeout).stdout
    except (OSError, subprocess.TimeoutExpired):
        return {}
    return thread_pools(out)


def merge_pools(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    """The larger count of each pool (a target's JVMs, one per scenario, each after its load)."""
    merged = {k: max(a.get(k, 0), b.get(k, 0)) for k in {**a, **b}}
    return dict(sorted(merged.items(), key=lambda kv: -kv[1]))


UNDECLARED = "undeclared"


def undeclared(entries: dict[str, dict]) -> dict[str, list[str]]:
    """The parity fields each target's framework.toml leaves out, by target (only those with any): a
    stranger's framework is not fair by default."""
    out = {t: [f for f in PARITY_FIELDS if f not in e.get("declared", {})] for t, e in entries.items()}
    return {t: fields for t, fields in out.items() if fields}


def table(entries: dict[str, dict], top_pools: int = 5) -> pd.DataFrame:
    """One row per target from run.json's `parity` entries: server, declared limits ("undeclared"
    where its framework.toml is silent), libraries by role, the largest thread pools after load, GC
    and heap."""
    rows = []
    for target, e in entries.items():
        row = {"target": target, "server": e.get("server", "")}
        declared = e.get("declared", {})
        row.update({label: declared.get(k, UNDECLARED) for k, label in PARITY_FIELDS.items()})
        row.update(e.get("libraries", {}))
        row["versions from"] = e.get("versions") or UNDECLARED
        pools = e.get("threads") or {}
        if pools:
            row["threads after load"] = ", ".join(f"{n} {c}" for n, c in list(pools.items())[:top_pools])
        if e.get("gc") or e.get("heap"):
            row["GC, heap"] = f"{e.get('gc') or '?'}, {e.get('heap') or 'default'}"
        rows.append(row)
    return pd.DataFrame(rows).fillna("")


def differing(df: pd.DataFrame) -> list[str]:
    """The columns whose value is not the same for every target."""
    return [c for c in df.columns if c != "target" and df[c].nunique() > 1]


def by_property(df: pd.DataFrame) -> list[tuple[str, list[tuple[str, list[str]]]]]:
    """The table for a narrow screen: per property (marked ≠ where targets differ), each distinct value
    once with the targets that have it, in the order they first appear."""
    diff = set(differing(df))
    out = []
    for prop in (c for c in df.columns if c != "target"):
        values: dict[str, list[str]] = {}
        for target, value in zip(df["target"], df[prop]):
            values.setdefault(str(value), []).append(target)
        out.append((f"{prop} ≠" if prop in diff else prop, list(values.items())))
    return out


def matrix(df: pd.DataFrame) -> pd.DataFrame:
    """The table turned for reading: one row per property (marked ≠ where targets differ), one column
    per target."""
    diff = set(differing(df))
    out = df.set_index("target").T
    out.index = [f"{p} ≠" if p in diff else p for p in out.index]
    return out.rename_axis("property").reset_index()
