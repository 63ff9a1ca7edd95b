"""The documentation's pictures: each chart of a demo or what-if report, screenshotted in headless Chromium.

The report tests call ``save_pictures`` on the report they have just opened (the what-if report in
tests/browser, the real demo's in tests/local/test_demo.py), so the pictures in docs/ are redrawn from
the current code every `make test`. Run as a script to redraw them from a report on disk:

    python -m tests.browser.pictures demo reports/demo/index.html
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from tests.conftest import REPO

if TYPE_CHECKING:
    from playwright.sync_api import Page

#: Where the pictures go: docs/assets/pictures/<report>-<chart id>.png.
PICTURES = REPO / "docs" / "assets" / "pictures"
#: The charts each report's pictures show, by the id of the element plotly draws into.
CHARTS = {
    "demo": ("usage", "ledger", "waits", "timeline"),
    "whatif": ("share-usage", "utilization", "entitlement-ratio", "ledger", "waits"),
}


def save_pictures(page: Page, report: str, out: Path = PICTURES) -> list[Path]:
    """One PNG per chart of ``report`` from a page that has drawn it; returns the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    page.mouse.move(0, 0)  # no hover label in the picture
    written = []
    for chart in CHARTS[report]:
        path = out / f"{report}-{chart}.png"
        page.locator(f"#{chart}").screenshot(path=str(path), animations="disabled")
        written.append(path)
    return written


#: Where a test leaves its full-page screenshot of a report it built, to be looked at (git ignores it).
PAGES = REPO / "reports" / "browser"


def save_page(page: Page, name: str, out: Path = PAGES) -> Path:
    """A full-page PNG of the report ``page`` shows, as ``out/<name>.png``; returns its path."""
    out.mkdir(parents=True, exist_ok=True)
    page.mouse.move(0, 0)  # no hover label in the picture
    path = out / f"{name}.png"
    page.screenshot(path=str(path), full_page=True, animations="disabled")
    return path


def main(argv: list[str] | None = None) -> int:
    """Open a report from disk in Chromium (network refused) and save its charts' pictures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", choices=sorted(CHARTS))
    parser.add_argument("path", type=Path, help="the report's index.html")
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    from tests.browser.chromium import ARGS, CHROMIUM, Browser, open_report

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        context.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:") else r.abort())
        page, errors = open_report(Browser(context), args.path.resolve(), len(CHARTS[args.report]))
        if errors:
            print(f"script errors: {errors}", file=sys.stderr)
            return 1
        for path in save_pictures(page, args.report):
            print(path.relative_to(REPO))
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
