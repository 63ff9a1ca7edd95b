"""A real headless Chromium (Debian's package) driven by playwright, with every network request refused.

Playwright never downloads a browser here: it launches the system's Chromium by path. A machine
without it fails these tests with the command that installs it (`.ci/run` runs that command).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import BrowserContext

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
            f"Install Debian's package with `{INSTALL}` (as root; .ci/run does this before `make test`).",
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
