"""A real headless Chromium (Debian's package) driven by playwright, with every network request refused.

Playwright never downloads a browser here: it launches the system's Chromium by path. A machine
without it fails the tests that use it with the command that installs it (`make test` runs that
command when it is missing). The root conftest offers ``browser`` to every folder: one definition,
so one playwright per session (a second sync playwright in the same thread refuses to start).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import BrowserContext, Page

CHROMIUM = Path("/usr/bin/chromium")
INSTALL = "apt-get update && apt-get install -y chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@dataclass
class Browser:
    """A browser context whose pages may read local files only; ``refused`` lists whatever else they asked for."""

    context: BrowserContext
    refused: list[str] = field(default_factory=list)


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    """Chromium in a fresh profile directory, network refused, 1280 px wide."""
    if not CHROMIUM.exists():
        pytest.fail(
            f"no Chromium at {CHROMIUM}: the report tests open the reports in a real headless browser. "
            f"Install Debian's package with `{INSTALL}` (as root; `make test` does this when it is missing).",
            pytrace=False,
        )
    from playwright.sync_api import Route, sync_playwright

    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile, sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            profile,
            executable_path=str(CHROMIUM),
            headless=True,
            args=ARGS,
            viewport={"width": 1280, "height": 900},
        )
        session = Browser(context)

        def local_only(route: Route) -> None:
            if route.request.url.startswith(("file://", "data:", "blob:")):
                route.continue_()
            else:
                session.refused.append(route.request.url)
                route.abort()

        context.route("**/*", local_only)
        try:
            yield session
        finally:
            context.close()


#: What each drawn plotly chart holds: its traces (names, meta, values, line dash) and its SVG paths.
CHART_FACTS = """() => [...document.querySelectorAll('.js-plotly-plot')].map(gd => ({
    id: gd.id,
    paths: gd.querySelectorAll('.main-svg path').length,
    traces: gd.data.map(t => ({
        name: t.name,
        meta: t.meta || null,
        points: (t.y || []).length,
        y: Array.from(t.y || []),
        dash: (t.line && t.line.dash) || null,
    })),
}))"""


def open_report(browser: Browser, path: Path, charts: int) -> tuple[Page, list[str]]:
    """The report opened from disk, waited on until plotly has drawn its ``charts``; and its script errors."""
    page = browser.context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(path.as_uri())
    page.wait_for_function(
        "n => document.querySelectorAll('.js-plotly-plot').length === n "
        "&& [...document.querySelectorAll('.js-plotly-plot')].every(gd => gd._fullLayout)",
        arg=charts,
        timeout=30_000,
    )
    return page, errors


def drawn_charts(page: Page) -> dict[str, Any]:
    """Each chart on the page by its id, as ``CHART_FACTS`` reads it."""
    return {chart["id"]: chart for chart in page.evaluate(CHART_FACTS)}
