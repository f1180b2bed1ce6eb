"""Images without a registry: local base images made once, and one image per framework artifact.

Online users get the public bases (eclipse-temurin:25-jre, debian:bookworm-slim). Where none can be
pulled (or with --offline), `bootstrap` makes them here, once:

    bench-base/debian:bookworm   debootstrap --variant=minbase, trimmed, `docker import`
    bench-base/jre:25            jlink from the local JDK on that Debian base
    bench-base/redis:bookworm    Debian's redis-server on that base (apt inside `docker build`)
    bench-base/mariadb:bookworm  Debian's mariadb-server on that base

Each image carries the label bench.made-by saying how it was made (`bench images list`). With
DOCKER_HOST naming another machine's engine, they are built on this machine's and shipped there.
"""
from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from orchestrator import REPO_ROOT
from orchestrator.config.catalog import Framework, Target
from orchestrator.errors import BenchError, MissingTool
from orchestrator.infra.docker_engine import builder, client
from orchestrator.infra.procs import require_tool
from orchestrator.targets.build import SHARED_UMASK
from orchestrator.targets.jdk import Jdk
from orchestrator.targets.jvm import command_line

COMPOSE = REPO_ROOT / "compose"
TARGET_DOCKERFILE = COMPOSE / "target.Dockerfile"
DEBIAN = "bench-base/debian:bookworm"
JRE = "bench-base/jre:25"
REDIS = "bench-base/redis:bookworm"
MARIADB = "bench-base/mariadb:bookworm"
PUBLIC = {DEBIAN: "debian:bookworm-slim", JRE: "eclipse-temurin:25-jre"}
MADE_BY = "bench.made-by"

# The JRE's modules: what Spring Boot, Quarkus, Vert.x, Ktor, Undertow and their drivers load
# (java.desktop for java.beans, java.sql, JMX, JFR, naming, crypto, zipfs for nested jars).
JRE_MODULES = [
    "java.base", "java.compiler", "java.datatransfer", "java.desktop", "java.instrument", "java.logging",
    "java.management", "java.management.rmi", "java.naming", "java.net.http", "java.prefs", "java.rmi",
    "java.scripting", "java.security.jgss", "java.security.sasl", "java.sql", "java.sql.rowset",
    "java.transaction.xa", "java.xml", "java.xml.crypto", "jdk.charsets", "jdk.crypto.cryptoki",
    "jdk.crypto.ec", "jdk.httpserver", "jdk.jfr", "jdk.localedata", "jdk.management", "jdk.management.jfr",
    "jdk.naming.dns", "jdk.naming.rmi", "jdk.net", "jdk.security.auth", "jdk.security.jgss", "jdk.unsupported",
    "jdk.zipfs",
]
TRIM = ["usr/share/doc", "usr/share/man", "usr/share/info", "usr/share/locale", "var/lib/apt/lists",
        "var/cache/apt", "var/log"]


@dataclass(frozen=True)
class Bases:
    """The base images a build uses: public ones where present, else the local bootstrap."""
    debian: str
    jre: str
    redis: str
    mariadb: str


def exists(tag: str) -> bool:
    import docker.errors
    try:
        builder().images.get(tag)
        return True
    except docker.errors.ImageNotFound:
        return False


def _pull(tag: str) -> bool:
    try:
        builder().images.pull(tag)
        return True
    except Exception:  # noqa: BLE001 - no registry: the pull fails at DNS
        return False


def _mirror() -> str:
    """The Debian mirror apt on this host uses, so debootstrap reaches what apt reaches."""
    for f in [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]:
        try:
            text = f.read_text()
        except OSError:
            continue
        m = re.search(r"^(?:URIs:\s*|deb\s+(?:\[[^]]*\]\s+)?)(https?://\S+/debian)/?\s", text, re.M)
        if m:
            return m.group(1)
    return "http://deb.debian.org/debian"


def _build(context: Path, dockerfile: Path, tag: str, base: str, made_by: str, log,
           args: dict[str, str] | None = None) -> None:
    """docker build on the host network (apt inside reaches the mirror), labelled with its origin."""
    import docker.errors
    log(f"building {tag} (docker build {dockerfile.name}, FROM {base})")
    try:
        builder().images.build(path=str(context), dockerfile=str(dockerfile), tag=tag, network_mode="host",
                              buildargs={"BASE_IMAGE": base, **(args or {})}, labels={MADE_BY: made_by},
                              rm=True, forcerm=True)
    except docker.errors.BuildError as e:
        tail = "\n".join(str(line.get("stream", line.get("error", ""))).rstrip() for line in list(e.build_log)[-10:])
        raise BenchError(f"docker build of {tag} failed: {e.msg}\n{tail}") from None


