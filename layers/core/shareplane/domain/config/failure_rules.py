"""Failure-path config: the ordered classifier rules, per-class and per-tier retry policy, guards.

Everything here is data: the classifier and the retry decision in ``failures`` read it and hold no
strings or numbers of their own. ``SharesConfig.failures`` defaults to ``FailuresConfig()``, so a
shares file only names what it changes.

The default rules follow the FailureReason format SageMaker documents: ``<ErrorType>: <message>``,
at most 1024 characters (API_DescribeTrainingJob.html), where the error type says whose side failed:

- ``ClientError`` (the job's configuration: its data, role, KMS key, image or VPC). Its variants are
  told apart by the stage and cause in the message (``Data download failed``, ``AccessDenied``,
  ``KMS``, the ECR repository, the subnet or network interface, the role to assume); a ClientError
  whose cause was cut off still gets a class of its own (``data_download_failed``, ``client_error``).
- ``AlgorithmError`` (the training container): the failure file's text, first 1024 characters
  (https://docs.aws.amazon.com/sagemaker/latest/dg/your-algorithms-training-algo-output.html); the
  toolkit writes ``ExecuteUserScriptError:\nExitCode <n>\nErrorMessage "<stderr tail>"``; its
  variants are GPU OOM, host OOM (exit 137), a full disk, a failed collective, else user code.
- ``CapacityError`` (Batch requeues it:
  https://docs.aws.amazon.com/batch/latest/userguide/sm_job_stuck_in_runnable_capacity.html),
  ``InternalServerError`` (the one error SageMaker's RetryStrategy retries,
  https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_RetryStrategy.html) and
  ``ResourceLimitExceeded`` (the account's service quota).

Rules match case-insensitive substrings because ``FailureReason`` is cut at 1024 characters and
Batch prefixes SageMaker's text with ``Received status from SageMaker:`` (with or without a space
after the colon), so a rule never anchors at the start or end of a text. A rule's ``within`` names
the error types it applies to, so a word such as ``subnet`` in a training script's traceback
(an AlgorithmError) is not read as a VPC problem.
"""

# No `from __future__ import annotations` here: pydantic would have to evaluate every field's annotation
# from a string when the models are built, at each cold start; written as objects, it reads them as they are.
from collections.abc import Mapping
from enum import StrEnum
from typing import Annotated, Literal, Self

from pydantic import Field, model_validator

from ..errors import ConfigError
from .strict_model import StrictModel


class FailureClass(StrEnum):
    """Why a training job failed, as far as the control plane acts on it."""

    CAPACITY = "capacity"
    INTERNAL_ERROR = "internal_error"
    SPOT_INTERRUPTION = "spot_interruption"
    PREEMPTED = "preempted"
    GPU_OOM = "gpu_oom"
    HOST_OOM = "host_oom"
    USER_CODE_ERROR = "user_code_error"
    BAD_REQUEST = "bad_request"
    ACCOUNT_QUOTA = "account_quota"
    MAX_RUNTIME_EXCEEDED = "max_runtime_exceeded"
    STOPPED_BY_USER = "stopped_by_user"
    #: Stopped by shareplane's reclaim (TerminateServiceJob) so a higher tier's waiting job can start.
    RECLAIMED = "reclaimed"
    #: Stopped by shareplane's idle detector: its GPUs stayed idle past the warning (not retried).
    IDLE_STOPPED = "idle_stopped"
    #: Stopped by shareplane's idle detector as hung (GPUs busy, no new checkpoint): requeued from its
    #: last checkpoint, spending the failure budget so a job that hangs every time ends in an alert.
    HUNG = "hung"
    # ClientError variants: the job's configuration is wrong.
    DATA_NOT_FOUND = "data_not_found"
    S3_ACCESS_DENIED = "s3_access_denied"
    KMS_ACCESS_DENIED = "kms_access_denied"
    IMAGE_PULL = "image_pull"
    VPC_CONFIG = "vpc_config"
    SUBNET_IPS_EXHAUSTED = "subnet_ips_exhausted"
    ROLE_NOT_ASSUMABLE = "role_not_assumable"
    #: A data download failure whose cause is not in the (possibly cut) text.
    DATA_DOWNLOAD_FAILED = "data_download_failed"
    #: Any other ClientError.
    CLIENT_ERROR = "client_error"
    # AlgorithmError variants besides GPU/host OOM and user code.
    DISK_FULL = "disk_full"
    DISTRIBUTED_COMM = "distributed_comm"
    #: Batch ended a job no service environment or quota share could ever hold (a JobStateTimeLimit
    #: action on a MISCONFIGURATION reason).
    MISCONFIGURATION = "misconfiguration"
    UNKNOWN = "unknown"


