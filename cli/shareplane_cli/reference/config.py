"""The shares config reference: every field of ``SharesConfig`` and its nested models.

Each field's type, default and bounds come from the pydantic model; its description from the ``#:``
comment written above it in the model's source (the attribute-comment convention Sphinx reads too).
Plain ``#`` comments are notes for whoever changes the code and stay off the page. Every field must
have its own description: the docs tests fail naming each field that has none.

The descriptions are comments rather than pydantic's own: ``Field(description=...)`` would rewrite
every declaration (a default such as ``= False`` and an optional ``Annotated[...] | None`` each need
a ``Field`` of their own), and with ``use_attribute_docstrings`` pydantic reads and parses each model
class's source while it builds the model, at every Lambda cold start. A comment costs the handlers
nothing and leaves the declarations as they are.
"""

from __future__ import annotations

import enum
import inspect
import re
import types
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined
from shareplane.domain.config.shares import SharesConfig

from . import markdown
from .markdown import code, table

__all__ = ["ConfigField", "fields", "page"]

_FIELD_LINE = re.compile(r"^\s+(\w+)\s*:")
#: A default whose text is longer than this is summarized (the built-in failure rules, the ladders).
_LONG_DEFAULT = 80


@dataclass(frozen=True)
class ConfigField:
    """One setting of the shares config, as the reference lists it."""

    path: str
    type_name: str
    default: str
    bounds: str
    description: str
    model: type[BaseModel]


def fields(root: type[BaseModel] = SharesConfig) -> list[ConfigField]:
    """Every field reachable from ``root``, depth first, each nested model's fields under its path."""
    return list(_walk(root, "", ()))


def _walk(model: type[BaseModel], prefix: str, seen: tuple[type[BaseModel], ...]) -> Iterator[ConfigField]:
    comments = _comments(model)
    for name, info in model.model_fields.items():
        path = f"{prefix}{name}"
        annotation = info.annotation
        nested, suffix = _nested_model(annotation)
        yield ConfigField(
            path,
            _type_name(annotation),
            _default(info),
            _bounds(info, annotation),
            comments.get(name, ""),
            model,
        )
        if nested is not None and nested not in seen:
            yield from _walk(nested, f"{path}{suffix}.", (*seen, model))


def _comments(model: type[BaseModel]) -> dict[str, str]:
    """Field name -> the ``#:`` lines written right above it, over the model and its bases.

    Plain ``#`` lines among them are skipped (a note for the code's reader may sit between the
    description and the field); any other line ends the block.
    """
    found: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        if not (isinstance(cls, type) and issubclass(cls, BaseModel)) or cls is BaseModel:
            continue
        try:
            lines, _ = inspect.getsourcelines(cls)
        except (OSError, TypeError):
            continue
        pending: list[str] = []
        for line in lines[1:]:
            stripped = line.strip()
            if stripped.startswith("#:"):
                pending.append(stripped[2:].strip())
                continue
            if stripped.startswith("#"):
                continue
            match = _FIELD_LINE.match(line)
            if match and pending and match.group(1) in model.model_fields:
                found[match.group(1)] = " ".join(pending)
            pending = []
    return found


def _unwrap(annotation: Any) -> Any:
    """The type inside ``Annotated[...]`` and ``X | None``."""
    while typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    if _is_union(annotation):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return _unwrap(args[0])
    return annotation


def _is_union(annotation: Any) -> bool:
    return typing.get_origin(annotation) in (typing.Union, types.UnionType)


def _nested_model(annotation: Any) -> tuple[type[BaseModel] | None, str]:
    """The model a field holds (directly, as mapping values or as list items) and its path suffix."""
    inner = _unwrap(annotation)
    origin = typing.get_origin(inner)
    if isinstance(inner, type) and issubclass(inner, BaseModel):
        return inner, ""
    if isinstance(origin, type) and issubclass(origin, Mapping):
        key, value = typing.get_args(inner)
        model, suffix = _nested_model(value)
        return model, f".<{_key_name(key)}>{suffix}"
    if origin is tuple:
        args = [a for a in typing.get_args(inner) if a is not Ellipsis]
        if len(args) == 1:
            model, suffix = _nested_model(args[0])
            return model, f"[]{suffix}"
    return None, ""


def _key_name(key: Any) -> str:
    key = _unwrap(key)
    if isinstance(key, type) and issubclass(key, enum.Enum):
        return key.__name__.lower()
    return "name"


