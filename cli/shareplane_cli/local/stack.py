"""The embedded AWS: moto in server mode on loopback, with the stack created from template.yaml itself."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import boto3
from botocore.config import Config
from gpusim import Faults, ModelOptions, gpu_metrics
from gpusim.engine import HoldableClock, RealtimeEngine, SteppedClock
from shareplane.domain.jobs.arns import arn_tail, resource_name

from . import embedded_dynamodb, input_paths, metric_index, s3_clock
from .cloudtrail import TrailEmulation, install, trail_selectors, uninstall
from .emulator import DEFAULT_SPEED, BatchResources, Emulator, losing, put_events_via, resolve_outputs
from .intrinsics import Intrinsics
from .sqs_delays import VirtualDelays
from .template import FunctionSpec, TranslatedTemplate, load_sam_template, translate

REGION = "us-east-1"
ACCOUNT = "123456789012"
#: Metrics one PutMetricData request may carry (CloudWatch API reference, PutMetricData).
PUT_METRIC_DATA_LIMIT = 1000
DEFAULT_STACK = "shareplane-local"
#: Credentials the embedded AWS accepts; they are not valid anywhere else.
LOCAL_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "shareplane-local", "AWS_SECRET_ACCESS_KEY": "shareplane-local"}

#: Fn::GetAtt <logical>.<attribute> of the resources moto creates, from their physical id (what Ref
#: returns), in the formats the resource types' "Return values" sections of the CloudFormation
#: resource reference give; moto's describe_stack_resources reports physical ids only.
_MOTO_ATTRIBUTES: dict[str, dict[str, str]] = {
    "AWS::DynamoDB::Table": {"Arn": "arn:aws:dynamodb:{region}:{account}:table/{id}"},
    "AWS::S3::Bucket": {"Arn": "arn:aws:s3:::{id}"},
    "AWS::KMS::Key": {"Arn": "arn:aws:kms:{region}:{account}:key/{id}", "KeyId": "{id}"},
    "AWS::Logs::LogGroup": {"Arn": "arn:aws:logs:{region}:{account}:log-group:{id}:*"},
    "AWS::IAM::Role": {"Arn": "arn:aws:iam::{account}:role/{id}"},
    "AWS::Events::Rule": {"Arn": "arn:aws:events:{region}:{account}:rule/{id}"},
    # A queue's physical id is its URL; its name is the URL's last segment.
    "AWS::SQS::Queue": {
        "Arn": "arn:aws:sqs:{region}:{account}:{name}",
        "QueueName": "{name}",
        "QueueUrl": "{id}",
    },
    "AWS::SNS::Topic": {"TopicArn": "{id}", "TopicName": "{name}"},
}


#: The template's resource that stores the shares config (an SSM parameter every function reads).
SHARES_CONFIG_RESOURCE = "SharesConfigParameter"


@dataclass(frozen=True)
class StackSpec:
    """Where the template is, what to call the stack, and its parameters.

    ``shares_config`` (JSON) stands in for the config the template stores, as a deploy of a template
    rendered from another config would (``shareplane config render``); None: the template's own.
    """

    template: Path
    stack_name: str = DEFAULT_STACK
    parameters: Mapping[str, str] = field(default_factory=dict)
    shares_config: str | None = None


def endpoint_environment(endpoint: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The standard variables that point boto3 and the aws CLI at the local stack."""
    return {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_REGION": REGION,
        **LOCAL_CREDENTIALS,
        **(extra or {}),
    }


#: GetAtt attribute and ARN resource kind of each Batch resource type the template uses, for the
#: stand-ins of a stack run without the emulator (CloudFormation's "Return values" of each type).
BATCH_STAND_IN_ARNS = {
    "AWS::Batch::JobQueue": ("JobQueueArn", "job-queue"),
    "AWS::Batch::SchedulingPolicy": ("Arn", "scheduling-policy"),
    "AWS::Batch::ServiceEnvironment": ("ServiceEnvironmentArn", "service-environment"),
}


