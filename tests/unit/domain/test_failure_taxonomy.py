"""The failure taxonomy against SageMaker's FailureReason formats, whole and cut at 1024 characters.

SageMaker documents the format, not a catalogue: ``FailureReason`` is ``<ErrorType>: <message>``, at most
1024 characters (https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_DescribeTrainingJob.html);
an AlgorithmError carries the container's failure file, first 1024 characters
(https://docs.aws.amazon.com/sagemaker/latest/dg/your-algorithms-training-algo-output.html); a
CapacityError is requeued by Batch (https://docs.aws.amazon.com/batch/latest/userguide/
sm_job_stuck_in_runnable_capacity.html); Batch forwards the text as ``Received status from SageMaker:
<text>`` (https://docs.aws.amazon.com/batch/latest/userguide/service-job-retries.html). The message
texts below are built on those formats with the causes SageMaker reports (constructed samples).
"""

from __future__ import annotations

import pytest
from shareplane.domain.config.failure_rules import DEFAULT_CLASS_POLICIES, DEFAULT_RULES
from shareplane.domain.failures.decision import Action, FailureClass, FailureSignal, classify, decide

from tests.unit.domain.test_failures import CONFIG, algorithm_error, ctx, sm

LIMIT = 1024
LONG_KEY = "s3://team-data/corpora/" + "shard-000123/" * 90 + "part-00000.parquet"


def cut(text: str) -> str:
    """``text`` as SageMaker stores it: at most 1024 characters."""
    return text[:LIMIT]


WHOLE = [
    (
        "ClientError: Data download failed:Failed to download data. NoSuchKey (404): The specified key does not "
        "exist.",
        FailureClass.DATA_NOT_FOUND,
    ),
    (
        "ClientError: Data download failed:Failed to download data. For FastFile mode, partial S3 prefix is not "
        "supported. S3 prefix has to end with a full file or folder.",
        FailureClass.DATA_NOT_FOUND,
    ),
    (
        "ClientError: Data download failed:Unable to download object s3://team-data/x.csv "
        "(AccessDenied: Access Denied)",
        FailureClass.S3_ACCESS_DENIED,
    ),
    (
        "ClientError: Data download failed:failed to download data. 403 Forbidden (403): Forbidden",
        FailureClass.S3_ACCESS_DENIED,
    ),
    ("ClientError: Artifact upload failed:Error 1: Access Denied", FailureClass.S3_ACCESS_DENIED),
    (
        "ClientError: Data download failed:KMS.AccessDeniedException: The ciphertext refers to a customer master "
        "key that does not exist, does not exist in this region, or you are not allowed to access.",
        FailureClass.KMS_ACCESS_DENIED,
    ),
    (
        "ClientError: Unable to create the training volume: the role is not authorized to perform: "
        "kms:CreateGrant on the KMS key arn:aws:kms:us-east-1:111122223333:key/1234",
        FailureClass.KMS_ACCESS_DENIED,
    ),
    (
        "ClientError: Cannot pull algorithm container. Either the image does not exist or its permissions are "
        "incorrect.",
        FailureClass.IMAGE_PULL,
    ),
    (
        "ValidationException: Access denied for repository: trainer in registry ID: 111122223333. Please check "
        "if your ECR repository and image exist and role arn:aws:iam::111122223333:role/r has proper pull "
        "permissions for SageMaker: ecr:BatchCheckLayerAvailability, ecr:BatchGetImage, "
        "ecr:GetDownloadUrlForLayer",
        FailureClass.IMAGE_PULL,
    ),
    (
        "ClientError: Data download failed:Please ensure that the subnet's route table has a route to an S3 VPC "
        "endpoint or a NAT device, and both the security groups and the subnet's network ACL allow outbound "
        "traffic to S3.",
        FailureClass.VPC_CONFIG,
    ),
    (
        "ClientError: Insufficient free IP addresses in subnet subnet-0abc to create the network interfaces "
        "of 16 instances.",
        FailureClass.SUBNET_IPS_EXHAUSTED,
    ),
    (
        "ValidationException: Could not assume role arn:aws:iam::111122223333:role/r. Please ensure that the "
        "role exists and allows principal 'sagemaker.amazonaws.com' to assume the role.",
        FailureClass.ROLE_NOT_ASSUMABLE,
    ),
    ("ClientError: Please ensure the training input channel 'train' is valid.", FailureClass.CLIENT_ERROR),
    (algorithm_error("OSError: [Errno 28] No space left on device"), FailureClass.DISK_FULL),
    (
        algorithm_error(
            "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, remote process "
            "exited or there was a network error, NCCL version 2.21.5 ncclRemoteError"
        ),
        FailureClass.DISTRIBUTED_COMM,
    ),
    (algorithm_error("KeyError: 'subnet'"), FailureClass.USER_CODE_ERROR),
    (algorithm_error("AccessDenied: my own check failed"), FailureClass.USER_CODE_ERROR),
    (
        algorithm_error("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.22 GiB"),
        FailureClass.GPU_OOM,
    ),
    (algorithm_error("Killed", exit_code=137), FailureClass.HOST_OOM),
    (
        "ResourceLimitExceeded: The account-level service limit 'ml.p5.48xlarge for training job usage' is 10 "
        "Instances, with current utilization of 8 Instances and a request delta of 4 Instances.",
        FailureClass.ACCOUNT_QUOTA,
    ),
    (
        "CapacityError: Unable to provision requested ML compute capacity. Please retry using a different ML "
        "instance type.",
        FailureClass.CAPACITY,
    ),
    ("InternalServerError: We encountered an internal error. Please try again.", FailureClass.INTERNAL_ERROR),
]
# Batch's own texts (statusReason only): sm_job_stuck_in_runnable_misconfiguration.html and
# sm_job_stuck_in_runnable_capacity.html give the terminated texts word for word.
BATCH_ENDED = [
    (
        "Terminated by JobStateTimeLimit action due to reason: MISCONFIGURATION:SERVICE_ENVIRONMENT_MAX_RESOURCE",
        FailureClass.MISCONFIGURATION,
    ),
    (
        "Terminated by JobStateTimeLimit action due to reason: MISCONFIGURATION:QUOTA_MANAGEMENT_LIMIT_EXCEEDED",
        FailureClass.MISCONFIGURATION,
    ),
    (
        "Terminated by JobStateTimeLimit action due to reason: CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY",
        FailureClass.CAPACITY,
    ),
]