def _type_name(annotation: Any) -> str:
    """A readable type: ``int``, ``float | none``, ``map of name to TeamConfig``, enums by value."""
    if typing.get_origin(annotation) is typing.Annotated:
        return _type_name(typing.get_args(annotation)[0])
    if _is_union(annotation):
        return " | ".join(_type_name(a) for a in typing.get_args(annotation))
    if annotation is type(None):
        return "null"
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return " | ".join(str(a) for a in typing.get_args(annotation))
    if isinstance(origin, type) and issubclass(origin, Mapping):
        key, value = typing.get_args(annotation)
        return f"map of {_type_name(key)} to {_type_name(value)}"
    if origin is tuple:
        args = [a for a in typing.get_args(annotation) if a is not Ellipsis]
        return f"list of {_type_name(args[0])}" if len(args) == 1 else "list"
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return " | ".join(str(m.value) for m in annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation.__name__
    return getattr(annotation, "__name__", str(annotation))


def _default(info: FieldInfo) -> str:
    if info.is_required():
        return "required"
    value = info.default
    if value is PydanticUndefined and info.default_factory is not None:
        value = info.default_factory()  # type: ignore[call-arg]
    return _show(value)


def _show(value: Any) -> str:
    if isinstance(value, BaseModel):
        return "(its defaults)"
    if isinstance(value, enum.Enum):
        return str(value.value)
    if isinstance(value, Mapping):
        value = {(k.value if isinstance(k, enum.Enum) else k): v for k, v in value.items()}
        if not value:
            return "{}"
        if any(isinstance(v, BaseModel) for v in value.values()):
            return "{" + ", ".join(f"{k}: {_model_set(v)}" for k, v in value.items()) + "}"
    if isinstance(value, tuple):
        if value and isinstance(value[0], BaseModel):
            return f"{len(value)} built-in entries"
        value = list(value)
    text = "null" if value is None else str(value).lower() if isinstance(value, bool) else repr(value)
    return text if len(text) <= _LONG_DEFAULT else f"{len(value)} built-in entries"


def _model_set(model: Any) -> str:
    """A model default by its fields that differ from their own defaults (``{budget: 5}``)."""
    if not isinstance(model, BaseModel):
        return repr(model)
    changed = model.model_dump(exclude_defaults=True, mode="json")
    return "{" + ", ".join(f"{k}: {v}" for k, v in changed.items()) + "}"


_BOUND_WORDS = [
    (annotated_types.Gt, "gt", ">"),
    (annotated_types.Ge, "ge", ">="),
    (annotated_types.Lt, "lt", "<"),
    (annotated_types.Le, "le", "<="),
]


def _bounds(info: FieldInfo, annotation: Any) -> str:
    """Every constraint the field and the types inside it carry (bounds, lengths, patterns)."""
    parts: list[str] = []
    for item in [*info.metadata, *_inner_metadata(annotation)]:
        for kind, attr, sign in _BOUND_WORDS:
            if isinstance(item, kind):
                parts.append(f"{sign} {getattr(item, attr)}")
        if isinstance(item, annotated_types.MinLen):
            parts.append(f"length >= {item.min_length}")
        if isinstance(item, annotated_types.MaxLen):
            parts.append(f"length <= {item.max_length}")
        pattern = getattr(item, "pattern", None)
        if isinstance(pattern, str):
            parts.append(f"matches `{pattern}`")
    unique = list(dict.fromkeys(parts))
    return ", ".join(unique)


def _inner_metadata(annotation: Any) -> Iterator[Any]:
    """Constraint objects of every ``Annotated[...]`` inside a type (unions, lists, map values)."""
    if typing.get_origin(annotation) is typing.Annotated:
        inner, *extra = typing.get_args(annotation)
        for item in extra:
            if isinstance(item, FieldInfo):
                yield from item.metadata
            else:
                yield item
        yield from _inner_metadata(inner)
        return
    for arg in typing.get_args(annotation):
        if arg is not Ellipsis and not isinstance(arg, (str, int)):
            yield from _inner_metadata(arg)


def page(repo: Path) -> str:
    """The config reference page."""
    rows = [
        (
            code(f.path),
            f.type_name,
            code(f.default) if f.default != "required" else "required",
            f.bounds,
            f.description,
        )
        for f in fields()
    ]
    intro = (
        "Every setting of `config/shares.yaml`, from the pydantic models that validate it "
        "(`shareplane.domain.config.shares.SharesConfig` and the models it holds). A path segment in angle "
        "brackets is a key you choose (`<name>`: a team, a share, an instance type; `<tier>`: HIGHPRI, "
        "MIDPRI or LOWPRI; `<failureclass>`: a failure class); `[]` is an item of a list. Unknown keys are "
        "refused, and every refusal names the field and the fix. `shareplane validate` and `shareplane "
        "config render --check` read the file as the Lambdas do."
    )
    return page_text(intro, rows)


def page_text(intro: str, rows: list[tuple[str, str, str, str, str]]) -> str:
    """The page around its one table (split out so the table's columns stay in one place)."""
    return markdown.page(
        "Shares config",
        intro,
        table(("setting", "type", "default", "bounds", "what it does"), rows),
    )
