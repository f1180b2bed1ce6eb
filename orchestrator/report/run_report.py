"""`bench report`: the report of a run, written into its folder as report.html (self-contained, images
inline) and report.md (its charts as report-*.png beside it).

This module only reads the run and writes the files; what the report says is sections.py's, how it
looks render.py's, and its charts and tables (charts.py, tables.py) are the ones a notebook shows.
"""
from __future__ import annotations

from pathlib import Path

from orchestrator import RESULTS_DIR
from orchestrator.errors import UsageError
from orchestrator.report import network as network_report
from orchestrator.report import sections
from orchestrator.report.render import to_html, to_markdown
from orchestrator.results import analysis, noise
from orchestrator.results import store as results


def build(run: str | Path | None = None, root: Path = RESULTS_DIR, x: str | None = None) -> tuple[Path, Path]:
    """Write report.html and report.md (with its report-*.png) into the run folder; return both paths.

    x is the load-level column the charts and tables use; None: rate for an open model, else concurrency
    (which holds the users of a ramp's steps). The noise floor is the newest that `bench noise` stored
    in root for the run's machine.
    """
    run_dir = results.find_run(run, root)
    meta = results.load_meta(run_dir)   # first: a run.json that does not read is named before pandas loads
    df = results.load(run_dir)
    x = x or analysis.level_column(df)
    if x not in df:
        raise UsageError(f"no column '{x}' in {run_dir / results.MEASUREMENTS}")
    ts = results.load_timeseries(run_dir)
    ts = network_report.by_level(ts) if len(ts) else None
    host = meta.get("host", {})
    blocks = sections.document(df, meta, ts, x, noise.entry(host, root), noise.floors(host, root))
    for stale in run_dir.glob("report-*.png"):
        stale.unlink()
    for kind, content in blocks:
        if kind == "chart":
            (run_dir / content.name).write_bytes(content.png)
    html_path, md_path = run_dir / "report.html", run_dir / "report.md"
    html_path.write_text(to_html(run_dir.name, blocks), encoding="utf-8")
    md_path.write_text(to_markdown(run_dir.name, blocks), encoding="utf-8")
    return html_path, md_path