class SignalField(StrEnum):
    """The texts of a failure signal that a rule can look at."""

    STATUS_REASON = "status_reason"  # Batch service job statusReason
    FAILURE_REASON = "failure_reason"  # SageMaker FailureReason
    SECONDARY_STATUS = "secondary_status"  # SageMaker SecondaryStatus
    TRAINING_JOB_STATUS = "training_job_status"  # SageMaker TrainingJobStatus


class Severity(StrEnum):
    """How loudly an alert is routed (SNS message attribute ``severity``)."""

    CRITICAL = "critical"
    WARNING = "warning"
    INFO = "info"


#: Tier names as ``config.Tier`` spells them; a literal here because config.py imports this module.
TierName = Literal["HIGHPRI", "MIDPRI", "LOWPRI"]

_REASON_TEXTS = (SignalField.STATUS_REASON, SignalField.FAILURE_REASON)
#: The error types of a configuration problem: SageMaker's ClientError at run time, and the
#: ValidationException CreateTrainingJob returns when it checks the request.
_CONFIG_ERRORS = ("ClientError", "ValidationException")
_ALL_TEXTS = tuple(SignalField)


class FailureRule(StrictModel):
    """One classifier rule: every condition given must hold; the first matching rule wins."""

    #: The rule's name, unique across all rules: a decision records the rule that classified it.
    id: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]{0,63}$")]
    #: The class a failure this rule matches gets; what happens next is that class's policy (see classes).
    failure_class: FailureClass
    #: Any of these, case-insensitive, as a substring of any of ``fields`` (or the whole field if
    #: ``exact``: SageMaker status names are short words that also occur inside free-text reasons).
    contains: tuple[Annotated[str, Field(min_length=1)], ...] = ()
    #: The signal texts contains is looked for in: status_reason (Batch's statusReason), failure_reason
    #: (SageMaker's FailureReason), secondary_status, training_job_status.
    fields: tuple[SignalField, ...] = _REASON_TEXTS
    #: Match contains against a whole field (trimmed, any case) instead of as a substring.
    exact: bool = False
    #: Only when the job's exit code (given, or read from an AlgorithmError's ExitCode) is one of these;
    #: empty: any. Without contains, the exit code alone matches.
    exit_codes: tuple[int, ...] = ()
    #: Only when the job was (True) or was not (False) terminated through TerminateServiceJob.
    terminated: bool | None = None
    #: The text says the job has ended and AWS will not retry it (e.g. a JobStateTimeLimit action).
    final: bool = False
    #: Only when the text holding the marker also holds one of these (the error types it belongs to).
    within: tuple[Annotated[str, Field(min_length=1)], ...] = ()

    @model_validator(mode="after")
    def _has_condition(self) -> Self:
        if not self.contains and not self.exit_codes and self.terminated is None:
            raise ConfigError(
                f"failures.rules.{self.id}",
                "has no condition, so it would match every failure",
                "give it `contains`, `exit_codes` or `terminated`",
            )
        if self.contains and not self.fields:
            raise ConfigError(
                f"failures.rules.{self.id}.fields", "is empty", f"use some of {list(SignalField)}"
            )
        return self


def _rule(rule_id: str, failure_class: FailureClass, *contains: str, **extra: object) -> FailureRule:
    return FailureRule.model_validate(
        {"id": rule_id, "failure_class": failure_class, "contains": contains} | extra
    )


