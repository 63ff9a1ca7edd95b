"""Requeue requests and alert texts, pure."""

from __future__ import annotations

import copy
import json
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st
from shareplane.domain.alerts.alert import SUBJECT_MAX_CHARS, logs_link, subject_line
from shareplane.domain.errors import InvalidInputError
from shareplane.domain.failures.requeue import (
    ChainState,
    apply_mutations,
    build_requeue,
    client_token,
    requeue_job_name,
)
from shareplane.domain.jobs.described_job import DescribedJob

PAYLOAD = {
    "ResourceConfig": {"InstanceType": "ml.g5.xlarge"},
    "CheckpointConfig": {"S3Uri": "s3://b/c/"},
    "StoppingCondition": {"MaxRuntimeInSeconds": 10, "MaxWaitTimeInSeconds": 20},
}


@pytest.mark.parametrize(
    ("mutations", "expected"),
    [
        (
            {"ResourceConfig.InstanceType": "ml.g5.2xlarge"},
            {**PAYLOAD, "ResourceConfig": {"InstanceType": "ml.g5.2xlarge"}},
        ),
        (
            {"StoppingCondition.MaxWaitTimeInSeconds": None},
            {**PAYLOAD, "StoppingCondition": {"MaxRuntimeInSeconds": 10}},
        ),
        ({"EnableManagedSpotTraining": False}, {**PAYLOAD, "EnableManagedSpotTraining": False}),
        ({"Missing.Key": None}, PAYLOAD),
        ({"New.Nested": 1}, {**PAYLOAD, "New": {"Nested": 1}}),
    ],
    ids=[
        "a value replaces",
        "None removes",
        "a top-level flag is set",
        "removing what is absent is a no-op",
        "setting a path creates it",
    ],
)
def test_mutations_apply_by_dotted_path(mutations: dict, expected: dict) -> None:
    before = copy.deepcopy(PAYLOAD)
    assert apply_mutations(PAYLOAD, mutations) == expected
    assert PAYLOAD == before  # the input is never modified


@given(job=st.text(min_size=1, max_size=80), attempt=st.text(max_size=20))
def test_client_tokens_are_stable_and_fit_batch(job: str, attempt: str) -> None:
    token = client_token(job, attempt)
    assert token == client_token(job, attempt) and 1 <= len(token) <= 64
    assert token != client_token(job, attempt + "x")


def test_a_requeue_keeps_everything_but_name_tags_token_and_mutations() -> None:
    described = DescribedJob(
        job_arn="arn:aws:batch:us-east-1:123456789012:service-job/j1",
        job_id="j1",
        status="FAILED",
        job_name="bert-rq2",
        job_queue="arn:q",
        scheduling_priority=55,
        share_identifier="ProdExp1",
        payload=json.dumps(PAYLOAD),
        carried={"retryStrategy": {"attempts": 2}},
        tags={"team": "a", "shareplane:failures": "9"},
    )
    request = build_requeue(described, attempt="1.0", mutations={}, chain=ChainState("j0", 2, 3, 0))
    assert request.payload == PAYLOAD and request.request.job_name == "bert-rq3"
    assert request.request.scheduling_priority == 55 and request.request.share_identifier == "ProdExp1"
    assert request.request.tags == {
        "team": "a",
        "shareplane:origin-job": "j0",
        "shareplane:failures": "2",
        "shareplane:requeues": "3",
        "shareplane:spot-interruptions": "0",
        "shareplane:submission": request.client_token,  # a retry finds its job by it
    }
    with pytest.raises(InvalidInputError, match="serviceRequestPayload"):
        build_requeue(replace(described, payload=None), attempt="1", mutations={}, chain=ChainState())


def test_job_names_stay_within_batch_limits() -> None:
    assert len(requeue_job_name("x" * 128, 12)) == 128 and requeue_job_name("x" * 128, 12).endswith("-rq12")


@given(parts=st.lists(st.text(), max_size=6))
def test_subjects_are_one_ascii_line_of_at_most_100_characters(parts: list[str]) -> None:
    subject = subject_line(*parts)
    assert 0 < len(subject) <= SUBJECT_MAX_CHARS and subject.isascii() and "\n" not in subject


def test_the_logs_link_filters_the_training_jobs_log_group_by_name() -> None:
    assert logs_link("eu-west-1", "AWSBatchbert123") == (
        "https://console.aws.amazon.com/cloudwatch/home?region=eu-west-1#logsV2:log-groups/log-group/"
        "$252Faws$252Fsagemaker$252FTrainingJobs$3FlogStreamNameFilter$3DAWSBatchbert123"
    )
    assert logs_link("eu-west-1", None) is None
