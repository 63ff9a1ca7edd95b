"""The emulated AWS Batch + SageMaker of the local stack: gpusim on a scaled wall clock, over HTTP.

``Emulator`` runs one gpusim model behind the Batch and SageMaker wire protocols on a loopback port
and puts the model's events on the embedded EventBridge, so the template's rules route them to the
handlers' queues. ``Emulator.provision`` builds the template's ``AWS::Batch::*`` resources (which
moto cannot create) in it, mapping CloudFormation properties to the API's request shapes, and returns
what it made (ARNs, names) for the stack to keep; the emulator holds no reference to the stack.
``template_schedules`` reads the template's schedules (EventBridge Scheduler and schedule rules), which
``shareplane up`` fires on the emulator's virtual clock.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from botocore.model import ListShape, MapShape, Shape, StructureShape
from botocore.session import get_session
from gpusim import ApiError, BatchModel, ModelOptions, RealtimeEngine
from gpusim.events import iso_seconds
from gpusim.server import GpuSimServer, PutEvents
from shareplane.domain.errors import InvalidInputError

from ..clock import CLOCK_URL_VARIABLE
from .envelope import eventbridge_event
from .intrinsics import Intrinsics, TemplateResourceError, references

#: Virtual seconds per wall second: a one-hour training job plays out in about 40 seconds.
DEFAULT_SPEED = 100.0

Resolve = Callable[[Any], Any]
#: ``writer(s3_uri, epoch_seconds, progress_seconds)``: one checkpoint a running trainer wrote.
CheckpointWriter = Callable[[str, float, float], None]


# ------------------------------------------------------------------------------------ emulator
class Emulator:
    """gpusim served on loopback: start/stop, its endpoint, its speed, and the model it serves."""

    def __init__(
        self,
        speed: float = DEFAULT_SPEED,
        options: ModelOptions | None = None,
        put_events: PutEvents | None = None,
        wall_clock: Callable[[], float] = time.monotonic,
        checkpoint_writer: CheckpointWriter | None = None,
    ) -> None:
        if speed <= 0:
            raise InvalidInputError(
                "speed", f"{speed} is not positive", "pass virtual seconds per wall second, e.g. 100"
            )
        self.speed = speed
        # Virtual time 0 is the moment the emulator starts, so records carry plausible dates.
        self.options = options or ModelOptions(epoch_ms=int(time.time() * 1000))
        self.engine = RealtimeEngine(speed=speed, wall_clock=wall_clock)
        self.model = BatchModel(self.engine, self.options)
        # Trainers' checkpoints go where the caller says (the local stack: objects in its S3).
        self.model.checkpoint_writer = checkpoint_writer
        self.server = GpuSimServer(self.model, put_events=put_events)
        self.batch = self.server.batch
        self.sagemaker = self.server.sagemaker
        self.running = False

    @property
    def endpoint(self) -> str:
        """``http://127.0.0.1:<port>``: both the Batch and the SageMaker endpoint."""
        return self.server.endpoint

    def start(self) -> Emulator:
        """Start serving and let the virtual clock run."""
        self.server.start()
        self.running = True
        return self

    def stop(self) -> None:
        """Stop the server, the clock and the event publisher (after it put what was queued)."""
        if self.running:
            self.server.stop()
            self.running = False

    def __enter__(self) -> Emulator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def environment(self) -> dict[str, str]:
        """The service-specific endpoint variables boto3 honours, both pointing here, and where the
        CLI reads "now" (the virtual clock the cluster's records are dated on)."""
        return {
            "AWS_ENDPOINT_URL_BATCH": self.endpoint,
            "AWS_ENDPOINT_URL_SAGEMAKER": self.endpoint,
            CLOCK_URL_VARIABLE: self.server.clock_url,
        }

    def virtual_now(self) -> float:
        """Virtual seconds since the emulator started (after running what is due)."""
        return self.model.sync()

    def wait_for_events(self, timeout: float = 10.0) -> bool:
        """Wait until every event the model has emitted so far is on EventBridge."""
        return self.server.wait_for_events(timeout)

    def call(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        """A Batch operation in-process, under the same lock and clock as HTTP requests."""
        return self.server.call("batch", operation, params)

    def provision(
        self, resources: Mapping[str, Mapping[str, Any]], intrinsics: Intrinsics, *, stack_name: str
    ) -> BatchResources:
        """Create the template's Batch resources here; returns what was created (ARNs, names) and skipped."""
        return create_batch_resources(self.call, resources, intrinsics, stack_name=stack_name)


def put_events_via(client: Any) -> PutEvents:
    """A PutEvents callable for a boto3 ``events`` client (the embedded EventBridge)."""
    return lambda entries: client.put_events(Entries=entries)


def losing(put: PutEvents, lost: Callable[[Mapping[str, Any]], bool] | None) -> PutEvents:
    """``put`` that drops the entries ``lost`` picks, answering as if the bus took them (a lost event:
    the sender never learns); ``put`` itself when nothing is lost."""
    if lost is None:
        return put

    def put_kept(entries: list[dict[str, Any]]) -> dict[str, Any]:
        kept = [entry for entry in entries if not lost(entry)]
        return put(kept) if kept else {"FailedEntryCount": 0, "Entries": []}

    return put_kept


# --------------------------------------------------------------------------- template resources
#: Per resource type: the create operation, the request member holding the name, the response
#: member holding the ARN, and the attribute Fn::GetAtt reads (CloudFormation's Ref is the ARN too).
_KINDS: dict[str, tuple[str, str, str, str]] = {
    "AWS::Batch::ServiceEnvironment": (
        "CreateServiceEnvironment",
        "serviceEnvironmentName",
        "serviceEnvironmentArn",
        "ServiceEnvironmentArn",
    ),
    "AWS::Batch::SchedulingPolicy": ("CreateSchedulingPolicy", "name", "arn", "Arn"),
    "AWS::Batch::JobQueue": ("CreateJobQueue", "jobQueueName", "jobQueueArn", "JobQueueArn"),
    "AWS::Batch::QuotaShare": ("CreateQuotaShare", "quotaShareName", "quotaShareArn", "QuotaShareArn"),
}


@dataclass(frozen=True)
class BatchResource:
    """One template resource created in the emulator."""

    logical_id: str
    type: str
    name: str
    arn: str
    attributes: Mapping[str, str]


@dataclass
class BatchResources:
    """What ``create_batch_resources`` made, and what it left out and why."""

    created: dict[str, BatchResource] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)

    @property
    def physical_ids(self) -> dict[str, str]:
        """Logical id -> ARN, as CloudFormation reports these resources' physical ids."""
        return {k: r.arn for k, r in self.created.items()}

    def attributes(self) -> dict[tuple[str, str], str]:
        """(logical id, attribute) -> value, for Fn::GetAtt."""
        return {(k, a): v for k, r in self.created.items() for a, v in r.attributes.items()}


