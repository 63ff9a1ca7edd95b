"""Drop job specs in the local stack's bucket: the job reaches the emulator and `shareplane jobs`."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from shareplane_cli.main import app
from typer.testing import CliRunner

from tests.conftest import REPO

pytestmark = pytest.mark.local


def test_dropped_specs_are_submitted_or_rejected_beside_their_originals(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from shareplane_cli.local import LocalStack, StackSpec
    from shareplane_cli.local.runner import FunctionRunner
    from shareplane_cli.local.stack import LOCAL_CREDENTIALS, REGION

    good = (REPO / "config" / "jobs" / "prodexp1-bert.yaml").read_bytes()
    invalid = (REPO / "config" / "jobs" / "prodexp2-invalid.yaml").read_bytes()
    with LocalStack(StackSpec(REPO / "template.yaml")) as stack:
        s3, bucket = stack.client("s3"), stack.outputs["DropBucketName"]
        # GIVEN a good spec (three jobs) and an invalid one dropped the way teams drop them
        s3.put_object(Bucket=bucket, Key="submit/ProdExp1/ranker sweep.yaml", Body=good)
        s3.put_object(Bucket=bucket, Key="submit/ProdExp2/embed.yaml", Body=invalid)
        # WHEN the handlers run (S3 -> EventBridge -> SQS -> submit_job, then the emulator's events)
        runner = FunctionRunner(stack)
        runner.drain()
        assert stack.emulator is not None and stack.emulator.wait_for_events()
        runner.drain()
        submit_runs = [i for i in runner.invocations if i.function == "SubmitJobFunction"]
        assert sum(i.records for i in submit_runs) == 2 and sum(i.failed for i in submit_runs) == 0
        keys = {o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]}
        # THEN each file sits in its place with its answer, and nothing is left under submit/
        assert keys == {
            "accepted/ProdExp1/ranker sweep.yaml",
            "accepted/ProdExp1/ranker sweep.yaml.receipt.json",
            "rejected/ProdExp2/embed.yaml",
            "rejected/ProdExp2/embed.yaml.error.json",
        }
        body = s3.get_object(Bucket=bucket, Key="rejected/ProdExp2/embed.yaml")["Body"].read()
        assert body == invalid
        report = json.loads(
            s3.get_object(Bucket=bucket, Key="rejected/ProdExp2/embed.yaml.error.json")["Body"].read()
        )
        assert {p["path"] for p in report["problems"]} >= {
            "jobs[0].name",
            "jobs[0].role",
            "jobs[0].hyperparmeters",
        }
        receipt: dict[str, Any] = json.loads(
            s3.get_object(Bucket=bucket, Key="accepted/ProdExp1/ranker sweep.yaml.receipt.json")[
                "Body"
            ].read()
        )
        # AND the emulated Batch has the jobs, on the queues and share the receipt names
        batch = boto3.client(
            "batch",
            endpoint_url=stack.emulator.endpoint,
            region_name=REGION,
            aws_access_key_id=LOCAL_CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=LOCAL_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        )
        for job in receipt["jobs"]:
            described = batch.describe_service_job(jobId=job["jobId"])
            assert described["jobName"] == job["name"]
            assert described["jobQueue"].rsplit("/", 1)[-1] == job["queue"].rsplit("/", 1)[-1]
        # AND `shareplane jobs` lists them, recorded from SUBMITTED on
        for key, value in LOCAL_CREDENTIALS.items():
            monkeypatch.setenv(key, value)
        monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
        result = CliRunner().invoke(
            app,
            [
                "jobs",
                "--endpoint",
                stack.endpoint or "",
                "--table",
                stack.outputs["JobsTableName"],
                "--output",
                "json",
            ],
        )
        assert result.exit_code == 0, result.output
        records = {r["jobName"]: r for r in json.loads(result.stdout)}
        for job in receipt["jobs"]:
            assert records[job["name"]]["history"][0]["status"] == "SUBMITTED"
