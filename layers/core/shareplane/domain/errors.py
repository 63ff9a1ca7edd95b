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


class PermissionDeniedError(ShareplaneError):
    """AWS refused one of the control plane's own calls: its role lacks a permission.

    A deployment problem, not bad input and not a transient fault: retrying cannot help until the
    role is fixed, so it is alerted once (naming the action, resource and role) and the record is kept
    for replay.
    """

    def __init__(self, action: str, resource: str | None, role: str | None, message: str) -> None:
        super().__init__(
            f"{role or 'the function role'} is not allowed {action}"
            f"{f' on {resource}' if resource else ''} (fix: grant it in template.yaml and redeploy, "
            f"then replay the dead-letter queue): {message}"
        )
        self.action = action
        self.resource = resource
        self.role = role
        self.aws_message = message
