"""The connection options, written once: a command's ``target`` parameter becomes them, in its place."""

from __future__ import annotations

from typing import Annotated

import pytest
import typer
from shareplane_cli.aws import DEFAULT_STACK, DEFAULT_TARGET, Target, account_options, endpoint_options
from typer.testing import CliRunner

seen: list[tuple[str, Target]] = []
app = typer.Typer()


@app.command("stack")
@account_options
def stack_command(
    team: Annotated[str, typer.Option(help="A team.")] = "all",
    target: Target = DEFAULT_TARGET,
    last: Annotated[int, typer.Option(help="An option after the connection's.")] = 0,
) -> None:
    seen.append((team, target))


@app.command("account")
@endpoint_options
def account_command(target: Target = DEFAULT_TARGET) -> None:
    seen.append(("", target))


def run(*args: str) -> typer.testing.Result:
    seen.clear()
    return CliRunner().invoke(app, list(args))


def test_the_options_passed_build_the_commands_target() -> None:
    result = run(
        "stack",
        "--team",
        "a",
        "--profile",
        "p",
        "--region",
        "r",
        "--endpoint",
        "http://h:1",
        "--stack-name",
        "s",
        "--table",
        "t",
        "--last",
        "2",
    )
    assert result.exit_code == 0, result.output
    assert seen == [("a", Target(profile="p", region="r", endpoint="http://h:1", stack_name="s", table="t"))]


def test_without_options_the_target_is_the_environments_default_stack() -> None:
    assert run("stack").exit_code == 0 and seen == [("all", Target(stack_name=DEFAULT_STACK))]


def test_help_lists_the_options_where_the_command_put_its_target() -> None:
    command = typer.main.get_command(app).commands["stack"]
    names = [p.name for p in command.params]
    assert names == ["team", "profile", "region", "endpoint", "stack_name", "table", "last"]


def test_a_command_of_the_accounts_apis_takes_no_stack_or_table() -> None:
    assert run("account", "--region", "r").exit_code == 0 and seen == [("", Target(region="r"))]
    assert run("account", "--table", "t").exit_code != 0 and seen == []


def test_a_command_without_a_target_parameter_is_refused_when_decorated() -> None:
    def no_target(team: str = "all") -> None: ...

    with pytest.raises(TypeError, match="no parameter 'target'"):
        account_options(no_target)
