"""The audit HTML in Debian's chromium (driven by playwright, never `playwright install`): it loads
with no console errors, the timeline SVG has event elements, a click on a source row shows its PTX,
and a screenshot is taken (KVERIFY_AUDIT_SHOT=path keeps it, e.g. for docs/audit.png)."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]


@pytest.mark.slow
def test_audit_html_in_chromium(tmp_path):
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian's chromium is not installed (/usr/bin/chromium): apt-get install -y chromium")
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed "
                                   "(pip install -e '.[test]')")
    html = tmp_path / "audit.html"
    env = {**os.environ, "PYTHONPATH": ROOT}
    subprocess.run([sys.executable, "-m", "kverify", "audit",
                    "tests/zoo/tma_tensor_load/tma_tensor_load__read_before_wait.ptx", "--format", "html",
                    "-o", str(html)], cwd=ROOT, env=env, check=False, capture_output=True)
    assert html.exists()
    shot = os.environ.get("KVERIFY_AUDIT_SHOT") or str(tmp_path / "audit.png")
    errors = []
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = b.new_page(viewport={"width": 1400, "height": 1000})
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(html.as_uri())
        assert page.inner_text("#verdict") == "Verdict: violated"
        assert page.locator("svg.timeline g.ev").count() > 10
        assert page.locator("svg.timeline g.ev-phase").count() >= 1
        ptx = page.locator("tr.ptx").first
        assert not ptx.is_visible()
        page.locator("tr.line").first.click()
        assert ptx.is_visible() and "%" in ptx.inner_text()  # PTX registers of the row's instructions
        page.screenshot(path=shot, full_page=False)
        b.close()
    assert errors == []
    assert os.path.getsize(shot) > 10_000