# Order matters. Preemption and Batch's own terminal reasons come first because their text embeds
# capacity wording; the GPU OOM markers come before user code errors because a CUDA OOM only ever
# shows up inside `AlgorithmError: ExecuteUserScriptError ... ErrorMessage`; SageMaker status words
# come last because a Stopped job can also carry a more specific reason.
DEFAULT_RULES: tuple[FailureRule, ...] = (
    # Our own TerminateServiceJob reason (domain/reclaim/reason.py): before "terminated", which it also
    # matches.
    _rule(
        "shareplane-reclaim",
        FailureClass.RECLAIMED,
        "shareplane reclaim:",
        fields=(SignalField.STATUS_REASON,),
        terminated=True,
    ),
    # The idle detector's own reasons (domain/idle/policy.py: stop_reason), before "terminated" too.
    _rule(
        "shareplane-idle",
        FailureClass.IDLE_STOPPED,
        "shareplane idle:",
        fields=(SignalField.STATUS_REASON,),
        terminated=True,
    ),
    _rule(
        "shareplane-hung",
        FailureClass.HUNG,
        "shareplane hung:",
        fields=(SignalField.STATUS_REASON,),
        terminated=True,
    ),
    _rule(
        "batch-preemption",
        FailureClass.PREEMPTED,
        "PREEMPTION_IN_PROGRESS",
        "Cross-share preemption triggered to reclaim borrowed capacity",
        # In-share preemption texts are not documented; Batch's wording for both kinds ends so.
        "preemption triggered",
    ),
    # https://docs.aws.amazon.com/batch/latest/userguide/sm_job_stuck_in_runnable_misconfiguration.html
    _rule(
        "batch-misconfiguration",
        FailureClass.MISCONFIGURATION,
        "MISCONFIGURATION:SERVICE_ENVIRONMENT_MAX_RESOURCE",
        "MISCONFIGURATION:QUOTA_MANAGEMENT_LIMIT_EXCEEDED",
        fields=(SignalField.STATUS_REASON,),
        final=True,
    ),
    _rule(
        "batch-runnable-time-limit",
        FailureClass.CAPACITY,
        "Terminated by JobStateTimeLimit action",
        final=True,
    ),
    _rule(
        "capacity",
        FailureClass.CAPACITY,
        "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY",
        "CapacityError",
        "Unable to provision requested ML compute capacity",
        "Insufficient capacity error from EC2",
        "Launched instance was unhealthy",
        fields=_ALL_TEXTS,
    ),
    _rule(
        "account-quota", FailureClass.ACCOUNT_QUOTA, "ResourceLimitExceeded", "account-level service limit"
    ),
    # ClientError causes, most specific first: a KMS or ECR denial also says "AccessDenied", and a
    # VPC or S3 problem is reported as a data download failure. CreateTrainingJob's own checks
    # (a role it cannot assume, an image it cannot reach) come back as a ValidationException.
    _rule(
        "role-not-assumable",
        FailureClass.ROLE_NOT_ASSUMABLE,
        "assume role",
        "AssumeRole",
        "assume the role",
        within=_CONFIG_ERRORS,
    ),
    _rule(
        "kms-access",
        FailureClass.KMS_ACCESS_DENIED,
        "KMS.",
        "KMS key",
        "kms:",
        "KmsKeyId",
        "customer master key",
        within=_CONFIG_ERRORS,
    ),
    _rule(
        "image-pull",
        FailureClass.IMAGE_PULL,
        "Cannot pull algorithm container",
        "Access denied for repository",
        "Requested image",
        "CannotPullContainerError",
        "training image",
        "ecr:BatchGetImage",
        within=_CONFIG_ERRORS,
    ),
    _rule(
        "subnet-ips",
        FailureClass.SUBNET_IPS_EXHAUSTED,
        "free IP address",
        "available IP address",
        "enough IP address",
        "network interface",
        within=_CONFIG_ERRORS,
    ),
    _rule(
        "vpc-config",
        FailureClass.VPC_CONFIG,
        "route table",
        "VPC endpoint",
        "NAT device",
        "security group",
        "subnet",
        within=_CONFIG_ERRORS,
    ),
    _rule(
        "s3-access-denied",
        FailureClass.S3_ACCESS_DENIED,
        "AccessDenied",
        "Access Denied",
        "(403)",
        "403 Forbidden",
        "Forbidden",
        "not authorized to perform: s3:",
        within=_CONFIG_ERRORS,
    ),
    _rule(
        "data-not-found",
        FailureClass.DATA_NOT_FOUND,
        "NoSuchKey",
        "NoSuchBucket",
        "does not exist",
        "No S3 objects found",
        "(404)",
        "404 Not Found",
        "partial S3 prefix is not supported",
        within=("ClientError",),
    ),
    _rule(
        "data-download", FailureClass.DATA_DOWNLOAD_FAILED, "Data download failed", within=("ClientError",)
    ),
    _rule("validation", FailureClass.BAD_REQUEST, "ValidationException"),
    _rule(
        "internal-error",
        FailureClass.INTERNAL_ERROR,
        "InternalServerError",
        "We encountered an internal error",
    ),
    _rule(
        "gpu-oom",
        FailureClass.GPU_OOM,
        "CUDA out of memory",
        "torch.OutOfMemoryError",
        "torch.cuda.OutOfMemoryError",
        "OutOfMemoryError: CUDA",
        "CUDA error: out of memory",
        "CUBLAS_STATUS_ALLOC_FAILED",
        "RESOURCE_EXHAUSTED: Out of memory",  # JAX / XLA
        "ResourceExhaustedError: OOM",  # TensorFlow
        fields=_ALL_TEXTS,
    ),
    _rule(
        "host-oom",
        FailureClass.HOST_OOM,
        "Please use an instance type with more memory",
        "Out of Memory. Please use a larger instance",
    ),
    # 137 = 128 + SIGKILL: the kernel's OOM killer, since a stop or a preemption matched above.
    FailureRule(id="host-oom-killed", failure_class=FailureClass.HOST_OOM, exit_codes=(137,)),
    _rule(
        "disk-full",
        FailureClass.DISK_FULL,
        "No space left on device",
        "ENOSPC",
        within=("AlgorithmError", "ClientError"),
    ),
    _rule(
        "distributed-comm",
        FailureClass.DISTRIBUTED_COMM,
        "NCCL error",
        "ncclSystemError",
        "ncclRemoteError",
        "ncclInternalError",
        "NCCL communicator was aborted",
        "Watchdog caught collective operation timeout",
        within=("AlgorithmError",),
    ),
    _rule(
        "batch-attempt-timeout", FailureClass.MAX_RUNTIME_EXCEEDED, "Job attempt duration exceeded timeout"
    ),
    _rule(
        "max-runtime",
        FailureClass.MAX_RUNTIME_EXCEEDED,
        "MaxRuntimeExceeded",
        fields=(SignalField.SECONDARY_STATUS,),
        exact=True,
    ),
    _rule(
        "spot-interrupted",
        FailureClass.SPOT_INTERRUPTION,
        "Interrupted",
        "MaxWaitTimeExceeded",
        fields=(SignalField.SECONDARY_STATUS,),
        exact=True,
    ),
    _rule("user-code", FailureClass.USER_CODE_ERROR, "AlgorithmError", "ExecuteUserScriptError"),
    # A ClientError whose cause matched nothing above (or was cut off at 1024 characters).
    _rule("client-error", FailureClass.CLIENT_ERROR, "ClientError"),
    FailureRule(id="terminated", failure_class=FailureClass.STOPPED_BY_USER, terminated=True, final=True),
    _rule(
        "stopped",
        FailureClass.STOPPED_BY_USER,
        "Stopped",
        fields=(SignalField.SECONDARY_STATUS, SignalField.TRAINING_JOB_STATUS),
        exact=True,
        final=True,
    ),
)


