"""`bench profiles` and `bench presets`: what a run can be asked to load, listed from the files shipped in
orchestrator/profiles/ and orchestrator/presets/. `describe_levels` is the one-line account of a profile's
load that these lists and `bench run` print."""
from __future__ import annotations

from rich import box
from rich.table import Table

from orchestrator import PACKAGE_DIR
from orchestrator.cli.common import console
from orchestrator.config import presets, profiles
from orchestrator.config.catalog import discover
from orchestrator.results.schema import percentile_label


def describe_levels(p: profiles.Profile) -> str:
    if p.kind == "ramp":
        r = p.ramp
        return (f"{r.start_users} users +{r.step_users} every {r.step_s:g} s for {r.steps} steps"
                + (f", {r.workers} Locust workers" if r.workers else ""))
    if p.kind == "rate":
        return f"{', '.join(map(str, p.rates))} req/s for {p.duration_s:g} s with at most {max(p.concurrency)} VUs"
    if p.kind == "capacity":
        o = p.objective
        return (f"the highest rate with {percentile_label(o.percentile)} <= {o.bound_ms:g} ms over the scenario's "
                f"wait and errors <= {100 * o.error_budget:g} %, from {p.common_rate} req/s to within "
                f"{100 * p.resolution:g} %, {p.duration_s:g} s probes (at most {p.max_probes}), at most "
                f"{max(p.concurrency)} VUs")
    if p.kind == "burst":
        return f"{p.requests:,} requests at {', '.join(map(str, p.concurrency))} connections"
    return f"{', '.join(map(str, p.concurrency))} connections for {p.duration_s:g} s"


def profiles_cmd() -> None:
    """The load profiles shipped in orchestrator/profiles/ (copy one and pass it to --profile)."""
    table = Table("profile", "kind", "driver", "load", "file", box=box.SIMPLE_HEAD)
    for name, path in profiles.shipped().items():
        p = profiles.load(str(path))
        table.add_row(name, p.kind, p.driver, describe_levels(p), str(path.relative_to(PACKAGE_DIR.parent)))
    console.print(table)


def presets_cmd() -> None:
    """The studies `bench run --preset NAME` reruns, one line each."""
    catalog = discover()
    table = Table("preset", "profile", "targets", "what it compares", box=box.SIMPLE_HEAD)
    table.columns[-1].overflow = "fold"
    for name in presets.shipped():
        pr = presets.load(name, catalog)
        scen = sorted({s for v in pr.matrix.values() for s in v})
        table.add_row(name, f"{pr.profile.kind} ({pr.profile.driver})", f"{len(pr.matrix)} x {','.join(scen)}",
                      pr.description)
    console.print(table)