def creation_order(resources: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Resources in dependency order; ties by type, then logical id (the input order does not matter)."""
    rank = {t: i for i, t in enumerate(_KINDS)}
    ids = set(resources)
    needs = {}
    for logical, resource in resources.items():
        depends = resource.get("DependsOn", [])
        depends = {depends} if isinstance(depends, str) else set(depends)
        needs[logical] = ((references(resource.get("Properties", {})) | depends) & ids) - {logical}
    order: list[str] = []
    done: set[str] = set()
    while len(order) < len(ids):
        ready = sorted(
            (k for k in ids - done if needs[k] <= done),
            key=lambda k: (rank.get(resources[k]["Type"], len(rank)), k),
        )
        if not ready:
            # What no other waiting resource needs is only stuck behind the cycle: leave it unnamed.
            cycle = ids - done
            while unneeded := {k for k in cycle if not any(k in needs[o] for o in cycle)}:
                cycle -= unneeded
            raise TemplateResourceError(
                ", ".join(sorted(cycle)),
                "refer to each other in a cycle",
                "break the cycle of Ref/GetAtt/DependsOn",
            )
        order.append(ready[0])
        done.add(ready[0])
    return order


def to_request(logical_id: str, properties: Mapping[str, Any], shape: Shape) -> dict[str, Any]:
    """CloudFormation properties (PascalCase) as the API's request (camelCase), checked against its shape."""
    request: dict[str, Any] = _convert(properties, shape, logical_id)
    return request


def _convert(value: Any, shape: Shape, path: str) -> Any:
    kind = shape.type_name
    if isinstance(shape, StructureShape):
        if not isinstance(value, Mapping):
            raise TemplateResourceError(
                path, f"is {type(value).__name__}, not an object", "write it as a mapping"
            )
        members = {name.lower(): name for name in shape.members}
        out = {}
        for key, item in value.items():
            member = members.get(key.lower())
            if member is None:
                raise TemplateResourceError(
                    f"{path}.{key}",
                    "has no counterpart in the API request",
                    f"use one of {sorted(m[0].upper() + m[1:] for m in shape.members)}",
                )
            out[member] = _convert(item, shape.members[member], f"{path}.{key}")
        return out
    if isinstance(shape, ListShape):
        if not isinstance(value, list):
            raise TemplateResourceError(path, "is not a list", "write it as a YAML sequence")
        return [_convert(item, shape.member, f"{path}[{i}]") for i, item in enumerate(value)]
    if isinstance(shape, MapShape):
        if isinstance(value, list):  # the Key/Value list form some resources use for Tags
            return {str(t["Key"]): str(t["Value"]) for t in value}
        return {str(k): _convert(v, shape.value, f"{path}.{k}") for k, v in value.items()}
    try:
        if kind in ("integer", "long"):
            return int(value)
        if kind in ("float", "double"):
            return float(value)
    except (TypeError, ValueError) as exc:
        raise TemplateResourceError(path, f"{value!r} is not a number", "write a number") from exc
    if kind == "boolean":
        return value if isinstance(value, bool) else str(value).lower() == "true"
    return value if isinstance(value, str) else str(value)


def create_batch_resources(
    call: Callable[[str, dict[str, Any]], dict[str, Any]],
    resources: Mapping[str, Mapping[str, Any]],
    intrinsics: Intrinsics,
    *,
    stack_name: str,
) -> BatchResources:
    """Create the template's AWS::Batch::* resources through ``call(operation, request)``.

    ``intrinsics`` resolves what names anything else (parameters, pseudo parameters, moto's
    resources) and evaluates the template's conditions; each resource created joins it for the
    resources after it. A resource whose condition is false is left out, as CloudFormation does;
    types the emulator does not model (container compute environments, job definitions) are skipped
    with a reason, and so is anything that depends on a skipped resource.
    """
    batch = {k: v for k, v in resources.items() if v.get("Type", "").startswith("AWS::Batch::")}
    out = BatchResources()
    resolver = intrinsics
    service = get_session().get_service_model("batch")
    for logical in creation_order(batch):
        resource = batch[logical]
        kind = resource["Type"]
        if kind not in _KINDS:
            out.skipped[logical] = f"{kind} is not emulated (only SageMaker Training queues are)"
            continue
        if "Condition" in resource and not resolver.condition(resource["Condition"]):
            out.skipped[logical] = f"condition {resource['Condition']} is false"
            continue
        missing = references(resolver.choose(resource.get("Properties", {}))) & set(out.skipped)
        if missing:
            out.skipped[logical] = f"depends on {sorted(missing)}, which were skipped"
            continue
        properties = resolver.resolve(resource.get("Properties", {}))
        if kind == "AWS::Batch::JobQueue" and (
            properties.get("ComputeEnvironmentOrder")
            or properties.get("JobQueueType", "") != "SAGEMAKER_TRAINING"
        ):
            out.skipped[logical] = "a compute-environment queue; only SAGEMAKER_TRAINING queues are emulated"
            continue
        operation, name_member, arn_member, attribute = _KINDS[kind]
        input_shape = service.operation_model(operation).input_shape
        assert input_shape is not None, f"{operation} takes a request"  # every create call does
        request = to_request(logical, properties, input_shape)
        request.setdefault(name_member, f"{stack_name}-{logical}")
        try:
            response = call(operation, request)
        except ApiError as exc:
            raise TemplateResourceError(
                logical, f"{operation} was refused: {exc.message}", "fix the resource"
            ) from exc
        arn = response[arn_member]
        made = BatchResource(logical, kind, request[name_member], arn, {attribute: arn})
        out.created[logical] = made
        resolver = resolver.with_resources({logical: arn}, {(logical, attribute): arn})
    return out


def resolve_outputs(
    outputs: Mapping[str, Mapping[str, Any]], resolver: Intrinsics, logical_ids: set[str]
) -> dict[str, str]:
    """The template's outputs that name ``logical_ids`` (emulated resources), with their values resolved."""
    out = {}
    for key, output in outputs.items():
        if not references(output.get("Value")) & logical_ids:
            continue
        if "Condition" in output and not resolver.condition(output["Condition"]):
            continue
        out[key] = str(resolver.resolve(output["Value"]))
    return out


# ------------------------------------------------------------------------------------ schedules
_RATE = re.compile(r"^rate\((\d+)\s+(minute|minutes|hour|hours|day|days)\)$")
_UNIT_SECONDS = {"minute": 60, "hour": 3600, "day": 86400}
_SCHEDULE_TYPES = ("AWS::Scheduler::Schedule", "AWS::Events::Rule")


@dataclass(frozen=True)
class Schedule:
    """A schedule of the template: every N virtual seconds, deliver ``input`` to ``target``.

    ``input`` None means an EventBridge ``Scheduled Event`` (a schedule rule without Input), built
    when it fires so it carries the tick's time.
    """

    logical_id: str
    every_seconds: float
    target: str
    input: Any
    target_id: str = ""


def template_schedules(
    resources: Mapping[str, Mapping[str, Any]], resolve: Resolve = lambda v: v
) -> tuple[list[Schedule], dict[str, str]]:
    """Scheduler schedules and schedule rules with rate() expressions, and those left out with the reason."""
    schedules: list[Schedule] = []
    skipped: dict[str, str] = {}
    for logical, resource in sorted(resources.items()):
        props = resource.get("Properties", {})
        if resource.get("Type") not in _SCHEDULE_TYPES or "ScheduleExpression" not in props:
            continue
        if resolve(props.get("State", "ENABLED")) != "ENABLED":
            skipped[logical] = "disabled"
            continue
        expression = resolve(props["ScheduleExpression"])
        match = _RATE.match(expression) if isinstance(expression, str) else None
        if match is None:
            skipped[logical] = f"{expression!r}: only rate() expressions run locally"
            continue
        every = float(int(match.group(1)) * _UNIT_SECONDS[match.group(2).rstrip("s")])
        rule = resource["Type"] == "AWS::Events::Rule"
        for target in props.get("Targets", []) if rule else [props.get("Target", {})]:
            refs = references(target.get("Arn"))
            if len(refs) != 1:
                skipped[logical] = "its target is not a resource of the template"
                continue
            raw = target.get("Input")
            payload = json.loads(raw) if isinstance(raw, str) and raw.strip() else (None if rule else {})
            schedules.append(Schedule(logical, every, refs.pop(), payload, str(target.get("Id", ""))))
    return schedules, skipped


def scheduled_event(rule_arn: str, epoch_ms: int, account: str, region: str) -> dict[str, Any]:
    """The event a schedule rule delivers to its targets at ``epoch_ms``."""
    return eventbridge_event(
        "Scheduled Event",
        "aws.events",
        account=account,
        region=region,
        time=iso_seconds(epoch_ms),
        resources=[rule_arn],
        detail={},
    )


class ScheduleClock:
    """Which schedules are due at a virtual time; a schedule that fell behind fires once, not in a burst."""

    def __init__(self, schedules: list[Schedule], start: float = 0.0) -> None:
        self.schedules = list(schedules)
        self._next = [start + s.every_seconds for s in self.schedules]

    def next_due(self) -> float | None:
        """The virtual time the next schedule fires (None: there are none)."""
        return min(self._next, default=None)

    def due(self, now: float) -> list[Schedule]:
        """The schedules whose time has come by ``now``, each at most once."""
        fired = []
        for i, schedule in enumerate(self.schedules):
            nxt = self._next[i]
            if nxt <= now:
                fired.append(schedule)
                missed = (now - nxt) // schedule.every_seconds + 1
                self._next[i] = nxt + missed * schedule.every_seconds
        return fired
