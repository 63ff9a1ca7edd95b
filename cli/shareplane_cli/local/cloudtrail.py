"""CloudTrail data events for the embedded AWS: who wrote an object, as a trail of the template logs it.

moto records no CloudTrail events, and its S3 -> EventBridge events carry one constant request id and
requester for every write. The submit path joins S3's Object Created event to CloudTrail's data event
of the same write by that request id, so the local stack serves both the way AWS does:

- every S3 request through the embedded AWS gets its own request id (a thread-local set by a WSGI
  wrapper around moto's server, which also keeps the caller's access key id; the HTTP response
  still carries moto's own request id header);
- the Object Created event carries that ``request-id`` and the caller's account as ``requester``
  (https://docs.aws.amazon.com/AmazonS3/latest/userguide/ev-events.html);
- when a trail of the template selects the write (its advanced event selectors: data events of
  ``AWS::S3::Object``, not read-only, the event name, ``resources.ARN`` StartsWith), an
  "AWS API Call via CloudTrail" event goes to the same event buses the same way, with ``source``
  ``aws.s3``, the CloudTrail record as ``detail``
  (https://docs.aws.amazon.com/AmazonS3/latest/userguide/cloudtrail-logging-s3-info.html,
  https://docs.aws.amazon.com/awscloudtrail/latest/userguide/cloudtrail-event-reference-record-contents.html),
  ``requestID`` the same request id and ``userIdentity`` the caller as STS GetCallerIdentity answers
  locally (https://docs.aws.amazon.com/awscloudtrail/latest/userguide/cloudtrail-event-reference-user-identity.html).

Both events are dated by the emulation's ``clock`` (the stack's: the emulator's virtual clock, which the
embedded S3 dates its objects by too), as AWS dates them by its own.

Choices AWS does not document, named here: CloudTrail's delivery lag (minutes on AWS) is zero. The
two events go to different queues, so which handler sees its event first is the runner's order;
tests/local/test_uploader_local.py drives both orders.
"""

from __future__ import annotations

import copy
import logging
import re
import secrets
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, cast

from shareplane.domain.jobs.arns import arn_tail

from .envelope import eventbridge_event

if TYPE_CHECKING:
    from moto.events.utils import EventMessageType

logger = logging.getLogger(__name__)

#: The S3 notification event name -> the API operation CloudTrail names.
OPERATIONS = {
    "s3:ObjectCreated:Put": "PutObject",
    "s3:ObjectCreated:Copy": "CopyObject",
    "s3:ObjectCreated:CompleteMultipartUpload": "CompleteMultipartUpload",
    "s3:ObjectCreated:Post": "PostObject",
}
#: The Object Created event's ``reason`` for each notification event name (ev-events.html).
REASONS = {
    "s3:ObjectCreated:Put": "PutObject",
    "s3:ObjectCreated:Post": "POST Object",
    "s3:ObjectCreated:Copy": "CopyObject",
    "s3:ObjectCreated:CompleteMultipartUpload": "CompleteMultipartUpload",
}
_CREDENTIAL = re.compile(r"Credential=([^/,\s]+)/")


@dataclass(frozen=True)
class DataEventSelector:
    """One advanced event selector of a trail, reduced to what an S3 object write is matched on."""

    event_names: frozenset[str] | None
    arn_prefixes: tuple[str, ...]
    read_only: bool | None = None

    def selects(self, operation: str, object_arn: str) -> bool:
        """True when the selector logs this write (a write is never read-only)."""
        if self.read_only is True:
            return False
        if self.event_names is not None and operation not in self.event_names:
            return False
        return not self.arn_prefixes or object_arn.startswith(self.arn_prefixes)


@dataclass
class _Request:
    request_id: str
    access_key_id: str | None


