"""The browser fixture for the report tests (see chromium.py)."""

from tests.browser.chromium import browser  # noqa: F401 - a fixture, offered to this folder
