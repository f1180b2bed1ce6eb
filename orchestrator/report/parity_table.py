"""The parity table, read from a run: what each target runs with, side by side, so that a difference in
the figures can be told from a difference in the set-up.

Built from run.json's `parity` entries (targets/parity.py records them: declared limits, resolved
libraries, thread pools after load, GC and heap), so a run describes itself; the report and
`bench parity` show it, and a target whose framework.toml leaves a field out reads "undeclared".
"""
from __future__ import annotations

from orchestrator import lazy
from orchestrator.config.parity_fields import PARITY_FIELDS

pd = lazy.module("pandas")

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
