"""Every AWS call a function makes while the local runner invokes it, as IAM would authorize it.

moto and the emulator enforce no IAM, so the runner records each call instead: service, operation,
and the authorizations AWS evaluates for it against the function's role (action, resource ARN,
condition context). Most are the call's own action on the resources its parameters name; a few are
extra permissions the IAM reference's action table does not list, each in ``EXTRA_PERMISSIONS`` with
the AWS page that documents it. ``tests/local/test_iam_local.py`` evaluates the recording against
the roles in template.yaml.

Recording hooks botocore's events (``provide-client-params`` keeps the request, ``after-call`` sees
the answer) on the sessions the handlers create while they run, so the Lambda code is unchanged.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlparse

import boto3.session

#: Extra permissions a call needs beyond its own action, with the page that says so.
EXTRA_PERMISSIONS: Mapping[str, str] = {
    # SubmitServiceJob hands the payload's RoleArn to SageMaker, which creates the training job with it.
    "batch:SubmitServiceJob -> iam:PassRole (iam:PassedToService=sagemaker.amazonaws.com)": (
        "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CreateTrainingJob.html#sagemaker-CreateTrainingJob-request-RoleArn"
        " and https://github.com/aws/amazon-sagemaker-examples/tree/default/build_and_train_models/sm-training-queues"
    ),
    # Tags given on creation: the Batch page documents tagging on creation but not how it is
    # authorized; granting batch:TagResource on the new job is the conservative reading (as EC2's
    # tag-on-create), to be confirmed on an account.
    "batch:SubmitServiceJob with tags -> batch:TagResource (assumed)": (
        "https://docs.aws.amazon.com/batch/latest/userguide/tag-resources.html"
    ),
    # The schedule's target role is passed to EventBridge Scheduler.
    "scheduler:CreateSchedule -> iam:PassRole (iam:PassedToService=scheduler.amazonaws.com)": (
        "https://docs.aws.amazon.com/scheduler/latest/UserGuide/setting-up.html#setting-up-execution-role"
    ),
    # Publishing to a topic encrypted with a customer managed key uses the key on the publisher's behalf.
    "sns:Publish to an encrypted topic -> kms:GenerateDataKey, kms:Decrypt": (
        "https://docs.aws.amazon.com/sns/latest/dg/sns-key-management.html"
    ),
    # Without ListBucket a missing object answers 403 instead of 404.
    "s3:GetObject / HeadObject -> s3:ListBucket (404 for a missing key)": (
        "https://docs.aws.amazon.com/AmazonS3/latest/API/API_HeadObject.html"
    ),
    # The SQS event source mapping polls with the function's execution role.
    "SQS event source -> sqs:ReceiveMessage, sqs:DeleteMessage, sqs:GetQueueAttributes": (
        "https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-configure.html#events-sqs-permissions"
    ),
    # The runtime writes the function's logs with its execution role.
    "Lambda runtime -> logs:CreateLogStream, logs:PutLogEvents": (
        "https://docs.aws.amazon.com/lambda/latest/dg/monitoring-cloudwatchlogs.html#monitoring-cloudwatchlogs-prereqs"
    ),
}


@dataclass(frozen=True)
class Authorization:
    """One request IAM evaluates: an action on a resource ("*" when the call names none), with context."""

    action: str
    resource: str
    conditions: Mapping[str, str] = field(default_factory=dict)
    #: The EXTRA_PERMISSIONS entry that requires it; empty for the call's own action.
    extra: str = ""


@dataclass(frozen=True)
class RolePolicy:
    """A function's execution role as a stack deployed it: inline statements with names resolved."""

    logical_id: str
    statements: tuple[Mapping[str, Any], ...]
    managed_policy_arns: tuple[str, ...] = ()


@dataclass(frozen=True)
class AwsCall:
    """One call a function made (or its event source and runtime made for it)."""

    function: str
    service: str
    operation: str
    authorizations: tuple[Authorization, ...]
    role: RolePolicy | None = None
    error_code: str | None = None


@dataclass
class Location:
    """Where the calls go: the stack's region and account, and a way to find a topic's KMS key."""

    region: str
    account: str
    topic_key: Callable[[str], str | None] = lambda _topic: None