def bootstrap_debian(log) -> None:
    debootstrap = require_tool("debootstrap", "apt-get install -y debootstrap")
    mirror = _mirror()
    log(f"building {DEBIAN}: debootstrap --variant=minbase bookworm from {mirror} (about a minute)")
    with tempfile.TemporaryDirectory(prefix="bench-rootfs-") as tmp:
        root = Path(tmp) / "rootfs"
        r = subprocess.run([debootstrap, "--variant=minbase", "bookworm", str(root), mirror],
                           capture_output=True, text=True, umask=SHARED_UMASK)
        if r.returncode != 0:
            raise BenchError(f"debootstrap failed (exit {r.returncode}): {(r.stderr or r.stdout)[-800:]}")
        for rel in TRIM:
            for p in (root / rel).glob("*"):
                shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)
        apt_conf = root / "etc/apt/apt.conf.d"
        # As Docker's official Debian images do: no package caches in layers, no recommends.
        (apt_conf / "docker-clean").write_text(
            'DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb '
            '/var/cache/apt/*.bin || true"; };\nAPT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb '
            '/var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };\n'
            'Dir::Cache::pkgcache ""; Dir::Cache::srcpkgcache "";\n')
        (apt_conf / "docker-no-recommends").write_text('APT::Install-Recommends "false";\n')
        (root / "etc/dpkg/dpkg.cfg.d").mkdir(parents=True, exist_ok=True)
        (root / "etc/dpkg/dpkg.cfg.d/docker-nodoc").write_text(
            "path-exclude /usr/share/doc/*\npath-exclude /usr/share/man/*\npath-exclude /usr/share/locale/*\n")
        tar = Path(tmp) / "rootfs.tar"
        with tarfile.open(tar, "w") as t:
            t.add(root, arcname=".")
        builder().api.import_image(src=str(tar), repository=DEBIAN.split(":")[0], tag=DEBIAN.split(":")[1],
                                  changes=[f'LABEL {MADE_BY}="debootstrap --variant=minbase bookworm {mirror}"',
                                           'CMD ["bash"]'])


def bootstrap_jre(jdk: Jdk, debian: str, log) -> None:
    jlink = jdk.home / "bin" / "jlink"
    if not jlink.exists():
        raise MissingTool(f"{jdk.home} has no jlink: a full JDK is needed to make the JRE image")
    available = subprocess.run([jdk.java, "--list-modules"], capture_output=True, text=True).stdout
    modules = [m for m in JRE_MODULES if re.search(rf"^{re.escape(m)}@", available, re.M)]
    log(f"building {JRE}: jlink of {len(modules)} modules from {jdk.home} ({jdk.version})")
    with tempfile.TemporaryDirectory(prefix="bench-jre-") as tmp:
        out = Path(tmp) / "jre"
        r = subprocess.run([str(jlink), "--add-modules", ",".join(modules), "--strip-debug", "--no-man-pages",
                            "--no-header-files", "--generate-cds-archive", "--output", str(out)],
                           capture_output=True, text=True, umask=SHARED_UMASK)
        if r.returncode != 0:
            raise BenchError(f"jlink failed: {(r.stderr or r.stdout)[-800:]}")
        shutil.copy(COMPOSE / "jre.Dockerfile", Path(tmp) / "Dockerfile")
        _build(Path(tmp), Path(tmp) / "Dockerfile", JRE, debian, f"jlink from {jdk.home} ({jdk.version})", log)


def bases(jdk: Jdk, offline: bool, log) -> Bases:
    """The bases to build on, bootstrapping (once) whatever is missing and cannot be pulled."""
    debian = PUBLIC[DEBIAN] if exists(PUBLIC[DEBIAN]) else DEBIAN
    jre = PUBLIC[JRE] if exists(PUBLIC[JRE]) else JRE
    if debian == DEBIAN and not exists(DEBIAN):
        if not offline and _pull(PUBLIC[DEBIAN]):
            debian = PUBLIC[DEBIAN]
        else:
            bootstrap_debian(log)
    if jre == JRE and not exists(JRE):
        if not offline and _pull(PUBLIC[JRE]):
            jre = PUBLIC[JRE]
        else:
            bootstrap_jre(jdk, debian, log)
    for tag, dockerfile in ((REDIS, "redis.Dockerfile"), (MARIADB, "mariadb.Dockerfile")):
        if not exists(tag):
            _build(COMPOSE, COMPOSE / dockerfile, tag, debian, f"{dockerfile} FROM {debian}", log)
    return Bases(debian=debian, jre=jre, redis=REDIS, mariadb=MARIADB)


def context_files(fw: Framework) -> list[Path]:
    """The files the image build sees: what the folder's .dockerignore lets in ('*' then '!path'
    lines, as every framework folder here writes it), or else just the artifact."""
    ignore = fw.path / ".dockerignore"
    keep = [line[1:].strip() for line in ignore.read_text().splitlines()
            if line.startswith("!")] if ignore.exists() else [fw.artifact]
    files = []
    for rel in keep:
        p = fw.path / rel
        files += sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p]
    return files


def default_start(fw: Framework) -> str:
    """The image's CMD: the default variant's start command, without the options bench adds per run."""
    return " ".join(command_line(Target(fw, fw.default_variant), "java", [], fw.artifact))


def artifact_hash(fw: Framework) -> str:
    """Hash of the Dockerfile, its START and every file the build context holds."""
    h = hashlib.sha256(TARGET_DOCKERFILE.read_bytes())
    h.update(default_start(fw).encode())
    for f in context_files(fw):
        h.update(str(f.relative_to(fw.path)).encode())
        with open(f, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()[:12]


def framework_image(fw: Framework, jre: str, log) -> str:
    """bench/<framework>:<hash of its artifact>, built from compose/target.Dockerfile if missing."""
    tag = f"bench/{fw.name}:{artifact_hash(fw)}"
    if not exists(tag):
        started = time.monotonic()
        _build(fw.path, TARGET_DOCKERFILE, tag, jre, f"compose/target.Dockerfile on frameworks/{fw.name} FROM {jre}",
               log, {"START": default_start(fw)})
        log(f"built {tag} in {time.monotonic() - started:.1f} s")
    return tag


def listing() -> list[dict]:
    """The images bench made or uses, with size and origin."""
    rows = []
    for img in client().images.list():
        for tag in img.tags:
            if tag.startswith(("bench/", "bench-base/")) or tag in PUBLIC.values():
                rows.append({"tag": tag, "size_mb": img.attrs.get("Size", 0) / 2**20,
                             "created": img.attrs.get("Created", "")[:19],
                             "made_by": (img.labels or {}).get(MADE_BY, "pulled")})
    return sorted(rows, key=lambda r: r["tag"])
