"""A drop's jobs end up with the principal that uploaded it, from the local stack's CloudTrail events.

The local stack serves CloudTrail's data event of every write the template's trail selects (the drop
bucket's submit/ prefix) with the caller as STS GetCallerIdentity names it, and S3's Object Created
event with the same request id. Both orders are driven: submit_job first (as on AWS, where
CloudTrail's event lags by minutes), and record_uploader first.
"""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
import yaml
from shareplane_cli.main import app
from typer.testing import CliRunner

from tests.conftest import REPO
from tests.local.test_failures_local import drain_queue, subscribe_to_alerts
from tests.local.test_submit_local import _job

pytestmark = [pytest.mark.local, pytest.mark.xdist_group("stack-2")]

SUBMITTER_ROLE = "arn:aws:iam::111122223333:role/prodexp1-ml-engineers"


def _jobs_json(stack: Any, monkeypatch: pytest.MonkeyPatch) -> dict[str, dict[str, Any]]:
    from shareplane_cli.local.stack import LOCAL_CREDENTIALS, REGION

    for key, value in LOCAL_CREDENTIALS.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    result = CliRunner().invoke(
        app,
        ["jobs", "--endpoint", stack.endpoint, "--table", stack.outputs["JobsTableName"], "--output", "json"],
    )
    assert result.exit_code == 0, result.output
    return {r["jobName"]: r for r in json.loads(result.stdout)}


@pytest.mark.parametrize("first", ["SubmitJobFunction", "RecordUploaderFunction"])
def test_a_drops_jobs_carry_the_principal_that_uploaded_it(
    first: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from shareplane_cli.local import LocalStack, StackSpec
    from shareplane_cli.local.runner import FunctionRunner

    good = (REPO / "config" / "jobs" / "prodexp1-bert.yaml").read_bytes()
    with LocalStack(StackSpec(REPO / "template.yaml")) as stack:
        inbox = subscribe_to_alerts(stack)
        bucket = stack.outputs["DropBucketName"]
        # GIVEN one of ProdExp1's submitters (its role, assumed as alice) drops a spec for ProdExp1
        credentials = stack.client("sts").assume_role(RoleArn=SUBMITTER_ROLE, RoleSessionName="alice")[
            "Credentials"
        ]
        alice = boto3.client(
            "s3",
            endpoint_url=stack.endpoint,
            region_name="us-east-1",
            aws_access_key_id=credentials["AccessKeyId"],
            aws_secret_access_key=credentials["SecretAccessKey"],
            aws_session_token=credentials["SessionToken"],
        )
        alice.put_object(Bucket=bucket, Key="submit/ProdExp1/sweep.yaml", Body=good)
        # AND the stack's own identity, not one of ProdExp2's submitters, drops one for ProdExp2
        # (the bucket policy would refuse it on AWS; moto enforces no bucket policy)
        other = yaml.safe_dump([_job("ProdExp2", "embed-by-owner")]).encode()
        stack.client("s3").put_object(Bucket=bucket, Key="submit/ProdExp2/embed.yaml", Body=other)
        # WHEN one handler takes every event of its queue before the other runs at all
        runner = FunctionRunner(stack)
        leader = next(f for f in stack.functions if f.logical_id == first)
        while runner.poll_once(leader):
            pass
        assert {i.function for i in runner.invocations} == {first}
        runner.drain()
        uploader_runs = [i for i in runner.invocations if i.function == "RecordUploaderFunction"]
        submit_runs = [i for i in runner.invocations if i.function == "SubmitJobFunction"]
        assert sum(i.records for i in uploader_runs) == 2 and sum(i.failed for i in uploader_runs) == 0
        assert sum(i.records for i in submit_runs) == 2 and sum(i.failed for i in submit_runs) == 0
        records = _jobs_json(stack, monkeypatch)
        alerts = drain_queue(stack.client("sqs"), inbox)
    # THEN every job of alice's drop carries her session's ARN, checked against ProdExp1's submitters
    alices = [r for name, r in records.items() if name != "embed-by-owner"]
    others = [records["embed-by-owner"]]
    assert len(alices) == 3
    for record in alices:
        principal = record["uploader"]["principal"]
        assert principal["arn"] == "arn:aws:sts::111122223333:assumed-role/prodexp1-ml-engineers/alice"
        assert principal["sessionIssuerArn"] == SUBMITTER_ROLE
        assert principal["check"] == "submitter"
        assert record["uploader"]["account"] == "111122223333"
    # AND the other drop's jobs carry the local identity, marked as no submitter of ProdExp2
    for record in others:
        principal = record["uploader"]["principal"]
        assert principal["arn"] == "arn:aws:sts::123456789012:user/moto"
        assert principal["check"] == "not_a_submitter"
    # AND ProdExp2 got exactly one alert about it; ProdExp1 none
    foreign = [a for a in alerts if a.get("kind") == "uploader_not_submitter"]
    assert [(a["team"], a["message"]["principal"]) for a in foreign] == [
        ("ProdExp2", "arn:aws:sts::123456789012:user/moto")
    ]


def test_without_the_trail_no_principal_is_recorded_and_the_job_keeps_its_account(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from shareplane_cli.local import LocalStack, StackSpec
    from shareplane_cli.local.runner import FunctionRunner

    spec = StackSpec(REPO / "template.yaml", parameters={"RecordUploaders": "false"})
    with LocalStack(spec) as stack:
        # GIVEN a stack deployed with RecordUploaders=false: no trail logs the drop bucket
        assert stack.trails.selectors == []
        body = yaml.safe_dump([_job("ProdExp2", "embed-untrailed")]).encode()
        stack.client("s3").put_object(
            Bucket=stack.outputs["DropBucketName"], Key="submit/ProdExp2/e.yaml", Body=body
        )
        # WHEN the handlers run
        runner = FunctionRunner(stack)
        runner.drain()
        assert not [i for i in runner.invocations if i.function == "RecordUploaderFunction"]
        record = _jobs_json(stack, monkeypatch)["embed-untrailed"]
    # THEN the job keeps the account S3 named and its request id, and no principal
    assert record["uploader"]["account"] == "123456789012" and record["uploader"]["requestId"]
    assert "principal" not in record["uploader"]
