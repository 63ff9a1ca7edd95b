"""`shareplane --help`: the commands grouped by task; usage lines name arguments as their help text does."""

from __future__ import annotations

import re

import pytest
from shareplane_cli.commands import HELP_PANELS
from shareplane_cli.main import app
from typer.testing import CliRunner

runner = CliRunner()
#: Wide enough that no command's help wraps into the next row's first column.
WIDE = {"COLUMNS": "200", "TERMINAL_WIDTH": "200"}


def test_root_help_lists_each_command_once_under_its_task_in_order() -> None:
    result = runner.invoke(app, ["--help"], env=WIDE)
    assert result.exit_code == 0
    panel: str | None = None
    seen: dict[str, list[str]] = {}
    for line in result.stdout.splitlines():
        title = re.match(r"^╭─ (.+?) ─", line)
        if title:
            panel = title.group(1)
            seen[panel] = []
            continue
        row = re.match(r"^│ (\S+)\s{2,}", line)
        if panel in HELP_PANELS and row:
            seen[panel].append(row.group(1))
    assert list(seen) == ["Options", "Local", "Jobs", "Capacity", "Cost", "What-if"]
    for name, commands in HELP_PANELS.items():
        assert seen[name] == list(commands)


@pytest.mark.parametrize(
    ("words", "argument"),
    [
        (["submit"], "SPEC"),
        (["validate"], "SPEC"),
        (["cancel"], "JOB"),
        (["why"], "JOB"),
        (["replay"], "FILE"),
    ],
)
def test_usage_names_the_argument_in_capitals(words: list[str], argument: str) -> None:
    result = runner.invoke(app, [*words, "--help"], env=WIDE)
    assert result.exit_code == 0
    usage = next(line for line in result.stdout.splitlines() if "Usage:" in line)
    # typer marks a required argument with braces; the name inside is the help text's, not the parameter's.
    assert re.search(rf"\[OPTIONS\] \W?{argument}\W?$", usage.rstrip()), usage
