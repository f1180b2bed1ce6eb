"""A report's page in headless Chromium, offline: it loads with no error and every image decodes (the
report's own test and each preset's quick form check their pages with it)."""
from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

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




def chromium(*args: str, profile) -> subprocess.CompletedProcess:
    if not shutil.which("chromium"):
        pytest.fail("chromium is not installed: apt-get install -y chromium")
    return subprocess.run([*CHROMIUM, f"--user-data-dir={profile}", *args], capture_output=True, text=True,
                          timeout=180)


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