def _queue_arn(location: Location, queue_url: str) -> str:
    parts = urlparse(queue_url).path.strip("/").split("/")
    account = parts[0] if len(parts) == 2 else location.account
    return f"arn:aws:sqs:{location.region}:{account}:{parts[-1]}"


def _bucket(bucket: str) -> str:
    return f"arn:aws:s3:::{bucket}"


def _object(bucket: str, key: str | None) -> str:
    # boto3 refuses an object call without its Key before it is sent: "*" is never recorded.
    return f"arn:aws:s3:::{bucket}/{'*' if key is None else key}"


def _batch_arn(location: Location, kind: str, name_or_arn: str) -> str:
    if name_or_arn.startswith("arn:"):
        return name_or_arn
    return f"arn:aws:batch:{location.region}:{location.account}:{kind}/{name_or_arn}"


def _dynamodb(location: Location, operation: str, params: Mapping[str, Any]) -> list[Authorization]:
    table = f"arn:aws:dynamodb:{location.region}:{location.account}:table/"
    if operation in ("TransactWriteItems", "TransactGetItems"):
        kinds = {"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem"}
        kinds |= {"ConditionCheck": "ConditionCheckItem", "Get": "GetItem"}
        return [
            Authorization(f"dynamodb:{kinds[kind]}", table + body["TableName"])
            for item in params.get("TransactItems", [])
            for kind, body in item.items()
        ]
    if operation in ("BatchGetItem", "BatchWriteItem"):
        return [Authorization(f"dynamodb:{operation}", table + t) for t in params.get("RequestItems", {})]
    resource = table + str(params.get("TableName", ""))
    if params.get("IndexName"):
        resource += f"/index/{params['IndexName']}"
    return [Authorization(f"dynamodb:{operation}", resource)]


def _s3(operation: str, params: Mapping[str, Any]) -> list[Authorization]:
    bucket = str(params.get("Bucket", ""))
    key = None if params.get("Key") is None else str(params["Key"])
    versioned = bool(params.get("VersionId"))
    if operation in ("GetObject", "HeadObject"):
        read = "s3:GetObjectVersion" if versioned else "s3:GetObject"
        listing = EXTRA_PERMISSIONS_KEYS["s3-list"]
        return [
            Authorization(read, _object(bucket, key)),
            Authorization("s3:ListBucket", _bucket(bucket), {}, listing),
        ]
    if operation == "PutObject":
        return [Authorization("s3:PutObject", _object(bucket, key))]
    if operation == "DeleteObject":
        return [
            Authorization("s3:DeleteObjectVersion" if versioned else "s3:DeleteObject", _object(bucket, key))
        ]
    if operation == "CopyObject":
        source = params["CopySource"]
        if isinstance(source, str):
            path, _, query = unquote(source).lstrip("/").partition("?versionId=")
            source_bucket, _, source_key = path.partition("/")
            source_version = query
        else:
            source_bucket, source_key = source["Bucket"], source["Key"]
            source_version = source.get("VersionId")
        read = "s3:GetObjectVersion" if source_version else "s3:GetObject"
        return [
            Authorization(read, _object(source_bucket, source_key)),
            Authorization("s3:PutObject", _object(bucket, key)),
        ]
    if operation in ("ListObjectsV2", "ListObjects"):
        return [Authorization("s3:ListBucket", _bucket(bucket), {"s3:prefix": str(params.get("Prefix", ""))})]
    if operation == "ListObjectVersions":
        return [
            Authorization(
                "s3:ListBucketVersions", _bucket(bucket), {"s3:prefix": str(params.get("Prefix", ""))}
            )
        ]
    if key is not None:
        return [Authorization(f"s3:{operation}", _object(bucket, key))]
    return [Authorization(f"s3:{operation}", _bucket(bucket) if bucket else "*")]


_SQS_BATCHES = {
    "SendMessageBatch": "SendMessage",
    "DeleteMessageBatch": "DeleteMessage",
    "ChangeMessageVisibilityBatch": "ChangeMessageVisibility",
}