class BackoffConfig(StrictModel):
    """Exponential backoff: ``min(cap, base * factor**(n-1))``, then +/- ``jitter`` of that."""

    #: Delay before the first retry, in seconds; each later retry multiplies it by factor.
    base_seconds: Annotated[float, Field(gt=0)] = 60
    #: What each retry multiplies the delay by (1: the same delay every time).
    factor: Annotated[float, Field(ge=1)] = 2.0
    #: Longest delay before jitter, in seconds, at least base_seconds (delays up to 900 s wait in SQS, longer
    #: ones in a one-time schedule).
    cap_seconds: Annotated[float, Field(gt=0)] = 3600
    #: Fraction each delay moves up or down by, drawn from the job so a re-delivered failure gets the same
    #: delay (0: none).
    jitter: Annotated[float, Field(ge=0, lt=1)] = 0.1

    @model_validator(mode="after")
    def _cap_above_base(self) -> Self:
        if self.cap_seconds < self.base_seconds:
            raise ConfigError(
                "failures.backoff.cap_seconds",
                f"{self.cap_seconds} is below base_seconds {self.base_seconds}",
                "raise cap_seconds or lower base_seconds",
            )
        return self


class ClassPolicy(StrictModel):
    """What to do with one failure class."""

    retry: bool
    #: Whether a retry spends the job's failure budget (infrastructure failures do not).
    uses_budget: bool = True
    #: Retry on the next larger instance type of the class's ladder.
    upsize: bool = False
    #: Whether a failure that is not retried raises an alert (False: it is only recorded).
    alert: bool = True
    severity: Severity = Severity.WARNING
    fix: str


