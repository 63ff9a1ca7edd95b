"""Names and ids out of ARNs (domain/jobs/arns.py)."""

from __future__ import annotations

import pytest
from shareplane.domain.jobs.arns import (
    account_of,
    arn_tail,
    job_id_of,
    queue_name,
    resource_name,
    training_job_key,
    training_job_name,
)
from shareplane.domain.jobs.lifecycle import JobState, JobStatus, correlates


@pytest.mark.parametrize(
    ("arn", "name"),
    [
        ("arn:aws:batch:us-east-1:123456789012:job-queue/gpu-queue", "gpu-queue"),
        ("arn:aws:sns:us-east-1:123456789012:shareplane-alerts", "shareplane-alerts"),
        ("arn:aws:sqs:us-east-1:123456789012:record-state-queue", "record-state-queue"),
        ("arn:aws:events:us-east-1:123456789012:rule/shareplane-reclaim-tick", "shareplane-reclaim-tick"),
        ("http://localhost:5000/123456789012/record-state-queue/", "record-state-queue"),
        ("shareplane-jobs", "shareplane-jobs"),
    ],
)
def test_a_resource_is_named_by_its_last_segment_whichever_separator(arn: str, name: str) -> None:
    assert resource_name(arn) == name


def test_a_job_id_and_a_queue_name_are_the_tail_and_a_bare_one_is_kept() -> None:
    arn = "arn:aws:batch:us-east-1:123456789012:service-job/4f6c-11"
    assert job_id_of(arn) == arn_tail(arn) == "4f6c-11" and job_id_of("4f6c-11") == "4f6c-11"
    assert queue_name("arn:aws:batch:us-east-1:123456789012:job-queue/gpu") == "gpu"
    assert queue_name(None) == queue_name("") == "unknown"
    # an IAM user's name is its ARN's tail, a path included before it
    assert arn_tail("arn:aws:iam::111122223333:user/eng/mallory") == "mallory"


def test_an_account_is_the_fifth_field_of_an_arn() -> None:
    assert account_of("arn:aws:iam::111122223333:role/ml-eng") == "111122223333"
    assert account_of("arn:aws:sts::444455556666:assumed-role/ml-eng/alice") == "444455556666"


BATCH_SPELLING = "arn:aws:sagemaker:us-east-1:123456789012:training-job/AWSBatchBert-FT0123abcd"
SAGEMAKER_SPELLING = BATCH_SPELLING.lower()


def test_a_batch_job_correlates_with_its_training_job_in_either_casing() -> None:
    # GIVEN a job whose attempts Batch names in the training job's own casing
    state = JobState(
        "arn:aws:batch:us-east-1:123456789012:service-job/j1",
        JobStatus.RUNNING,
        "0",
        latest_training_job_arn=BATCH_SPELLING,
        training_job_arns=(BATCH_SPELLING,),
    )
    # THEN the lower-cased ARN SageMaker returns names the same training job, and another does not
    assert correlates(state, SAGEMAKER_SPELLING) and correlates(state, BATCH_SPELLING)
    assert not correlates(state, SAGEMAKER_SPELLING.replace("0123", "9999"))
    assert training_job_key(BATCH_SPELLING) == training_job_key(SAGEMAKER_SPELLING)


@pytest.mark.parametrize(
    ("arn", "spellings", "name"),
    [
        (SAGEMAKER_SPELLING, [BATCH_SPELLING], "AWSBatchBert-FT0123abcd"),
        (BATCH_SPELLING, [], "AWSBatchBert-FT0123abcd"),
        (SAGEMAKER_SPELLING, [], "awsbatchbert-ft0123abcd"),
        (SAGEMAKER_SPELLING, [BATCH_SPELLING.replace("0123", "9999")], "awsbatchbert-ft0123abcd"),
    ],
    ids=[
        "a lower-cased ARN takes the name as Batch spells it",
        "Batch's spelling is the name",
        "with no other spelling, the tail is all there is",
        "another training job's spelling is not taken",
    ],
)
def test_the_host_dimension_uses_the_training_jobs_name_as_created(
    arn: str, spellings: list[str], name: str
) -> None:
    assert training_job_name(arn, spellings) == name
