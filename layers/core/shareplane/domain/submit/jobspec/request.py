"""The mapping of an accepted job to its SubmitServiceJob request, with its token and digest.

The request carries a CreateTrainingJob payload (``serviceRequestPayload``) in one canonical JSON
text, so its digest is the same for every upload of the same spec; the client token is what makes a
re-delivered S3 event submit the job once.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ...config.shares import SchedulingMode, SharesConfig, Tier
from ...jobs.service_job_request import ServiceJobRequest
from ...jobs.tags import SUBMISSION_TAG, TEAM_TAG, TIER_TAG
from .model import JobSpec
from .rules import JobContext

CHECKPOINT_LOCAL_PATH = "/opt/ml/checkpoints"
SERVICE_JOB_TYPE = "SAGEMAKER_TRAINING"
TRAINING_INPUT_MODE = "File"
# SageMaker's internal errors are worth one more try. onStatusReason globs may only END with "*"
# (the start must match exactly), and the SDK writes no space after the colon where the docs write
# one, so both prefixes are listed.
EVALUATE_ON_EXIT = (
    {"action": "RETRY", "onStatusReason": "Received status from SageMaker: InternalServerError*"},
    {"action": "RETRY", "onStatusReason": "Received status from SageMaker:InternalServerError*"},
    {"action": "EXIT", "onStatusReason": "*"},
)
_TOKEN_DOMAIN = "shareplane-submit-v1"


def canonical_json(value: Any) -> str:
    """The one JSON text of a value: sorted keys, no spaces, ASCII only."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def client_token(bucket: str, key: str, version_id: str | None, index: int) -> str:
    """The SubmitServiceJob idempotency token of job ``index`` of one object version (64 hex chars).

    Without a version id (an unversioned bucket), re-uploading the same key yields the same token;
    Batch then treats the new upload as a repeat, so the drop bucket should keep versioning on.
    """
    material = canonical_json([_TOKEN_DOMAIN, bucket, key, version_id or "", index])
    return hashlib.sha256(material.encode("utf-8")).hexdigest()


def payload_digest(payload_json: str) -> str:
    """sha256 hex of a canonical serviceRequestPayload, for the submission receipt."""
    return hashlib.sha256(payload_json.encode("utf-8")).hexdigest()


def training_payload(
    spec: JobSpec, image: str, role_arn: str | None, tags: Mapping[str, str]
) -> dict[str, Any]:
    """The CreateTrainingJob request an accepted job's service job carries (``serviceRequestPayload``)."""
    algorithm: dict[str, Any] = {"TrainingImage": image, "TrainingInputMode": TRAINING_INPUT_MODE}
    if spec.entry_point is not None:
        algorithm["ContainerEntrypoint"] = [spec.entry_point]
    if spec.command is not None:
        algorithm["ContainerArguments"] = list(spec.command)
    payload: dict[str, Any] = {
        "TrainingJobName": spec.name,
        "AlgorithmSpecification": algorithm,
        "RoleArn": role_arn,
        "OutputDataConfig": {"S3OutputPath": spec.output_path},
        "ResourceConfig": {
            "InstanceType": spec.instance_type,
            "InstanceCount": spec.instance_count,
            "VolumeSizeInGB": spec.volume_size_gb,
        },
        "StoppingCondition": stopping_condition(spec),
        "EnableManagedSpotTraining": spec.spot,
        "HyperParameters": dict(spec.hyperparameters),
        "Environment": dict(spec.environment),
        "Tags": [{"Key": k, "Value": v} for k, v in sorted(tags.items())],
    }
    if spec.inputs:
        # CreateTrainingJob refuses an empty InputDataConfig, so it is left out when there are no channels.
        payload["InputDataConfig"] = [
            {
                "ChannelName": channel,
                "DataSource": {
                    "S3DataSource": {
                        "S3DataType": "S3Prefix",
                        "S3Uri": uri,
                        "S3DataDistributionType": "FullyReplicated",
                    }
                },
            }
            for channel, uri in spec.inputs.items()
        ]
    if spec.checkpoint_path is not None:
        payload["CheckpointConfig"] = {"S3Uri": spec.checkpoint_path, "LocalPath": CHECKPOINT_LOCAL_PATH}
    return payload


