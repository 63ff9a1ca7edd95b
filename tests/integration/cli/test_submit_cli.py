"""`shareplane submit`, `cancel`, `cleanup` and submit_spec: moto S3 with the submit path standing in for Lambda."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws
from shareplane.adapters.batch_service_jobs import ACTIVE_STATUSES
from shareplane.adapters.dynamodb_items import marshal
from shareplane.adapters.dynamodb_store import job_state_item
from shareplane.bootstrap import Root
from shareplane.domain.jobs.lifecycle import JobState, JobStatus
from shareplane.schemas.s3 import parse_object_created
from shareplane_cli.aws import Target
from shareplane_cli.errors import ExitCode
from shareplane_cli.main import app
from shareplane_cli.submit import submit_spec
from typer.testing import CliRunner

from tests.aws import create_jobs_table
from tests.conftest import REPO
from tests.integration.cli.plain_table import plain_rows
from tests.integration.drop_world import BUCKET, DropWorld, build_world

CONFIG = REPO / "config" / "shares.yaml"
GOOD = REPO / "config" / "jobs" / "prodexp1-bert.yaml"
INVALID = REPO / "config" / "jobs" / "prodexp2-invalid.yaml"


@pytest.fixture
def world(aws_credentials: None) -> Iterator[DropWorld]:
    with mock_aws():
        yield build_world()


def lambda_standing_in(world: DropWorld) -> Any:
    """A sleep() that, like the deployed function, answers every drop still under submit/."""

    def sleep(_: float) -> None:
        for version in world.s3.list_object_versions(Bucket=BUCKET, Prefix="submit/").get("Versions", []):
            event = {
                "detail-type": "Object Created",
                "source": "aws.s3",
                "id": "1",
                "time": "2026-03-16T19:55:02Z",
                "detail": {
                    "bucket": {"name": BUCKET},
                    "object": {"key": version["Key"], "version-id": version["VersionId"]},
                },
            }
            for dropped in parse_object_created(event):
                world.handle(dropped)

    return sleep


def test_submit_spec_uploads_and_returns_the_receipt_for_this_upload(world: DropWorld) -> None:
    result = submit_spec(
        GOOD, bucket=BUCKET, config=CONFIG, s3=world.s3, sleep=lambda_standing_in(world), poll_seconds=0
    )
    assert result.outcome == "accepted" and result.key == "submit/ProdExp1/prodexp1-bert.yaml"
    assert result.answer_key == f"answers/ProdExp1/prodexp1-bert.yaml/{result.version_id}.json"
    assert len(result.job_arns) == 3 and result.answer["source"]["versionId"] == result.version_id


def test_an_older_receipt_for_the_same_name_is_not_taken_for_a_new_upload(world: DropWorld) -> None:
    first = submit_spec(
        GOOD, bucket=BUCKET, config=CONFIG, s3=world.s3, sleep=lambda_standing_in(world), poll_seconds=0
    )
    # no function runs now: the second upload must wait for its own answer and time out
    second = submit_spec(GOOD, bucket=BUCKET, config=CONFIG, s3=world.s3, sleep=lambda _: None, timeout=0)
    assert first.outcome == "accepted" and second.outcome == "pending"


def test_a_spec_that_fails_locally_is_never_uploaded(world: DropWorld) -> None:
    result = submit_spec(INVALID, bucket=BUCKET, config=CONFIG, s3=world.s3)
    assert result.outcome == "invalid" and not result.uploaded and world.keys() == set()
    assert result.as_dict()["local"]["jobs"][0]["errors"]


def test_the_command_prints_the_receipt_as_json(world: DropWorld, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("shareplane_cli.submit.time.sleep", lambda_standing_in(world))
    result = CliRunner().invoke(
        app, ["submit", str(GOOD), "--bucket", BUCKET, "--config", str(CONFIG), "--output", "json"]
    )
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    assert printed["outcome"] == "accepted" and len(printed["answer"]["jobs"]) == 3


SUBMITTER_ROLE = "arn:aws:iam::111122223333:role/prodexp1-ml-engineers"


def test_a_caller_outside_the_teams_submitters_is_warned_and_told_the_fix(
    world: DropWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the default identity (the local stack's, moto's) is not one of ProdExp1's submitters
    caller = boto3.client("sts", region_name="us-east-1").get_caller_identity()["Arn"]
    monkeypatch.setattr("shareplane_cli.submit.time.sleep", lambda_standing_in(world))
    # WHEN it submits ProdExp1's spec
    result = CliRunner().invoke(
        app, ["submit", str(GOOD), "--bucket", BUCKET, "--config", str(CONFIG), "--output", "json"]
    )
    # THEN the drop goes ahead, and stderr names the caller, the team's submitters and the fix
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["outcome"] == "accepted"
    warning = " ".join(result.stderr.split())
    assert "warning:" in warning and caller in warning and SUBMITTER_ROLE in warning
    assert "uploader_not_submitter" in warning and "teams.ProdExp1.submitters" in warning


def test_a_submitter_is_not_warned(world: DropWorld, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN the caller is a session of ProdExp1's submitter role
    credentials = boto3.client("sts", region_name="us-east-1").assume_role(
        RoleArn=SUBMITTER_ROLE, RoleSessionName="alice"
    )["Credentials"]
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", credentials["AccessKeyId"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", credentials["SecretAccessKey"])
    monkeypatch.setenv("AWS_SESSION_TOKEN", credentials["SessionToken"])
    monkeypatch.setattr("shareplane_cli.submit.time.sleep", lambda_standing_in(world))
    # WHEN it submits ProdExp1's spec, THEN nothing is said but the receipt
    result = CliRunner().invoke(
        app, ["submit", str(GOOD), "--bucket", BUCKET, "--config", str(CONFIG), "--output", "json"]
    )
    assert result.exit_code == 0, result.output
    assert "warning" not in result.stderr


def test_the_command_exits_1_and_shows_the_problems_of_an_invalid_spec(world: DropWorld) -> None:
    result = CliRunner().invoke(app, ["submit", str(INVALID), "--bucket", BUCKET, "--config", str(CONFIG)])
    assert result.exit_code == 1 and "not uploaded" in result.stdout and "hyperparmeters" in result.stdout


def test_wait_follows_the_jobs_to_their_final_state(
    world: DropWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    from shareplane.domain.jobs.lifecycle import JobObservation, JobStatus
    from shareplane.service.record_state import record_observation

    answer_the_drop = lambda_standing_in(world)

    def sleep(_: float) -> None:
        answer_the_drop(_)
        # and Batch runs every submitted job to completion (record_state would record these events)
        for state in world.store.jobs():
            if not state.status.is_final:
                done = JobObservation(
                    job_arn=state.job_arn,
                    status=JobStatus.SUCCEEDED,
                    created_at=state.created_at,
                    stopped_at=(state.created_at or 0) + 60_000,
                )
                record_observation(done, world.store, world.ports.metrics, world.config)

    monkeypatch.setattr("shareplane_cli.submit.time.sleep", sleep)
    monkeypatch.setattr(Target, "job_store", lambda self, table=None: world.store)
    result = CliRunner().invoke(
        app, ["submit", str(GOOD), "--bucket", BUCKET, "--config", str(CONFIG), "--wait", "--output", "json"]
    )
    assert result.exit_code == 0, result.output
    assert set(json.loads(result.stdout)["finalStates"].values()) == {"SUCCEEDED"}


@pytest.fixture
def stubbed_batch(aws_credentials: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[Stubber]:
    """Batch stubbed, and the jobs table TABLE (empty) in moto for `cancel` to look names up in."""
    client = boto3.client("batch", region_name="us-east-1")
    monkeypatch.setattr(Target, "root", lambda self, **parts: Root({}, batch=client, **parts))
    with mock_aws(), Stubber(client) as stubber:
        create_jobs_table(boto3.client("dynamodb", region_name="us-east-1"), TABLE)
        yield stubber
        stubber.assert_no_pending_responses()


TABLE = "jobs"
JOB_ARN = "arn:aws:batch:us-east-1:123456789012:service-job/"


def store_job(job_id: str, name: str, status: JobStatus, created_at: int = 1773720000000) -> None:
    """A job's STATE item in TABLE, as the state path stores it."""
    state = JobState(
        job_arn=JOB_ARN + job_id, status=status, seq="a", job_id=job_id, job_name=name, created_at=created_at
    )
    boto3.client("dynamodb", region_name="us-east-1").put_item(
        TableName=TABLE, Item=marshal(job_state_item(state))
    )


