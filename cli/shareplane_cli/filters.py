"""Filters as listings take them: a repeatable option whose values may also be comma-separated."""

from __future__ import annotations

from collections.abc import Sequence

from .errors import CliError, ExitCode


def chosen(option: str, given: Sequence[str] | None, known: Sequence[str] | None = None) -> frozenset[str]:
    """The values of a repeatable option, each also comma-separated (``--kind idle,hung --kind budget``).

    Empty: the option was not given (no filter). A value outside ``known`` is an error naming the option
    and the values it takes.
    """
    values = frozenset(v.strip() for text in given or () for v in text.split(",") if v.strip())
    unknown = sorted(values - set(known)) if known is not None else []
    if unknown:
        raise CliError(
            f"{option} {', '.join(unknown)}: not one of {', '.join(known or ())}",
            f"pass {option} with one or more of those (repeat it, or separate them with commas)",
            ExitCode.BAD_INPUT,
        )
    return values
