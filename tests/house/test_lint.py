"""The linter's configuration (pyproject.toml, [tool.ruff]) holds for the whole package and its tests."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import ROOT


def test_ruff_finds_nothing():
    ruff = Path(sys.executable).with_name("ruff")
    r = subprocess.run([ruff, "check", "--no-cache", "."], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
