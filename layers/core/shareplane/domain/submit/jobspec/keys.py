"""The drop bucket's keys: ``submit/<team>/<file>`` names the team a spec is submitted as."""

from __future__ import annotations

import re
import unicodedata

from ...errors import InvalidInputError
from ..drop_keys import SUBMIT_PREFIX

MAX_KEY_BYTES = 1024
SPEC_SUFFIXES = (".yaml", ".yml", ".json")
TEAM_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$"


def _key_error(problem: str, fix: str) -> InvalidInputError:
    return InvalidInputError("key", problem, fix)


def team_from_key(key: str) -> str:
    """The team of a decoded drop-bucket key ``submit/<team>/<file>``; InvalidInputError otherwise."""
    if not isinstance(key, str) or not key:
        raise _key_error("is empty", "drop the spec at submit/<team>/<file>.yaml")
    if len(key.encode("utf-8", "surrogatepass")) > MAX_KEY_BYTES:
        raise _key_error(f"is longer than {MAX_KEY_BYTES} bytes", "use a shorter file name")
    if any(unicodedata.category(ch) in ("Cc", "Cf", "Cs") for ch in key) or "\\" in key:
        raise _key_error(
            f"{key[:80]!r} contains control, invisible or backslash characters", "rename the file"
        )
    if not key.startswith(SUBMIT_PREFIX):
        raise _key_error(
            f"{key[:80]!r} is outside {SUBMIT_PREFIX}", "drop the spec at submit/<team>/<file>.yaml"
        )
    parts = key.split("/")
    if len(parts) != 3:
        raise _key_error(
            f"{key[:80]!r} is not submit/<team>/<file>",
            "put the file directly under submit/<team>/, with no further folders",
        )
    _, team, filename = parts
    if not re.fullmatch(TEAM_PATTERN, team):
        raise _key_error(
            f"team folder {team[:80]!r} must be letters, digits, '_' or '-'",
            "drop the spec under submit/<your team>/",
        )
    if not filename or filename in (".", "..") or filename.startswith("."):
        raise _key_error(f"{key[:80]!r} names no spec file", "drop a file such as submit/<team>/jobs.yaml")
    if not filename.lower().endswith(SPEC_SUFFIXES):
        raise _key_error(
            f"file {filename[:80]!r} is not .yaml, .yml or .json", "rename it to end in .yaml, .yml or .json"
        )
    return team
