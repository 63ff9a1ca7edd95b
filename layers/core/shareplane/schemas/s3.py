"""S3 "Object Created" events, in both shapes that can reach submit_job, as dropped objects.

- S3 -> EventBridge (the path the template wires): the fields of Powertools'
  S3EventNotificationEventBridgeModel. The key is **raw**: never URL-decode it (a literal ``+`` or
  ``%41`` in a file name is part of the name).
- A direct S3 event notification (``{"Records": [...]}``, e.g. S3 -> SQS): the key is
  **form-URL-encoded** (a space arrives as ``+``, a ``+`` as ``%2B``); it is decoded with
  ``urllib.parse.unquote_plus`` here and only here. ``s3:TestEvent`` messages carry no object.
"""

from __future__ import annotations

from typing import Any, Literal
from urllib.parse import unquote_plus

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError

from ..domain.errors import InvalidInputError
from ..domain.submit.submission import DroppedObject
from .common import Detail, Envelope

OBJECT_CREATED = "Object Created"


class S3BucketRef(Detail):
    """The bucket an object landed in."""

    name: str


class S3ObjectDetail(Detail):
    """The object of an S3 -> EventBridge event (key raw, not URL-encoded)."""

    key: str
    size: int | None = None
    # AWS sends "etag"; moto sends "eTag".
    etag: str | None = Field(default=None, validation_alias=AliasChoices("etag", "eTag"))
    version_id: str | None = Field(default=None, validation_alias=AliasChoices("version-id", "versionId"))
    sequencer: str | None = None


class S3ObjectCreatedDetail(Detail):
    """``detail`` of an S3 Object Created event on EventBridge."""

    version: str | None = None
    bucket: S3BucketRef
    object: S3ObjectDetail
    request_id: str | None = Field(default=None, alias="request-id")
    requester: str | None = None
    source_ip_address: str | None = Field(default=None, alias="source-ip-address")
    reason: str | None = None


class S3ObjectCreatedEvent(Envelope):
    """An S3 Object Created event delivered by EventBridge."""

    source: Literal["aws.s3"]
    detail_type: Literal["Object Created"] = Field(alias="detail-type")
    detail: S3ObjectCreatedDetail


class _Loose(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class S3NotificationObject(_Loose):
    """The object of a direct S3 notification record (key form-URL-encoded)."""

    key: str
    size: int | None = None
    eTag: str | None = None
    versionId: str | None = None
    sequencer: str | None = None


class S3NotificationEntity(_Loose):
    """``s3`` of a direct notification record."""

    bucket: S3BucketRef
    object: S3NotificationObject


class S3NotificationRecord(_Loose):
    """One record of a direct S3 event notification."""

    eventSource: Literal["aws:s3"]
    eventName: str
    s3: S3NotificationEntity


class S3Notification(_Loose):
    """A direct S3 event notification message."""

    Records: list[S3NotificationRecord]


def _invalid(exc: ValidationError, what: str) -> InvalidInputError:
    first = exc.errors()[0]
    path = ".".join(str(p) for p in first["loc"]) or "event"
    return InvalidInputError(path, first["msg"], f"send the {what} as AWS documents it")


def parse_object_created(raw: Any) -> list[DroppedObject]:
    """The objects an S3 event (EventBridge or direct notification) says were created."""
    if not isinstance(raw, dict):
        raise InvalidInputError(
            "event", f"is a {type(raw).__name__}, not a JSON object", "send the event as JSON"
        )
    if "detail-type" in raw:
        if raw.get("detail-type") != OBJECT_CREATED:
            raise InvalidInputError(
                "detail-type",
                f"{raw.get('detail-type')!r} is not an S3 Object Created event",
                "route only aws.s3 Object Created events of the drop bucket here",
            )
        try:
            event = S3ObjectCreatedEvent.model_validate(raw)
        except ValidationError as exc:
            raise _invalid(exc, "S3 Object Created event") from exc
        obj = event.detail.object
        return [
            DroppedObject(
                event.detail.bucket.name,
                obj.key,
                obj.version_id,
                obj.size,
                obj.etag,
                obj.sequencer,
                requester=event.detail.requester,
                bucket_owner=event.account,
                request_id=event.detail.request_id,
            )
        ]
    if raw.get("Event") == "s3:TestEvent":
        return []  # sent once when a notification is configured; it names no object
    if "Records" in raw:
        try:
            notification = S3Notification.model_validate(raw)
        except ValidationError as exc:
            raise _invalid(exc, "S3 event notification") from exc
        return [
            DroppedObject(
                r.s3.bucket.name,
                unquote_plus(r.s3.object.key),
                r.s3.object.versionId,
                r.s3.object.size,
                r.s3.object.eTag,
                r.s3.object.sequencer,
            )
            for r in notification.Records
            if r.eventName.startswith("ObjectCreated:")
        ]
    raise InvalidInputError(
        "event",
        "is neither an EventBridge event nor an S3 event notification",
        "deliver S3 Object Created events (EventBridge or S3 notifications) to this queue",
    )
