"""`bench profiles` and `bench presets`: what a run can be asked to load, listed from the files shipped in
orchestrator/config/profiles/ and orchestrator/config/presets/."""
from __future__ import annotations

from rich import box
from rich.table import Table

from orchestrator import PACKAGE_DIR
from orchestrator.cli.common import console
from orchestrator.config import presets, profiles
from orchestrator.config.catalog import discover


def profiles_cmd() -> None:
    """The load profiles shipped in orchestrator/config/profiles/ (copy one and pass it to --profile)."""
    table = Table("profile", "kind", "driver", "load", "file", box=box.SIMPLE_HEAD)
    for name, path in profiles.shipped().items():
        p = profiles.load(str(path))
        table.add_row(name, p.kind, p.driver, p.describe(), str(path.relative_to(PACKAGE_DIR.parent)))
    console.print(table)


def presets_cmd() -> None:
    """The studies `bench run --preset NAME` reruns, one line each (a preset of parts: one per part, each
    a run of its own, NAME:PART)."""
    catalog = discover()
    table = Table("preset", "profile", "targets", "what it compares", box=box.SIMPLE_HEAD)
    table.columns[-1].overflow = "fold"
    for name in presets.names():
        pr = presets.load(name, catalog)
        scen = sorted({s for v in pr.matrix.values() for s in v})
        table.add_row(name, f"{pr.profile.kind} ({pr.profile.driver})", f"{len(pr.matrix)} x {','.join(scen)}",
                      pr.description)
    console.print(table)
