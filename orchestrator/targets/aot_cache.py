"""The JDK's AOT cache as a way to start a target (`--jvm-mode aot-cache`; JEPs 483, 514, 515).

A training run records the classes the application loads and links and the methods' profiles, and
JDK 25 writes them to a cache as the JVM exits (-XX:AOTCacheOutput: at exit it launches a child JVM
that assembles the cache); a JVM started with -XX:AOTCache then maps those classes already loaded and
linked, with their profiles, instead of reading them from the jars. Each target's cache is trained
once per run (`train`): the target started as the run starts it, verified, then TRAIN_S of wrk at
TRAIN_CONNECTIONS on each scenario the run measures it on, then stopped (SIGTERM) and waited for while
the cache is assembled. The cache and its training log stay in the run's folder (aot/), and run.json
records what it was trained on.

-XX:AOTMode=on: a JVM that cannot map its cache (another JDK, another class path) does not start and
says why, rather than quietly starting without it. In a run with an aot-cache mode every JVM measured,
of both modes, logs its class loading (-Xlog:class+load), from which each row counts the classes loaded and
those mapped from a CDS archive: the JDK's default one (its own classes) in the default mode, the
target's cache in the other (12,817 of 13,133 for Spring MVC here, against 1,458 by default).

In the docker runtime the run's aot/ folder is mounted in the container at /aot (writable for the
training, read-only after) and each JVM's class loading log at /logs/classes.log: the training and
every measured JVM of a target run in its one image, so the JVM that maps the cache is the one that
trained it, on the same class path. A remote engine would mount its own machine's folders, not the
run's: there the mode is refused (run_options.py).
"""
from __future__ import annotations

import re
import time
from dataclasses import replace
from pathlib import Path
from typing import Callable

from orchestrator.config import driver_registry
from orchestrator.config.catalog import Target
from orchestrator.config.load import LoadSpec
from orchestrator.config.modes import AOT_CACHE, AOT_TRAINING, slug
from orchestrator.config.scenarios import SCENARIOS
from orchestrator.drivers.base import DriverFailed
from orchestrator.errors import TargetFailed
from orchestrator.infra.procs import log_tail
from orchestrator.targets.runtimes.base import Mount

TRAIN_S = 5.0
TRAIN_CONNECTIONS = 64
# The JVM assembles the cache after SIGTERM, before it exits (a Spring target's took 10-20 s here)
ASSEMBLE_S = 300.0
DONE = "AOTCache creation is complete"
CACHE_DIR = "aot"
CLASS_LOG_SUFFIX = ".classes.log"
CACHE_INSIDE = "/aot"                     # where a container finds the run's CACHE_DIR
CLASS_LOG_INSIDE = "/logs/classes.log"    # and its JVM's class loading log
_LOADED = re.compile(rb"\[class,load\] \S+ source: (shared objects file)?")


def cache_path(run_dir: Path, target: Target) -> Path:
    """Where the run keeps the target's cache: one per framework and variant, whatever its modes."""
    return run_dir / CACHE_DIR / f"{slug(target.base_id)}.aot"


def jvm_options(target: Target, run_dir: Path, class_log: Path | None,
                path: Callable[[Mount], str]) -> tuple[list[str], tuple[Mount, ...]]:
    """The options of the target's JVM for its mode, and the run's files they name, at the paths its
    runtime's JVM finds them (`path`: a container's mounts): the cache it starts from (and its refusal
    to start without it), or the one its training writes; the class loading log when the run compares
    modes."""
    out, mounts = [], []
    if class_log:
        # absolute paths (as the cache's, below): a local JVM runs in its framework's folder, and Docker
        # mounts none other
        log = Mount(class_log.absolute(), CLASS_LOG_INSIDE, writable=True)
        # no rotation: a mounted file cannot be renamed; the JVM empties it instead, so that each of a target's
        # JVMs, which share its name, logs alone
        out.append(f"-Xlog:class+load=info:file={path(log)}::filecount=0")
        mounts.append(log)
    training = target.jvm_mode == AOT_TRAINING
    if training or target.jvm_mode == AOT_CACHE:
        cache = cache_path(run_dir.absolute(), target)
        folder = Mount(cache.parent, CACHE_INSIDE, writable=training)
        at = f"{path(folder)}/{cache.name}"
        out += [f"-XX:AOTCacheOutput={at}"] if training else [f"-XX:AOTCache={at}", "-XX:AOTMode=on"]
        mounts.append(folder)
    return out, tuple(mounts)


def class_log_of(server_log: Path) -> Path:
    return server_log.with_suffix(CLASS_LOG_SUFFIX)


def class_counts(class_log: Path | None) -> dict[str, int]:
    """classes_loaded and classes_from_cache of a JVM's class loading log so far; {} without one (a
    run without an aot-cache mode)."""
    try:
        data = class_log.read_bytes() if class_log else None
    except OSError:
        data = None
    if not data:
        return {}
    found = _LOADED.findall(data)
    return {"classes_loaded": len(found), "classes_from_cache": sum(1 for shared in found if shared)}


def train(environment, target: Target, env: dict[str, str], scenarios: list[str],
          progress=lambda text: None) -> dict:
    """The target's cache, trained now unless this run has it already; what it was trained on, for
    run.json. TargetFailed when the training JVM fails or writes no cache."""
    cache = cache_path(environment.run_dir, target)
    if cache.exists():
        return {}
    cache.parent.mkdir(parents=True, exist_ok=True)
    plain = replace(target, modes=(AOT_TRAINING,))
    t0 = time.monotonic()
    progress(f"training the AOT cache of {target.base_id}: {TRAIN_S:g} s of wrk at {TRAIN_CONNECTIONS} "
             f"connections on {', '.join(scenarios)}")
    started, v = environment.start_verified(plain, env, "cache", "cache")   # logs/<target>-aot-training-cache.log
    log = started.server.log_path
    try:
        if not v.ok:
            raise TargetFailed(f"the AOT cache's training run failed its verification: {v.reason}")
        s = environment.settings
        for name in scenarios:
            spec = LoadSpec(port=s.port, scenario=SCENARIOS[name], concurrency=TRAIN_CONNECTIONS,
                            duration_s=TRAIN_S, cpus=s.loadgen_cpus, timeout_s=s.request_timeout_s,
                            out_dir=environment.run_dir / CACHE_DIR / "training", **environment.load_placement())
            try:
                driver_registry.get("wrk").run(spec)
            except DriverFailed as e:
                raise TargetFailed(f"the AOT cache's training load on {name} failed: {e}") from None
    finally:
        started.stop(grace_s=ASSEMBLE_S)   # SIGTERM: the JVM assembles the cache, then exits
    if not cache.exists() or DONE not in log.read_text(errors="replace"):
        raise TargetFailed(f"the training run of {target.base_id} wrote no AOT cache ({cache}); its log ends: "
                           f"{log_tail(log, 5)}")
    cache.chmod(0o600)   # owner-only as every file of the run, whatever the umask of the JVM that wrote it (a container's)
    return {"cache": str(cache.relative_to(environment.run_dir)), "mb": round(cache.stat().st_size / 2**20, 1),
            "trained_on": scenarios, "seconds_each": TRAIN_S, "connections": TRAIN_CONNECTIONS, "driver": "wrk",
            "took_s": round(time.monotonic() - t0, 1), "log": str(log.relative_to(environment.run_dir))}
