"""Checkpoint-aware reclaim end to end: the real template and handlers against the emulated Batch + SageMaker.

Fair-share never preempts. On 100 ml.p4d.24xlarge (ProdExp1 entitled to 60, ProdExp2 to 40) every
instance is busy: ProdExp1 runs MIDPRI work on 56, ProdExp2 LOWPRI work on its 40, then 4 more in
``p2-lowpri-ft``, which is borrowed capacity (ProdExp2 is past its 40, and it was dispatched last).
Once that job has written a checkpoint, ProdExp1 submits a HIGHPRI job of 4 instances, whose tier
may reclaim after 10 minutes. Then, on the emulator's virtual clock:

- reclaim_capacity (its 5-minute tick) stops ``p2-lowpri-ft``, the borrowed job losing least, with a
  reason naming the HIGHPRI job, audits it and alerts ProdExp2;
- fair-share hands the freed instances to the HIGHPRI job's share identifier, and it starts;
- the victim's FAILED event reaches handle_failure, which classifies it ``reclaimed`` and requeues the
  same payload at once (CheckpointConfig included), tagged with the job it was displaced by;
- the requeued job waits for capacity, then resumes from the checkpoint the emulated trainer wrote to
  the embedded S3: its training is shorter by what the checkpoint held.

The team x tier share layout and the reclaim threshold are set through the template's SharesConfig
parameter (config/shares.yaml is untouched); the rebalancer runs in dry run so the scheduling policy
keeps the layout's weights.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import pytest
import yaml
from gpusim.engine import SteppedClock
from shareplane.domain.config.shares import SharesConfig, Tier
from shareplane.domain.failures.requeue import TAG_DISPLACED_BY
from shareplane.domain.reclaim.reason import beneficiary_of
from shareplane.domain.reclaim.record import ReclaimRecord
from shareplane_cli.demo.run import stack_root
from shareplane_cli.demo.workload import DemoJob, submit_request
from shareplane_cli.local import LocalStack, StackSpec
from shareplane_cli.local.loop import StackLoop
from shareplane_cli.local.runner import FunctionRunner

from tests.conftest import REPO
from tests.local.test_escalation_local import status
from tests.local.test_failures_local import cli_json, emulated

pytestmark = [pytest.mark.local, pytest.mark.xdist_group("stack-1")]

#: Virtual seconds per wall second. Each trigger is decided at its own (virtual) time, but handled a
#: few wall seconds later: at this speed that lag stays a few minutes of virtual time, so the
#: checkpoint the decision sees is still the victim's newest.
SPEED = 100.0
WALL_LIMIT_SECONDS = 240.0
RECLAIM_AFTER = 600

LOW, HIGH = Tier.LOWPRI, Tier.HIGHPRI
MID = Tier.MIDPRI
FILLERS = [
    DemoJob("p1-midpri-fill-01", "ProdExp1", MID, 0, 32, 120),
    DemoJob("p1-midpri-fill-02", "ProdExp1", MID, 0, 24, 120),
    DemoJob("p2-lowpri-fill-01", "ProdExp2", LOW, 0, 16, 120),
    DemoJob("p2-lowpri-fill-02", "ProdExp2", LOW, 0, 16, 120),
    DemoJob("p2-lowpri-fill-03", "ProdExp2", LOW, 0, 8, 120),
]
VICTIM = DemoJob("p2-lowpri-ft", "ProdExp2", LOW, 0, 4, 90)
URGENT = DemoJob("p1-highpri-launch", "ProdExp1", HIGH, 0, 4, 30)


def reclaim_config() -> SharesConfig:
    """config/shares.yaml with team x tier shares and a HIGHPRI tier that reclaims after 10 minutes."""
    raw = yaml.safe_load((REPO / "config" / "shares.yaml").read_text())
    raw["share_layout"] = "team_tier"
    raw["tiers"]["HIGHPRI"].update(weight_multiplier=0.01, reclaim_after_seconds=RECLAIM_AFTER)
    raw["tiers"]["MIDPRI"].update(weight_multiplier=0.1)
    raw["reclaim"] = {"min_runtime_seconds": 600, "cooldown_seconds": 3600}
    return SharesConfig.model_validate(raw)


@dataclass(frozen=True)
class ReclaimRun:
    """What the run left behind."""

    config: SharesConfig
    described: dict[str, dict[str, Any]]  # DescribeServiceJob by job name (the requeue included)
    records: dict[str, dict[str, Any]]  # `shareplane jobs --output json` by job name
    audits: list[ReclaimRecord]  # the reclaim decisions in the jobs table
    alerts: list[dict[str, Any]]  # what ProdExp2's filtered subscription to the alerts topic received
    checkpoints: list[str]  # object keys under the victim's CheckpointConfig.S3Uri
    resumed_saved: float  # training seconds the requeued job resumed from (the emulator's view)
    duration: float  # the victim's whole training, seconds


def submit(batch: Any, job: DemoJob, config: SharesConfig) -> str:
    """Submit a demo job to its team x tier share identifier."""
    request = submit_request(job, config)
    request["shareIdentifier"] = config.share_for(job.team, job.tier)
    return str(batch.submit_service_job(**request)["jobId"])


def subscribe(stack: LocalStack, policy: dict[str, list[str]]) -> str:
    """ProdExp2's endpoint: an SQS queue subscribed to the alerts topic with a filter policy."""
    sqs, sns = stack.client("sqs"), stack.client("sns")
    url = sqs.create_queue(QueueName="prodexp2-alerts")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(
        TopicArn=stack.outputs["AlertsTopicArn"],
        Protocol="sqs",
        Endpoint=arn,
        Attributes={"RawMessageDelivery": "true", "FilterPolicy": json.dumps(policy)},
    )
    return url


