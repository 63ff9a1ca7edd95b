"""Reclaim's adapters on moto: the newest checkpoint under a prefix, and the ledger's conditional writes."""

from __future__ import annotations

import time
from typing import Any

import boto3
import pytest
from moto import mock_aws
from shareplane.adapters.reclaim_ledger import DynamoReclaimLedger
from shareplane.adapters.s3_checkpoints import S3Checkpoints
from shareplane.domain.jobs.lifecycle import HistoryEntry, JobStatus, ObservationKind
from shareplane.domain.reclaim.plan import ClaimBudgets
from shareplane.domain.reclaim.record import ReclaimRecord, ReclaimVictimRecord

from tests.aws import create_jobs_table

TABLE = "shareplane-jobs"
NOW = 1_773_738_300.0


@pytest.fixture
def aws(aws_credentials: None) -> Any:
    with mock_aws():
        yield boto3.client("s3", region_name="us-east-1"), boto3.client("dynamodb", region_name="us-east-1")


# ------------------------------------------------------------------------------------------ checkpoints
def test_the_newest_checkpoint_is_the_latest_object_under_the_prefix_only(aws: Any) -> None:
    s3, _ = aws
    s3.create_bucket(Bucket="search-ml-training")
    before = time.time()
    for key in ("prodexp2/ckpt/a/step-100.pt", "prodexp2/ckpt/a/step-200.pt", "prodexp2/ckpt/ab/other.pt"):
        s3.put_object(Bucket="search-ml-training", Key=key, Body=b"x")
    heads = {
        o["Key"]: o["LastModified"].timestamp()
        for o in s3.list_objects_v2(Bucket="search-ml-training")["Contents"]
    }
    newest = S3Checkpoints(s3).newest("s3://search-ml-training/prodexp2/ckpt/a/")
    assert newest == max(heads["prodexp2/ckpt/a/step-100.pt"], heads["prodexp2/ckpt/a/step-200.pt"])
    assert newest >= before - 1
    # as of a time before every checkpoint there is none
    assert S3Checkpoints(s3).newest("s3://search-ml-training/prodexp2/ckpt/a/", before - 3600) is None


@pytest.mark.parametrize(
    ("case", "uri"),
    [
        ("an empty prefix has no checkpoint", "s3://search-ml-training/prodexp2/ckpt/none/"),
        ("a bucket that does not exist has no checkpoint", "s3://no-such-bucket-here/x/"),
        ("a URI that is not S3 has no checkpoint", "file:///tmp/ckpt"),
    ],
    ids=lambda v: v if " " in str(v) else "",
)
def test_no_checkpoint(aws: Any, case: str, uri: str) -> None:
    s3, _ = aws
    s3.create_bucket(Bucket="search-ml-training")
    assert S3Checkpoints(s3).newest(uri) is None, case


def test_a_prefix_of_more_than_one_page_is_read_to_the_end(aws: Any) -> None:
    s3, _ = aws
    s3.create_bucket(Bucket="ckpt-pages")
    for i in range(1003):
        s3.put_object(Bucket="ckpt-pages", Key=f"c/{i:05d}", Body=b"")
    last = s3.head_object(Bucket="ckpt-pages", Key="c/01002")["LastModified"].timestamp()
    assert S3Checkpoints(s3).newest("s3://ckpt-pages/c/") >= last


# ----------------------------------------------------------------------------------------------- ledger
def record(decision: str, victims: list[str], beneficiary: str = "hi", **extra: Any) -> ReclaimRecord:
    arn = "arn:aws:batch:us-east-1:123456789012:service-job/"
    return ReclaimRecord(
        decision_id=decision,
        job_id=beneficiary,
        job_arn=arn + beneficiary,
        team="ProdExp1",
        tier="HIGHPRI",
        waited_seconds=300,
        victims=tuple(
            ReclaimVictimRecord(
                job_id=v, job_arn=arn + v, team="ProdExp2", tier="LOWPRI", instances=1, reason="stopped"
            )
            for v in victims
        ),
        decided_at=NOW,
        **extra,
    )


def budgets(
    day: str = "2026-03-17", max_per_job: int = 4, max_per_day: int = 100, max_per_window: int = 100
) -> ClaimBudgets:
    return ClaimBudgets(day, "300s@1773720000", max_per_job, max_per_day, max_per_window)


