"""Entry point of the `shareplane` command: one typer app, each command group in its own module."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="shareplane",
    help="Control plane for GPU training queues on AWS Batch and SageMaker.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)


def _register() -> None:
    # Each module adds its commands to `app`; imported here so `shareplane --help` lists them all.
    from . import commands  # noqa: F401


_register()
