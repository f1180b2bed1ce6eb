"""The report's page as headless Chromium renders it, offline: no error, and every image shown."""
from __future__ import annotations

from chromium_page import assert_renders


def test_report_loads_in_chromium_without_errors_and_every_image_renders(run_dir, tmp_path):
    assert_renders(run_dir, tmp_path)