@dataclass
class TrailEmulation:
    """The trails' selectors, the caller lookup, and the thread-local request of the server thread."""

    selectors: list[DataEventSelector] = field(default_factory=list)
    caller_identity: Callable[[str | None], tuple[str, str, str]] | None = None
    #: Epoch seconds the events are dated by (the cluster's clock).
    clock: Callable[[], float] = time.time
    _local: threading.local = field(default_factory=threading.local)

    def wrap(self, app: Callable[..., Iterable[bytes]]) -> Callable[..., Iterable[bytes]]:
        """A WSGI app that gives each request its request id and remembers the caller's access key."""

        def wrapped(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
            match = _CREDENTIAL.search(environ.get("HTTP_AUTHORIZATION", ""))
            request = _Request(s3_request_id(), match.group(1) if match else None)

            self._local.request = request
            try:
                return app(environ, start_response)
            finally:
                self._local.request = None

        return wrapped

    def current(self) -> _Request | None:
        """The request the calling thread is serving, when it came through the wrapped server."""
        return getattr(self._local, "request", None)

    def events_for(
        self, event_name: str, bucket: Any, key: Any, account: str, region: str
    ) -> list[dict[str, Any]] | None:
        """The events S3 and CloudTrail put on EventBridge for an object creation; None for moto's own.

        None outside a request served through ``wrap`` and for other notifications than Object Created.
        """
        request = self.current()
        if request is None or self.caller_identity is None or event_name not in REASONS:
            return None  # moto's own event (other detail-types carry nothing the control plane reads)
        user_id, arn, caller_account = self.caller_identity(request.access_key_id)
        at = self.clock()
        created = object_created_event(event_name, bucket, key, account, region, request.request_id, at)
        created["detail"]["requester"] = caller_account
        operation = OPERATIONS.get(event_name)
        object_arn = f"arn:aws:s3:::{bucket.name}/{key.name}"
        if operation is None or not any(s.selects(operation, object_arn) for s in self.selectors):
            return [created]
        caller = (user_id, arn, caller_account)
        trail = cloudtrail_event(operation, bucket.name, key, account, region, request.request_id, caller, at)
        return [created, trail]


def s3_request_id() -> str:
    """A request id shaped like S3's (16 upper-case hex characters)."""
    return secrets.token_hex(8).upper()


def object_created_event(
    event_name: str, bucket: Any, key: Any, account: str, region: str, request_id: str, at: float
) -> dict[str, Any]:
    """S3's Object Created event on EventBridge at ``at`` (epoch s), with this request's id (ev-events.html).

    The envelope's time is epoch seconds: moto's buses write an internal event's time ISO 8601 on delivery.
    """
    return eventbridge_event(
        "Object Created",
        "aws.s3",
        account=account,
        region=region,
        time=at,
        resources=[f"arn:aws:s3:::{bucket.name}"],
        detail={
            "version": "0",
            "bucket": {"name": bucket.name},
            "object": {
                "key": key.name,
                "size": key.size,
                "etag": key.etag.replace('"', ""),
                "version-id": key.version_id,
                # An ordering token, not a date: from the wall clock, which moves on while the
                # emulator's clock is held (two writes in one handler run stay ordered).
                "sequencer": f"{int(time.time() * 1e6):016X}",
            },
            "request-id": request_id,
            "requester": account,
            "source-ip-address": "127.0.0.1",
            "reason": REASONS.get(event_name, event_name.split(":")[-1]),
        },
    )


def user_identity(user_id: str, arn: str, account: str) -> dict[str, Any]:
    """CloudTrail's ``userIdentity`` for a caller STS GetCallerIdentity names (user-identity reference)."""
    identity: dict[str, Any] = {"principalId": user_id, "arn": arn, "accountId": account}
    assumed = re.match(r"^arn:(aws[a-z-]*):sts::(\d{12}):assumed-role/([^/]+)/(.+)$", arn)
    if assumed:
        partition, role_account, role, _session = assumed.groups()
        identity["type"] = "AssumedRole"
        identity["sessionContext"] = {
            "sessionIssuer": {
                "type": "Role",
                "principalId": user_id.split(":")[0],
                # GetCallerIdentity does not name the role's path; a role with one is named without it.
                "arn": f"arn:{partition}:iam::{role_account}:role/{role}",
                "accountId": role_account,
                "userName": role,
            },
            "attributes": {"mfaAuthenticated": "false"},
        }
    elif arn.endswith(":root"):
        identity["type"] = "Root"
    else:
        identity["type"] = "IAMUser"
        identity["userName"] = arn_tail(arn)
    return identity


def cloudtrail_event(
    operation: str,
    bucket: str,
    key: Any,
    account: str,
    region: str,
    request_id: str,
    caller: tuple[str, str, str],
    at: float,
) -> dict[str, Any]:
    """A CloudTrail S3 data event at ``at`` (epoch s) as EventBridge delivers it ("AWS API Call via
    CloudTrail")."""
    response: dict[str, Any] = {}
    if key.version_id and key.version_id != "null":
        response["x-amz-version-id"] = key.version_id
    return eventbridge_event(
        "AWS API Call via CloudTrail",
        "aws.s3",
        account=account,
        region=region,
        time=at,
        resources=[],
        detail={
            "eventVersion": "1.10",
            "userIdentity": user_identity(*caller),
            "eventTime": datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "eventSource": "s3.amazonaws.com",
            "eventName": operation,
            "awsRegion": region,
            "sourceIPAddress": "127.0.0.1",
            "userAgent": "shareplane-local",
            "requestParameters": {"bucketName": bucket, "key": key.name},
            "responseElements": response or None,
            "requestID": request_id,
            "eventID": str(uuid.uuid4()),
            "readOnly": False,
            "resources": [
                {"type": "AWS::S3::Object", "ARN": f"arn:aws:s3:::{bucket}/{key.name}"},
                {"accountId": account, "type": "AWS::S3::Bucket", "ARN": f"arn:aws:s3:::{bucket}"},
            ],
            "eventType": "AwsApiCall",
            "managementEvent": False,
            "recipientAccountId": account,
            "eventCategory": "Data",
        },
    )


def trail_selectors(
    resources: Mapping[str, Any],
    resolve: Callable[[Any], Any],
    condition: Callable[[str], bool] = lambda _: True,
) -> list[DataEventSelector]:
    """The S3 object data-event selectors of every trail the stack creates (its Condition holds)."""
    selectors: list[DataEventSelector] = []
    for resource in resources.values():
        if resource.get("Type") != "AWS::CloudTrail::Trail":
            continue
        if "Condition" in resource and not condition(resource["Condition"]):
            continue
        props = resource.get("Properties") or {}
        if props.get("IsLogging") is False:
            continue
        for selector in props.get("AdvancedEventSelectors") or []:
            fields = {f["Field"]: f for f in selector.get("FieldSelectors") or []}
            if (fields.get("eventCategory") or {}).get("Equals") != ["Data"]:
                continue
            if (fields.get("resources.type") or {}).get("Equals") != ["AWS::S3::Object"]:
                continue
            names = (fields.get("eventName") or {}).get("Equals")
            read_only = (fields.get("readOnly") or {}).get("Equals")
            prefixes = (fields.get("resources.ARN") or {}).get("StartsWith") or []
            selectors.append(
                DataEventSelector(
                    frozenset(names) if names else None,
                    tuple(str(resolve(p)) for p in prefixes),
                    None if not read_only else read_only == ["true"],
                )
            )
    return selectors


def install(emulation: TrailEmulation) -> None:
    """Route moto's S3 -> EventBridge events through ``emulation`` (the original serves other callers)."""
    from moto.s3 import notifications

    original = getattr(notifications, "_shareplane_original", None)
    original = original or notifications._send_event_bridge_message
    emulations: list[TrailEmulation] = getattr(notifications, "_shareplane_emulations", [])
    if emulation not in emulations:
        emulations.append(emulation)

    def send(account_id: str, bucket: Any, event_name: str, key: Any) -> None:
        # S3 and CloudTrail put the events on the bucket owner's buses, whoever the caller is.
        owner = getattr(bucket, "account_id", None) or account_id
        for candidate in emulations:
            events = candidate.events_for(event_name, bucket, key, owner, bucket.region_name)
            if events is not None:
                try:
                    _deliver(owner, bucket.region_name, events)
                except Exception:  # noqa: BLE001 - delivery is asynchronous on AWS: the write succeeds
                    logger.exception("events of s3://%s/%s not delivered", bucket.name, key.name)
                return
        original(account_id, bucket, event_name, key)

    notifications._shareplane_original = original  # type: ignore[attr-defined]
    notifications._shareplane_emulations = emulations  # type: ignore[attr-defined]
    notifications._send_event_bridge_message = send


def uninstall(emulation: TrailEmulation) -> None:
    """Stop routing through ``emulation`` (a stopped stack's server serves no request any more)."""
    from moto.s3 import notifications

    emulations = getattr(notifications, "_shareplane_emulations", [])
    if emulation in emulations:
        emulations.remove(emulation)


def _deliver(account_id: str, region: str, events: list[dict[str, Any]]) -> None:
    """Onto every rule of every bus, as moto delivers S3's own EventBridge events."""
    from moto.events.models import events_backends

    backend = events_backends[account_id][region]
    for event in events:
        for bus in list(backend.event_buses.values()):
            for rule in list(bus.rules.values()):
                # The events are built here in EventBridge's shape, which moto types as a TypedDict.
                message = cast("EventMessageType", copy.deepcopy(event))
                rule.send_to_targets(message, transform_input=False)