def _batch(
    location: Location, operation: str, params: Mapping[str, Any], response: Mapping[str, Any]
) -> list[Authorization]:
    if operation == "SubmitServiceJob":
        queue = _batch_arn(location, "job-queue", str(params["jobQueue"]))
        job = response.get("jobArn") or _batch_arn(location, "service-job", str(response.get("jobId") or "*"))
        found = [Authorization("batch:SubmitServiceJob", queue), Authorization("batch:SubmitServiceJob", job)]
        if params.get("quotaShareName"):
            found.append(
                Authorization("batch:SubmitServiceJob", f"{queue}/quota-share/{params['quotaShareName']}")
            )
        if params.get("tags"):
            tags = {f"aws:RequestTag/{k}": str(v) for k, v in params["tags"].items()}
            found.append(Authorization("batch:TagResource", job, tags, EXTRA_PERMISSIONS_KEYS["batch-tag"]))
        payload = json.loads(params.get("serviceRequestPayload") or "{}")
        if payload.get("RoleArn"):
            found.append(
                Authorization(
                    "iam:PassRole",
                    payload["RoleArn"],
                    {"iam:PassedToService": "sagemaker.amazonaws.com"},
                    EXTRA_PERMISSIONS_KEYS["batch-passrole"],
                )
            )
        return found
    if "jobId" in params:
        return [
            Authorization(f"batch:{operation}", _batch_arn(location, "service-job", str(params["jobId"])))
        ]
    if operation == "TerminateServiceJobs":
        return [
            Authorization("batch:TerminateServiceJob", _batch_arn(location, "service-job", str(j)))
            for j in params.get("jobs", [])
        ]
    named = [params[k] for k in ("quotaShareArn", "arn", "resourceArn") if params.get(k)]
    named += [a for k in ("arns", "jobQueues") for a in params.get(k, [])]
    if params.get("jobQueue"):
        named.append(_batch_arn(location, "job-queue", str(params["jobQueue"])))
    return [Authorization(f"batch:{operation}", str(r)) for r in named] or [
        Authorization(f"batch:{operation}", "*")
    ]


def authorizations(
    location: Location, service: str, operation: str, params: Mapping[str, Any], response: Mapping[str, Any]
) -> list[Authorization]:
    """What IAM evaluates for one call: its own action on the resources it names, plus the extras."""
    if service == "dynamodb":
        return _dynamodb(location, operation, params)
    if service == "s3":
        return _s3(operation, params)
    if service == "batch":
        return _batch(location, operation, params, response)
    if service == "sqs":
        action = f"sqs:{_SQS_BATCHES.get(operation, operation)}"
        if "QueueUrl" in params:
            return [Authorization(action, _queue_arn(location, params["QueueUrl"]))]
        name = params.get("QueueName")
        return [
            Authorization(action, f"arn:aws:sqs:{location.region}:{location.account}:{name}" if name else "*")
        ]
    if service == "sns" and operation == "Publish":
        topic = str(params.get("TopicArn") or params.get("TargetArn"))
        found = [Authorization("sns:Publish", topic)]
        key = location.topic_key(topic)
        if key:
            extra = EXTRA_PERMISSIONS_KEYS["sns-kms"]
            found += [
                Authorization("kms:GenerateDataKey", key, {}, extra),
                Authorization("kms:Decrypt", key, {}, extra),
            ]
        return found
    if service == "scheduler" and operation == "CreateSchedule":
        group = params.get("GroupName") or "default"
        schedule = f"arn:aws:scheduler:{location.region}:{location.account}:schedule/{group}/{params['Name']}"
        found = [Authorization("scheduler:CreateSchedule", schedule)]
        role = (params.get("Target") or {}).get("RoleArn")
        if role:
            found.append(
                Authorization(
                    "iam:PassRole",
                    role,
                    {"iam:PassedToService": "scheduler.amazonaws.com"},
                    EXTRA_PERMISSIONS_KEYS["scheduler-passrole"],
                )
            )
        return found
    if service == "ssm" and "Name" in params:
        # A parameter's ARN joins its path-style name (leading slash) to "parameter" as written.
        name = str(params["Name"])
        path = name if name.startswith("/") else f"/{name}"
        return [
            Authorization(
                f"ssm:{operation}", f"arn:aws:ssm:{location.region}:{location.account}:parameter{path}"
            )
        ]
    if service == "sagemaker" and "TrainingJobName" in params:
        name = params["TrainingJobName"]
        arn = (
            name
            if name.startswith("arn:")
            else (f"arn:aws:sagemaker:{location.region}:{location.account}:training-job/{name}")
        )
        return [Authorization(f"sagemaker:{operation}", arn)]
    arns = [v for v in params.values() if isinstance(v, str) and v.startswith("arn:")]
    return [Authorization(f"{service}:{operation}", a) for a in arns] or [
        Authorization(f"{service}:{operation}", "*")
    ]