class ClassPolicyOverride(StrictModel):
    """A partial ``ClassPolicy``: fields left out keep the default."""

    #: Whether a failure of this class is requeued (after the backoff); unset: the built-in policy.
    retry: bool | None = None
    #: Whether a retry spends an attempt of the job's failure budget; capacity errors, preemptions and
    #: reclaims never do.
    uses_budget: bool | None = None
    #: Whether the retry moves to the next larger instance type of the class's ladder.
    upsize: bool | None = None
    #: Whether a failure that is not retried raises an alert (false: it is only recorded).
    alert: bool | None = None
    #: The alert's severity attribute: critical, warning or info.
    severity: Severity | None = None
    #: The suggested fix the alert and the job's history show.
    fix: str | None = None


def _policy(retry: bool, severity: Severity, fix: str, **extra: bool) -> ClassPolicy:
    return ClassPolicy(retry=retry, severity=severity, fix=fix, **extra)


DEFAULT_CLASS_POLICIES: Mapping[FailureClass, ClassPolicy] = {
    FailureClass.CAPACITY: _policy(
        True,
        Severity.WARNING,
        "capacity for this instance type is short: wait, pick another instance type, or raise the "
        "queue's jobStateTimeLimitActions maxTimeSeconds",
        uses_budget=False,
    ),
    FailureClass.INTERNAL_ERROR: _policy(
        True, Severity.CRITICAL, "SageMaker internal error: retries exhausted; open an AWS support case"
    ),
    FailureClass.SPOT_INTERRUPTION: _policy(
        True,
        Severity.INFO,
        "spot capacity was reclaimed: keep CheckpointConfig so training resumes; use on-demand if it recurs",
        uses_budget=False,
    ),
    FailureClass.PREEMPTED: _policy(
        True,
        Severity.INFO,
        "preempted to give capacity back: checkpoint regularly, or submit to a share with reserved capacity",
        uses_budget=False,
    ),
    FailureClass.GPU_OOM: _policy(
        False,
        Severity.WARNING,
        "reduce per-GPU batch size or enable gradient checkpointing; or use an instance type with more "
        "GPU memory",
    ),
    FailureClass.HOST_OOM: _policy(
        True,
        Severity.WARNING,
        "host memory ran out: use an instance type with more memory, or lower dataloader workers and "
        "prefetch",
        upsize=True,
    ),
    FailureClass.USER_CODE_ERROR: _policy(
        False, Severity.WARNING, "the training script exited with an error: read its logs and fix the code"
    ),
    FailureClass.BAD_REQUEST: _policy(
        False, Severity.WARNING, "the CreateTrainingJob request is invalid: fix the job spec field it names"
    ),
    FailureClass.ACCOUNT_QUOTA: _policy(
        True,
        Severity.CRITICAL,
        "the account's SageMaker service quota for this instance type is used up: request a quota increase "
        "or lower the share's capacity",
    ),
    FailureClass.MAX_RUNTIME_EXCEEDED: _policy(
        False,
        Severity.WARNING,
        "the job hit MaxRuntimeInSeconds: raise StoppingCondition.MaxRuntimeInSeconds, or checkpoint and "
        "resume",
    ),
    FailureClass.STOPPED_BY_USER: _policy(
        False, Severity.INFO, "stopped on request: nothing to fix", alert=False
    ),
    FailureClass.RECLAIMED: _policy(
        True,
        Severity.INFO,
        "stopped so a higher tier's job that waited past its threshold could start; it was requeued at "
        "once and resumes from its last checkpoint: checkpoint often to lose less",
        uses_budget=False,
    ),
    FailureClass.IDLE_STOPPED: _policy(
        False,
        Severity.INFO,
        "stopped because its GPUs stayed idle past the warning (the team was alerted first): fix the data "
        "loading or the stall, or submit again",
        # The detector alerted at the warning and at the stop; the failed event adds nothing.
        alert=False,
    ),
    FailureClass.HUNG: _policy(
        True,
        Severity.WARNING,
        "stopped because its GPUs were busy but it wrote no checkpoint for the team's hung-job intervals "
        "(a hung collective or a deadlock); requeued from its last checkpoint: read the logs of the hang",
    ),
    FailureClass.DATA_NOT_FOUND: _policy(
        False,
        Severity.WARNING,
        "an input S3 location holds nothing SageMaker can read: check the spec's inputs (a folder "
        "prefix ends with '/') and that the data was written before the job started",
    ),
    FailureClass.S3_ACCESS_DENIED: _policy(
        False,
        Severity.WARNING,
        "the team's execution role may not read the inputs or write the output: allow s3:GetObject and "
        "s3:ListBucket on the inputs and s3:PutObject on the output prefix, and check the bucket policies",
    ),
    FailureClass.KMS_ACCESS_DENIED: _policy(
        False,
        Severity.WARNING,
        "the execution role may not use the KMS key of the data, volume or output: allow kms:Decrypt, "
        "kms:GenerateDataKey and kms:CreateGrant in the role and the key policy, and check the key is "
        "enabled",
    ),
    FailureClass.IMAGE_PULL: _policy(
        False,
        Severity.WARNING,
        "the training image cannot be pulled: check the image URI and tag exist, the ECR repository policy "
        "lets SageMaker pull, and the role has ecr:BatchGetImage, ecr:GetDownloadUrlForLayer, "
        "ecr:BatchCheckLayerAvailability and ecr:GetAuthorizationToken",
    ),
    FailureClass.VPC_CONFIG: _policy(
        False,
        Severity.WARNING,
        "the training instances cannot reach S3 from the job's VPC: give the subnets' route tables an S3 "
        "VPC endpoint or a NAT route, and let the security groups and network ACLs allow outbound traffic",
    ),
    FailureClass.SUBNET_IPS_EXHAUSTED: _policy(
        True,
        Severity.WARNING,
        "the job's subnets had no free IP address for its network interfaces: retried while others free "
        "up; add subnets (or larger ones) to the VpcConfig if it recurs",
    ),
    FailureClass.ROLE_NOT_ASSUMABLE: _policy(
        False,
        Severity.CRITICAL,
        "SageMaker cannot assume the team's execution role: check the role exists and its trust policy "
        "lets sagemaker.amazonaws.com call sts:AssumeRole",
    ),
    FailureClass.DATA_DOWNLOAD_FAILED: _policy(
        True,
        Severity.WARNING,
        "SageMaker could not download the input and the reason names no cause (it may be cut at 1024 "
        "characters): read it in full with DescribeTrainingJob; check the input URIs and the role's S3 "
        "access",
    ),
    FailureClass.CLIENT_ERROR: _policy(
        False,
        Severity.WARNING,
        "SageMaker refused the job's configuration (ClientError): read the reason and fix the job spec",
    ),
    FailureClass.DISK_FULL: _policy(
        False,
        Severity.WARNING,
        "the training volume filled up: raise volume_size_gb in the spec, or write less under /opt/ml",
    ),
    FailureClass.DISTRIBUTED_COMM: _policy(
        True,
        Severity.WARNING,
        "a collective (NCCL) between the job's nodes failed: retried, as network faults pass; if it recurs, "
        "check the security group allows all traffic between the nodes and the EFA setup",
    ),
    FailureClass.MISCONFIGURATION: _policy(
        False,
        Severity.WARNING,
        "the job asks for more instances than its queue's service environment (or its quota share, with "
        "what it may borrow) can ever hold: lower instance_count, or raise the capacity limit",
    ),
    FailureClass.UNKNOWN: _policy(
        False,
        Severity.CRITICAL,
        "no rule recognises this failure: read the job's CloudWatch logs and add a rule under failures.rules",
    ),
}