@pytest.fixture
def run(reclaim_run: ReclaimRun) -> ReclaimRun:
    """This module's scenario, run once a session (``tests/local/conftest.py``: the IAM replay reads its calls)."""
    return reclaim_run


def run_scenario() -> ReclaimRun:
    """The scenario on a stack of its own."""
    config = reclaim_config()
    shares_json = json.dumps(config.model_dump(mode="json", exclude_none=True), separators=(",", ":"))
    spec = StackSpec(
        REPO / "template.yaml", shares_config=shares_json, parameters={"RebalanceDryRun": "true"}
    )
    with LocalStack(spec, speed=SPEED, clock=SteppedClock()) as stack:
        assert stack.emulator is not None
        model = stack.emulator.model
        batch = emulated(stack, "batch")
        # The layout's identifiers and weights (HIGHPRI's 100x smaller: fair-share serves it first).
        batch.update_scheduling_policy(
            arn=stack.outputs["GpuSchedulingPolicyArn"],
            fairsharePolicy={
                "shareDecaySeconds": config.fairshare.share_decay_seconds,
                "computeReservation": config.fairshare.compute_reservation,
                "shareDistribution": [
                    {"shareIdentifier": s, "weightFactor": config.share_weight_factor(s)}
                    for s in config.share_keys
                ],
            },
        )
        inbox = subscribe(stack, {"kind": ["reclaim"], "share": [config.share_for("ProdExp2", LOW)]})
        runner = FunctionRunner(stack)
        loop = StackLoop(stack, runner)
        deadline = time.monotonic() + WALL_LIMIT_SECONDS
        ids = {job.name: submit(batch, job, config) for job in FILLERS}
        # GIVEN both teams fill 96 instances within their entitlements, then ProdExp2 borrows the last 4
        loop.run_until(
            deadline,
            lambda: all(status(batch, i) == "RUNNING" for i in ids.values()),
            "fillers running",
        )
        ids[VICTIM.name] = submit(batch, VICTIM, config)
        payload = json.loads(batch.describe_service_job(jobId=ids[VICTIM.name])["serviceRequestPayload"])
        uri = payload["CheckpointConfig"]["S3Uri"]
        loop.run_until(
            deadline, lambda: uri in model.checkpoints, "the borrowed job wrote its first checkpoint"
        )
        # WHEN ProdExp1's HIGHPRI job arrives and waits past its threshold
        ids[URGENT.name] = submit(batch, URGENT, config)
        requeued = f"{VICTIM.name}-rq1"

        def resumed() -> bool:
            job = next((j for j in model.jobs.values() if j.name == requeued), None)
            return job is not None and job.status == "RUNNING"

        loop.run_until(deadline, resumed, "the victim requeued and running again")
        loop.run_until(deadline, lambda: runner.drain() >= 0, "the last events handled")
        listed = batch.list_service_jobs(
            jobQueue=stack.outputs["GpuJobQueueArn"], filters=[{"name": "JOB_NAME", "values": ["*"]}]
        )
        described = {
            s["jobName"]: batch.describe_service_job(jobId=s["jobId"]) for s in listed["jobSummaryList"]
        }
        sqs = stack.client("sqs")
        alerts = [
            json.loads(m["Body"])
            for m in sqs.receive_message(QueueUrl=inbox, MaxNumberOfMessages=10).get("Messages", [])
        ]
        bucket, prefix = uri[len("s3://") :].split("/", 1)
        objects = stack.client("s3").list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", [])
        resumed_job = next(j for j in model.jobs.values() if j.name == requeued)
        return ReclaimRun(
            config=config,
            described=described,
            records={r["jobName"]: r for r in cli_json(stack, ["jobs"])},
            audits=stack_root(stack).reclaim_ledger.reclaims(0),
            alerts=alerts,
            checkpoints=[o["Key"] for o in objects],
            resumed_saved=resumed_job.saved,
            duration=VICTIM.minutes * 60,
        )


