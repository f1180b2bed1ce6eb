"""What each target runs with, recorded into run.json for the parity table (report/parity_table.py
reads it back), so that a difference in the figures can be told from a difference in the set-up.

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

from orchestrator.config.catalog import Target

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


def thread_dump(jcmd: Path, pid: int, timeout: float = 20.0) -> str:
    """`jcmd Thread.print -l` of the JVM now, with the locks each thread holds ('' when jcmd could not
    attach, e.g. to a container's JVM)."""
    try:
        return subprocess.run([str(jcmd), str(pid), "Thread.print", "-l"], capture_output=True, text=True,
                              timeout=timeout).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""


def observe_threads(jcmd: Path, pid: int, timeout: float = 20.0) -> dict[str, int]:
    """The JVM's thread pools now ({} when jcmd could not attach)."""
    return thread_pools(thread_dump(jcmd, pid, timeout))


def merge_pools(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    """The larger count of each pool (a target's JVMs, one per scenario, each after its load)."""
    merged = {k: max(a.get(k, 0), b.get(k, 0)) for k in {**a, **b}}
    return dict(sorted(merged.items(), key=lambda kv: -kv[1]))
