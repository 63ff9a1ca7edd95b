"""The CLI reference: every `shareplane` command and each of its arguments and options, from typer."""

from __future__ import annotations

import enum
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from . import markdown
from .markdown import code, first_paragraph, table

__all__ = ["Command", "commands", "page"]

# Commands, contexts and parameters are typed Any here: typer builds them from the click it vendors
# privately (typer._click), whose classes have no public name to annotate with.

#: Options typer adds to the root for shell completion: not the project's, and not listed.
_COMPLETION = {"install_completion", "show_completion"}


@dataclass(frozen=True)
class Command:
    """One command as the reference lists it: its words, help, and parameters."""

    path: tuple[str, ...]
    help: str
    params: tuple[Any, ...]

    @property
    def name(self) -> str:
        return " ".join(self.path)


def commands() -> list[Command]:
    """The root and every command under it (groups' commands by their full path), in help order."""
    from ..main import app

    root = typer.main.get_command(app)
    return list(_walk(root, ("shareplane",), root.context_class(root)))


def _walk(command: Any, path: tuple[str, ...], ctx: Any) -> Iterator[Command]:
    params = tuple(p for p in command.params if p.name not in _COMPLETION and not p.hidden)
    yield Command(path, command.help or "", params)
    if hasattr(command, "list_commands"):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from _walk(sub, (*path, name), sub.context_class(sub, parent=ctx))


def flags(param: Any) -> str:
    """How a parameter is spelled on the command line (``--team``, ``-o/--output``, ``JOB``)."""
    if param.param_type_name == "argument":
        return str(param.metavar or param.name.upper())
    return ", ".join([*param.opts, *param.secondary_opts])


def _type(param: Any) -> str:
    annotation = param.type_descriptor.annotation if param.type_descriptor else None
    if getattr(param, "is_flag", False):
        return "flag"
    origin = typing.get_origin(annotation)
    if origin in (list, tuple):
        args = typing.get_args(annotation)
        return f"{_name(args[0])}, repeatable" if args else "repeatable"
    return _name(annotation)


def _name(annotation: Any) -> str:
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return " | ".join(str(m.value) for m in annotation)
    return getattr(annotation, "__name__", str(annotation) if annotation is not None else "text")


def _default(param: Any) -> str:
    if param.required:
        return "required"
    if isinstance(getattr(param, "show_default", None), str):
        return str(param.show_default)  # a default found when the command runs, said in words
    value = param.default
    if callable(value) or value is None or value == () or value == []:
        return "-"
    if isinstance(value, enum.Enum):
        value = value.value
    if isinstance(value, bool):
        return code(str(value).lower())
    return code(value)


def page(repo: Path) -> str:
    """The CLI reference page: one section per command, with its parameters' table."""
    sections = []
    for command in commands():
        level = "##"
        rows = [(code(flags(p)), _type(p), _default(p), p.help or "") for p in command.params]
        text = f"{level} `{command.name}`\n\n{_help(command)}"
        if rows:
            text += "\n\n" + table(("argument or option", "type", "default", "what it does"), rows)
        sections.append(text)
    intro = (
        "Every command of `shareplane` and each of its arguments and options, read from the typer "
        "application itself (`shareplane_cli.main.app`). `shareplane COMMAND --help` prints the same. "
        "Exit codes are on their own page: [Exit codes](exit-codes.md)."
    )
    return markdown.page("CLI", intro, *sections)


def _help(command: Command) -> str:
    """The command's help text, its paragraphs kept (typer's `\\b` markers dropped)."""
    paragraphs = [" ".join(p.split()) for p in command.help.replace("\b", "").split("\n\n") if p.strip()]
    return "\n\n".join(paragraphs) or first_paragraph(command.help) or "-"
