"""The drop bucket's folders: ``submit/<team>/<file>`` names the team a spec is dropped for.

Its own module, with no imports, so the job-spec parser (``jobspec/keys.py``) and the access rules
(``drop_access.py``, which the attribution path loads without the parser) share it without a loop.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: Where teams drop specs: ``submit/<team>/<file>``.
SUBMIT_PREFIX = "submit/"


def folder_team(key: str, teams: Sequence[str] | Mapping[str, Any]) -> str | None:
    """The configured team whose folder a key lies under (``submit/<team>/...``), however bad the rest.

    Lets a drop with a bad name (nested path, wrong suffix, hidden file) be answered to its team.
    """
    parts = key.split("/")
    if len(parts) >= 3 and f"{parts[0]}/" == SUBMIT_PREFIX and parts[1] in teams:
        return parts[1]
    return None