# Ladders list one family's sizes smallest first, keeping the GPU count fixed (a bigger GPU count
# changes the training job's world size). Host memory ladders grow host RAM; GPU memory ladders grow
# memory per GPU.
DEFAULT_HOST_MEMORY_LADDERS: Mapping[str, tuple[str, ...]] = {
    "ml.g5-1gpu": ("ml.g5.xlarge", "ml.g5.2xlarge", "ml.g5.4xlarge", "ml.g5.8xlarge", "ml.g5.16xlarge"),
    "ml.g5-4gpu": ("ml.g5.12xlarge", "ml.g5.24xlarge"),
    "ml.g6-1gpu": ("ml.g6.xlarge", "ml.g6.2xlarge", "ml.g6.4xlarge", "ml.g6.8xlarge", "ml.g6.16xlarge"),
    "ml.g6-4gpu": ("ml.g6.12xlarge", "ml.g6.24xlarge"),
}
DEFAULT_GPU_MEMORY_LADDERS: Mapping[str, tuple[str, ...]] = {
    "ml.p4-8gpu": ("ml.p4d.24xlarge", "ml.p4de.24xlarge"),
    "ml.p5-8gpu": ("ml.p5.48xlarge", "ml.p5e.48xlarge"),
}


class TierPolicy(StrictModel):
    """Per-tier changes to the failure policy."""

    #: This tier's failure budget; unset: failures.budget.
    budget: Annotated[int, Field(ge=0, le=100)] | None = None
    #: This tier's backoff; unset: failures.backoff.
    backoff: BackoffConfig | None = None
    #: This tier's class changes, applied over failures.classes.
    classes: Mapping[FailureClass, ClassPolicyOverride] = {}


