"""The README is a front door: short, for users, describing what is, every link landing on a page.

GIVEN README.md WHEN it is read as a new user would THEN it is at most 150 lines, no line but a table
row or a link is over 120 characters, it tells no run history, it dates the demo's result with its
commit, and every relative link it makes points at a file in the repository.
"""

from __future__ import annotations

import re

from tests.conftest import REPO

README = (REPO / "README.md").read_text()
LINES = README.splitlines()
#: Words that narrate past runs instead of describing what is.
HISTORY = ("measured", "used to", "before this", "before that", "load average", "runs before", "earlier run")


def test_the_readme_is_at_most_150_lines() -> None:
    assert len(LINES) <= 150, f"README.md has {len(LINES)} lines"


def test_no_line_but_a_table_row_or_a_link_is_over_120_characters() -> None:
    long = [
        (n, len(line))
        for n, line in enumerate(LINES, 1)
        if len(line) > 120 and not line.startswith("|") and "](" not in line
    ]
    assert not long, f"lines over 120 characters: {long}"


def test_the_readme_tells_no_run_history() -> None:
    found = [(word, n) for n, line in enumerate(LINES, 1) for word in HISTORY if word in line.lower()]
    assert not found, f"run history in README.md: {found}"


def test_the_demo_result_is_dated_with_its_commit() -> None:
    assert re.search(r"commit [0-9a-f]{7,40}, \d{4}-\d{2}-\d{2}", README), (
        "the result table names no commit and date"
    )
    assert "83.84%" in README and "65.10%" in README


def test_every_relative_link_lands_on_a_file() -> None:
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README)
    relative = [t for t in targets if not t.startswith(("http://", "https://"))]
    assert relative, "the README links to the manual"
    missing = [t for t in relative if not (REPO / t).exists()]
    assert not missing, f"README links to missing files: {missing}"
