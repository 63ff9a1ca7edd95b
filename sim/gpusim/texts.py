"""Status and failure texts exactly as AWS Batch and SageMaker write them (and the few we chose).

Texts marked CHOSEN are not documented by AWS; they are ours and kept in one place so a later
correction is one edit.
"""

from __future__ import annotations

SAGEMAKER_PREFIX = "Received status from SageMaker: "
CAPACITY_REQUEUE = "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY - Unable to provision requested compute resources"
CAPACITY_CODE = "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY"
TIME_LIMIT = "Terminated by JobStateTimeLimit action due to reason: "
COMPLETED = "Training job completed"

CAPACITY_ERROR = (
    "CapacityError: Unable to provision requested ML compute capacity. "
    "Please retry using a different ML instance type."
)
INTERNAL_ERROR = "InternalServerError: We encountered an internal error. Please try again."
CUDA_OOM = (
    'AlgorithmError: ExecuteUserScriptError:\nExitCode 1\nErrorMessage "torch.OutOfMemoryError: CUDA out of '
    'memory. Tried to allocate 1.22 GiB. GPU 0 has a total capacity of 79.1 GiB"\n'
    'Command "/opt/conda/bin/torchrun --nnodes {nodes} --nproc_per_node 8 train.py"'
)
HOST_OOM = (
    "ClientError: Please use an instance type with more memory, or reduce the size of job data processed "
    "on an instance."
)
RESOURCE_LIMIT = (
    "ResourceLimitExceeded: The account-level service limit '{instance_type} for training job usage' is "
    "{limit} Instances, with current utilization of {used} Instances and a request delta of {delta} "
    "Instances. Please use AWS Service Quotas to request an increase for this quota."
)
CROSS_SHARE = "Cross-share preemption triggered to reclaim borrowed capacity"
PREEMPTION_IN_PROGRESS = "PREEMPTION_IN_PROGRESS: "
# CHOSEN: AWS documents the cross-share text only.
IN_SHARE = "In-share preemption triggered by a higher priority job"
# CHOSEN: container jobs say this on timeout; service jobs' text is undocumented.
ATTEMPT_TIMEOUT = "Job attempt duration exceeded timeout"
# CHOSEN: the SageMaker side of a stop (StopTrainingJob, MaxRuntime) carries no FailureReason.
STOPPED = "Training job stopped"
MAX_RUNTIME = "Training job stopped: MaxRuntimeExceeded"
# https://docs.aws.amazon.com/batch/latest/userguide/sm_job_stuck_in_runnable_misconfiguration.html
SERVICE_ENVIRONMENT_MAX_CODE = "MISCONFIGURATION:SERVICE_ENVIRONMENT_MAX_RESOURCE"
SERVICE_ENVIRONMENT_MAX = (
    SERVICE_ENVIRONMENT_MAX_CODE
    + " - Service environment(s) associated with the job queue cannot meet the capacity requirement"
    " of the job."
)
QUOTA_LIMIT_CODE = "MISCONFIGURATION:QUOTA_MANAGEMENT_LIMIT_EXCEEDED"
# CHOSEN: the page gives this code and the terminated text but no stuck statusReason text; the
# suffix mirrors the service-environment one.
QUOTA_LIMIT = (
    QUOTA_LIMIT_CODE + " - Quota share capacity limits cannot meet the capacity requirement of the job."
)
# CHOSEN: SageMaker's text for a CreateTrainingJob request it rejects; the ValidationException code
# is documented (CreateTrainingJob errors), the wording after it is ours.
INVALID_PAYLOAD = "ValidationException: {detail}"
MAX_FAILURE_REASON = 1024


def sagemaker(reason: str) -> str:
    """A SageMaker FailureReason as Batch reports it on the service job."""
    return SAGEMAKER_PREFIX + reason


def truncate(reason: str) -> str:
    """SageMaker cuts FailureReason at 1024 characters."""
    return reason[:MAX_FAILURE_REASON]