#: What to do about a storm: the storm decision's fix, and the storm alert's (``ALERT_SPECS``).
STORM_FIX = "find the common cause of share {share}'s failures; requeueing resumes when the rate drops"


class StormGuardConfig(StrictModel):
    """More than ``max_failures`` failures of one share within ``window_seconds`` is a storm."""

    #: More failures than this of one share (a CPU job: of one team) within window_seconds is a storm.
    max_failures: Annotated[int, Field(ge=1)] = 10
    #: The storm guard's window, in seconds; requeueing resumes when the rate drops below the limit.
    window_seconds: Annotated[float, Field(gt=0)] = 600


class EscalationConfig(StrictModel):
    """Raising a waiting job's schedulingPriority once it is past its tier's wait SLO."""

    #: How much the priority rises per interval past the SLO, counted from the tier's own; never up to the
    #: next tier's (HIGHPRI stops at 9999).
    step: Annotated[int, Field(ge=1, le=9999)] = 5
    #: Seconds between steps past the SLO; None means one step per wait SLO.
    every_seconds: Annotated[float, Field(gt=0)] | None = None


class FailuresConfig(StrictModel):
    """Root of ``failures:`` in the shares config; every field has a default."""

    #: Rules checked before the defaults (the place for site-specific failure texts).
    extra_rules: tuple[FailureRule, ...] = ()
    #: The built-in rules, tried after extra_rules; setting this replaces them all (add to extra_rules
    #: instead).
    rules: tuple[FailureRule, ...] = DEFAULT_RULES
    #: Per failure class, changes to its built-in policy (retry, budget, upsize, alert, severity, fix).
    classes: Mapping[FailureClass, ClassPolicyOverride] = {}
    #: The delay before a requeue, for every tier without a backoff of its own.
    backoff: BackoffConfig = BackoffConfig()
    #: Failures a job may have retried before it is parked with an alert.
    budget: Annotated[int, Field(ge=0, le=100)] = 3
    #: Per tier, its own budget, backoff and class changes; a tier left out uses the settings above.
    tiers: Mapping[TierName, TierPolicy] = {"HIGHPRI": TierPolicy(budget=5), "LOWPRI": TierPolicy(budget=2)}
    #: The per-share storm guard: past its rate, requeueing pauses for that share and one digest alert goes
    #: out.
    storm: StormGuardConfig = StormGuardConfig()
    #: Instance types by family, smallest first at a fixed GPU count: a host OOM retry moves one step up (to a
    #: type the team may use).
    host_memory_ladders: Mapping[str, tuple[str, ...]] = DEFAULT_HOST_MEMORY_LADDERS
    #: The same for more memory per GPU, used by a class whose policy sets upsize (GPU OOM does not by
    #: default).
    gpu_memory_ladders: Mapping[str, tuple[str, ...]] = DEFAULT_GPU_MEMORY_LADDERS
    #: Spot interruptions after which the retry switches to on-demand; None keeps spot.
    spot_on_demand_after: Annotated[int, Field(ge=1)] | None = 3
    #: Preemptions of one job that raise an alert.
    preemption_alert_after: Annotated[int, Field(ge=1)] = 3
    #: How watch_jobs raises a waiting job's schedulingPriority once it is past its tier's wait SLO.
    escalation: EscalationConfig = EscalationConfig()

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        ids = [r.id for r in self.ordered_rules]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ConfigError(
                "failures.rules", f"rule ids {dupes} are used twice", "give every rule its own id"
            )
        for where, overrides in [("failures.classes", self.classes)] + [
            (f"failures.tiers.{t}.classes", p.classes) for t, p in self.tiers.items()
        ]:
            for cls in (FailureClass.CAPACITY, FailureClass.PREEMPTED, FailureClass.RECLAIMED):
                if overrides.get(cls) and overrides[cls].uses_budget:
                    raise ConfigError(
                        f"{where}.{cls}.uses_budget",
                        "capacity errors, preemptions and reclaims never spend the failure budget",
                        "remove uses_budget",
                    )
        return self

    @property
    def ordered_rules(self) -> tuple[FailureRule, ...]:
        """The classifier's rules in the order they are tried."""
        return self.extra_rules + self.rules

    def tier_override(self, tier: str) -> TierPolicy | None:
        """The policy configured for ``tier``, if any (a job's tier is any string; only three are keys)."""
        for name, policy in self.tiers.items():
            if name == tier:
                return policy
        return None

    def budget_for(self, tier: str) -> int:
        """The failure budget of a job in ``tier``."""
        override = self.tier_override(tier)
        return override.budget if override and override.budget is not None else self.budget

    def backoff_for(self, tier: str) -> BackoffConfig:
        """The backoff of a job in ``tier``."""
        override = self.tier_override(tier)
        return override.backoff if override and override.backoff is not None else self.backoff

    def policy_for(self, failure_class: FailureClass, tier: str) -> ClassPolicy:
        """Default class policy, then ``classes`` overrides, then the tier's overrides."""
        merged = DEFAULT_CLASS_POLICIES[failure_class].model_dump()
        tier_policy = self.tier_override(tier)
        layers = [
            self.classes.get(failure_class),
            tier_policy.classes.get(failure_class) if tier_policy else None,
        ]
        for layer in layers:
            if layer is not None:
                merged |= layer.model_dump(exclude_none=True)
        return ClassPolicy.model_validate(merged)
