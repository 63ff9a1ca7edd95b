"""Entry point of the `shareplane` command: one typer app, each command group in its own module."""

from __future__ import annotations

import os
from typing import Annotated, Any

import typer
from typer.core import TyperGroup
from typer.exceptions import TyperException

from .errors import ExitCode, explain


class _OneErrorPath(TyperGroup):
    """Every command's failures end here: one message naming the problem and the fix, one exit code.

    Click's own exits and usage errors pass through unchanged; ``--debug`` (or SHAREPLANE_DEBUG=1)
    lets the original exception and its traceback out instead.
    """

    # Any: typer vendors click privately (typer._click), so its Context has no public name to annotate.
    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except (typer.Exit, typer.Abort, TyperException):  # exits, usage and parameter errors
            raise
        except Exception as exc:
            if ctx.params.get("debug") or os.environ.get("SHAREPLANE_DEBUG") == "1":
                raise
            from .output import print_error

            explained = explain(exc)
            if explained is None:
                print_error(f"unexpected {type(exc).__name__}: {exc}", "rerun with --debug and report it")
                raise typer.Exit(ExitCode.INTERNAL) from exc
            print_error(explained.problem, explained.fix)
            raise typer.Exit(explained.code) from exc


app = typer.Typer(
    name="shareplane",
    help="Control plane for GPU training queues on AWS Batch and SageMaker.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    cls=_OneErrorPath,
)


@app.callback()
def _root(
    debug: Annotated[
        bool, typer.Option("--debug", help="Show the traceback of an error instead of its one-line message.")
    ] = False,
) -> None:
    """Control plane for GPU training queues on AWS Batch and SageMaker.

    Exit codes: 0 ok, 1 rejected, 2 bad input, 3 timeout, 4 AWS unreachable or refused, 5 not found,
    70 internal error.
    """


def _register() -> None:
    # Each module adds its commands to `app`; imported here so `shareplane --help` lists them all.
    from . import commands  # noqa: F401


_register()