def history(job: str, decision: str) -> tuple[str, HistoryEntry]:
    at = int(NOW * 1000)
    entry = HistoryEntry(
        f"{at:013d}#~RECLAIM#{decision}", JobStatus.RUNNABLE, at, "why", ObservationKind.RECLAIM, decision
    )
    return f"arn:aws:batch:us-east-1:123456789012:service-job/{job}", entry


def test_a_claim_is_written_once_with_its_counters_victims_and_history(aws: Any) -> None:
    _, dynamodb = aws
    create_jobs_table(dynamodb, TABLE)
    ledger = DynamoReclaimLedger(dynamodb, TABLE)
    limits = {"day": "2026-03-17", "max_per_job": 4, "max_per_day": 100}
    assert ledger.claim(record("d1", ["v1", "v2"]), [history("hi", "d1")], budgets(**limits)) == "claimed"
    # a re-delivery of the same decision finds it; a different decision over a taken victim is refused
    assert ledger.claim(record("d1", ["v1", "v2"]), [history("hi", "d1")], budgets(**limits)) == "exists"
    assert (
        ledger.claim(record("d2", ["v2"], "other"), [history("other", "d2")], budgets(**limits)) == "refused"
    )
    assert (ledger.victims_for("hi"), ledger.victims_for("other"), ledger.victims_on("2026-03-17")) == (
        2,
        0,
        2,
    )
    assert ledger.stopping() == {"v1": "hi", "v2": "hi"} and ledger.decision_of("v1") == "d1"
    # applied once; listed through the index
    assert ledger.mark_applied("hi", "d1", NOW) is True
    assert ledger.mark_applied("hi", "d1", NOW) is False
    (listed,) = ledger.reclaims(NOW - 1)
    assert listed.decision_id == "d1" and listed.applied is True


@pytest.mark.parametrize(
    ("case", "limits", "victims"),
    [
        (
            "the per-job budget refuses a claim that would overrun it",
            {"max_per_job": 2, "max_per_day": 100},
            ["v3", "v4"],
        ),
        (
            "the per-day budget refuses a claim that would overrun it",
            {"max_per_job": 10, "max_per_day": 3},
            ["v3", "v4"],
        ),
    ],
    ids=lambda v: v if isinstance(v, str) and " " in v else "",
)
def test_budgets_are_enforced_by_the_write(
    aws: Any, case: str, limits: dict[str, int], victims: list[str]
) -> None:
    _, dynamodb = aws
    create_jobs_table(dynamodb, TABLE)
    ledger = DynamoReclaimLedger(dynamodb, TABLE)
    assert ledger.claim(record("d1", ["v1", "v2"]), [], budgets(day="2026-03-17", **limits)) == "claimed"
    assert ledger.claim(record("d2", victims), [], budgets(day="2026-03-17", **limits)) == "refused", case
    assert ledger.victims_for("hi") == 2 and ledger.stopping() == {"v1": "hi", "v2": "hi"}


def test_two_racing_plans_for_one_waiting_job_cannot_both_stop_their_victims(aws: Any) -> None:
    # GIVEN two runs read the waiting job's counter at 0 and planned different victims
    _, dynamodb = aws
    create_jobs_table(dynamodb, TABLE)
    ledger = DynamoReclaimLedger(dynamodb, TABLE)
    limits = {"day": "2026-03-17", "max_per_job": 4, "max_per_day": 100}
    first = record("d1", ["v1"], victims_before=0)
    second = record("d2", ["v2"], victims_before=0)
    # THEN the second claim finds the counter moved and is refused
    assert ledger.claim(first, [], budgets(**limits)) == "claimed"
    assert ledger.claim(second, [], budgets(**limits)) == "refused"
    # AND a later plan that read the new count goes through
    assert ledger.claim(record("d3", ["v3"], victims_before=1), [], budgets(**limits)) == "claimed"
    assert ledger.victims_for("hi") == 2


def test_a_dry_run_decision_is_written_once_and_counts_nothing(aws: Any) -> None:
    _, dynamodb = aws
    create_jobs_table(dynamodb, TABLE)
    ledger = DynamoReclaimLedger(dynamodb, TABLE)
    planned = record("d1", ["v1"], dry_run=True)
    assert ledger.record_dry_run(planned) is True and ledger.record_dry_run(planned) is False
    assert ledger.victims_on("2026-03-17") == 0 and ledger.stopping() == {}
