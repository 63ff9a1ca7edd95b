"""The documentation site's reference pages, generated from the code they describe.

``python -m shareplane_cli.reference`` writes them under ``docs/reference/``; ``--check`` writes
nothing and exits 1 naming each page that differs from what the code generates now (the docs tests
run the same check, so a page cannot fall behind the code unnoticed).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from . import alerts, cli, config, events, exit_codes, metrics

__all__ = ["PAGES", "generate", "stale", "write"]

#: Each page's file name under docs/reference/ and the function that writes its Markdown.
PAGES: dict[str, Callable[[Path], str]] = {
    "config.md": config.page,
    "cli.md": cli.page,
    "alerts.md": alerts.page,
    "metrics.md": metrics.page,
    "events.md": events.page,
    "exit-codes.md": exit_codes.page,
}


def generate(repo: Path) -> dict[str, str]:
    """Every reference page's Markdown, by file name, from the code and template of ``repo``."""
    return {name: build(repo) for name, build in PAGES.items()}


def write(repo: Path, out: Path) -> list[Path]:
    """Write every page under ``out``; returns the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in generate(repo).items():
        path = out / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def stale(repo: Path, out: Path) -> list[str]:
    """The pages under ``out`` that are missing or differ from what the code generates now."""
    return [
        name
        for name, text in generate(repo).items()
        if not (out / name).is_file() or (out / name).read_text(encoding="utf-8") != text
    ]
