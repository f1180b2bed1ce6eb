"""Every notebook runs from top to bottom against its sample run (results/sample, or $BENCH_SAMPLE_RUN; the
workload's results/sample-workload, or $BENCH_SAMPLE_WORKLOAD_RUN)."""
from __future__ import annotations

import nbformat
import pytest
from conftest import ROOT
from nbclient import NotebookClient

from orchestrator.results import analysis

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_the_notebooks_are_found():
    assert {p.name for p in NOTEBOOKS} >= {"overview.ipynb", "compare.ipynb", "workload.ipynb"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_without_error(path):
    analysis.sample_run("sample-workload" if path.name == "workload.ipynb" else "sample")  # a missing one fails here
    nb = nbformat.read(path, as_version=4)
    assert all(not c.get("outputs") and not c.get("execution_count") for c in nb.cells if c.cell_type == "code"), \
        f"{path.name} is committed with outputs: clear them"
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    images = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if "image/png" in o.get("data", {})]
    assert images, f"{path.name} drew no chart"