class LocalStack:
    """moto server + the template's stack in it; `functions` says what the runner must invoke."""

    def __init__(
        self,
        spec: StackSpec,
        endpoint: str | None = None,
        speed: float | None = None,
        emulate: bool | None = None,
        faults: Any = None,
        clock: HoldableClock | SteppedClock | None = None,
        lost: Callable[[Mapping[str, Any]], bool] | None = None,
    ) -> None:
        self.spec = spec
        self.endpoint = endpoint
        self._server: Any = None
        # The emulated Batch + SageMaker belong to whoever started the embedded AWS (not to a client
        # of a running `shareplane up`); speed is virtual seconds per wall second (None: the default).
        self.emulate = endpoint is None if emulate is None else emulate
        self.speed = speed
        self.faults = faults  # gpusim.Faults for the emulated SageMaker (scripted or seeded failures)
        # Which of the emulator's events (PutEvents entries) never reach the bus: SageMaker's events
        # may be lost (reference/aws-semantics.md), and the repair paths are tested by losing them.
        self.lost = lost
        # The emulator's clock. By default a wall clock, held while the handlers work and bounded
        # between the loop's turns (see gpusim.engine.HoldableClock), for a user who acts in wall
        # time (`shareplane up`); a SteppedClock moves only when a StackLoop's turn finds nothing to
        # do (the demo and the tests: the cluster's hours cost only the work done in them).
        self.clock = clock if clock is not None else HoldableClock()
        self.emulator: Emulator | None = None
        #: What the emulator provisioned (and skipped) of the template's Batch resources.
        self.emulated: BatchResources | None = None
        self.translated: TranslatedTemplate | None = None
        self.outputs: dict[str, str] = {}
        #: Logical id -> what Ref returns, and (logical id, attribute) -> what Fn::GetAtt returns.
        self.physical_ids: dict[str, str] = {}
        self.attributes: dict[tuple[str, str], str] = {}
        self.parameters: dict[str, str] = {}
        self.intrinsics: Intrinsics | None = None
        # CloudTrail data events of the template's trails (see cloudtrail.py), for the server started
        # here, dated on the cluster's clock as the embedded S3's objects are (s3_clock).
        self.trails = TrailEmulation(clock=self.cluster_time)
        self._session = boto3.session.Session()
        self._clients: dict[tuple[str, str | None], Any] = {}
        self._clients_lock = threading.Lock()
        #: The embedded CloudWatch's GetMetricData index (None when the stack runs elsewhere).
        self.metric_index: metric_index.MetricIndex | None = None
        #: The embedded SQS's delayed messages on the virtual clock (None when the stack runs elsewhere).
        self.delays: VirtualDelays | None = None

    # -- lifecycle --------------------------------------------------------------------------
    def start(self) -> LocalStack:
        """Start moto (unless an endpoint was given) and create the stack (unless it exists)."""
        if self.endpoint is None:
            self._server = _MotoServer(self.trails)
            self._server.start()
            host, port = self._server.get_host_and_port()
            self.endpoint = f"http://{host}:{port}"
            # moto keeps its state per process, not per server: a fresh stack starts from nothing.
            urllib.request.urlopen(urllib.request.Request(f"{self.endpoint}/moto-api/reset", method="POST"))
            self.metric_index = metric_index.install(ACCOUNT, REGION)
            embedded_dynamodb.install(ACCOUNT, REGION)
            input_paths.install()
            s3_clock.install(self.cluster_time)
            self.delays = VirtualDelays(ACCOUNT, REGION)
        self.translated = translate(self.spec.template, self.spec.parameters)
        if self.spec.shares_config is not None:
            stored = self.translated.cloudformation["Resources"][SHARES_CONFIG_RESOURCE]["Properties"]
            stored["Value"] = self.spec.shares_config
        cloudformation = self.client("cloudformation")
        if not self._stack_exists(cloudformation):
            self._create_stack(cloudformation)
        self._read_stack(cloudformation)
        self._apply_bucket_settings()
        if self._server is not None:
            self._emulate_trails()
        if self.emulate and self.emulator is None:
            self._start_emulator()
        return self

    def stop(self) -> None:
        """Stop the emulator, then the embedded AWS (when this process started them)."""
        if self.emulator is not None:
            self.emulator.stop()  # first: it puts its last events on the embedded EventBridge
            self.emulator = None
        if self._server is not None:
            uninstall(self.trails)
            s3_clock.uninstall()
            self._server.stop()
            self._server = None
            self.delays = None

    def __enter__(self) -> LocalStack:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- emulated trainers' checkpoints -------------------------------------------------------
    def write_checkpoint(self, s3_uri: str, at: float, progress: float) -> None:
        """Put one checkpoint object under ``s3_uri``, dated ``at`` (the emulator's virtual clock).

        The control plane reads a trainer's newest checkpoint from its objects' LastModified, which it
        compares with event times; moto stamps objects with the wall clock, so the object is re-dated
        in the embedded AWS's own store (only possible when this process runs it).
        """
        parsed = urlparse(s3_uri)
        bucket, prefix = parsed.netloc, parsed.path.lstrip("/")
        key = f"{prefix}checkpoint-{int(progress):09d}.pt"
        body = json.dumps({"trainedSeconds": progress, "at": at}).encode()
        s3 = self.client("s3")
        try:
            s3.put_object(Bucket=bucket, Key=key, Body=body)
        except s3.exceptions.NoSuchBucket:
            s3.create_bucket(Bucket=bucket)
            s3.put_object(Bucket=bucket, Key=key, Body=body)
        if self._server is not None:
            from moto.s3.models import s3_backends

            stored = s3_backends[ACCOUNT]["aws"].get_object(bucket, key)
            if stored is not None:
                stored.last_modified = datetime.fromtimestamp(at, UTC).replace(tzinfo=None)

    # -- emulated trainers' instance metrics -----------------------------------------------------
    def write_metrics(self, metric_data: list[dict[str, Any]]) -> None:
        """PutMetricData of running trainers' per-host metrics (gpusim.gpu_metrics), 1000 a request.

        When this process runs the embedded AWS, the datapoints go straight into its CloudWatch store
        (the records PutMetricData makes there): at a hundred hosts a minute, serialising them through
        HTTP would take a good part of a core away from the handlers on a small machine.
        """
        if self._server is not None:
            from moto.cloudwatch.models import cloudwatch_backends

            stamped = [
                {**d, "Timestamp": datetime.fromtimestamp(float(d["Timestamp"]), UTC).replace(tzinfo=None)}
                for d in metric_data
            ]
            cloudwatch_backends[ACCOUNT][REGION].put_metric_data(gpu_metrics.NAMESPACE, stamped)
            return
        entries = [
            {**d, "Timestamp": datetime.fromtimestamp(float(d["Timestamp"]), UTC)} for d in metric_data
        ]
        for first in range(0, len(entries), PUT_METRIC_DATA_LIMIT):
            self.client("cloudwatch").put_metric_data(
                Namespace=gpu_metrics.NAMESPACE, MetricData=entries[first : first + PUT_METRIC_DATA_LIMIT]
            )

    # -- clients and names ------------------------------------------------------------------
    def client(self, service: str) -> Any:
        """The boto3 client of a service of the embedded AWS, built once per endpoint and kept.

        Building a client loads its service model (tens of milliseconds), and the runner polls every
        queue at each turn: a client per call would cost more than the calls. Clients are
        thread-safe (the emulator's threads write checkpoints and metrics); building them from one
        session is not, hence the lock.
        """
        with self._clients_lock:
            key = (service, self.endpoint)
            if key not in self._clients:
                session: Any = self._session  # the stubs type clients per literal service name only
                self._clients[key] = session.client(
                    service,
                    endpoint_url=self.endpoint,
                    region_name=REGION,
                    aws_access_key_id=LOCAL_CREDENTIALS["AWS_ACCESS_KEY_ID"],
                    aws_secret_access_key=LOCAL_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
                    config=Config(retries={"mode": "standard", "max_attempts": 3}),
                )
            return self._clients[key]

    @property
    def functions(self) -> list[FunctionSpec]:
        assert self.translated is not None, "start() first"
        return self.translated.functions

    def running_emulator(self) -> Emulator:
        """The emulator serving Batch and SageMaker, once an emulated stack has started."""
        assert self.emulator is not None, "start() a stack with the emulator first"
        return self.emulator

    def cluster_time(self) -> float:
        """Epoch seconds on the cluster's clock: the emulator's virtual time when it runs, else the wall.

        Each function's composition root reads it as its own clock (as a Lambda reads AWS's), so the
        functions bound their triggers' times by the clock those triggers were dated on.
        """
        if self.emulator is None:
            return time.time()
        model = self.emulator.model
        engine = model.engine
        assert isinstance(engine, RealtimeEngine)
        return model.ms(max(engine.virtual_now(), engine.now)) / 1000

    def environment(self) -> dict[str, str]:
        """The endpoint variables to export for this stack."""
        assert self.endpoint is not None, "start() first"
        return endpoint_environment(self.endpoint, self.emulator.environment() if self.emulator else None)

    def function_environment(self, function: FunctionSpec) -> dict[str, str]:
        """A function's template environment with every reference resolved to local names."""
        return {k: str(v) for k, v in self.resolve(dict(function.environment)).items()}

    def queue_url(self, logical_id: str) -> str:
        """URL of a queue of the template."""
        physical = self.physical_ids[logical_id]
        if physical.startswith("http"):
            return physical
        return str(self.client("sqs").get_queue_url(QueueName=physical)["QueueUrl"])

    def may_have_messages(self, logical_id: str) -> bool:
        """Whether a queue of the template may hold a visible message (False only when it surely holds
        none): read from the embedded SQS this process runs, without a ReceiveMessage round trip, so
        the runner polls only the queues with work. True when the stack runs elsewhere."""
        if self._server is None:
            return True
        from moto.sqs.models import sqs_backends

        queue = sqs_backends[ACCOUNT][REGION].queues.get(resource_name(self.queue_url(logical_id)))
        return queue is None or any(m.visible and not m.delayed for m in list(queue._messages))

    def resolve(self, value: Any) -> Any:
        """``value`` with its intrinsics resolved against this stack (see intrinsics.Intrinsics)."""
        assert self.intrinsics is not None, "start() first"
        return self.intrinsics.resolve(value)

    # -- the stack --------------------------------------------------------------------------
    def _stack_exists(self, cloudformation: Any) -> bool:
        try:
            stacks = cloudformation.describe_stacks(StackName=self.spec.stack_name)["Stacks"]
        except cloudformation.exceptions.ClientError:
            return False
        return bool(stacks) and stacks[0]["StackStatus"] != "DELETE_COMPLETE"

    def _create_stack(self, cloudformation: Any) -> None:
        assert self.translated is not None
        cloudformation.create_stack(
            StackName=self.spec.stack_name,
            TemplateBody=json.dumps(self.translated.cloudformation),
            Parameters=[{"ParameterKey": k, "ParameterValue": v} for k, v in self.spec.parameters.items()],
            Capabilities=["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM", "CAPABILITY_AUTO_EXPAND"],
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            status = cloudformation.describe_stacks(StackName=self.spec.stack_name)["Stacks"][0][
                "StackStatus"
            ]
            if status.endswith("_COMPLETE") or status.endswith("_FAILED"):
                if status != "CREATE_COMPLETE":
                    raise RuntimeError(f"local stack {self.spec.stack_name}: {status}")
                return
            time.sleep(0.1)
        raise TimeoutError(f"local stack {self.spec.stack_name} was not created within 60 s")

    def _apply_bucket_settings(self) -> None:
        """Versioning and EventBridge notifications, which moto's CloudFormation drops from buckets."""
        # The submit path needs both: client tokens include the version id, and drops reach it
        # through EventBridge. Both calls are idempotent, so a restarted stack gets them again.
        assert self.translated is not None
        s3 = self.client("s3")
        for logical_id, resource in self.translated.cloudformation["Resources"].items():
            if resource["Type"] != "AWS::S3::Bucket" or logical_id not in self.physical_ids:
                continue
            props, bucket = resource.get("Properties", {}), self.physical_ids[logical_id]
            if (props.get("VersioningConfiguration") or {}).get("Status") == "Enabled":
                s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
            notifications = props.get("NotificationConfiguration") or {}
            if (notifications.get("EventBridgeConfiguration") or {}).get("EventBridgeEnabled"):
                s3.put_bucket_notification_configuration(
                    Bucket=bucket, NotificationConfiguration={"EventBridgeConfiguration": {}}
                )

    def _emulate_trails(self) -> None:
        """Serve CloudTrail's data events for the writes the template's trails select."""
        assert self.translated is not None

        def caller_identity(access_key_id: str | None) -> tuple[str, str, str]:
            # What STS GetCallerIdentity answers for these credentials in the embedded AWS.
            # moto answers from the backend of the account the access key belongs to (an assumed
            # role's key belongs to the role's account), as its STS GetCallerIdentity handler does.
            from moto.iam.models import get_account_id_from
            from moto.sts.models import sts_backends

            key = access_key_id or LOCAL_CREDENTIALS["AWS_ACCESS_KEY_ID"]
            return sts_backends[get_account_id_from(key)]["global"].get_caller_identity(key, REGION)

        assert self.intrinsics is not None
        resources = self.translated.cloudformation["Resources"]
        self.trails.selectors = trail_selectors(resources, self.resolve, self.intrinsics.condition)
        self.trails.caller_identity = caller_identity
        install(self.trails)

    def _read_stack(self, cloudformation: Any) -> None:
        stack = cloudformation.describe_stacks(StackName=self.spec.stack_name)["Stacks"][0]
        self.outputs = {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}
        self.parameters = {p["ParameterKey"]: p["ParameterValue"] for p in stack.get("Parameters", [])}
        resources = cloudformation.describe_stack_resources(StackName=self.spec.stack_name)["StackResources"]
        self.physical_ids = {
            r["LogicalResourceId"]: r["PhysicalResourceId"] for r in resources if "LogicalResourceId" in r
        }
        assert self.translated is not None
        for name, definition in self.translated.cloudformation.get("Parameters", {}).items():
            self.parameters.setdefault(name, str(definition.get("Default", "")))
        self.attributes = self._moto_attributes()
        self._refresh_intrinsics()

    def _moto_attributes(self) -> dict[tuple[str, str], str]:
        assert self.translated is not None
        attributes = {}
        for logical, resource in self.translated.cloudformation["Resources"].items():
            physical = self.physical_ids.get(logical)
            formats = _MOTO_ATTRIBUTES.get(resource["Type"], {})
            if physical is None:
                continue
            name = resource_name(physical)
            for attribute, form in formats.items():
                attributes[(logical, attribute)] = form.format(
                    region=REGION, account=ACCOUNT, id=physical, name=name
                )
        return attributes

    def _refresh_intrinsics(self) -> None:
        """The stack's resolver over what exists now: moto's resources, the emulator's, and stand-ins."""
        assert self.translated is not None
        template = self.translated.cloudformation
        pseudo = {
            "AWS::Region": REGION,
            "AWS::AccountId": ACCOUNT,
            "AWS::StackName": self.spec.stack_name,
            "AWS::Partition": "aws",
            "AWS::URLSuffix": "amazonaws.com",
        }
        conditions = Intrinsics(template, parameters=self.parameters, pseudo=pseudo)
        # What neither moto nor the emulator creates (functions, their mappings, skipped Batch
        # resources) is named as template.translate stood it in for moto; unless its condition is false.
        stand_in_ids, stand_in_attributes = {}, {}
        for logical, resource in self.translated.held_back.items():
            if "Condition" in resource and not conditions.condition(resource["Condition"]):
                continue
            stand_in_ids[logical] = f"local-{logical}"
            if resource["Type"] == "AWS::Lambda::Function":
                arn = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:local-{logical}"
                stand_in_attributes[(logical, "Arn")] = arn
            elif resource["Type"] in BATCH_STAND_IN_ARNS:
                # Without the emulator (emulate=False) nothing provisions Batch: its ARNs still
                # resolve (roles, environments), in the resources' own ARN formats.
                attribute, kind = BATCH_STAND_IN_ARNS[resource["Type"]]
                arn = f"arn:aws:batch:{REGION}:{ACCOUNT}:{kind}/local-{logical}"
                stand_in_attributes[(logical, attribute)] = arn
        self.intrinsics = conditions.with_resources(
            {**stand_in_ids, **self.physical_ids}, {**stand_in_attributes, **self.attributes}
        )

    # -- the emulated Batch + SageMaker -------------------------------------------------------
    def _start_emulator(self) -> None:
        """Start the emulator, have it provision the template's Batch resources, and keep what it made."""
        assert self.translated is not None and self.intrinsics is not None
        self._take_over_schedule_rules()
        # SageMaker's List and Describe answer with lower-cased training-job ARNs here, as other AWS
        # users report of the real service: every local scenario runs the handlers against both casings.
        options = ModelOptions(
            account=ACCOUNT,
            region=REGION,
            epoch_ms=int(time.time() * 1000),
            faults=self.faults or Faults(),
            lowercase_training_job_arns=True,
        )
        emulator = Emulator(
            self.speed or DEFAULT_SPEED,
            options,
            put_events=losing(put_events_via(self.client("events")), self.lost),
            wall_clock=self.clock,
            checkpoint_writer=self.write_checkpoint,
        ).start()
        # Running trainers' per-host GPU metrics go into the embedded CloudWatch, as SageMaker's do.
        emulator.model.metrics_writer = self.write_metrics
        try:
            made = emulator.provision(
                self.translated.held_back, self.intrinsics, stack_name=self.spec.stack_name
            )
        except BaseException:
            emulator.stop()
            raise
        self.emulator, self.emulated = emulator, made
        self.physical_ids.update(made.physical_ids)
        self.attributes.update(made.attributes())
        self._refresh_intrinsics()
        # template.translate drops the outputs that name held-back resources: the SAM template has them.
        outputs = load_sam_template(self.spec.template).get("Outputs", {})
        assert self.intrinsics is not None
        self.outputs.update(resolve_outputs(outputs, self.intrinsics, set(made.created)))

    def _take_over_schedule_rules(self) -> None:
        """Detach schedule rules' targets in moto: it never fires them, yet delivers every put event to them.

        ``shareplane up`` fires them on the emulator's virtual clock instead (see ``template_schedules``).
        """
        assert self.translated is not None
        events = self.client("events")
        for logical, resource in self.translated.cloudformation.get("Resources", {}).items():
            props = resource.get("Properties", {})
            if resource.get("Type") != "AWS::Events::Rule" or "ScheduleExpression" not in props:
                continue
            name = self.physical_ids.get(logical)
            ids = [str(t["Id"]) for t in props.get("Targets", []) if "Id" in t]
            if name and ids:
                events.remove_targets(Rule=arn_tail(name), Ids=ids)


class _MotoServer:
    """moto's WSGI app, as its ThreadedMotoServer builds it, served by waitress on loopback; the app
    wrapped to give each request an id and remember its caller (cloudtrail.py).

    waitress, not werkzeug's development server (moto's own choice): werkzeug closes the connection
    after every response, so each AWS call paid for a new TCP connection and a new server thread
    (about a fifth of a GetItem here); waitress keeps boto3's pooled connections alive and answers on
    a fixed pool of threads, with TCP_NODELAY set (headers and body go out in two writes, and with
    Nagle's algorithm the body would wait for the client's delayed ACK).
    """

    #: Worker threads: every caller in this process (handlers, the emulator's event publisher, the
    #: CLI) makes one call at a time, and none long-polls.
    THREADS = 8

    def __init__(self, trails: TrailEmulation) -> None:
        from moto import backends
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
        from waitress.server import create_server  # type: ignore[import-untyped]  # waitress has no hints

        # moto routes each request by listing its own package folder on disk, twice (about 2 ms, a
        # quarter of a GetItem); the folder does not change while the process runs.
        if not isinstance(backends.list_of_moto_modules, _Listed):
            backends.list_of_moto_modules = _Listed(tuple(backends.list_of_moto_modules()))
        logging.getLogger("waitress.queue").setLevel(logging.ERROR)  # "task queue depth" notices
        self._server: Any = create_server(
            trails.wrap(DomainDispatcherApplication(create_backend_app)),
            host="127.0.0.1",
            port=0,
            threads=self.THREADS,
            ident="moto",
        )
        self._server.channel_class = _bodiless_requests_not_held()
        self._thread: Any = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()

    def get_host_and_port(self) -> tuple[str, int]:
        host, port = self._server.socket.getsockname()[:2]
        return str(host), int(port)

    def stop(self) -> None:
        from waitress import wasyncore  # type: ignore[import-untyped]  # waitress has no hints

        self._server.task_dispatcher.shutdown()
        wasyncore.close_all(self._server._map)  # the listening socket and every kept-alive connection
        if self._thread is not None:
            self._thread.join()


def _bodiless_requests_not_held() -> type:
    """waitress's connection class, with a parser that never holds a request without a body.

    boto3 puts an empty S3 object (a folder marker) with ``Expect: 100-continue`` and
    ``Content-Length: 0``; waitress answers ``100 Continue`` and then waits for a body that never
    comes, until the client's read timeout. A server may skip the interim answer when it already has
    the whole body (RFC 9110, section 10.1.1), which a request without one always has.
    """
    from waitress.channel import HTTPChannel  # type: ignore[import-untyped]  # waitress has no hints
    from waitress.parser import HTTPRequestParser  # type: ignore[import-untyped]  # (no hints)

    class BodilessNotHeld(HTTPRequestParser):  # type: ignore[misc]
        def parse_header(self, header_plus: bytes) -> None:
            super().parse_header(header_plus)
            if self.body_rcv is None:  # no Content-Length above 0 and not chunked: nothing to wait for
                self.expect_continue = False

    class Channel(HTTPChannel):  # type: ignore[misc]
        parser_class = BodilessNotHeld

    return Channel


@dataclass(frozen=True)
class _Listed:
    """moto's module listing, read once."""

    modules: tuple[str, ...]

    def __call__(self) -> tuple[str, ...]:
        return self.modules


@contextlib.contextmanager
def patched_environ(values: Mapping[str, str]) -> Iterator[None]:
    """Set environment variables for the duration of a block (a function invocation)."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, old in saved.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old
