"""Building a framework folder with its manifest's command, once per change of its sources."""
from __future__ import annotations

import hashlib
import os
import subprocess
import time
from pathlib import Path

import psutil

from orchestrator.config.catalog import Framework
from orchestrator.errors import TargetFailed
from orchestrator.infra.cleanup import owned_by
from orchestrator.infra.procs import OWNER_VAR, Owner, log_tail
from orchestrator.targets.jdk import Jdk
from orchestrator.targets.parity import VERSIONS_FILE, versions_command

# What a build (or an image's bootstrap: images.py) makes, a container's own user reads: as readable as a
# default umask makes it, whatever bench's own (077: cli/app.py).
SHARED_UMASK = 0o022

IGNORED_DIRS = {"target", "build", ".gradle", ".idea", "node_modules", "__pycache__"}
# The build tool's own JVM (Maven, and kotlinc inside it with the daemon off) lives for seconds: C2
# never pays back there. C1 alone and the serial collector built spring-mvc in 9.8-10.1 s against
# 13.4-14.6 s here. It changes nothing in the artifact; a MAVEN_OPTS of the user's own wins.
BUILD_TOOL_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def _files(folder: Path):
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if d not in IGNORED_DIRS and not d.startswith("."))
        for name in sorted(filenames):
            yield Path(dirpath) / name


def source_hash(fw: Framework, jdk: Jdk) -> str:
    """Hash of every source file the build reads, including sibling folders without a manifest
    (shared sources such as spring-shared), and of the JDK that compiles them."""
    h = hashlib.sha256(f"{jdk.home}|{jdk.version}|{' '.join(fw.build_command)}".encode())
    roots = [fw.path] + [p for p in sorted(fw.path.parent.iterdir())
                         if p.is_dir() and not (p / "framework.toml").exists()]
    for root in roots:
        for f in _files(root):
            h.update(str(f.relative_to(fw.path.parent)).encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


def _stamp(fw: Framework) -> Path:
    return fw.artifact_path.with_name(fw.artifact_path.name + ".bench-stamp")


def is_current(fw: Framework, jdk: Jdk) -> bool:
    stamp = _stamp(fw)
    return (fw.artifact_path.exists() and stamp.exists()
            and stamp.read_text().strip() == source_hash(fw, jdk))


def stop_own_daemons() -> list[int]:
    """Kill the Kotlin compile daemons this process's builds started, and return their pids. A daemon
    detaches from the build, but keeps the environment the build gave it, with this process's owner mark
    (procs.Owner): one that was there before, another checkout's or an IDE's has none, and stays. One
    that cannot be signalled (gone meanwhile, another user's) is left."""
    stopped = []
    for p in owned_by(os.getpid()):
        try:
            if any("KotlinCompileDaemon" in a for a in p.cmdline()):
                p.kill()
                stopped.append(p.pid)
        except psutil.Error:
            pass
    return stopped


def _write_versions(fw: Framework, env: dict, log_path: Path) -> None:
    """The versions Maven resolved, for the parity table. A failure costs that table its library
    columns (the build log says why), not the build."""
    versions = versions_command(fw)
    if versions:
        with open(log_path, "ab") as log:
            subprocess.run(versions, cwd=fw.path, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)


def build(fw: Framework, jdk: Jdk, log_path: Path, force: bool = False) -> tuple[Path, float | None]:
    """Build fw unless its artifact is current; returns (artifact, seconds spent or None if skipped).

    Raises TargetFailed with the tail of the build log when the command fails or leaves no artifact.
    A Kotlin compile daemon started by the build is killed (stop_own_daemons): left running it would
    hold memory and CPU and falsify every measurement after it.
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    env = {"MAVEN_OPTS": BUILD_TOOL_JVM, **os.environ, "JAVA_HOME": str(jdk.home),
           "PATH": f"{jdk.home}/bin{os.pathsep}{os.environ.get('PATH', '')}", OWNER_VAR: Owner.me().mark()}
    if not force and is_current(fw, jdk):
        if not (fw.path / VERSIONS_FILE).exists():   # built before the versions were kept
            _write_versions(fw, env, log_path)
        return fw.artifact_path, None
    started = time.monotonic()
    try:
        with open(log_path, "wb") as log:
            rc = subprocess.run(list(fw.build_command), cwd=fw.path, env=env, stdin=subprocess.DEVNULL,
                                stdout=log, stderr=subprocess.STDOUT, umask=SHARED_UMASK).returncode
    except FileNotFoundError as e:
        raise TargetFailed(f"build of {fw.name} failed: {e.filename} not found "
                           f"(install it, e.g. `apt-get install maven`)") from None
    finally:
        stop_own_daemons()
    if rc != 0:
        raise TargetFailed(f"build of {fw.name} failed (exit {rc}); last lines of {log_path}:\n{log_tail(log_path)}")
    if not fw.artifact_path.exists():
        raise TargetFailed(f"build of {fw.name} succeeded but left no artifact at {fw.artifact_path}")
    _write_versions(fw, env, log_path)
    elapsed = time.monotonic() - started
    _stamp(fw).write_text(source_hash(fw, jdk))
    return fw.artifact_path, elapsed
