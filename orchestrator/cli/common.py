"""What the commands share: the console, and turning their options (config/option_table.py's, as a Given) into a
target list, Settings and a profile."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Optional

from rich.console import Console

from orchestrator.config import options, profiles
from orchestrator.config import topology as topology_mod
from orchestrator.config.catalog import discover, select
from orchestrator.config.option_table import Given, profile_changes, settings_from
from orchestrator.config.plan import Settings
from orchestrator.errors import BadFile, UsageError
from orchestrator.infra.docker_engine import remote_address
from orchestrator.targets.runtimes import RUNTIMES

# A terminal's own width. Piped output (CI logs, files) gets lines long enough for a result line
# instead of 80 columns, unless COLUMNS asks for a width.
console = Console(width=None if sys.stdout.isatty() or os.environ.get("COLUMNS", "").isdigit() else 160)
def select_targets(framework: Optional[str], variant: Optional[str], catalog=None):
    catalog = catalog or discover()
    frameworks = [f.strip() for f in framework.split(",")] if framework else None
    variants = [v.strip() for v in variant.split(",")] if variant else None
    return select(catalog, frameworks, variants)


def parse_settings(given: Given, preset=None, heap: str | None = None) -> Settings:
    """The options as Settings (`given`: a command's from option_table, which may leave any out); those left
    out take the preset's value, else the settings' default. heap: the one of several --heap values."""
    runtime = getattr(given, "runtime", None) or Settings().runtime
    topology, locust_master = getattr(given, "topology", None), getattr(given, "locust_master", None)
    topo = topology_mod.load(topology) if topology else preset.topology if preset else None
    if locust_master:
        locust_master = "%s:%d" % options.locust_master(locust_master)
        check_workers_elsewhere(runtime, topo)
    if topo and not topo.single_host:
        if runtime != "process":
            raise UsageError(f"topology {topo.name} puts the target in a network namespace: that needs "
                             f"--runtime process")
        if os.geteuid() != 0:
            raise UsageError(f"topology {topo.name} creates network namespaces, which needs root")
    if runtime not in RUNTIMES:
        raise UsageError(f"unknown runtime '{runtime}'; valid: {', '.join(RUNTIMES)}") from None
    cpus_given = bool(getattr(given, "server_cpus", None) or getattr(given, "loadgen_cpus", None))
    chosen = preset.settings(cpus_given=cpus_given) if preset else {}
    if heap:
        given = Given(**{**vars(given), "heap": heap})
    return Settings(**settings_from(given, chosen), topology=topo.to_dict() if topo and not topo.single_host else None,
                    locust_master=locust_master)


def check_workers_elsewhere(runtime: str, topo) -> None:
    """Workers on other machines load the server at its address: one they can reach, the remote
    engine's, never this machine's loopback."""
    if runtime != "docker" or not remote_address():
        raise UsageError("--locust-master: Locust workers on other machines cannot reach a target on this "
                         "machine's loopback; run the targets on a remote engine (DOCKER_HOST=ssh://USER@ADDRESS "
                         "with --runtime docker)")
    if topo and topo.workers != topology_mod.LOCAL:
        raise UsageError(f"--locust-master and topology {topo.name} both say where the Locust workers run: "
                         f"choose one")


def override_profile(prof: profiles.Profile, given: Given, slo: str | None = None) -> profiles.Profile:
    """The profile with the command line's options (`given`, which may leave any out), parsed (the profile
    checks what applies to it); slo: the objective, when a workload rather than --slo gives it."""
    if slo:
        given = Given(**{**vars(given), "slo": slo})
    return prof.with_overrides(**profile_changes(given))


def check_writable(root: Path) -> None:
    if root.exists() and not root.is_dir():
        raise BadFile(root, "not a folder (--results-dir names the folder that run folders go in)")
    try:
        root.mkdir(parents=True, exist_ok=True)
        probe = root / ".write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise UsageError(f"results folder {root} is not writable: {e.strerror}") from None
