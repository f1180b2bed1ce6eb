"""How every chart and table of the report names a metric, marks a cell's state and orders the
targets: one place, so that a chart's bar and a table's column of the same cell read alike. No
plotting here, so that the tables load without matplotlib."""
from __future__ import annotations

from orchestrator import lazy
from orchestrator.core.schema import METRICS

pd = lazy.module("pandas")

MARKS = {"failed": "✗", "partial": "⚠", "flagged": "⚠", "ok": ""}


def metric_title(metric: str) -> str:
    m = METRICS[metric]
    return f"{m.label} ({m.unit}) {'↑' if m.higher_is_better else '↓'}" if m.unit else \
        f"{m.label} {'↑' if m.higher_is_better else '↓'}"


def target_label(row) -> str:
    """A target's name with the mark of its cell's state (✗ failed, ⚠ flagged or partly failed)."""
    mark = MARKS[row["state"]]
    return f"{row['target']} {mark}" if mark else row["target"]


def cells_at(summ: pd.DataFrame, scenario: str, x: str, level, order) -> pd.DataFrame:
    """The summary rows of one scenario and load level, the targets in `order` (sorted names: the
    order of charts.target_colors)."""
    cells = summ[(summ["scenario"] == scenario) & (summ[x] == level)]
    return cells.set_index("target").reindex([t for t in order if t in set(cells["target"])]).reset_index()
