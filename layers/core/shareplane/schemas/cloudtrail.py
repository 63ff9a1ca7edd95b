"""CloudTrail data events of S3 writes, as EventBridge delivers them ("AWS API Call via CloudTrail").

A trail that logs S3 data events sends each one to EventBridge with ``source`` ``aws.s3`` and
``detail-type`` ``AWS API Call via CloudTrail``; ``detail`` is the CloudTrail record
(https://docs.aws.amazon.com/awscloudtrail/latest/userguide/cloudtrail-event-reference-record-contents.html):
``userIdentity`` names the caller
(https://docs.aws.amazon.com/awscloudtrail/latest/userguide/cloudtrail-event-reference-user-identity.html),
``requestID`` is S3's request id (the ``request-id`` of the Object Created event of the same write),
``requestParameters`` carry ``bucketName`` and ``key``.

Only the writes that create a drop are taken: PutObject, CopyObject, CompleteMultipartUpload.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, ValidationError

from ..domain.errors import InvalidInputError
from ..domain.submit.attribution import UploadAttribution
from .common import Detail, Envelope

CLOUDTRAIL_API_CALL = "AWS API Call via CloudTrail"


class SessionIssuer(Detail):
    """``userIdentity.sessionContext.sessionIssuer``: the role (or user) that issued the session."""

    type: str | None = None
    arn: str | None = None


class SessionContext(Detail):
    """``userIdentity.sessionContext`` (temporary credentials only)."""

    session_issuer: SessionIssuer | None = Field(default=None, alias="sessionIssuer")


class UserIdentity(Detail):
    """``userIdentity`` of a CloudTrail record. ``arn`` is absent for some callers (an AWS service)."""

    type: str | None = None
    principal_id: str | None = Field(default=None, alias="principalId")
    arn: str = Field(min_length=1, max_length=2048)
    account_id: str | None = Field(default=None, alias="accountId")
    session_context: SessionContext | None = Field(default=None, alias="sessionContext")


class S3RequestParameters(Detail):
    """``requestParameters`` of an S3 object write."""

    bucket_name: str = Field(alias="bucketName", min_length=3, max_length=63)
    key: str = Field(min_length=1, max_length=1024)


class CloudTrailS3WriteDetail(Detail):
    """``detail`` of a CloudTrail S3 data event."""

    event_source: Literal["s3.amazonaws.com"] = Field(alias="eventSource")
    event_name: Literal["PutObject", "CopyObject", "CompleteMultipartUpload"] = Field(alias="eventName")
    user_identity: UserIdentity = Field(alias="userIdentity")
    request_id: str = Field(alias="requestID", min_length=1, max_length=256)
    request_parameters: S3RequestParameters = Field(alias="requestParameters")
    error_code: str | None = Field(default=None, alias="errorCode")


class CloudTrailS3WriteEvent(Envelope):
    """A CloudTrail S3 data event delivered by EventBridge."""

    source: Literal["aws.s3"]
    detail_type: Literal["AWS API Call via CloudTrail"] = Field(alias="detail-type")
    detail: CloudTrailS3WriteDetail


_FIX = (
    "route only CloudTrail data events of PutObject, CopyObject or CompleteMultipartUpload on the drop "
    "bucket here, as EventBridge delivers them (detail = the CloudTrail record)"
)


def parse_s3_write(raw: Any) -> UploadAttribution | None:
    """Who made an S3 object write; None for a write S3 refused (``errorCode``): it created nothing."""
    if not isinstance(raw, dict):
        raise InvalidInputError(
            "event", f"is a {type(raw).__name__}, not a JSON object", "send the event as JSON"
        )
    if raw.get("detail-type") != CLOUDTRAIL_API_CALL:
        raise InvalidInputError(
            "detail-type", f"{raw.get('detail-type')!r} is not {CLOUDTRAIL_API_CALL!r}", _FIX
        )
    try:
        event = CloudTrailS3WriteEvent.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        path = ".".join(str(p) for p in first["loc"]) or "event"
        raise InvalidInputError(path, first["msg"], _FIX) from exc
    detail = event.detail
    if detail.error_code:
        return None
    identity = detail.user_identity
    issuer = identity.session_context.session_issuer if identity.session_context else None
    return UploadAttribution(
        request_id=detail.request_id,
        bucket=detail.request_parameters.bucket_name,
        key=detail.request_parameters.key,
        event_name=detail.event_name,
        principal_arn=identity.arn,
        principal_type=identity.type,
        principal_id=identity.principal_id,
        account_id=identity.account_id,
        session_issuer_arn=issuer.arn if issuer and issuer.arn else None,
    )
