"""One exception tree for the whole control plane, mapped by type and never by message text."""

from __future__ import annotations


class ShareplaneError(Exception):
    """Root of every error shareplane raises on purpose."""


class InvalidInputError(ShareplaneError):
    """Input that cannot be used: names the offending field and how to fix it."""

    def __init__(self, field: str, problem: str, fix: str) -> None:
        super().__init__(f"{field}: {problem} (fix: {fix})")
        self.field = field
        self.problem = problem
        self.fix = fix


class UnknownEventError(InvalidInputError):
    """An event whose detail-type or source no consumer understands."""


class ConfigError(InvalidInputError):
    """The shares config is inconsistent or incomplete."""


class ConcurrentUpdateError(ShareplaneError):
    """Another writer changed the item between our read and our conditional write."""


class RejectedByServiceError(InvalidInputError):
    """An AWS API refused a request as invalid (a permanent problem; retrying will not help)."""
