"""Drop job specs in the local stack's bucket: the job reaches the emulator and `shareplane jobs`."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
import yaml
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from shareplane_cli.main import app
from typer.testing import CliRunner

from tests.conftest import REPO
from tests.properties import examples

pytestmark = [pytest.mark.local, pytest.mark.xdist_group("stack-2")]


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
        good_version = s3.put_object(Bucket=bucket, Key="submit/ProdExp1/ranker sweep.yaml", Body=good)[
            "VersionId"
        ]
        bad_version = s3.put_object(Bucket=bucket, Key="submit/ProdExp2/embed.yaml", Body=invalid)[
            "VersionId"
        ]
        receipt_key = f"answers/ProdExp1/ranker sweep.yaml/{good_version}.json"
        report_key = f"answers/ProdExp2/embed.yaml/{bad_version}.json"
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
            receipt_key,
            "rejected/ProdExp2/embed.yaml",
            report_key,
        }
        body = s3.get_object(Bucket=bucket, Key="rejected/ProdExp2/embed.yaml")["Body"].read()
        assert body == invalid
        report = json.loads(s3.get_object(Bucket=bucket, Key=report_key)["Body"].read())
        assert {p["path"] for p in report["problems"]} >= {
            "jobs[0].name",
            "jobs[0].role",
            "jobs[0].hyperparmeters",
        }
        receipt: dict[str, Any] = json.loads(s3.get_object(Bucket=bucket, Key=receipt_key)["Body"].read())
        # AND the receipt gives each GPU job its first predicted start, forecast at submission on the
        # live twin (the emulated Batch's queue, the table's jobs); the CPU FIFO job has none
        gpu_jobs = [j for j in receipt["jobs"] if "cpu-fifo" not in j["queue"]]
        assert len(gpu_jobs) == 2 and "submit_job" in receipt["prediction"]["predictedBy"]
        for job in gpu_jobs:
            prediction = job["prediction"]
            assert prediction["samples"] == 100 and prediction["startedFraction"] > 0
            assert prediction["predictedAt"] <= prediction["startP10"] <= prediction["startP50"]
            assert prediction["startP50"] <= prediction["startP90"]
        assert [j["prediction"] for j in receipt["jobs"] if j not in gpu_jobs] == [None]
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


# -- a fuzz of the drop path: every drop ends in accepted/ or rejected/ with its answer, its team told ---

TEAMS = ("ProdExp1", "ProdExp2")


def _job(team: str, name: str, **changes: Any) -> dict[str, Any]:
    lower = team.lower()
    return {
        "name": name,
        "team": team,
        "instance_type": "ml.p4d.24xlarge",
        "framework": "pytorch",
        "framework_version": "2.6.0",
        "output_path": f"s3://search-ml-training/{lower}/out/",
        **changes,
    }


def _body(kind: str, folder: str, index: int) -> bytes:
    team = folder if folder in TEAMS else "ProdExp1"
    name = f"fz-{index}"
    if kind == "good":
        return yaml.safe_dump([_job(team, name)]).encode()
    if kind == "mixed":
        return yaml.safe_dump([_job(team, name), _job(team, f"{name}-b", instance_count=0)]).encode()
    if kind == "other-team":
        other = next(t for t in TEAMS if t != team)
        return yaml.safe_dump([_job(other, name)]).encode()
    if kind == "outgrows-an-item":
        quotes = '"' * 2400
        return yaml.safe_dump(
            [_job(team, name, hyperparameters={f"h{i}": quotes for i in range(100)})]
        ).encode()
    return b"name: [unclosed"


DROPS = st.lists(
    st.tuples(
        st.sampled_from([*TEAMS, "Nobody"]),
        st.sampled_from(
            [
                "a.yaml",
                "b c.yml",
                "x/y.yaml",
                "n.txt",
                ".h.yaml",
                "t .yaml ",
                "q\tr.yaml",
                "a.yaml.error.json",
            ]
        ),
        st.sampled_from(["good", "mixed", "other-team", "outgrows-an-item", "broken"]),
    ),
    min_size=4,
    max_size=8,
)


def test_fuzz_every_drop_is_answered_moved_and_its_team_notified() -> None:
    from shareplane.domain.errors import InvalidInputError
    from shareplane.domain.submit.jobspec import team_from_key
    from shareplane.domain.submit.submission import DroppedObject, answer_key, answers
    from shareplane_cli.local import LocalStack, StackSpec
    from shareplane_cli.local.runner import FunctionRunner

    from tests.local.test_failures_local import drain_queue, subscribe_to_alerts

    with LocalStack(StackSpec(REPO / "template.yaml")) as stack:
        s3, bucket = stack.client("s3"), stack.outputs["DropBucketName"]
        inbox = subscribe_to_alerts(stack)
        runner = FunctionRunner(stack)
        round_number = 0

        @settings(max_examples=examples(6), deadline=None, phases=[Phase.generate])
        @given(drops=DROPS)
        def one_round(drops: list[tuple[str, str, str]]) -> None:
            nonlocal round_number
            round_number += 1
            # GIVEN generated drops (each in its own folder of this round, so rounds never meet) and the
            # console's folder marker
            marker = f"submit/ProdExp1/r{round_number}/"
            s3.put_object(Bucket=bucket, Key=marker, Body=b"")
            dropped = []
            for index, (folder, name, kind) in enumerate(drops):
                key = f"submit/{folder}/r{round_number}-{index}-{name}"
                body = _body(kind, folder, index)
                version = s3.put_object(Bucket=bucket, Key=key, Body=body)["VersionId"]
                dropped.append((DroppedObject(bucket, key, version), folder, body))
            # WHEN the stack handles them (S3 -> EventBridge -> SQS -> submit_job)
            runner.drain()
            notes = drain_queue(stack.client("sqs"), inbox)
            # THEN nothing failed into a DLQ, and the folder marker is where it was, unanswered
            assert all(i.failed == 0 for i in runner.invocations), [
                i.output for i in runner.invocations if i.failed
            ]
            assert s3.head_object(Bucket=bucket, Key=marker)["ContentLength"] == 0
            for obj, folder, body in dropped:
                try:
                    team = team_from_key(obj.key)
                except InvalidInputError:
                    team = None
                # AND each drop has its answer, left its folder, and sits whole in accepted/ or rejected/
                at = answer_key(obj, team)
                answer = json.loads(s3.get_object(Bucket=bucket, Key=at)["Body"].read())
                assert answers(answer, obj), at
                assert answer["original"].startswith(("accepted/", "rejected/"))
                assert s3.get_object(Bucket=bucket, Key=answer["original"])["Body"].read() == body
                assert obj.key not in {
                    o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix=obj.key).get("Contents", [])
                }
                # AND the team whose folder it was hears of every refusal
                if answer["outcome"] != "accepted":
                    told = [n for n in notes if n["message"].get("answer") == f"s3://{bucket}/{at}"]
                    assert len(told) == 1, (obj.key, notes)
                    assert told[0]["team"] == (folder if folder in TEAMS else "none")

        one_round()
