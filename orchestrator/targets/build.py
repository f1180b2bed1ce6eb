"""Building a framework folder with its manifest's command, once per change of its sources."""
from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Iterator

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
# Builds run at once. With Maven's cache empty each build waits mostly on Maven Central, one artifact at a
# time (Maven 3.8): the repo's seven took 276 s one after the other here, 114 s four at a time and 123 s
# all seven at once (2026-11-30). Two builds that fetch the same file share it through the resolver's lock
# on the file being downloaded (PartialFile), so they can share ~/.m2.
BUILD_JOBS = 4


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


class Builds:
    """The build processes running, killed at once when the caller stops (Ctrl-C mid-build); none starts
    after that."""

    def __init__(self):
        self._lock = threading.Lock()
        self._running: set[subprocess.Popen] = set()
        self._stopped = False

    def run(self, argv: list[str], **options) -> int:
        with self._lock:
            if self._stopped:
                raise TargetFailed("the build was stopped")
            # in bench's own process group, as one build at a time was: a signal to the group (a terminal's
            # Ctrl-C, the test command stopping its set-up) reaches the builds too
            p = subprocess.Popen(argv, **options)
            self._running.add(p)
        try:
            return p.wait()
        finally:
            with self._lock:
                self._running.discard(p)

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            running = list(self._running)
        for p in running:
            with contextlib.suppress(psutil.Error):   # its children first: `sh -c` a command may be leaves them
                for child in psutil.Process(p.pid).children(recursive=True):
                    child.kill()
            p.kill()
            p.wait()


def _write_versions(fw: Framework, env: dict, log_path: Path, builds: Builds) -> None:
    """The versions Maven resolved, for the parity table. A failure costs that table its library
    columns (the build log says why), not the build."""
    versions = versions_command(fw)
    if versions:
        with open(log_path, "ab") as log:
            builds.run(versions, cwd=fw.path, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)


def build(fw: Framework, jdk: Jdk, log_path: Path, force: bool, builds: Builds) -> tuple[Path, float | None]:
    """Build fw unless its artifact is current; returns (artifact, seconds spent or None if skipped).

    Raises TargetFailed with the tail of the build log when the command fails or leaves no artifact.
    A Kotlin compile daemon it started is left to build_all, which runs this beside other builds.
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    env = {"MAVEN_OPTS": BUILD_TOOL_JVM, **os.environ, "JAVA_HOME": str(jdk.home),
           "PATH": f"{jdk.home}/bin{os.pathsep}{os.environ.get('PATH', '')}", OWNER_VAR: Owner.me().mark()}
    if not force and is_current(fw, jdk):
        if not (fw.path / VERSIONS_FILE).exists():   # built before the versions were kept
            _write_versions(fw, env, log_path, builds)
        return fw.artifact_path, None
    started = time.monotonic()
    try:
        with open(log_path, "wb") as log:
            rc = builds.run(list(fw.build_command), cwd=fw.path, env=env, stdin=subprocess.DEVNULL,
                            stdout=log, stderr=subprocess.STDOUT, umask=SHARED_UMASK)
    except FileNotFoundError as e:
        raise TargetFailed(f"build of {fw.name} failed: {e.filename} not found "
                           f"(install it, e.g. `apt-get install maven`)") from None
    if rc != 0:
        raise TargetFailed(f"build of {fw.name} failed (exit {rc}); last lines of {log_path}:\n{log_tail(log_path)}")
    if not fw.artifact_path.exists():
        raise TargetFailed(f"build of {fw.name} succeeded but left no artifact at {fw.artifact_path}")
    _write_versions(fw, env, log_path, builds)
    elapsed = time.monotonic() - started
    _stamp(fw).write_text(source_hash(fw, jdk))
    return fw.artifact_path, elapsed


def build_all(frameworks: list[Framework], jdk: Jdk, logs: Path,
              force: bool = False) -> Iterator[tuple[Framework, Path | None, float | None, str]]:
    """Each framework built (build), BUILD_JOBS at once, yielded as it ends: (framework, artifact, seconds
    or None when it was current, the failure or ''). Builds still running when the caller stops are
    killed; then any Kotlin compile daemon the builds started (stop_own_daemons): left running it would
    hold memory and CPU and falsify every measurement after it."""
    builds = Builds()
    pool = ThreadPoolExecutor(BUILD_JOBS, thread_name_prefix="build")
    try:
        ends = {pool.submit(build, fw, jdk, logs / f"build-{fw.name}.log", force, builds): fw for fw in frameworks}
        for end in as_completed(ends):
            try:
                artifact, seconds = end.result()
                yield ends[end], artifact, seconds, ""
            except TargetFailed as e:
                yield ends[end], None, None, e.reason
    finally:
        builds.stop()
        pool.shutdown(wait=True, cancel_futures=True)
        stop_own_daemons()
