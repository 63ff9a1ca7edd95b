"""AWS's answers that are about the caller's own permissions, recognized by error code and parsed.

AWS reports a refused authorization as ``AccessDenied``/``AccessDeniedException`` (most services),
``AuthorizationError`` (SNS) or ``UnauthorizedOperation``, with the message
``User: <principal> is not authorized to perform: <action> on resource: <arn> ...``
(https://docs.aws.amazon.com/IAM/latest/UserGuide/troubleshoot_access-denied.html). A refused
PassRole comes back the same way from the service that asked for it.

``permission_denied`` is the service's ``DenialReader`` (``service/permission_denied.py``): the guard
asks it, as the composition root wires it, so botocore stays out of the service.
"""

from __future__ import annotations

import re

from botocore.exceptions import ClientError

from ..domain.errors import PermissionDeniedError

ACCESS_DENIED_CODES = frozenset(
    {"AccessDenied", "AccessDeniedException", "AuthorizationError", "UnauthorizedOperation"}
)
_MESSAGE = re.compile(
    r"(?:User|Principal):\s*(?P<principal>\S+)\s+is not authorized to perform:\s*(?P<action>[\w-]+:[\w*-]+)"
    r"(?:\s+on resource:\s*(?P<resource>[^\s]+))?"
)
_ASSUMED_ROLE = re.compile(r"^arn:(?P<partition>[\w-]+):sts::(?P<account>\d+):assumed-role/(?P<role>[^/]+)/")


def role_arn(principal: str) -> str:
    """The role behind an assumed-role session ARN (anything else unchanged)."""
    found = _ASSUMED_ROLE.match(principal)
    if found is None:
        return principal
    return f"arn:{found['partition']}:iam::{found['account']}:role/{found['role']}"


def permission_denied(exc: BaseException) -> PermissionDeniedError | None:
    """The permission problem behind ``exc`` (or an exception it was raised from); None for others."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, PermissionDeniedError):
            return current
        if isinstance(current, ClientError):
            error = current.response.get("Error", {})
            if error.get("Code") in ACCESS_DENIED_CODES:
                return _parsed(current, str(error.get("Message") or error.get("Code")))
        current = current.__cause__ or current.__context__
    return None


def _parsed(exc: ClientError, message: str) -> PermissionDeniedError:
    found = _MESSAGE.search(message)
    if found is None:  # S3 says only "Access Denied": the operation is all there is to name
        return PermissionDeniedError(exc.operation_name, None, None, message)
    return PermissionDeniedError(
        found["action"], (found["resource"] or "").rstrip(".") or None, role_arn(found["principal"]), message
    )
