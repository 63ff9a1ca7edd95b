"""The IAM evaluation the local IAM test relies on, and the authorizations the runner derives from calls."""

from __future__ import annotations

import json
from typing import Any

import pytest
from shareplane_cli.local.aws_calls import EXTRA_PERMISSIONS, Authorization, Location, authorizations

from tests.iam_policy import evaluate, globs_overlap, statement_problems, unused_grants

HERE = Location(
    "us-east-1", "123456789012", topic_key=lambda topic: "arn:aws:kms:us-east-1:123456789012:key/k1"
)
QUEUE = "arn:aws:batch:us-east-1:123456789012:job-queue/gpu"
JOB = "arn:aws:batch:us-east-1:123456789012:service-job/j-1"
TEAM_ROLE = "arn:aws:iam::123456789012:role/team-training"


def allow(
    sid: str, action: str | list[str], resource: Any, condition: dict[str, Any] | None = None
) -> dict[str, Any]:
    statement = {"Sid": sid, "Effect": "Allow", "Action": action, "Resource": resource}
    return statement | ({"Condition": condition} if condition else {})


def submit_call(**extra: Any) -> list[Authorization]:
    params = {
        "jobQueue": "gpu",
        "jobName": "bert",
        "serviceJobType": "SAGEMAKER_TRAINING",
        "serviceRequestPayload": json.dumps({"RoleArn": TEAM_ROLE, "TrainingJobName": "bert"}),
        **extra,
    }
    return authorizations(HERE, "batch", "SubmitServiceJob", params, {"jobArn": JOB, "jobId": "j-1"})


def test_submit_service_job_is_authorized_on_the_queue_the_new_job_and_passes_the_payload_role() -> None:
    found = submit_call(tags={"team": "a"}, quotaShareName="teamA")
    assert {(a.action, a.resource) for a in found} == {
        ("batch:SubmitServiceJob", QUEUE),
        ("batch:SubmitServiceJob", JOB),
        ("batch:SubmitServiceJob", f"{QUEUE}/quota-share/teamA"),
        ("batch:TagResource", JOB),
        ("iam:PassRole", TEAM_ROLE),
    }
    passed = next(a for a in found if a.action == "iam:PassRole")
    assert passed.conditions == {"iam:PassedToService": "sagemaker.amazonaws.com"}
    assert passed.extra in EXTRA_PERMISSIONS and "docs.aws.amazon.com" in EXTRA_PERMISSIONS[passed.extra]


