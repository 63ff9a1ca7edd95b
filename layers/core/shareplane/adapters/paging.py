"""Follow AWS Batch ``nextToken`` pages by hand, so any object with boto3's method names works."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any


def follow_pages(
    operation: Callable[..., Mapping[str, Any]], key: str, **params: Any
) -> Iterator[dict[str, Any]]:
    """Every item under ``key`` of every page ``operation(**params)`` answers, in order.

    Hand-rolled rather than boto3's paginators: the emulator's clients and test doubles have the
    operation methods but no ``get_paginator``.
    """
    token: str | None = None
    while True:
        response = operation(**params, **({"nextToken": token} if token else {}))
        yield from response.get(key, [])
        token = response.get("nextToken")
        if not token:
            return
