"""AWS-shaped facades over the model: Batch and SageMaker operations, dicts in and dicts out.

Method names and parameters mirror boto3 (``create_job_queue(jobQueueName=..., ...)``); ``call``
takes the wire operation name (``"SubmitServiceJob"``) for the HTTP emulator. Requests are first
checked against botocore's own input shapes, then against the rules Batch enforces server-side.
Errors are ``ApiError(status, code, message)`` as AWS returns them: ``ClientException`` (400) for
Batch, ``ValidationException`` (400) for SageMaker.

Where AWS is silent we chose: ListServiceJobs applies its RUNNING default whenever ``jobStatus`` is
honoured (no filter, or a SHARE_IDENTIFIER / QUOTA_SHARE_NAME filter); a quota-share queue has exactly
one service environment whose limits are per instance type; deleting a queue or a service environment
requires it to be DISABLED first; a repeated SubmitServiceJob (same clientToken, identical request)
is refused with ClientException, the code Batch uses for requests it refuses (the API reference says
only that "the second request is rejected"; ``BatchApi(repeat_token_returns_job=True)`` answers with
the first job instead, as an idempotent API usually would).
"""

from __future__ import annotations

import base64
import functools
import json
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from functools import cache
from typing import Any, TypeVar, cast

from botocore.model import ServiceModel, StructureShape
from botocore.session import get_session
from botocore.validate import ParamValidator
from shareplane.domain.errors import InvalidInputError, ShareplaneError
from shareplane.domain.jobs.arns import arn_tail
from shareplane.domain.shares import fairshare

from . import gpu_metrics, wire
from . import payload as payload_rules
from .model import (
    NUM_INSTANCES,
    BatchModel,
    Job,
    JobQueue,
    QuotaShare,
    SchedulingPolicy,
    ServiceEnvironment,
    TrainingJob,
)
from .schedulers import FAIRSHARE, QUOTA, head_of
from .states import DISPATCHED, FINAL, RUNNABLE, RUNNING

SHARE_ID = re.compile(r"^[A-Za-z0-9]{1,255}$")
MAX_QUOTA_SHARES = 20
MAX_ACTIVE_SHARES = 500

T = TypeVar("T")
#: A Batch or SageMaker operation: ``(self, **request) -> response``.
OperationT = TypeVar("OperationT", bound=Callable[..., dict[str, Any]])


class ApiError(ShareplaneError):
    """An error as AWS returns it: HTTP status, error code and message."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{code} ({status}): {message}")
        self.status = status
        self.code = code
        self.message = message


def client_error(message: str) -> ApiError:
    """Batch's validation error."""
    return ApiError(400, "ClientException", message)


@cache
def _service_model(service: str) -> ServiceModel:
    return get_session().get_service_model(service)


@cache
def _summary_members() -> tuple[str, ...]:
    shape = _service_model("batch").shape_for("ServiceJobSummary")
    if not isinstance(shape, StructureShape):
        raise TypeError(f"botocore's ServiceJobSummary is a {shape.type_name}, not a structure")
    return tuple(shape.members)