def expect_terminate(stubber: Stubber, job_id: str) -> None:
    stubber.add_response(
        "terminate_service_job", {}, {"jobId": job_id, "reason": "cancelled with shareplane"}
    )


def cancel(*args: str) -> Any:
    return CliRunner().invoke(app, ["cancel", *args, "--table", TABLE])


def test_cancel_terminates_the_job(stubbed_batch: Stubber) -> None:
    expect_terminate(stubbed_batch, "job-1")
    result = cancel("job-1")
    assert result.exit_code == 0 and "terminated job-1" in result.stdout


def test_cancel_takes_a_name_and_terminates_that_queued_job_only(stubbed_batch: Stubber) -> None:
    # GIVEN "bert" ran once (SUCCEEDED) and waits again (RUNNABLE); another job waits too
    store_job("old", "bert", JobStatus.SUCCEEDED)
    store_job("new", "bert", JobStatus.RUNNABLE)
    store_job("other", "gpt", JobStatus.RUNNABLE)
    # WHEN it is cancelled by name, THEN only the waiting "bert" is terminated, by its id
    expect_terminate(stubbed_batch, "new")
    with scans_refused():
        result = cancel("bert")
    assert result.exit_code == 0, result.output
    assert "terminated new (bert)" in result.stdout


@contextmanager
def scans_refused() -> Iterator[None]:
    """The jobs table read only by status (its index), as a cancel must: reading every job fails."""
    from shareplane.adapters.dynamodb_store import DynamoJobStore

    every_status = DynamoJobStore.jobs

    def by_status_only(self: DynamoJobStore, status: str | None = None) -> list[JobState]:
        assert status is not None, "the whole table was read"
        return every_status(self, status)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(DynamoJobStore, "jobs", by_status_only)
        yield