@pytest.mark.parametrize(
    ("reason", "expected"),
    BATCH_ENDED,
    ids=[
        "a job no service environment can hold, ended by the time limit, is a misconfiguration",
        "a job beyond its quota share, ended by the time limit, is a misconfiguration",
        "a job ended while waiting for capacity is capacity",
    ],
)
def test_batch_time_limit_terminations_keep_their_reason(reason: str, expected: FailureClass) -> None:
    signal = FailureSignal(status_reason=reason, was_terminated=True)
    found = classify(signal, DEFAULT_RULES)
    assert (found.failure_class, found.final) == (expected, True)
    decision = decide(ctx(signal), CONFIG)
    assert decision.action is Action.ALERT and decision.fix == DEFAULT_CLASS_POLICIES[expected].fix


WHOLE_IDS = [
    "a missing S3 key is data not found",
    "a FastFile partial prefix is data not found",
    "AccessDenied on the input object is S3 access denied",
    "a 403 on the input is S3 access denied",
    "AccessDenied on the artifact upload is S3 access denied",
    "a KMS denial inside a data download is KMS, not S3 or not found",
    "kms:CreateGrant for the volume is KMS",
    "an image SageMaker cannot pull is an image pull failure",
    "CreateTrainingJob's ECR repository denial is an image pull failure",
    "no route to S3 from the subnets is VPC configuration",
    "no free IP addresses for the network interfaces is subnet exhaustion",
    "a role SageMaker cannot assume is its own class",
    "another ClientError is a client error",
    "a full disk inside an AlgorithmError is disk full",
    "an NCCL error inside an AlgorithmError is a distributed communication failure",
    "the word subnet in a training traceback stays user code",
    "the word AccessDenied in a training traceback stays user code",
    "a CUDA OOM inside an AlgorithmError is a GPU OOM",
    "exit code 137 is a host OOM",
    "ResourceLimitExceeded is the account quota",
    "CapacityError is capacity",
    "InternalServerError is an internal error",
]