def _snake(operation: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", operation).lower()


def _paged(
    key: str,
    items: Sequence[T],
    render: Callable[[T], dict[str, Any]],
    request: dict[str, Any],
    *,
    default: int = 100,
    pascal: bool = False,
) -> dict[str, Any]:
    """One page of a List/Describe answer: ``{key: [render(item)...]}``, plus the token of the next page.

    Batch names the paging members ``maxResults``/``nextToken``, SageMaker (``pascal``) ``MaxResults``/
    ``NextToken``; the token is the next page's offset, opaque to the caller.
    """
    max_key, token_key = ("MaxResults", "NextToken") if pascal else ("maxResults", "nextToken")
    token = request.get(token_key)
    try:
        start = int(base64.urlsafe_b64decode(token.encode()).decode()) if token else 0
    except ValueError as exc:
        raise client_error(
            f"nextToken {token!r} is not valid; pass the token a previous call returned"
        ) from exc
    size = request.get(max_key) or default
    out: dict[str, Any] = {key: [render(item) for item in items[start : start + size]]}
    if start + size < len(items):
        out[token_key] = base64.urlsafe_b64encode(str(start + size).encode()).decode()
    return out


def _operation(method: OperationT) -> OperationT:
    """An API operation: its request is checked against botocore's input shape before it runs.

    Its wire name is the method's in CamelCase (``submit_service_job``: SubmitServiceJob), the name
    ``call`` maps back to it.
    """
    name = "".join(part.title() for part in method.__name__.split("_"))

    @functools.wraps(method)
    def checked(self: _Facade, /, **params: Any) -> dict[str, Any]:
        self._check(name, params)
        return method(self, **params)

    # The same signature as ``method``: the check only reads the request.
    return cast(OperationT, checked)


class _Facade:
    service = ""
    error_code = "ClientException"

    def __init__(self, model: BatchModel) -> None:
        self.model = model
        self._validator = ParamValidator()

    def _check(self, operation: str, params: dict[str, Any]) -> None:
        shape = _service_model(self.service).operation_model(operation).input_shape
        if shape is None:  # an operation without input members: nothing to check
            return
        report = self._validator.validate(params, shape)
        if report.has_errors():
            raise ApiError(400, self.error_code, report.generate_report())

    def call(self, operation: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Run a wire operation (``"SubmitServiceJob"``) with its request dict."""
        method: Callable[..., dict[str, Any]] | None = getattr(self, _snake(operation), None)
        if method is None or operation not in _service_model(self.service).operation_names:
            raise ApiError(400, "UnknownOperationException", f"{operation} is not supported by the emulator")
        return method(**(params or {}))


class BatchApi(_Facade):
    """AWS Batch operations for SageMaker Training queues, over one ``BatchModel``."""

    service = "batch"

    def __init__(self, model: BatchModel, *, repeat_token_returns_job: bool = False) -> None:
        super().__init__(model)
        self._tokens: dict[str, tuple[str, Job]] = {}
        self.repeat_token_returns_job = repeat_token_returns_job

    # ------------------------------------------------------------------------------ lookups
    @staticmethod
    def _named(resources: Mapping[str, T], ref: str, missing: str) -> T:
        """The resource a name or ARN refers to (by the ARN's last part), else ClientException ``missing``."""
        found = resources.get(arn_tail(ref))
        if found is None:
            raise client_error(missing)
        return found

    def _env(self, ref: str) -> ServiceEnvironment:
        return self._named(self.model.environments, ref, f"serviceEnvironment {ref} does not exist")

    def _queue(self, ref: str) -> JobQueue:
        name = arn_tail(ref)
        queue = self.model.queues.get(name)
        if queue is None or (ref.startswith("arn:") and ref != queue.arn):
            raise client_error(f"jobQueue {ref} does not exist")
        return queue

    def _policy(self, ref: str) -> SchedulingPolicy:
        return self._named(self.model.policies, ref, f"scheduling policy {ref} does not exist")

    def _job(self, ref: str) -> Job:
        return self._named(self.model.jobs, ref, f"Job {ref} not found")

    def _quota_share(self, arn: str) -> QuotaShare:
        queue_arn, _, name = arn.partition("/quota-share/")
        queue = self.model.queues.get(arn_tail(queue_arn))
        share = queue.quota_shares.get(name) if queue and queue.arn == queue_arn else None
        if share is None:
            raise client_error(f"quotaShareArn {arn} does not exist")
        return share

    # ------------------------------------------------------------------ service environments
    @staticmethod
    def _limits(limits: list[dict[str, Any]]) -> dict[str, int]:
        if not limits:
            raise client_error("capacityLimits must hold at least one {maxCapacity, capacityUnit}")
        out: dict[str, int] = {}
        for c in limits:
            unit = c.get("capacityUnit", NUM_INSTANCES)
            if c.get("maxCapacity", 0) < 1:
                raise client_error(f"capacityLimits maxCapacity for {unit} must be at least 1")
            if unit in out:
                raise client_error(f"capacityLimits lists {unit} twice")
            out[unit] = int(c["maxCapacity"])
        if NUM_INSTANCES in out and len(out) > 1:
            raise client_error("capacityLimits cannot mix NUM_INSTANCES with instance types")
        return out

    @_operation
    def create_service_environment(self, **p: Any) -> dict[str, Any]:
        """CreateServiceEnvironment."""
        name = p["serviceEnvironmentName"]
        if p["serviceEnvironmentType"] != "SAGEMAKER_TRAINING":
            raise client_error("serviceEnvironmentType must be SAGEMAKER_TRAINING")
        if name in self.model.environments:
            raise client_error("Object already exists")
        arn = f"{self.model.batch_arn}:service-environment/{name}"
        env = ServiceEnvironment(
            name, arn, self._limits(p["capacityLimits"]), p.get("state", "ENABLED"), p.get("tags", {})
        )
        self.model.add_environment(env)
        return {"serviceEnvironmentName": name, "serviceEnvironmentArn": arn}

    def _describe_env(self, env: ServiceEnvironment) -> dict[str, Any]:
        return {
            "serviceEnvironmentName": env.name,
            "serviceEnvironmentArn": env.arn,
            "serviceEnvironmentType": "SAGEMAKER_TRAINING",
            "state": env.state,
            "status": env.status,
            "capacityLimits": [{"maxCapacity": m, "capacityUnit": u} for u, m in env.limits.items()],
            "tags": dict(env.tags),
        }

    @_operation
    def describe_service_environments(self, **p: Any) -> dict[str, Any]:
        """DescribeServiceEnvironments (unknown names are left out, as AWS does)."""
        refs = p.get("serviceEnvironments")
        envs = list(self.model.environments.values())
        if refs:
            wanted = {arn_tail(r) for r in refs}
            envs = [e for e in envs if e.name in wanted]
        return _paged("serviceEnvironments", envs, self._describe_env, p)

    @_operation
    def update_service_environment(self, **p: Any) -> dict[str, Any]:
        """UpdateServiceEnvironment: state and capacity limits."""
        env = self._env(p["serviceEnvironment"])
        if "capacityLimits" in p:
            limits = self._limits(p["capacityLimits"])
            if (NUM_INSTANCES in limits) != (NUM_INSTANCES in env.limits):
                raise client_error("capacityLimits cannot switch between NUM_INSTANCES and instance types")
            env.limits = limits
        if "state" in p:
            env.state = p["state"]
        self.model.request_pass()
        return {"serviceEnvironmentName": env.name, "serviceEnvironmentArn": env.arn}

    @_operation
    def delete_service_environment(self, **p: Any) -> dict[str, Any]:
        """DeleteServiceEnvironment: it must be DISABLED and no queue may use it."""
        env = self._env(p["serviceEnvironment"])
        if env.state != "DISABLED":
            raise client_error(f"serviceEnvironment {env.name} must be DISABLED before it is deleted")
        users = [q.name for q in self.model.queues.values() if env in q.environments]
        if users:
            raise client_error(f"serviceEnvironment {env.name} is used by job queue(s) {users}")
        del self.model.environments[env.name]
        return {}

    # -------------------------------------------------------------------- scheduling policies
    @staticmethod
    def _validate_fairshare(policy: dict[str, Any]) -> None:
        try:
            fairshare.decay_window(policy.get("shareDecaySeconds", 0))
            fairshare.reserved_fraction(policy.get("computeReservation", 0), 1)
            prefixes: list[str] = []
            for entry in policy.get("shareDistribution", []):
                ident = entry["shareIdentifier"]
                if not re.fullmatch(r"[A-Za-z0-9]{1,255}\*?", ident):
                    raise client_error(
                        f"shareIdentifier {ident!r} must be 1-255 letters or digits, optionally ending in *"
                    )
                fairshare.ShareWeight(ident, float(entry.get("weightFactor", 1.0)))
                prefixes.append(ident)
            for a in prefixes:
                for b in prefixes:
                    if a is not b and (a == b or (a.endswith("*") and b.startswith(a[:-1]))):
                        raise client_error(f"shareDistribution entries {a!r} and {b!r} overlap")
        except InvalidInputError as exc:
            raise client_error(str(exc)) from exc

    def _policy_body(self, p: dict[str, Any]) -> tuple[dict[str, Any] | None, dict[str, Any]]:
        """(fairsharePolicy, None) or (None, quotaSharePolicy): a request names exactly one."""
        fair, quota = p.get("fairsharePolicy"), p.get("quotaSharePolicy")
        if fair is not None and quota is None:
            self._validate_fairshare(fair)
            return fair, {}
        if quota is not None and fair is None:
            return None, dict(quota)
        raise client_error("set exactly one of fairsharePolicy and quotaSharePolicy")

    @_operation
    def create_scheduling_policy(self, **p: Any) -> dict[str, Any]:
        """CreateSchedulingPolicy (fair-share or quota-share)."""
        name = p["name"]
        if name in self.model.policies:
            raise client_error("Object already exists")
        fair, quota = self._policy_body(p)
        policy = SchedulingPolicy(name, f"{self.model.batch_arn}:scheduling-policy/{name}", p.get("tags", {}))
        if fair is not None:
            policy.set_fairshare(fair)
        else:
            policy.quota = dict(quota)
        self.model.policies[name] = policy
        return {"name": name, "arn": policy.arn}

    def _describe_policy(self, policy: SchedulingPolicy) -> dict[str, Any]:
        out: dict[str, Any] = {"name": policy.name, "arn": policy.arn}
        if policy.fairshare is not None:
            out["fairsharePolicy"] = policy.fairshare
        else:
            out["quotaSharePolicy"] = policy.quota
        out["tags"] = dict(policy.tags)
        return out

    @_operation
    def describe_scheduling_policies(self, **p: Any) -> dict[str, Any]:
        """DescribeSchedulingPolicies."""
        out = []
        for arn in p["arns"]:
            policy = self.model.policies.get(arn_tail(arn))
            if policy is not None and policy.arn == arn:
                out.append(self._describe_policy(policy))
        return {"schedulingPolicies": out}

    @_operation
    def list_scheduling_policies(self, **p: Any) -> dict[str, Any]:
        """ListSchedulingPolicies."""
        return _paged("schedulingPolicies", list(self.model.policies.values()), lambda x: {"arn": x.arn}, p)

    @_operation
    def update_scheduling_policy(self, **p: Any) -> dict[str, Any]:
        """UpdateSchedulingPolicy: the policy kind cannot change."""
        policy = self._policy(p["arn"])
        fair, quota = self._policy_body(p)
        if (fair is not None) != (policy.fairshare is not None):
            raise client_error(
                "a scheduling policy cannot change between fairsharePolicy and quotaSharePolicy"
            )
        if fair is not None:
            now = self.model.now
            for queue in self.model.queues.values():
                if queue.policy is policy:
                    for sh in queue.shares.values():
                        sh.usage_at(now, policy.decay_window)
            policy.set_fairshare(fair)
            for queue in self.model.queues.values():
                if queue.policy is policy:
                    self._reweigh(queue)
        else:
            policy.quota = dict(quota)
        self.model.request_pass()
        return {}

    def _reweigh(self, queue: JobQueue) -> None:
        for sh in queue.shares.values():
            weight = fairshare.weight_for(sh.name, queue.policy.weights if queue.policy else ())
            running = sum(
                j.units for j in self.model.jobs.values() if j.fshare is sh and j.status in DISPATCHED
            )
            sh.weight = weight
            sh.rate = running * weight

    @_operation
    def delete_scheduling_policy(self, **p: Any) -> dict[str, Any]:
        """DeleteSchedulingPolicy: refused while a queue uses it."""
        policy = self._policy(p["arn"])
        users = [q.name for q in self.model.queues.values() if q.policy is policy]
        if users:
            raise client_error(f"scheduling policy {policy.name} is used by job queue(s) {users}")
        del self.model.policies[policy.name]
        return {}

    # ---------------------------------------------------------------------------- job queues
    def _environments(self, order: list[dict[str, Any]]) -> list[ServiceEnvironment]:
        if not order:
            raise client_error("serviceEnvironmentOrder must name at least one service environment")
        orders = [o["order"] for o in order]
        if len(set(orders)) != len(orders):
            raise client_error("serviceEnvironmentOrder has two entries with the same order")
        return [self._env(o["serviceEnvironment"]) for o in sorted(order, key=lambda o: o["order"])]

    @staticmethod
    def _time_limits(actions: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for a in actions:
            if a["state"] != RUNNABLE:
                raise client_error("jobStateTimeLimitActions state must be RUNNABLE")
            if not 600 <= a["maxTimeSeconds"] <= 86400:
                raise client_error("jobStateTimeLimitActions maxTimeSeconds must be 600..86400")
            if a["action"] != "TERMINATE":
                raise client_error("SAGEMAKER_TRAINING queues support only action TERMINATE")
        return [dict(a) for a in actions]

    def _check_quota_queue(
        self, queue_policy: SchedulingPolicy | None, envs: list[ServiceEnvironment]
    ) -> None:
        if queue_policy is not None and queue_policy.quota is not None:
            if len(envs) != 1 or NUM_INSTANCES in envs[0].limits:
                raise client_error(
                    "a quota-share queue needs exactly one service environment with per-instance-type limits"
                )

    @_operation
    def create_job_queue(self, **p: Any) -> dict[str, Any]:
        """CreateJobQueue (SAGEMAKER_TRAINING queues only)."""
        name = p["jobQueueName"]
        if p.get("jobQueueType") != "SAGEMAKER_TRAINING":
            raise client_error("jobQueueType must be SAGEMAKER_TRAINING (the only kind this emulator models)")
        if p.get("computeEnvironmentOrder"):
            raise client_error(
                "a SAGEMAKER_TRAINING queue takes serviceEnvironmentOrder, not computeEnvironmentOrder"
            )
        if name in self.model.queues:
            raise client_error("Object already exists")
        envs = self._environments(p.get("serviceEnvironmentOrder", []))
        policy = self._policy(p["schedulingPolicyArn"]) if p.get("schedulingPolicyArn") else None
        self._check_quota_queue(policy, envs)
        limits = self._time_limits(p.get("jobStateTimeLimitActions", []))
        queue = self.model.add_queue(name, policy)
        queue.environments = envs
        queue.priority = p["priority"]
        queue.state = p.get("state", "ENABLED")
        queue.tags = p.get("tags", {})
        queue.time_limits = limits
        self.model.queues_changed()
        return {"jobQueueName": name, "jobQueueArn": queue.arn}

    def _describe_queue(self, q: JobQueue) -> dict[str, Any]:
        out: dict[str, Any] = {"jobQueueName": q.name, "jobQueueArn": q.arn, "state": q.state}
        if q.policy is not None:
            out["schedulingPolicyArn"] = q.policy.arn
        out.update(
            status=q.status,
            priority=q.priority,
            computeEnvironmentOrder=[],
            serviceEnvironmentOrder=[
                {"order": i + 1, "serviceEnvironment": e.arn} for i, e in enumerate(q.environments)
            ],
            jobQueueType="SAGEMAKER_TRAINING",
            tags=dict(q.tags),
            jobStateTimeLimitActions=[dict(a) for a in q.time_limits],
        )
        return out

    @_operation
    def describe_job_queues(self, **p: Any) -> dict[str, Any]:
        """DescribeJobQueues."""
        queues = list(self.model.queues.values())
        if p.get("jobQueues"):
            wanted = {arn_tail(r) for r in p["jobQueues"]}
            queues = [q for q in queues if q.name in wanted]
        return _paged("jobQueues", queues, self._describe_queue, p)

    @_operation
    def update_job_queue(self, **p: Any) -> dict[str, Any]:
        """UpdateJobQueue: a FIFO queue never gets a policy; a policy is replaced by one of its kind."""
        queue = self._queue(p["jobQueue"])
        envs = self._environments(p["serviceEnvironmentOrder"]) if "serviceEnvironmentOrder" in p else None
        policy = queue.policy
        if p.get("schedulingPolicyArn"):
            new = self._policy(p["schedulingPolicyArn"])
            if queue.policy is None:
                raise client_error("a queue created without a scheduling policy (FIFO) cannot get one later")
            if (new.quota is None) != (queue.policy.quota is None):
                raise client_error("a queue's scheduling policy can only be replaced by one of the same kind")
            policy = new
        self._check_quota_queue(policy, envs if envs is not None else queue.environments)
        if envs is not None:
            # Running jobs keep the environment they hold; new dispatches follow the new order.
            queue.environments = envs
        if policy is not queue.policy:
            queue.policy = policy
            self._reweigh(queue)
        if "priority" in p:
            queue.priority = p["priority"]
        if "state" in p:
            queue.state = p["state"]
        if "jobStateTimeLimitActions" in p:
            queue.time_limits = self._time_limits(p["jobStateTimeLimitActions"])
        self.model.queues_changed()
        return {"jobQueueName": queue.name, "jobQueueArn": queue.arn}

    def _terminate_unfinished(self, belongs: Callable[[Job], bool], reason: str) -> None:
        """Terminate the unfinished jobs of a resource being deleted, as AWS does."""
        for job in list(self.model.jobs.values()):
            if belongs(job) and job.status not in FINAL:
                self.model.terminate(job, reason)

    @_operation
    def delete_job_queue(self, **p: Any) -> dict[str, Any]:
        """DeleteJobQueue: it must be DISABLED; its unfinished jobs are terminated."""
        queue = self._queue(p["jobQueue"])
        if queue.state != "DISABLED":
            raise client_error(f"jobQueue {queue.name} must be DISABLED before it is deleted")
        self._terminate_unfinished(lambda job: job.queue is queue, "Job queue deleted")
        self.model.remove_queue(queue)
        return {}

    # --------------------------------------------------------------------------- quota shares
    def _share_spec(self, p: dict[str, Any], env: ServiceEnvironment) -> None:
        if "capacityLimits" in p:
            limits = p["capacityLimits"]
            if not 1 <= len(limits) <= 5:
                raise client_error("capacityLimits must hold 1 to 5 instance-type limits")
            units = [c["capacityUnit"] for c in limits]
            if len(set(units)) != len(units):
                raise client_error("capacityLimits lists an instance type twice")
            for c in limits:
                if c["maxCapacity"] < 1:
                    raise client_error(
                        f"capacityLimits maxCapacity for {c['capacityUnit']} must be at least 1"
                    )
                if c["capacityUnit"] not in env.limits:
                    raise client_error(
                        f"capacityUnit {c['capacityUnit']} is not limited in service environment {env.name}; "
                        f"use one of {sorted(env.limits)}"
                    )
        rsc = p.get("resourceSharingConfiguration")
        if rsc is not None:
            limit = rsc.get("borrowLimit")
            if limit is not None and rsc["strategy"] != "LEND_AND_BORROW":
                raise client_error("borrowLimit applies only to strategy LEND_AND_BORROW")
            if limit is not None and limit < -1:
                raise client_error("borrowLimit is a percentage of the share's limits, or -1 for unlimited")

    @_operation
    def create_quota_share(self, **p: Any) -> dict[str, Any]:
        """CreateQuotaShare (up to 20 per quota-share queue)."""
        queue = self._queue(p["jobQueue"])
        if queue.kind != QUOTA:
            raise client_error(f"jobQueue {queue.name} has no quotaSharePolicy; quota shares need one")
        name = p["quotaShareName"]
        if name in queue.quota_shares:
            raise client_error("Object already exists")
        if len(queue.quota_shares) >= MAX_QUOTA_SHARES:
            raise client_error(f"jobQueue {queue.name} already has {MAX_QUOTA_SHARES} quota shares")
        self._share_spec(p, queue.environments[0])
        share = QuotaShare(name, f"{queue.arn}/quota-share/{name}", queue, p)
        queue.quota_shares[name] = share
        self.model.request_pass()
        return {"quotaShareName": name, "quotaShareArn": share.arn}

    @staticmethod
    def _describe_share(s: QuotaShare, tags: bool = True) -> dict[str, Any]:
        out = {
            "quotaShareName": s.name,
            "quotaShareArn": s.arn,
            "jobQueueArn": s.queue.arn,
            "capacityLimits": [dict(c) for c in s.capacity_limits],
            "resourceSharingConfiguration": dict(s.sharing),
            "preemptionConfiguration": dict(s.preemption),
            "state": s.state,
            "status": s.status,
        }
        if tags:
            out["tags"] = dict(s.tags)
        return out

    @_operation
    def describe_quota_share(self, **p: Any) -> dict[str, Any]:
        """DescribeQuotaShare."""
        return self._describe_share(self._quota_share(p["quotaShareArn"]))

    @_operation
    def list_quota_shares(self, **p: Any) -> dict[str, Any]:
        """ListQuotaShares."""
        queue = self._queue(p["jobQueue"])
        shares = list(queue.quota_shares.values())
        return _paged("quotaShares", shares, lambda s: self._describe_share(s, tags=False), p)

    @_operation
    def update_quota_share(self, **p: Any) -> dict[str, Any]:
        """UpdateQuotaShare; lowering limits makes the share's excess borrowed, hence reclaimable."""
        share = self._quota_share(p["quotaShareArn"])
        self._share_spec(p, share.queue.environments[0])
        share.apply(p)
        self.model.request_pass()
        return {"quotaShareName": share.name, "quotaShareArn": share.arn}

    @_operation
    def delete_quota_share(self, **p: Any) -> dict[str, Any]:
        """DeleteQuotaShare: the share must be DISABLED first; its unfinished jobs are terminated.

        https://docs.aws.amazon.com/batch/latest/APIReference/API_DeleteQuotaShare.html
        """
        share = self._quota_share(p["quotaShareArn"])
        if share.state != "DISABLED":
            raise client_error(
                f"quota share {share.name} is {share.state}; set its state to DISABLED with "
                "UpdateQuotaShare before deleting it"
            )
        self._terminate_unfinished(lambda job: job.qshare is share, "Quota share deleted")
        del share.queue.quota_shares[share.name]
        self.model.request_pass()
        return {}

    # -------------------------------------------------------------------------- service jobs
    @staticmethod
    def _retry(retry: dict[str, Any] | None) -> None:
        if retry is None:
            return
        if not 1 <= retry["attempts"] <= 10:
            raise client_error("retryStrategy.attempts must be 1..10")
        rules = retry.get("evaluateOnExit", [])
        if len(rules) > 5:
            raise client_error("retryStrategy.evaluateOnExit holds at most 5 rules")
        for rule in rules:
            if rule.get("action", "").upper() not in ("RETRY", "EXIT"):
                raise client_error("evaluateOnExit action must be RETRY or EXIT")
            if len(rule.get("onStatusReason", "")) > 512:
                raise client_error("evaluateOnExit onStatusReason is at most 512 characters")

    @_operation
    def submit_service_job(self, **p: Any) -> dict[str, Any]:
        """SubmitServiceJob; one job per clientToken.

        "If this parameter is specified and two submit requests with identical payloads and
        clientTokens are received, these requests are considered the same request and the second
        request is rejected." (https://docs.aws.amazon.com/batch/latest/APIReference/API_SubmitServiceJob.html)
        """
        token = p.get("clientToken")
        fingerprint = (
            json.dumps({k: v for k, v in p.items() if k != "clientToken"}, sort_keys=True) if token else ""
        )
        if token:
            repeated = self._repeated_submission(token, fingerprint)
            if repeated is not None:
                return {"jobArn": repeated.arn, "jobName": repeated.name, "jobId": repeated.id}
        queue = self._queue(p["jobQueue"])
        if p["serviceJobType"] != "SAGEMAKER_TRAINING":
            raise client_error("serviceJobType must be SAGEMAKER_TRAINING")
        if queue.state != "ENABLED":
            raise client_error(f"jobQueue {queue.name} is DISABLED; enable it or submit elsewhere")
        # Batch queues the payload as given; SageMaker rejects a bad one at dispatch (payload.py).
        payload, unreadable = payload_rules.parse(p["serviceRequestPayload"])
        share = self._submitted_share(queue, p.get("shareIdentifier"))
        quota_share = self._submitted_quota_share(queue, p.get("quotaShareName"))
        priority = p.get("schedulingPriority", 0)
        if not 0 <= priority <= 9999:
            raise client_error("schedulingPriority must be 0..9999")
        self._retry(p.get("retryStrategy"))
        pc = p.get("preemptionConfiguration")
        if pc is not None and pc.get("preemptionRetriesBeforeTermination", 0) < 0:
            raise client_error("preemptionRetriesBeforeTermination must be 0 or more")
        try:
            gpu = gpu_metrics.script_from_tags(p.get("tags"))
        except InvalidInputError as exc:
            raise client_error(str(exc)) from exc
        job = self.model.submit(
            queue,
            p["jobName"],
            payload,
            gpu=gpu,
            payload_text=p["serviceRequestPayload"],
            share=share,
            quota_share=quota_share,
            priority=priority,
            retry=p.get("retryStrategy"),
            timeout=p.get("timeoutConfig"),
            preemption=pc,
            tags=p.get("tags"),
            client_token=token,
        )
        job.invalid = unreadable
        job.judged = True
        if token:
            self._tokens[token] = (fingerprint, job)
        return {"jobArn": job.arn, "jobName": job.name, "jobId": job.id}

    def _repeated_submission(self, token: str, fingerprint: str) -> Job | None:
        """The job an identical earlier request with this clientToken created; None for a new token."""
        seen = self._tokens.get(token)
        if seen is None:
            return None
        if seen[0] != fingerprint:
            raise client_error(f"clientToken {token} was already used with a different request")
        if not self.repeat_token_returns_job:
            # No job id in the message: AWS documents none, so no caller may rely on one.
            raise client_error(f"clientToken {token} was already used by an identical request")
        return seen[1]

    def _submitted_share(self, queue: JobQueue, share: str | None) -> str | None:
        """The shareIdentifier a submission names, checked against the queue's kind and its active shares."""
        if queue.kind != FAIRSHARE:
            if share:
                raise client_error(
                    f"shareIdentifier is only allowed on fair-share queues; {queue.name} has none"
                )
            return share
        if not share:
            raise client_error(f"shareIdentifier is required on fair-share queue {queue.name}")
        if not SHARE_ID.fullmatch(share):
            raise client_error("shareIdentifier must be 1-255 letters or digits")
        known = queue.shares.get(share)
        if (known is None or not known.counted) and queue.active_shares >= MAX_ACTIVE_SHARES:
            raise client_error(
                f"jobQueue {queue.name} already has {MAX_ACTIVE_SHARES} active share identifiers"
            )
        return share

    def _submitted_quota_share(self, queue: JobQueue, name: str | None) -> QuotaShare | None:
        """The quota share a submission names: required, existing and enabled on a quota-share queue."""
        if queue.kind != QUOTA:
            if name:
                raise client_error(
                    f"quotaShareName is only allowed on quota-share queues; {queue.name} is not one"
                )
            return None
        if not name:
            raise client_error(f"quotaShareName is required on quota-share queue {queue.name}")
        quota_share = queue.quota_shares.get(name)
        if quota_share is None:
            raise client_error(f"quotaShareName {name} does not exist in {queue.name}")
        if quota_share.state != "ENABLED":
            raise client_error(f"quota share {name} is DISABLED and takes no new jobs")
        return quota_share

    @_operation
    def describe_service_job(self, **p: Any) -> dict[str, Any]:
        """DescribeServiceJob (by id or ARN)."""
        return wire.describe_job(self.model, self._job(p["jobId"]))

    def _summary(self, job: Job) -> dict[str, Any]:
        """A ServiceJobSummary: the members botocore's shape names, jobId/jobName/serviceJobType always.

        https://docs.aws.amazon.com/batch/latest/APIReference/API_ServiceJobSummary.html
        """
        d = wire.describe_job(self.model, job, event=True)
        return {k: d[k] for k in _summary_members() if k in d}

    @_operation
    def list_service_jobs(self, **p: Any) -> dict[str, Any]:
        """ListServiceJobs: one filter at a time; no status and no filter lists RUNNING jobs only."""
        jobs = list(self.model.jobs.values())
        if p.get("jobQueue"):
            queue = self._queue(p["jobQueue"])
            jobs = [j for j in jobs if j.queue is queue]
        filters = p.get("filters") or []
        if len(filters) > 1:
            raise client_error("ListServiceJobs takes one filter at a time")
        status = p.get("jobStatus")
        honour_status = True
        if filters:
            name, values = filters[0].get("name"), filters[0].get("values") or []
            if not values:
                raise client_error(f"filter {name} needs a value")
            value = values[0]
            if name == "JOB_NAME":
                honour_status = False
                pattern = value.lower()
                if pattern.endswith("*"):
                    jobs = [j for j in jobs if j.name.lower().startswith(pattern[:-1])]
                else:
                    jobs = [j for j in jobs if j.name.lower() == pattern]
            elif name in ("BEFORE_CREATED_AT", "AFTER_CREATED_AT"):
                honour_status = False
                try:
                    when = int(value)
                except ValueError as exc:
                    raise client_error(f"{name} takes epoch milliseconds, not {value!r}") from exc
                ms = self.model.ms
                jobs = [
                    j
                    for j in jobs
                    if (ms(j.created) < when if name == "BEFORE_CREATED_AT" else ms(j.created) > when)
                ]
            elif name == "SHARE_IDENTIFIER":
                jobs = [j for j in jobs if j.share == value]
            elif name == "QUOTA_SHARE_NAME":
                jobs = [j for j in jobs if j.qshare is not None and j.qshare.name == value]
            else:
                raise client_error(
                    f"filter name {name!r} is not one of JOB_NAME, BEFORE_CREATED_AT, AFTER_CREATED_AT, "
                    "SHARE_IDENTIFIER, QUOTA_SHARE_NAME"
                )
        if honour_status:
            wanted = status or RUNNING
            jobs = [j for j in jobs if j.status == wanted]
        # "The results are sorted by the createdAt field, with the most recent jobs being first."
        # https://docs.aws.amazon.com/batch/latest/APIReference/API_ListServiceJobs.html
        jobs.sort(key=lambda j: (j.created, j.seq), reverse=True)
        return _paged("jobSummaryList", jobs, self._summary, p)

    @_operation
    def update_service_job(self, **p: Any) -> dict[str, Any]:
        """UpdateServiceJob: a new schedulingPriority (orders jobs within a share)."""
        job = self._job(p["jobId"])
        priority = p["schedulingPriority"]
        if not 0 <= priority <= 9999:
            raise client_error("schedulingPriority must be 0..9999")
        if job.status in FINAL:
            raise client_error(f"Job {job.id} is {job.status} and can no longer be updated")
        self.model.reprioritize(job, priority)
        return {"jobArn": job.arn, "jobName": job.name, "jobId": job.id}

    @_operation
    def terminate_service_job(self, **p: Any) -> dict[str, Any]:
        """TerminateServiceJob: the job ends FAILED with isTerminated and is never retried."""
        self.model.terminate(self._job(p["jobId"]), p["reason"])
        return {}

    @_operation
    def terminate_service_jobs(self, **p: Any) -> dict[str, Any]:
        """TerminateServiceJobs: up to 50; unknown jobs count as terminated, as AWS does."""
        if len(p["jobs"]) > 50:
            raise client_error("TerminateServiceJobs takes at most 50 jobs")
        done: list[str] = []
        for ref in p["jobs"]:
            job = self.model.jobs.get(arn_tail(ref))
            if job is not None:
                self.model.terminate(job, p["reason"])
            done.append(ref)
        return {"successful": done, "errors": []}

    @_operation
    def get_job_queue_snapshot(self, **p: Any) -> dict[str, Any]:
        """GetJobQueueSnapshot: front of the queue, front of each quota share, utilisation."""
        model = self.model
        queue = self._queue(p["jobQueue"])
        now_ms = model.ms()
        runnable = queue.scheduler.front_of_queue(
            [j for j in model.jobs.values() if j.queue is queue and j.status == RUNNABLE]
        )
        front = [{"jobArn": j.arn, "earliestTimeAtPosition": model.ms(j.wait_since)} for j in runnable[:100]]
        out: dict[str, Any] = {"frontOfQueue": {"jobs": front, "lastUpdatedAt": now_ms}}
        held = [j for j in model.jobs.values() if j.queue is queue and j.status in DISPATCHED]
        # "For service jobs, this is the instance type" (API_QueueSnapshotCapacityUsage.html), as in
        # DescribeServiceJob, whatever unit the service environment limits.
        total: dict[str, float] = {}
        for j in held:
            total[j.instance_type] = total.get(j.instance_type, 0.0) + j.count
        util: dict[str, Any] = {
            "totalCapacityUsage": [{"capacityUnit": u, "quantity": q} for u, q in total.items()],
            "lastUpdatedAt": now_ms,
        }
        if queue.kind == QUOTA:
            fronts = {}
            for name, share in queue.quota_shares.items():
                head = head_of(share.heap)
                fronts[name] = (
                    [{"jobArn": head.arn, "earliestTimeAtPosition": model.ms(head.wait_since)}]
                    if head
                    else []
                )
            out["frontOfQuotaShares"] = {"quotaShares": fronts, "lastUpdatedAt": now_ms}
            util["quotaShareUtilization"] = {
                "topCapacityUtilization": [
                    {
                        "quotaShareName": name,
                        "capacityUsage": [
                            {"capacityUnit": u, "quantity": float(q)} for u, q in s.in_use.items() if q
                        ],
                    }
                    for name, s in sorted(
                        queue.quota_shares.items(), key=lambda kv: -sum(kv[1].in_use.values())
                    )
                ][:20]
            }
        elif queue.kind == FAIRSHARE:
            per_share: dict[str, dict[str, float]] = {}
            for j in held:
                usage = per_share.setdefault(j.share or "", {})
                usage[j.instance_type] = usage.get(j.instance_type, 0.0) + j.count
            top = sorted(per_share.items(), key=lambda kv: -sum(kv[1].values()))[:20]
            util["fairshareUtilization"] = {
                "activeShareCount": queue.active_shares,
                "topCapacityUtilization": [
                    {
                        "shareIdentifier": s,
                        "capacityUsage": [{"capacityUnit": u, "quantity": q} for u, q in usage.items()],
                    }
                    for s, usage in top
                ],
            }
        out["queueUtilization"] = util
        return out


class SageMakerApi(_Facade):
    """The SageMaker training-job operations the control plane uses, over the same model."""

    service = "sagemaker"
    error_code = "ValidationException"

    def _tj(self, name: str) -> TrainingJob:
        tj = self.model.training_jobs.get(name)
        if tj is None:
            # Training-job names are unique whatever their case: a lower-cased ARN's tail finds the job.
            tj = next((j for j in self.model.training_jobs.values() if j.name.lower() == name.lower()), None)
        if tj is None:
            raise ApiError(400, "ValidationException", "Requested resource not found.")
        return tj

    def _arn(self, tj: TrainingJob) -> str:
        """The TrainingJobArn SageMaker's List and Describe answer with (``lowercase_training_job_arns``)."""
        return tj.arn.lower() if self.model.options.lowercase_training_job_arns else tj.arn

    def _times(self, d: dict[str, Any]) -> dict[str, Any]:
        for key in ("CreationTime", "TrainingStartTime", "TrainingEndTime", "LastModifiedTime"):
            if key in d:
                d[key] = datetime.fromtimestamp(d[key] / 1000, tz=UTC)
        for t in d.get("SecondaryStatusTransitions", []):
            for key in ("StartTime", "EndTime"):
                if key in t:
                    t[key] = datetime.fromtimestamp(t[key] / 1000, tz=UTC)
        return d

    @_operation
    def describe_training_job(self, **p: Any) -> dict[str, Any]:
        """DescribeTrainingJob (times as datetimes, as boto3 returns them)."""
        tj = self._tj(p["TrainingJobName"])
        d = wire.describe_training_job(self.model, tj)
        d.pop("Tags", None)
        d["TrainingJobArn"] = self._arn(tj)
        return self._times(d)

    @_operation
    def list_training_jobs(self, **p: Any) -> dict[str, Any]:
        """ListTrainingJobs with the name, status and time filters."""
        jobs = list(self.model.training_jobs.values())
        if p.get("NameContains"):
            jobs = [j for j in jobs if p["NameContains"].lower() in j.name.lower()]
        if p.get("StatusEquals"):
            jobs = [j for j in jobs if j.status == p["StatusEquals"]]
        ms = self.model.ms
        for key, attr, before in (
            ("CreationTimeAfter", "created", False),
            ("CreationTimeBefore", "created", True),
            ("LastModifiedTimeAfter", "modified", False),
            ("LastModifiedTimeBefore", "modified", True),
        ):
            if key in p:
                bound = p[key]
                bound_ms = (
                    int(bound.timestamp() * 1000) if isinstance(bound, datetime) else int(float(bound) * 1000)
                )
                jobs = [j for j in jobs if (ms(getattr(j, attr)) < bound_ms) == before]
        sort_by = p.get("SortBy", "CreationTime")
        key_fn = {
            "Name": lambda j: j.name,
            "CreationTime": lambda j: (j.created, j.name),
            "Status": lambda j: j.status,
        }[sort_by]
        jobs.sort(key=key_fn, reverse=p.get("SortOrder", "Ascending") == "Descending")
        return _paged("TrainingJobSummaries", jobs, self._training_summary, p, default=10, pascal=True)

    def _training_summary(self, tj: TrainingJob) -> dict[str, Any]:
        """A TrainingJobSummary, its times as datetimes."""
        ms = self.model.ms
        summary: dict[str, Any] = {
            "TrainingJobName": tj.name,
            "TrainingJobArn": self._arn(tj),
            "CreationTime": ms(tj.created),
            "LastModifiedTime": ms(tj.modified),
            "TrainingJobStatus": tj.status,
            "SecondaryStatus": tj.secondary,
        }
        if tj.ended is not None:
            summary["TrainingEndTime"] = ms(tj.ended)
        return self._times(summary)

    @_operation
    def stop_training_job(self, **p: Any) -> dict[str, Any]:
        """StopTrainingJob: only an InProgress job can be stopped."""
        tj = self._tj(p["TrainingJobName"])
        if tj.status != "InProgress":
            raise ApiError(
                400,
                "ValidationException",
                f"The request was rejected because the training job is in status {tj.status}.",
            )
        self.model.stop_training_job(tj)
        return {}