def stopping_condition(spec: JobSpec) -> dict[str, int]:
    """The training job's run-time limit, and a spot job's wait limit."""
    stopping = {"MaxRuntimeInSeconds": spec.max_runtime_seconds}
    if spec.spot and spec.max_wait_seconds is not None:
        stopping["MaxWaitTimeInSeconds"] = spec.max_wait_seconds
    return stopping


def service_job_request(
    spec: JobSpec, index: int, image: str, ctx: JobContext
) -> tuple[ServiceJobRequest, str]:
    """The SubmitServiceJob request and payload digest of an accepted job."""
    config, team = ctx.config, ctx.team
    is_cpu = ctx.runs_on_cpu(spec)
    token = client_token(ctx.bucket, ctx.key, ctx.version_id, index)
    tags = {**spec.tags, TEAM_TAG: ctx.team_name, TIER_TAG: spec.priority}
    payload_json = canonical_json(training_payload(spec, image, team.execution_role_arn, tags))
    # Batch's tags only: the payload (and so its digest) stays the same for every upload of a spec.
    tags = {**tags, SUBMISSION_TAG: token}
    attempts = spec.retry_attempts if spec.retry_attempts is not None else team.default_retry_attempts
    stopping = stopping_condition(spec)
    request = ServiceJobRequest(
        job_name=spec.name,
        # The config names cpu_fifo whenever it lists the CPU instance types that send a job there.
        job_queue=(config.queues.cpu_fifo or "") if is_cpu else config.gpu_queue_name(),
        service_job_type=SERVICE_JOB_TYPE,
        service_request_payload=payload_json,
        retry_strategy={"attempts": attempts, "evaluateOnExit": [dict(rule) for rule in EVALUATE_ON_EXIT]},
        # A spot job may wait for capacity up to max_wait; a timeout of max_runtime would cut it short.
        timeout_config={
            "attemptDurationSeconds": stopping.get("MaxWaitTimeInSeconds", spec.max_runtime_seconds)
        },
        tags=tags,
        client_token=token,
    )
    if not is_cpu:
        tier = Tier(spec.priority)
        # The share fields are required on fair-share / quota-share queues and refused on a FIFO queue;
        # priority 0 is kept (the SageMaker SDK drops it by testing truthiness).
        quota = config.mode is SchedulingMode.QUOTA
        share = config.share_for(ctx.team_name, tier)
        retries = team.quota.preemption_retries_before_termination
        request = replace(
            request,
            share_identifier=None if quota else share,
            quota_share_name=share if quota else None,
            scheduling_priority=config.tiers[tier].scheduling_priority,
            # Only quota shares preempt; unset, Batch would requeue a preempted job forever.
            preemption_configuration=(
                {"preemptionRetriesBeforeTermination": retries} if quota and retries is not None else None
            ),
        )
    return request, payload_digest(payload_json)


def demoted_request(
    request: ServiceJobRequest, team: str, config: SharesConfig
) -> tuple[ServiceJobRequest, str]:
    """The request of an accepted GPU job moved to LOWPRI (an over-budget team's ``demote_to_lowpri``).

    The tier tag (on the Batch job and on the training job, so its cost is counted as LOWPRI), the
    share identifier or quota share and the schedulingPriority change; the clientToken does not, so a
    retry of the same drop still finds the job its first try created. Returns it and its payload digest.
    """
    low = Tier.LOWPRI
    payload = json.loads(request.service_request_payload)
    payload["Tags"] = [
        {"Key": t["Key"], "Value": low.value if t["Key"] == TIER_TAG else t["Value"]}
        for t in payload.get("Tags", [])
    ]
    payload_json = canonical_json(payload)
    low_share = config.share_for(team, low)
    demoted = replace(
        request,
        service_request_payload=payload_json,
        tags={**(request.tags or {}), TIER_TAG: low.value},
        share_identifier=None if request.share_identifier is None else low_share,
        quota_share_name=None if request.quota_share_name is None else low_share,
        scheduling_priority=(
            None if request.scheduling_priority is None else config.tiers[low].scheduling_priority
        ),
    )
    return demoted, payload_digest(payload_json)
