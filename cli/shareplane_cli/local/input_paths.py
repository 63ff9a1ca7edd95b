"""The embedded EventBridge's input transformers, their JSONPath expressions parsed once instead of per event.

moto applies a target's InputTransformer (the template's rules use them to hand each queue the event
it expects) by parsing every InputPathsMap expression again for every event it delivers
(``moto.events.utils.EventTemplateParser.parse`` calls ``jsonpath_ng.ext.parse``), and jsonpath-ng
builds its lexer and LALR parser tables anew on each parse: three quarters of a PutEvents call went
there. A parsed expression is an immutable tree that ``find`` only reads, so parsing each distinct
expression once gives the same matches.
"""

from __future__ import annotations

import functools


def install() -> None:
    """Memoize ``jsonpath_ng.ext.parse`` for this process (moto imports it at each call, so it sees this)."""
    import jsonpath_ng.ext

    # ``parse`` is a name the package imports, not one it exports: reached through its namespace.
    namespace = vars(jsonpath_ng.ext)
    parse = namespace["parse"]
    if not hasattr(parse, "cache_info"):  # not memoized yet
        namespace["parse"] = functools.lru_cache(maxsize=1024)(parse)
