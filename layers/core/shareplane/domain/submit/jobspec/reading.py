"""Reading a spec file's bytes: size, encoding, and a YAML dialect without tags, anchors or duplicate keys.

The YAML dialect is deliberately small: no tags (``!!python/...`` or any other), no anchors or
aliases (alias bombs), no merge keys, no duplicate keys, string keys only.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

from .results import Problem, describe

MAX_SPEC_BYTES = 256 * 1024
MAX_JOBS_PER_FILE = 100


class _Refused(Exception):
    """A YAML construct the spec dialect refuses, with where it was found."""

    def __init__(self, message: str, fix: str, mark: Any) -> None:
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        super().__init__(f"{message}{where}")
        self.fix = fix


class _Guards:
    """Loader hooks that refuse tags, anchors, aliases, merge keys, duplicate and non-string keys."""

    if TYPE_CHECKING:
        # Supplied by the loader these hooks mix into: a PyYAML parser and SafeConstructor.
        def peek_event(self) -> yaml.Event | None: ...

        def construct_object(self, node: yaml.Node, deep: bool = False) -> Any: ...

    def compose_node(self, parent: Any, index: Any) -> Any:  # noqa: D102 - PyYAML hook
        event = self.peek_event()
        mark = getattr(event, "start_mark", None)
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise _Refused(
                "YAML anchors and aliases (&name, *name) are not allowed",
                "write the value out in full each time",
                mark,
            )
        tag = getattr(event, "tag", None)
        if tag is not None:
            raise _Refused(
                f"YAML tags such as {tag!r} are not allowed",
                "remove the tag (the text starting with !)",
                mark,
            )
        # The fast loader's parser is libyaml's CParser, not a Composer: Composer's hooks are borrowed
        # and run with it as self, which the stubs cannot express.
        return Composer.compose_node(self, parent, index)  # type: ignore[arg-type]

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:  # noqa: D102 - PyYAML hook
        seen: set[str] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise _Refused(
                    "YAML merge keys (<<) are not allowed", "write the fields out", key_node.start_mark
                )
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, str):
                raise _Refused(
                    f"keys must be text, found {describe(key)}", "quote the key", key_node.start_mark
                )
            if key in seen:
                raise _Refused(f"duplicate key {key!r}", "keep one of them", key_node.start_mark)
            seen.add(key)
        # Called on the loader (a SafeConstructor), which the stubs cannot see from this mixin.
        return SafeConstructor.construct_mapping(self, node, deep=deep)  # type: ignore[arg-type]


class _SpecLoader(_Guards, yaml.SafeLoader):
    """The pure-Python spec loader."""


_Loader: type = _SpecLoader
if yaml.__with_libyaml__:
    from yaml._yaml import CParser  # what yaml.cyaml re-exports; only present with libyaml

    class _FastSpecLoader(_Guards, CParser, SafeConstructor, Resolver):
        """libyaml scans and parses (4x faster); the Python composer keeps the guards on every node."""

        get_single_node = Composer.get_single_node
        compose_document = Composer.compose_document
        compose_scalar_node = Composer.compose_scalar_node
        compose_sequence_node = Composer.compose_sequence_node
        compose_mapping_node = Composer.compose_mapping_node

        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)
            self.anchors: dict[str, Any] = {}

    _Loader = _FastSpecLoader


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Refused(f"duplicate key {key!r}", "keep one of them", None)
        out[key] = value
    return out


def _no_constants(name: str) -> Any:
    raise _Refused(f"{name} is not a number JSON allows", "write a finite number", None)


def _file_problem(message: str, fix: str) -> tuple[None, tuple[Problem, ...]]:
    return None, (Problem("file", message, fix),)


def load_jobs(data: bytes, filename: str) -> tuple[list[Any] | None, tuple[Problem, ...]]:
    """The raw jobs of a spec file, or the file-level problems that stop reading it."""
    if not isinstance(data, bytes | bytearray):
        return _file_problem("is not bytes", "pass the object's body")
    if len(data) > MAX_SPEC_BYTES:
        return _file_problem(
            f"is {len(data)} bytes, over the {MAX_SPEC_BYTES // 1024} KB limit",
            "split the jobs across several files",
        )
    if b"\x00" in data:
        return _file_problem(
            "contains NUL bytes: it is binary, not a YAML or JSON spec", "upload the text spec"
        )
    try:
        text = bytes(data).decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return _file_problem(
            f"is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})",
            "save the file as UTF-8",
        )
    if not text.strip():
        return _file_problem("is empty", "write one job (a mapping) or a list of jobs")
    is_json = filename.lower().endswith(".json")
    try:
        if is_json:
            document = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constants)
        else:
            document = yaml.load(text, Loader=_Loader)  # noqa: S506 - safe: SafeConstructor only
    except _Refused as exc:
        return _file_problem(str(exc), exc.fix)
    except json.JSONDecodeError as exc:
        return _file_problem(
            f"is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}", "fix the JSON syntax"
        )
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        return _file_problem(f"is not valid YAML: {exc.problem or exc.context}{where}", "fix the YAML syntax")
    except yaml.YAMLError as exc:
        return _file_problem(f"is not valid YAML: {str(exc).splitlines()[0][:200]}", "fix the YAML syntax")
    except RecursionError:
        return _file_problem("is nested too deeply", "a spec needs at most a few levels of nesting")
    except (ValueError, TypeError, OverflowError) as exc:
        # int() refuses numbers over 4300 digits; PyYAML lets a few constructor errors through raw
        return _file_problem(f"holds a value that cannot be read: {str(exc)[:200]}", "fix the value")
    if document is None:
        return _file_problem("holds no jobs", "write one job (a mapping) or a list of jobs")
    if isinstance(document, dict):
        return [document], ()
    if isinstance(document, list):
        if not document:
            return _file_problem("holds an empty list of jobs", "add at least one job")
        if len(document) > MAX_JOBS_PER_FILE:
            return _file_problem(
                f"holds {len(document)} jobs, over the limit of {MAX_JOBS_PER_FILE} per file",
                "split the jobs across several files",
            )
        return document, ()
    return _file_problem(
        f"must hold one job (a mapping) or a list of jobs, found {describe(document)}",
        "start the job with name: ...",
    )
