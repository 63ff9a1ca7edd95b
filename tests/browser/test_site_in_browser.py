"""The documentation site, built strictly and opened in headless Chromium as a user would.

GIVEN `mkdocs build --strict` of docs/, served on loopback WHEN a real browser opens the home page, a
concept page and the config reference with every other network request refused THEN each renders its title and content,
the navigation lists the manual's sections and leads from page to page, and the search box renders
and finds a word from the reference.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tests.browser.chromium import Browser
from tests.conftest import REPO

#: One worker runs the tests that redraw docs/assets/pictures (the demo's and the reports') and those
#: that build the site from docs/: run beside the report tests, the site's search found nothing.
pytestmark = pytest.mark.xdist_group("stack-1")

SECTIONS = ["Getting started", "Concepts", "Operate", "Deploy", "Simulator", "Benchmarks", "Reference"]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site as `make docs` builds it (strict: a broken link or a page missing from nav fails)."""
    out = tmp_path_factory.mktemp("site")
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"},
    )
    assert built.returncode == 0, built.stderr
    return out


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *_: Any) -> None:
        return None


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    """The built site on a loopback port (as `mkdocs serve` would; search needs a web worker)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def page(browser: Browser, served: str) -> Iterator[Any]:
    """A page that may read the served site and nothing else (the context refuses the rest)."""
    browser.refused.clear()
    opened = browser.context.new_page()
    opened.route(f"{served}/**", lambda route: route.continue_())
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    yield opened
    opened.close()
    refused, browser.refused[:] = list(browser.refused), []
    assert errors == [], f"script errors: {errors}"
    assert refused == [], f"the site asked the network for {refused}"


@pytest.mark.parametrize(
    ("path", "title", "content"),
    [
        ("index.html", "shareplane", "Where to start"),
        ("concepts/shares.html", "Shares and rebalancing", "The tier charge"),
        ("reference/config.html", "Shares config", "reclaim.max_victims_per_window"),
    ],
    ids=["the home page", "a concept page", "the config reference"],
)
def test_a_page_renders_with_its_navigation_and_search_box(
    served: str, page: Any, path: str, title: str, content: str
) -> None:
    page.goto(f"{served}/{path}")
    assert page.locator("article h1").first.inner_text().replace("\u00b6", "").strip() == title
    assert content in page.locator("article").inner_text()
    nav = page.locator("nav.md-nav--primary").inner_text()
    for section in SECTIONS:
        assert section in nav, f"{path}: the navigation lacks {section}"
    assert page.locator("label.md-search__icon, .md-search__input").count() >= 1
    assert page.locator("input.md-search__input").count() == 1, "the search box renders"


def test_the_navigation_leads_from_the_home_page_to_the_config_reference(served: str, page: Any) -> None:
    page.goto(f"{served}/index.html")
    page.locator("nav.md-nav--primary a", has_text="Shares config").first.click()
    page.wait_for_load_state()
    assert page.url.endswith("reference/config.html")
    rows = page.locator("article table tbody tr").count()
    assert rows > 100, f"the config reference has {rows} rows"


#: How many times the search box is given the query (5 s each) before the test gives up.
SEARCH_TRIES = 8


def test_the_search_box_finds_a_word_of_the_reference(served: str, page: Any) -> None:
    page.goto(f"{served}/index.html")
    search = page.locator("input.md-search__input")
    search.click()  # at 1280 px the box sits in the header
    results = page.locator(".md-search-result__item")
    # The search index loads in a web worker; a query typed before it is ready finds nothing and is not
    # run again, so the query is typed again (on a busy machine the worker takes its time) until it finds.
    # The search reads the box on a key press, as when a user types: `fill` alone sets the value
    # without one, and on a loaded machine (the worker ready only after the box got focus) nothing
    # read it.
    for _ in range(SEARCH_TRIES):
        search.fill("")
        search.fill("borrow_limit")
        search.press("End")
        try:
            results.first.wait_for(timeout=5_000)
            break
        except PlaywrightTimeout:
            continue
    assert results.count() >= 1
    assert "borrow_limit" in page.locator(".md-search-result").inner_text()
