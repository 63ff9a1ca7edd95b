"""CSV cells a spreadsheet would run as formulas are escaped (OWASP CSV injection guidance)."""

from __future__ import annotations

import pytest
from shareplane_cli.output import csv_cell


@pytest.mark.parametrize(
    ("cell", "written"),
    [
        ('=HYPERLINK("http://x.example")', '\'=HYPERLINK("http://x.example")'),
        ("+1+1", "'+1+1"),
        ("-2+3", "'-2+3"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\tcmd", "'\tcmd"),
        ("\rcmd", "'\rcmd"),
        ("ml.p4d.24xlarge", "ml.p4d.24xlarge"),
        ("a=b", "a=b"),
        (12.5, 12.5),
        (3, 3),
    ],
    ids=[
        "an equals sign is escaped",
        "a plus sign is escaped",
        "a minus sign is escaped",
        "an at sign is escaped",
        "a leading tab is escaped",
        "a leading carriage return is escaped",
        "ordinary text is kept",
        "a sign inside the text is kept",
        "a float stays a number",
        "an int stays a number",
    ],
)
def test_a_cell_starting_a_formula_is_prefixed_with_a_quote(cell: object, written: object) -> None:
    assert csv_cell(cell) == written
