"""Filters as listings take them: a repeatable option whose values may also be comma-separated."""

from __future__ import annotations

from collections.abc import Sequence

from .errors import CliError, ExitCode


def listed(option: str, given: Sequence[str] | None, known: Sequence[str] | None = None) -> list[str]:
    """The values of a repeatable option, each also comma-separated (``--kind idle,hung --kind budget``),
    in the order given, each once.

    Empty: the option was not given. A value outside ``known`` is an error naming the option and the
    values it takes.
    """
    values = list(dict.fromkeys(v.strip() for text in given or () for v in text.split(",") if v.strip()))
    unknown = sorted(set(values) - set(known)) if known is not None else []
    if unknown:
        raise CliError(
            f"{option} {', '.join(unknown)}: not one of {', '.join(known or ())}",
            f"pass {option} with one or more of those (repeat it, or separate them with commas)",
            ExitCode.BAD_INPUT,
        )
    return values


def chosen(option: str, given: Sequence[str] | None, known: Sequence[str] | None = None) -> frozenset[str]:
    """A filter's values (``listed``'s); empty: no filter."""
    return frozenset(listed(option, given, known))