def test_a_role_without_pass_role_for_sagemaker_refuses_the_submit() -> None:
    statements = [
        allow(
            "Submit", "batch:SubmitServiceJob", [QUEUE, "arn:aws:batch:us-east-1:123456789012:service-job/*"]
        ),
        allow("Tag", "batch:TagResource", "arn:aws:batch:us-east-1:123456789012:service-job/*"),
        # passing to the wrong service does not count
        allow(
            "Pass",
            "iam:PassRole",
            TEAM_ROLE,
            {"StringEquals": {"iam:PassedToService": "scheduler.amazonaws.com"}},
        ),
    ]
    decisions = {a.action: evaluate(a, statements) for a in submit_call()}
    assert decisions["batch:SubmitServiceJob"].allowed
    assert not decisions["iam:PassRole"].allowed
    statements[-1] = allow(
        "Pass",
        "iam:PassRole",
        TEAM_ROLE,
        {"StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}},
    )
    assert all(evaluate(a, statements).allowed for a in submit_call())


def test_a_submit_allowed_only_on_the_queue_is_refused_for_the_job_and_the_quota_share() -> None:
    statements = [allow("QueueOnly", "batch:SubmitServiceJob", QUEUE)]
    refused = [
        a.resource for a in submit_call(quotaShareName="teamA") if a.action == "batch:SubmitServiceJob"
    ]
    refused = [
        r for r in refused if not evaluate(Authorization("batch:SubmitServiceJob", r), statements).allowed
    ]
    assert refused == [JOB, f"{QUEUE}/quota-share/teamA"]


def test_describe_service_job_has_no_resource_level_permissions() -> None:
    request = authorizations(HERE, "batch", "DescribeServiceJob", {"jobId": "j-1"}, {})[0]
    on_jobs = [
        allow("OnJobs", "batch:DescribeServiceJob", "arn:aws:batch:us-east-1:123456789012:service-job/*")
    ]
    decision = evaluate(request, on_jobs)
    assert not decision.allowed and decision.resource == "*"
    assert evaluate(request, [allow("Any", "batch:DescribeServiceJob", "*")]).allowed
    assert "no resource-level permissions" in statement_problems(on_jobs)[0]


def test_terminate_service_job_granted_on_a_queue_is_a_statement_that_can_never_match() -> None:
    problems = statement_problems([allow("Terminate", "batch:TerminateServiceJob", [JOB, QUEUE])])
    assert len(problems) == 1 and QUEUE in problems[0] and "service-job" in problems[0]


def test_training_job_names_match_case_sensitively() -> None:
    request = authorizations(
        HERE, "sagemaker", "DescribeTrainingJob", {"TrainingJobName": "AWSBatchbert0123abcd"}, {}
    )[0]
    lower = allow(
        "Lower",
        "sagemaker:DescribeTrainingJob",
        "arn:aws:sagemaker:us-east-1:123456789012:training-job/awsbatch*",
    )
    upper = allow(
        "Upper",
        "sagemaker:DescribeTrainingJob",
        "arn:aws:sagemaker:us-east-1:123456789012:training-job/AWSBatch*",
    )
    assert not evaluate(request, [lower]).allowed
    assert evaluate(request, [upper]).allowed


def test_an_explicit_deny_wins_and_an_unknown_action_is_refused_and_reported() -> None:
    request = Authorization("sns:Publish", "arn:aws:sns:us-east-1:123456789012:alerts")
    both = [
        allow("Publish", "sns:Publish", "*"),
        {"Sid": "No", "Effect": "Deny", "Action": "sns:*", "Resource": "*"},
    ]
    assert not evaluate(request, both).allowed
    assert not evaluate(
        Authorization("batch:NoSuchCall", "*"), [allow("All", "batch:NoSuchCall", "*")]
    ).allowed
    assert statement_problems([allow("Bogus", "batch:NoSuchCall", "*")]) == [
        "Bogus: batch:NoSuchCall is not an action of the IAM reference"
    ]


@pytest.mark.parametrize(
    ("operation", "params", "expected"),
    [
        (
            "HeadObject",
            {"Bucket": "b", "Key": "submit/t/x.yaml", "VersionId": "v1"},
            {("s3:GetObjectVersion", "arn:aws:s3:::b/submit/t/x.yaml"), ("s3:ListBucket", "arn:aws:s3:::b")},
        ),
        (
            "CopyObject",
            {
                "Bucket": "b",
                "Key": "accepted/x",
                "CopySource": {"Bucket": "b", "Key": "submit/x", "VersionId": "v"},
            },
            {
                ("s3:GetObjectVersion", "arn:aws:s3:::b/submit/x"),
                ("s3:PutObject", "arn:aws:s3:::b/accepted/x"),
            },
        ),
        (
            "DeleteObject",
            {"Bucket": "b", "Key": "submit/x"},
            {("s3:DeleteObject", "arn:aws:s3:::b/submit/x")},
        ),
        (
            "ListObjectsV2",
            {"Bucket": "ckpt", "Prefix": "team/job/"},
            {("s3:ListBucket", "arn:aws:s3:::ckpt")},
        ),
    ],
)
def test_s3_calls_map_to_the_actions_s3_authorizes(
    operation: str, params: dict[str, Any], expected: set[tuple[str, str]]
) -> None:
    assert {(a.action, a.resource) for a in authorizations(HERE, "s3", operation, params, {})} == expected


def test_a_transaction_is_authorized_item_by_item_and_a_publish_uses_the_topic_key() -> None:
    items = [
        {"Put": {"TableName": "jobs"}},
        {"ConditionCheck": {"TableName": "jobs"}},
        {"Delete": {"TableName": "jobs"}},
    ]
    found = authorizations(HERE, "dynamodb", "TransactWriteItems", {"TransactItems": items}, {})
    assert [a.action for a in found] == [
        "dynamodb:PutItem",
        "dynamodb:ConditionCheckItem",
        "dynamodb:DeleteItem",
    ]
    publish = authorizations(
        HERE, "sns", "Publish", {"TopicArn": "arn:aws:sns:us-east-1:123456789012:alerts"}, {}
    )
    assert [a.action for a in publish] == ["sns:Publish", "kms:GenerateDataKey", "kms:Decrypt"]


def test_a_schedule_passes_its_target_role_to_the_scheduler() -> None:
    params = {
        "Name": "shareplane-rq-1",
        "Target": {
            "Arn": "arn:aws:sqs:us-east-1:123456789012:q",
            "RoleArn": "arn:aws:iam::123456789012:role/s",
        },
    }
    found = authorizations(HERE, "scheduler", "CreateSchedule", params, {})
    assert [(a.action, a.resource) for a in found] == [
        (
            "scheduler:CreateSchedule",
            "arn:aws:scheduler:us-east-1:123456789012:schedule/default/shareplane-rq-1",
        ),
        ("iam:PassRole", "arn:aws:iam::123456789012:role/s"),
    ]
    assert found[1].conditions == {"iam:PassedToService": "scheduler.amazonaws.com"}


def test_conditions_on_prefixes_are_evaluated() -> None:
    statement = allow(
        "List", "s3:ListBucket", "arn:aws:s3:::ckpt", {"StringLike": {"s3:prefix": ["teamA/*"]}}
    )
    inside = authorizations(HERE, "s3", "ListObjectsV2", {"Bucket": "ckpt", "Prefix": "teamA/job/"}, {})[0]
    outside = authorizations(HERE, "s3", "ListObjectsV2", {"Bucket": "ckpt", "Prefix": "teamB/job/"}, {})[0]
    assert evaluate(inside, [statement]).allowed and not evaluate(outside, [statement]).allowed


def test_unused_grants_name_the_actions_no_request_was_allowed_by() -> None:
    statements = [
        allow(
            "Read",
            ["dynamodb:GetItem", "dynamodb:Query"],
            "arn:aws:dynamodb:us-east-1:123456789012:table/jobs",
        )
    ]
    request = Authorization("dynamodb:GetItem", "arn:aws:dynamodb:us-east-1:123456789012:table/jobs")
    assert unused_grants(statements, [(request, evaluate(request, statements))]) == ["Read: dynamodb:Query"]


@pytest.mark.parametrize(
    ("first", "second", "overlap"),
    [
        ("arn:aws:logs:r:a:log-group:g:*", "arn:*:logs:*:*:log-group:*:log-stream:*", True),
        ("arn:aws:batch:r:a:job-queue/q", "arn:*:batch:*:*:service-job/*", False),
        ("arn:aws:batch:r:a:job-queue/q/quota-share/*", "arn:*:batch:*:*:job-queue/*/quota-share/*", True),
    ],
)
def test_a_resource_pattern_names_a_type_when_some_arn_matches_both(
    first: str, second: str, overlap: bool
) -> None:
    assert globs_overlap(first, second) is overlap


def test_star_is_a_problem_only_for_actions_that_support_resource_level_permissions() -> None:
    problems = statement_problems(
        [
            allow("List", "batch:ListServiceJobs", "*"),  # no resource types: "*" is the only choice
            allow("Snapshot", "batch:GetJobQueueSnapshot", "*"),  # authorized on the job queue
        ]
    )
    assert len(problems) == 1 and problems[0].startswith("Snapshot: batch:GetJobQueueSnapshot on")
