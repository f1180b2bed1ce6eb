"""JVM framework shootout: build, start, verify, load, sample, store and report."""
import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
# BENCH_FRAMEWORKS_DIR points the catalog elsewhere (the tests use a folder of fixtures).
FRAMEWORKS_DIR = Path(os.environ.get("BENCH_FRAMEWORKS_DIR", REPO_ROOT / "frameworks")).resolve()
RESULTS_DIR = REPO_ROOT / "results"
STATE_DIR = REPO_ROOT / ".bench-state"