@pytest.mark.parametrize(("reason", "expected"), WHOLE, ids=WHOLE_IDS)
@pytest.mark.parametrize("where", ["failure_reason", "batch", "batch-no-space"])
def test_each_documented_format_has_its_class(reason: str, expected: FailureClass, where: str) -> None:
    signal = {
        "failure_reason": FailureSignal(failure_reason=reason),
        "batch": FailureSignal(status_reason=sm(reason)),
        "batch-no-space": FailureSignal(status_reason=sm(reason, space=False)),
    }[where]
    assert classify(signal, DEFAULT_RULES).failure_class is expected


CUT = [
    (
        f"ClientError: Data download failed:Unable to download object {LONG_KEY} (AccessDenied: Access Denied)",
        FailureClass.DATA_DOWNLOAD_FAILED,
    ),
    (
        f"ClientError: Data download failed:Failed to download data from {LONG_KEY}. NoSuchKey (404)",
        FailureClass.DATA_DOWNLOAD_FAILED,
    ),
    (
        f"ClientError: Unable to mount {LONG_KEY}: Please ensure the subnet has a route",
        FailureClass.CLIENT_ERROR,
    ),
    (
        algorithm_error(
            "Traceback (most recent call last):\n" + '  File "train.py", line 1\n' * 60 + "ENOSPC"
        ),
        FailureClass.USER_CODE_ERROR,
    ),
    (
        algorithm_error("Traceback:\n" + "  at step\n" * 110 + "torch.OutOfMemoryError: CUDA out of memory"),
        FailureClass.USER_CODE_ERROR,
    ),
]
CUT_IDS = [
    "a download failure cut before its AccessDenied cause is a data download failure",
    "a download failure cut before NoSuchKey is a data download failure",
    "a ClientError cut before its VPC cause is a client error",
    "an AlgorithmError cut before ENOSPC is user code",
    "an AlgorithmError cut before its CUDA OOM is user code",
]


@pytest.mark.parametrize(("reason", "expected"), CUT, ids=CUT_IDS)
def test_a_reason_cut_at_1024_characters_keeps_the_class_its_visible_part_shows(
    reason: str, expected: FailureClass
) -> None:
    truncated = cut(reason)
    assert len(reason) > LIMIT and len(truncated) == LIMIT
    assert classify(FailureSignal(failure_reason=truncated), DEFAULT_RULES).failure_class is expected
    # the whole text names its cause, so the cut really lost it
    assert classify(FailureSignal(failure_reason=reason), DEFAULT_RULES).failure_class is not expected


RETRIED = {
    FailureClass.SUBNET_IPS_EXHAUSTED,
    FailureClass.DATA_DOWNLOAD_FAILED,
    FailureClass.DISTRIBUTED_COMM,
}
NOT_RETRIED = {
    FailureClass.DATA_NOT_FOUND,
    FailureClass.S3_ACCESS_DENIED,
    FailureClass.KMS_ACCESS_DENIED,
    FailureClass.IMAGE_PULL,
    FailureClass.VPC_CONFIG,
    FailureClass.ROLE_NOT_ASSUMABLE,
    FailureClass.CLIENT_ERROR,
    FailureClass.DISK_FULL,
}


@pytest.mark.parametrize(("reason", "expected"), WHOLE + CUT, ids=WHOLE_IDS + CUT_IDS)
def test_each_class_has_a_retry_decision_and_a_fix(reason: str, expected: FailureClass) -> None:
    decision = decide(ctx(FailureSignal(failure_reason=cut(reason))), CONFIG)
    policy = DEFAULT_CLASS_POLICIES[expected]
    assert decision.failure_class is expected
    assert decision.fix == policy.fix and len(policy.fix) > 20
    if expected in RETRIED:
        assert (decision.action, decision.attempt) == (Action.REQUEUE, 1)
    elif expected in NOT_RETRIED:
        assert decision.action is Action.ALERT and decision.delay_seconds == 0


def test_configuration_errors_are_not_retried_and_transient_ones_spend_the_budget() -> None:
    for cls in NOT_RETRIED:
        assert not DEFAULT_CLASS_POLICIES[cls].retry, cls
    for cls in RETRIED:
        policy = DEFAULT_CLASS_POLICIES[cls]
        assert policy.retry and policy.uses_budget, cls
