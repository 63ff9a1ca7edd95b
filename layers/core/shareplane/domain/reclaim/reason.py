"""Reclaim's stop reason: written by reclaim (domain/reclaim/plan.py), read back by the failure path.

A module of its own so that the failure path, which only reads the reason, does not load the
reclaim planner.
"""

from __future__ import annotations

import re

from ..config.shares import Tier

#: Every TerminateServiceJob reason reclaim gives starts so; the failure path's classifier matches it.
REASON_PREFIX = "shareplane reclaim:"
#: TerminateServiceJob's reason holds at most this many characters (Batch's limit on reasons).
REASON_MAX_CHARS = 1024
_REASON = re.compile(r"shareplane reclaim: stopped for (\S+) ")


def stop_reason(beneficiary_id: str, beneficiary_name: str | None, tier: Tier, waited_seconds: float) -> str:
    """The TerminateServiceJob reason for a victim: names the job it was stopped for, and why."""
    name = f"{beneficiary_name}, " if beneficiary_name else ""
    text = (
        f"{REASON_PREFIX} stopped for {beneficiary_id} ({name}{tier.value}, waited {waited_seconds:.0f} s); "
        "resumes from checkpoint"
    )
    return text[:REASON_MAX_CHARS]


def beneficiary_of(reason: str | None) -> str | None:
    """The job id a reclaim stop reason names (Batch may prefix the text); None for any other reason."""
    found = _REASON.search(reason or "")
    return found.group(1) if found else None
