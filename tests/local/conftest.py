"""Fixtures of the local-stack tests: the headless browser the demo's report is opened in."""

from tests.browser.chromium import browser  # noqa: F401 - a fixture, offered to this folder