def test_a_name_of_several_active_jobs_is_refused_listing_them(stubbed_batch: Stubber) -> None:
    # GIVEN two "bert" jobs, one waiting and one running (the same spec dropped twice)
    store_job("first", "bert", JobStatus.RUNNABLE)
    store_job("second", "bert", JobStatus.RUNNING)
    # WHEN cancelled by name, THEN nothing is terminated and both are named, with the way out
    result = cancel("bert")
    assert result.exit_code == ExitCode.BAD_INPUT
    assert "first" in result.stderr and "second" in result.stderr and "--all-matching" in result.stderr
    assert "terminated" not in result.stdout
    # AND with --all-matching both are terminated
    expect_terminate(stubbed_batch, "first")
    expect_terminate(stubbed_batch, "second")
    result = cancel("bert", "--all-matching")
    assert result.exit_code == 0, result.output
    assert "terminated first (bert)" in result.stdout and "terminated second (bert)" in result.stdout


def test_cancel_sends_an_arn_to_batch_without_reading_the_table(stubbed_batch: Stubber) -> None:
    # GIVEN no table and no stack to find one in: an ARN needs neither
    expect_terminate(stubbed_batch, JOB_ARN + "j1")
    result = CliRunner().invoke(app, ["cancel", JOB_ARN + "j1", "--table", "no-such-table"])
    assert result.exit_code == 0, result.output
    assert f"terminated {JOB_ARN}j1" in result.stdout


def summary(job_id: str, status: str) -> dict[str, Any]:
    return {
        "jobId": job_id,
        "jobName": f"n-{job_id}",
        "serviceJobType": "SAGEMAKER_TRAINING",
        "status": status,
    }


@pytest.mark.parametrize(
    "dry_run",
    [True, False],
    ids=["a dry run lists and terminates nothing", "cleanup terminates the team's jobs on both queues"],
)
def test_cleanup_finds_a_teams_jobs_by_share_and_by_tag(stubbed_batch: Stubber, dry_run: bool) -> None:
    # GIVEN ProdExp1 has 60 RUNNABLE jobs on the GPU queue and one RUNNING CPU job (ProdExp2 has one too)
    gpu = [summary(f"g{i}", "RUNNABLE") for i in range(60)]
    # (team x tier layout: every identifier of the team is listed: its share, where its MIDPRI and
    # LOWPRI jobs go, here 40 of them, and its HIGHPRI identifier, here 20)
    by_share = {"ProdExp1": gpu[:40], "ProdExp1HIGHPRI": gpu[40:]}
    for share, jobs in by_share.items():
        for status in ACTIVE_STATUSES:
            params = {
                "jobQueue": "search-p4d-queue",
                "jobStatus": status,
                "filters": [{"name": "SHARE_IDENTIFIER", "values": [share]}],
            }
            stubbed_batch.add_response(
                "list_service_jobs", {"jobSummaryList": jobs if status == "RUNNABLE" else []}, params
            )
    for status in ACTIVE_STATUSES:
        jobs = [summary("c1", "RUNNING"), summary("c2", "RUNNING")] if status == "RUNNING" else []
        stubbed_batch.add_response(
            "list_service_jobs",
            {"jobSummaryList": jobs},
            {"jobQueue": "search-cpu-fifo-queue", "jobStatus": status},
        )
        for job_id, team in (("c1", "ProdExp1"), ("c2", "ProdExp2")) if jobs else ():
            stubbed_batch.add_response(
                "describe_service_job",
                {
                    **summary(job_id, "RUNNING"),
                    "jobQueue": "q",
                    "startedAt": 1,
                    "tags": {"shareplane:team": team},
                },
                {"jobId": job_id},
            )
    wanted = [j["jobId"] for share_jobs in by_share.values() for j in share_jobs] + ["c1"]
    if not dry_run:
        stubbed_batch.add_response(
            "terminate_service_jobs",
            {"successful": wanted[:50], "errors": []},
            {"jobs": wanted[:50], "reason": "shareplane cleanup"},
        )
        stubbed_batch.add_response(
            "terminate_service_jobs",
            {"successful": wanted[50:], "errors": []},
            {"jobs": wanted[50:], "reason": "shareplane cleanup"},
        )
    args = ["cleanup", "--team", "ProdExp1", "--config", str(CONFIG), "--output", "json"]
    result = CliRunner().invoke(app, args + (["--dry-run"] if dry_run else []))
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert [j["jobId"] for j in report["jobs"]] == wanted
    assert report["terminated"] == ([] if dry_run else wanted)


