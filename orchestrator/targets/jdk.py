"""Finding a JDK new enough for virtual threads (21+): JAVA_HOME first, then /usr/lib/jvm."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from orchestrator.errors import MissingTool

MIN_VERSION = 21
# Where installed JDKs are looked for after JAVA_HOME; BENCH_JVM_DIR points elsewhere.
JVM_DIR = Path(os.environ.get("BENCH_JVM_DIR", "/usr/lib/jvm"))


@dataclass(frozen=True)
class Jdk:
    home: Path
    version: str

    @property
    def java(self) -> str:
        return str(self.home / "bin" / "java")

    @property
    def major(self) -> int:
        return _major(self.version)


def _major(version: str) -> int:
    m = re.match(r"(1\.)?(\d+)", version)
    return int(m.group(2)) if m else 0


def _probe(home: Path) -> Jdk | None:
    release = home / "release"
    if not (home / "bin" / "java").exists() or not release.exists():
        return None
    m = re.search(r'^JAVA_VERSION="([^"]+)"', release.read_text(errors="replace"), re.M)
    return Jdk(home.resolve(), m.group(1)) if m else None


def find_jdk() -> Jdk:
    seen: list[str] = []
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        jdk = _probe(Path(java_home))
        if jdk and jdk.major >= MIN_VERSION:
            return jdk
        seen.append(f"JAVA_HOME={java_home} ({jdk.version if jdk else 'no JDK there'})")
    candidates = [j for j in (_probe(p) for p in sorted(JVM_DIR.glob("*"))) if j] if JVM_DIR.exists() else []
    good = [j for j in candidates if j.major >= MIN_VERSION]
    if good:
        return max(good, key=lambda j: (j.major, j.version))
    seen += [f"{j.home} ({j.version})" for j in candidates]
    raise MissingTool(
        f"no JDK {MIN_VERSION} or newer found (looked at: {', '.join(seen) or f'JAVA_HOME unset, nothing in {JVM_DIR}'}); "
        f"install one (e.g. Temurin 25 into {JVM_DIR}, or `apt-get install openjdk-21-jdk-headless` where packaged) "
        f"or set JAVA_HOME")
