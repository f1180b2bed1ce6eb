"""`bench report` on a real run (results/sample, or $BENCH_SAMPLE_RUN): the files, the crowning rules,
and the page as headless Chromium renders it, offline."""
from __future__ import annotations

import json
import re
import shutil
import subprocess

import pandas as pd
import pytest

from conftest import bench
from orchestrator import analysis, report, results

# Everything that would reach the network or a profile is off: the report must work alone.
CHROMIUM = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--disable-quic", "--no-first-run",
            "--disable-dev-shm-usage", "--host-resolver-rules=MAP * ~NOTFOUND"]
# Written into the page before anything else: collects errors, and after load writes into the DOM
# whether each image decoded (naturalWidth > 0), so that --dump-dom can report it.
PROBE = """<script>
window.__errors = [];
addEventListener('error', e => __errors.push(String(e.message || (e.target && e.target.alt) || 'error')), true);
addEventListener('load', () => {
  const images = [...document.images];
  const out = document.createElement('pre');
  out.id = 'probe';
  out.textContent = JSON.stringify({images: images.length, errors: __errors, title: document.title,
    broken: images.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.alt)});
  document.body.appendChild(out);
});
</script>"""


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A copy of the sample run (the committed folder stays as it is) with its report written by the CLI."""
    sample = analysis.sample_run()
    root = tmp_path_factory.mktemp("results")
    shutil.copytree(sample, root / sample.name, ignore=shutil.ignore_patterns("report*", "logs"))
    r = bench("report", sample.name, "--results-dir", str(root), frameworks=None, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    return root / sample.name


def test_report_html_is_self_contained_and_report_md_has_its_images_beside_it(run_dir):
    html = (run_dir / "report.html").read_text()
    md = (run_dir / "report.md").read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//|[\w./-]+\.png)""", html), "report.html refers outside"
    charts = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md)
    assert charts and html.count('src="data:image/png;base64,') == len(charts)
    for name in charts:
        assert (run_dir / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
    assert "## Winners" in md and "Winners</h2>" in html
    scenarios = set(results.load(run_dir)["scenario"])
    assert all(f"## Scenario: {s}" in md for s in scenarios)


def test_failed_and_flagged_cells_are_marked_and_never_crowned(run_dir):
    summ = analysis.summary(results.load(run_dir))
    eligible = {(r.scenario, r.concurrency, r.target) for r in summ[summ["eligible"]].itertuples()}
    leads = analysis.leaders(summ, report.TABLE_METRICS)
    for lead in leads.itertuples():
        for crowned in (lead.best, lead.runner_up):
            assert pd.isna(crowned) or (lead.scenario, lead.concurrency, crowned) in eligible
    for (scenario, level), cells in summ.groupby(["scenario", "concurrency"]):
        table = report.comparison_table(summ, scenario, level)
        for cell in cells[~cells["eligible"]].itertuples():
            assert table[cell.target].str.contains("✗|⚠").all(), (scenario, level, cell.target)
            assert cell.target not in set(table["better"])
    assert len(report.not_crowned(summ)) == int((~summ["eligible"]).sum())


def test_a_lead_under_the_steady_tolerance_is_a_tie_not_a_win(run_dir):
    summ = analysis.summary(results.load(run_dir))
    cell = summ[summ["eligible"]].iloc[[0]]
    scenario, level = cell["scenario"].iloc[0], cell["concurrency"].iloc[0]
    close = pd.concat([cell, cell.assign(target="twin", rps=cell["rps"] * 1.02)])
    far = pd.concat([cell, cell.assign(target="faster", rps=cell["rps"] * 1.5)])

    assert report.winners_matrix(close, metrics=["rps"]).iloc[0, -1] == f"{report.TIE}: twin, {cell.target.iloc[0]} (+2.0%)"
    assert report.winners_matrix(far, metrics=["rps"]).iloc[0, -1] == f"faster: +50% vs {cell.target.iloc[0]}"
    better = report.comparison_table(close, scenario, level).set_index("metric")["better"]
    assert better[report.metric_title("rps")] == report.TIE
    assert report.comparison_table(far, scenario, level).set_index("metric")["better"][report.metric_title("rps")] == "faster"


def chromium(*args: str, profile) -> subprocess.CompletedProcess:
    if not shutil.which("chromium"):
        pytest.fail("chromium is not installed: apt-get install -y chromium")
    return subprocess.run([*CHROMIUM, f"--user-data-dir={profile}", *args], capture_output=True, text=True,
                          timeout=180)


def test_report_loads_in_chromium_without_errors_and_every_image_renders(run_dir, tmp_path):
    assert_renders(run_dir, tmp_path)


def assert_renders(run_dir, tmp_path):
    """report.html of run_dir loads in headless Chromium with no error and every image decoded; a
    screenshot of it is left in tmp_path."""
    html = (run_dir / "report.html").read_text()
    probed = tmp_path / "probed.html"
    probed.write_text(html.replace("<head>", "<head>" + PROBE, 1))
    dom = chromium("--dump-dom", probed.as_uri(), profile=tmp_path / "profile-dom")
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom.stdout, re.S)
    assert found, f"the page did not finish loading: {dom.stderr[-2000:]}"
    probe = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    assert probe["errors"] == [] and probe["broken"] == []
    assert probe["images"] == html.count("<img") > 0
    assert probe["title"] == f"Run {run_dir.name}"

    shot = tmp_path / "report.png"
    r = chromium(f"--screenshot={shot}", "--window-size=1280,2400", "--hide-scrollbars",
                 (run_dir / "report.html").as_uri(), profile=tmp_path / "profile-shot")
    assert shot.exists() and shot.stat().st_size > 20_000, r.stderr[-2000:]
    print(f"screenshot: {shot}")
    return shot