# ------------------------------------------------------------------------------------------ the tests
def test_reclaim_stops_the_borrowed_job_naming_the_waiting_highpri_job(run: ReclaimRun) -> None:
    victim, urgent = run.described[VICTIM.name], run.described[URGENT.name]
    assert victim["status"] == "FAILED" and victim["isTerminated"]
    assert beneficiary_of(victim["statusReason"]) == urgent["jobId"]
    assert "HIGHPRI" in victim["statusReason"] and "resumes from checkpoint" in victim["statusReason"]
    # only the victim was stopped: every other job ran to its end
    assert all(not run.described[f.name]["isTerminated"] for f in FILLERS)


def test_the_highpri_job_starts_on_the_freed_instances_after_waiting_its_threshold(run: ReclaimRun) -> None:
    victim, urgent = run.described[VICTIM.name], run.described[URGENT.name]
    assert urgent["status"] in ("RUNNING", "SUCCEEDED")
    assert urgent["scheduledAt"] >= victim["stoppedAt"]
    assert (victim["stoppedAt"] - urgent["createdAt"]) / 1000 >= RECLAIM_AFTER


def test_the_victim_is_requeued_and_resumes_from_its_checkpoint(run: ReclaimRun) -> None:
    requeued = run.described[f"{VICTIM.name}-rq1"]
    urgent = run.described[URGENT.name]
    assert requeued["tags"][TAG_DISPLACED_BY] == urgent["jobId"]
    assert requeued["shareIdentifier"] == run.config.share_for("ProdExp2", LOW)
    victim_payload = json.loads(run.described[VICTIM.name]["serviceRequestPayload"])
    assert (
        json.loads(requeued["serviceRequestPayload"])["CheckpointConfig"]
        == victim_payload["CheckpointConfig"]
    )
    # the emulated trainer wrote checkpoint objects to the embedded S3, and the new attempt resumed from one
    assert run.checkpoints and 0 < run.resumed_saved < run.duration
    # the failure path classified the stop as a reclaim: no budget spent
    decisions = [h for h in run.records[VICTIM.name]["history"] if h["kind"] == "FAILURE_DECISION"]
    assert [(d["class"], d["action"]) for d in decisions] == [("reclaimed", "requeue")]


def test_the_reclaim_is_audited_once_and_shows_in_both_jobs_history(run: ReclaimRun) -> None:
    (audit,) = run.audits
    urgent = run.described[URGENT.name]
    assert audit.job_id == urgent["jobId"] and audit.applied and audit.tier == "HIGHPRI"
    assert audit.waited_seconds >= RECLAIM_AFTER
    (victim,) = audit.victims
    assert victim.job_name == VICTIM.name and victim.borrowed and victim.checkpoint_age_seconds is not None
    assert 0 <= victim.checkpoint_age_seconds <= 900 and victim.lost_instance_minutes > 0
    assert "RECLAIM" in [h["kind"] for h in run.records[URGENT.name]["history"]]
    assert "RECLAIMED" in [h["kind"] for h in run.records[VICTIM.name]["history"]]


def test_the_victims_team_is_alerted_once_with_why(run: ReclaimRun) -> None:
    (alert,) = run.alerts
    assert alert["team"] == "ProdExp2" and alert["beneficiaryTier"] == "HIGHPRI"
    assert alert["beneficiary"] == run.described[URGENT.name]["jobArn"]