def test_cleanup_refuses_an_unknown_team(stubbed_batch: Stubber) -> None:
    result = CliRunner().invoke(app, ["cleanup", "--team", "Nobody", "--config", str(CONFIG)])
    assert result.exit_code == 2 and "not in the shares config" in result.output


def test_a_second_upload_of_the_same_name_does_not_leave_the_first_pending(world: DropWorld) -> None:
    # the function answers both uploads before the first submit looks: each finds its own answer
    def both_answered(seconds: float) -> None:
        world.s3.put_object(Bucket=BUCKET, Key="submit/ProdExp1/prodexp1-bert.yaml", Body=GOOD.read_bytes())
        lambda_standing_in(world)(seconds)

    first = submit_spec(
        GOOD, bucket=BUCKET, config=CONFIG, s3=world.s3, sleep=both_answered, poll_seconds=0, timeout=5
    )
    assert first.outcome == "accepted" and first.answer["source"]["versionId"] == first.version_id


def test_a_spec_naming_another_team_than_the_folder_is_refused_before_upload(
    world: DropWorld, tmp_path: Any
) -> None:
    spec = tmp_path / "mine.yaml"
    spec.write_text(GOOD.read_text())  # its jobs say team: ProdExp1
    result = submit_spec(spec, team="ProdExp2", bucket=BUCKET, config=CONFIG, s3=world.s3)
    assert result.outcome == "invalid" and world.keys() == set()
    problems = [p for j in result.local.jobs for p in j.problems]
    assert problems and all(p.path.endswith(".team") for p in problems if "names team" in p.message)
    assert any("names team 'ProdExp1'" in p.message and "submit/ProdExp1/" in p.fix for p in problems)


def test_the_command_says_which_team_folder_it_used_and_why(
    world: DropWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("shareplane_cli.submit.time.sleep", lambda_standing_in(world))
    result = CliRunner().invoke(app, ["submit", str(GOOD), "--bucket", BUCKET, "--config", str(CONFIG)])
    assert result.exit_code == 0, result.output
    assert "submitted as team ProdExp1 (from the spec's team: field)" in result.stdout
    printed = CliRunner().invoke(
        app,
        [
            "submit",
            str(GOOD),
            "--team",
            "ProdExp1",
            "--bucket",
            BUCKET,
            "--config",
            str(CONFIG),
            "-o",
            "json",
        ],
    )
    assert json.loads(printed.stdout)["teamFrom"] == "--team"


def test_the_receipt_table_shows_each_jobs_predicted_start(
    world: DropWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dataclasses import replace

    from shareplane.adapters.share_store import DynamoShareStore
    from shareplane.service.receipt_prediction import ReceiptForecast
    from shareplane.service.start_predictions import ForecastPorts

    from tests.fakes.shares_batch import FakeSharesBatch
    from tests.unit.service.test_start_predictions import POLICY

    # GIVEN the function standing in forecasts at submission (an empty queue of 4 instances)
    twin = ForecastPorts(
        store=world.store,
        recent=DynamoShareStore(world.dynamodb, "shareplane-jobs"),
        batch=FakeSharesBatch(policy=POLICY, capacity=4),
        config=world.config,
        queue="search-p4d-queue",
    )
    world.ports = replace(world.ports, forecast=ReceiptForecast(twin=twin, clock=lambda: 0.0))
    monkeypatch.setattr("shareplane_cli.submit.time.sleep", lambda_standing_in(world))
    monkeypatch.setenv("COLUMNS", "240")
    # WHEN the example spec is submitted with the table output
    result = CliRunner().invoke(app, ["submit", str(GOOD), "--bucket", BUCKET, "--config", str(CONFIG)])
    # THEN its two GPU jobs show a predicted start from their submission (p50, then p10-p90 unless one
    # moment), the CPU job none
    assert result.exit_code == 0, result.output
    rows = plain_rows(result.stdout, ["#", "job", "queue", "share", "tier", "job id", "predicted start"])
    cells = {row["job"]: row["predicted start"] for row in rows}
    span = r"\d+[dhms](\d\d[hms])?"
    start = rf"(in {span}|now)( \(p10-p90 {span}-({span}|later)\))?"
    for name in ("bert-large-ranker-ft-01", "ranker-lr-sweep-07"):
        assert re.fullmatch(start, cells[name]), cells
    assert cells["ranker-tokenize-v7"] == "-", cells