#: Short names of the EXTRA_PERMISSIONS entries, for the code that records them.
EXTRA_PERMISSIONS_KEYS: Mapping[str, str] = dict(
    zip(
        ("batch-passrole", "batch-tag", "scheduler-passrole", "sns-kms", "s3-list", "sqs-esm", "lambda-logs"),
        EXTRA_PERMISSIONS,
        strict=True,
    )
)


def event_source_calls(location: Location, queue_arn: str, deleted: bool) -> list[Authorization]:
    """What Lambda's SQS event source mapping asks of the function's role for one poll."""
    extra = EXTRA_PERMISSIONS_KEYS["sqs-esm"]
    found = [
        Authorization("sqs:ReceiveMessage", queue_arn, {}, extra),
        Authorization("sqs:GetQueueAttributes", queue_arn, {}, extra),
    ]
    if deleted:
        found.append(Authorization("sqs:DeleteMessage", queue_arn, {}, extra))
    return found


def runtime_log_calls(location: Location, log_group: str) -> list[Authorization]:
    """What the Lambda runtime asks of the function's role to write its logs (one stream per instance)."""
    extra = EXTRA_PERMISSIONS_KEYS["lambda-logs"]
    stream = f"arn:aws:logs:{location.region}:{location.account}:log-group:{log_group}:log-stream:local"
    return [
        Authorization("logs:CreateLogStream", stream, {}, extra),
        Authorization("logs:PutLogEvents", stream, {}, extra),
    ]


#: Whoever wants every call recorded in this process (a test session collecting all of them).
observers: list[Callable[[AwsCall], None]] = []


class AwsCallRecorder:
    """Records the calls of whichever function is acting; the runner says which one, and its role."""

    #: Calls kept for reading back (a long `shareplane up` must not grow without bound); observers
    #: see every call.
    KEEP = 10_000

    def __init__(self, location: Location) -> None:
        self.location = location
        self.calls: deque[AwsCall] = deque(maxlen=self.KEEP)
        self._acting: tuple[str, RolePolicy | None] | None = None
        self._thread: int | None = None

    def add(self, call: AwsCall) -> None:
        """Keep a call and tell the observers."""
        self.calls.append(call)
        for observer in observers:
            observer(call)

    @contextlib.contextmanager
    def acting_as(self, function: str, role: RolePolicy | None) -> Iterator[None]:
        """Attribute the calls this thread's handler sessions make to ``function`` for a block."""
        saved = (self._acting, self._thread)
        self._acting, self._thread = (function, role), threading.get_ident()
        original = boto3.session.Session
        recorder = self

        class RecordingSession(original):  # type: ignore[misc,valid-type]
            """A boto3 session whose clients report their calls to the recorder."""

            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)
                self.events.register("provide-client-params", _keep_params)
                self.events.register("after-call", recorder._after_call)

        boto3.session.Session = RecordingSession  # type: ignore[misc]
        try:
            yield
        finally:
            boto3.session.Session = original  # type: ignore[misc]
            self._acting, self._thread = saved

    def _after_call(
        self, model: Any, context: Mapping[str, Any], parsed: Mapping[str, Any], **_: Any
    ) -> None:
        if self._acting is None or threading.get_ident() != self._thread:
            return  # a client kept from an earlier invocation, called outside one: not a function's call
        function, role = self._acting
        service = model.service_model.service_name
        params = context.get(_PARAMS_KEY, {})
        error = (parsed or {}).get("Error", {}).get("Code") if isinstance(parsed, Mapping) else None
        try:
            found = authorizations(self.location, service, model.name, params, parsed or {})
        except Exception as exc:  # noqa: BLE001 - a gap in the recording must not fail the handler's call
            found, error = [], f"{RECORDING_FAILED}: {exc!r}"
        self.add(AwsCall(function, service, model.name, tuple(found), role, error))


_PARAMS_KEY = "shareplane_request_params"
#: error_code of a call whose authorizations could not be derived (the IAM test fails on it).
RECORDING_FAILED = "recording failed"


def _keep_params(params: Mapping[str, Any], context: dict[str, Any], **_: Any) -> None:
    context[_PARAMS_KEY] = dict(params)
