"""JVM framework shootout: build, start, verify, load, sample, store and report."""
import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent


def _home() -> Path:
    """The checkout bench works in (its frameworks/, compose/, results/): BENCH_HOME if set, else the
    checkout this package sits in (an editable install, or `python3 -m orchestrator`), else the current
    folder, where a user of an installed package (`pip install .`) runs bench from the checkout."""
    if os.environ.get("BENCH_HOME"):
        return Path(os.environ["BENCH_HOME"]).resolve()
    if (PACKAGE_DIR.parent / "frameworks").is_dir():
        return PACKAGE_DIR.parent
    return Path.cwd().resolve()


REPO_ROOT = _home()
# BENCH_FRAMEWORKS_DIR points the catalog elsewhere (the tests use a folder of fixtures).
FRAMEWORKS_DIR = Path(os.environ.get("BENCH_FRAMEWORKS_DIR", REPO_ROOT / "frameworks")).resolve()
RESULTS_DIR = REPO_ROOT / "results"
STATE_DIR = REPO_ROOT / ".bench-state"
