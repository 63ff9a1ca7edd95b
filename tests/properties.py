"""How many examples a property runs: its full size under the ``thorough`` profile, a quarter in ``ci``.

The profiles are registered in tests/conftest.py, which says why a quarter still finds what the full
size found. A property states its full size once, ``@settings(max_examples=examples(300))``, and the
profile chosen by ``HYPOTHESIS_PROFILE`` (``ci`` unless set) decides what runs.
"""

from __future__ import annotations

import os

PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
CI_SHARE = 4
CI_FLOOR = 10


def examples(thorough: int) -> int:
    """``thorough`` examples under the thorough profile; a quarter of them (at least 10) under ci."""
    if PROFILE == "thorough":
        return thorough
    return min(thorough, max(CI_FLOOR, thorough // CI_SHARE))
