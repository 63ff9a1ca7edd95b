"""`shareplane why` and `submit --dry-run`: position, reasons and forecast from a live twin (gpusim as Batch)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from gpusim import BatchApi, BatchModel
from gpusim.model import NUM_INSTANCES
from shareplane.adapters.batch_policy import BatchPolicyAdapter
from shareplane.domain.config.shares import SchedulingMode, SharesConfig
from shareplane.domain.explain.record import JobRecord
from shareplane.domain.explain.wait import QueuePolicy, live_from_records
from shareplane.domain.forecast.start_forecast import QueueKind
from shareplane.domain.jobs.lifecycle import CapacityUsage, HistoryEntry, JobState, JobStatus, ObservationKind
from shareplane.domain.jobs.service_job_request import ServiceJobRequest
from shareplane.service.live_twin import queue_policy
from shareplane_cli.commands.why import print_why, why_json, why_report
from shareplane_cli.config_file import load_config
from shareplane_cli.dry_run import dry_run_spec, print_dry_run
from shareplane_cli.twin import Twin

REPO = Path(__file__).resolve().parents[3]
CONFIG = load_config(REPO / "config" / "shares.yaml")
QUEUE = "search-p4d-queue"
NOW = 1_000_000.0
ARN = "arn:aws:batch:us-east-1:111122223333:service-job/"


def record(
    name,
    share,
    status,
    instances,
    created,
    *,
    priority=10,
    held=None,
    ended=None,
    started=None,
    instance_type=None,
) -> JobRecord:
    """A job record as `shareplane jobs` reads it (times in epoch ms)."""

    def entry(status: JobStatus, at: float) -> HistoryEntry:
        return HistoryEntry("", status, int(at * 1000), None, ObservationKind.STATE_CHANGE, "")

    history = [entry(JobStatus.SUBMITTED, created), entry(JobStatus.RUNNABLE, created)]
    if held is not None:
        history.append(entry(JobStatus.SCHEDULED, held))
        history.append(entry(JobStatus.RUNNING, held + 180))
    if ended is not None:
        history.append(entry(JobStatus.SUCCEEDED, ended))
    state = JobState(
        job_arn=ARN + name,
        status=JobStatus(status),
        seq="s",
        job_id=name,
        job_name=name,
        job_queue=QUEUE,
        share_identifier=share,
        scheduling_priority=priority,
        created_at=int(created * 1000),
        started_at=None if started is None else int(started * 1000),
        stopped_at=int(ended * 1000) if ended else None,
        instance_type=instance_type,
        capacity_usage=(CapacityUsage("NUM_INSTANCES", float(instances)),),
    )
    return JobRecord(state, tuple(history))


@pytest.fixture
def twin() -> Twin:
    past = [
        record(
            f"old{n}",
            "ProdExp1" if n % 2 else "ProdExp2",
            "SUCCEEDED",
            1,
            NOW - 90000 + n * 1000,
            held=NOW - 90000 + n * 1000,
            ended=NOW - 87000 + n * 1000,
        )
        for n in range(40)
    ]
    records = [
        *past,
        record("r1", "ProdExp1", "RUNNING", 3, NOW - 5000, held=NOW - 4000),
        record("r2", "ProdExp2", "RUNNING", 1, NOW - 3000, held=NOW - 2500),
        record("w1", "ProdExp2", "RUNNABLE", 2, NOW - 1000),
        record("w2", "ProdExp2", "RUNNABLE", 1, NOW - 500),
    ]
    policy = QueuePolicy(
        QueueKind.FAIRSHARE, 4, weights={"ProdExp1": 1.0, "ProdExp2": 1.0}, decay_seconds=3600
    )
    live, history = live_from_records(records, policy, NOW)
    # Batch lists only w1 (as if w2 were past the snapshot's first 100 jobs).
    snapshot = {
        "frontOfQueue": {"jobs": [{"jobArn": ARN + "w1", "earliestTimeAtPosition": int((NOW - 900) * 1000)}]}
    }
    return Twin(QUEUE, NOW, records, snapshot, policy, live, history, CONFIG)


def test_a_listed_job_gets_batchs_position_its_reasons_and_a_forecast(twin: Twin, capsys) -> None:
    answer = why_report(twin, next(r for r in twin.records if r.name == "w1"), samples=50)
    report = why_json(answer)
    assert report["waiting"] is True
    assert report["position"]["source"] == "GetJobQueueSnapshot"
    assert report["position"]["frontOfQueue"] == 1
    codes = [f["code"] for f in report["heldBackBy"]]
    assert "capacity_held" in codes  # 4 of 4 instances held
    held = next(f["text"] for f in report["heldBackBy"] if f["code"] == "capacity_held")
    assert "ProdExp1" in held and "3" in held
    f = report["forecast"]
    assert f["startP50"] is not None
    assert f["waitSecondsP10"] <= f["waitSecondsP50"] <= f["waitSecondsP90"]
    # Nothing starts before the first running job can end: the earliest start is after now.
    assert f["waitSecondsP10"] >= 1000
    print_why(answer)
    assert "number 1 at the front" in capsys.readouterr().out


def test_a_job_past_the_snapshot_is_placed_by_the_twin_and_says_so(twin: Twin) -> None:
    report = why_json(why_report(twin, next(r for r in twin.records if r.name == "w2"), samples=50))
    place = report["position"]
    assert place["source"] == "twin" and place["frontOfQueue"] is None
    assert place["twinPosition"] == 2 and place["waiting"] == 2
    assert "not among them" in place["note"]
    assert "ahead_in_share" in [f["code"] for f in report["heldBackBy"]]
    assert "priority_raise" in [f["code"] for f in report["startSooner"]]
    # w2 waits behind w1 in its share: its forecast is never earlier.
    w1 = why_json(why_report(twin, next(r for r in twin.records if r.name == "w1"), samples=50))
    assert report["forecast"]["startP50"] >= w1["forecast"]["startP50"]


def test_a_running_job_says_when_it_started(twin: Twin) -> None:
    report = why_json(why_report(twin, next(r for r in twin.records if r.name == "r1"), samples=10))
    assert report["waiting"] is False and report["waitedSeconds"] == 1000


def test_dry_run_forecasts_the_specs_gpu_jobs_and_submits_nothing(twin: Twin, capsys) -> None:
    before = (twin.live, twin.records)
    report = dry_run_spec(
        REPO / "config/jobs/prodexp1-bert.yaml", CONFIG, None, team=None, samples=30, twin=twin
    )
    assert report["ok"] and report["dryRun"]
    gpu = [j for j in report["jobs"] if j["forecast"] is not None]
    cpu = [j for j in report["jobs"] if j["forecast"] is None]
    assert gpu and cpu  # the spec's CPU job goes to the FIFO queue: no forecast, said why
    assert all(j["forecast"]["waitSecondsP50"] is not None for j in gpu)
    assert (twin.live, twin.records) == before
    print_dry_run(report)
    assert "nothing submitted" in capsys.readouterr().out


def test_dry_run_of_a_bad_spec_lists_its_problems(twin: Twin) -> None:
    report = dry_run_spec(
        REPO / "config/jobs/prodexp2-invalid.yaml", CONFIG, None, team=None, samples=5, twin=twin
    )
    assert report["ok"] is False and report["problems"]


def test_queue_policy_and_capacity_come_from_batch() -> None:
    api = BatchApi(BatchModel())
    api.create_service_environment(
        serviceEnvironmentName="p4d",
        serviceEnvironmentType="SAGEMAKER_TRAINING",
        capacityLimits=[{"maxCapacity": 7, "capacityUnit": NUM_INSTANCES}],
    )
    arn = api.create_scheduling_policy(
        name="fs",
        fairsharePolicy={
            "shareDecaySeconds": 1800,
            "computeReservation": 10,
            "shareDistribution": [{"shareIdentifier": "ProdExp1", "weightFactor": 0.5}],
        },
    )["arn"]
    api.create_job_queue(
        jobQueueName=QUEUE,
        jobQueueType="SAGEMAKER_TRAINING",
        priority=1,
        schedulingPolicyArn=arn,
        serviceEnvironmentOrder=[{"order": 1, "serviceEnvironment": "p4d"}],
    )
    capacity = BatchPolicyAdapter(api).queue_capacity(QUEUE)
    policy = queue_policy(BatchPolicyAdapter(api), QUEUE, CONFIG)
    assert capacity == 7 and policy.capacity == capacity
    assert policy.kind is QueueKind.FAIRSHARE
    assert policy.weights == {"ProdExp1": 0.5}
    assert (policy.decay_seconds, policy.compute_reservation) == (1800.0, 10)


def test_in_quota_mode_a_queue_other_than_the_gpu_queue_is_what_batch_made_it() -> None:
    # GIVEN a quota-mode config and, beside its GPU queue, the CPU queue: Batch gives it no policy
    quota = CONFIG.model_copy(update={"mode": SchedulingMode.QUOTA})
    api = BatchApi(BatchModel())
    api.create_service_environment(
        serviceEnvironmentName="cpu",
        serviceEnvironmentType="SAGEMAKER_TRAINING",
        capacityLimits=[{"maxCapacity": 4, "capacityUnit": NUM_INSTANCES}],
    )
    api.create_job_queue(
        jobQueueName="search-cpu-fifo-queue",
        jobQueueType="SAGEMAKER_TRAINING",
        priority=1,
        serviceEnvironmentOrder=[{"order": 1, "serviceEnvironment": "cpu"}],
    )
    # WHEN the twin reads its policy THEN it is a FIFO queue with its own capacity, not a quota-share
    # queue with no quota shares (the config's mode is the GPU queue's)
    policy = queue_policy(BatchPolicyAdapter(api), "search-cpu-fifo-queue", quota)
    assert (policy.kind, policy.capacity, policy.limits) == (QueueKind.FIFO, 4, {})


def test_the_json_says_a_time_limit_pending_and_another_instance_type_with_room() -> None:
    """The running jobs' stored requests carry their time limits; the waiting job's its instance type."""
    raw = yaml.safe_load((REPO / "config" / "shares.yaml").read_text())
    p4d, p5 = "ml.p4d.24xlarge", "ml.p5.48xlarge"
    raw["instance_types"] = {p4d: {"capacity": 4}, p5: {"capacity": 2}}
    raw["teams"]["ProdExp1"] |= {"entitlement": {p4d: 2, p5: 1}, "allowed_instance_types": [p4d, p5]}
    raw["teams"]["ProdExp2"] |= {"entitlement": {p4d: 2}, "allowed_instance_types": [p4d, p5]}
    raw["prices"][p5] = {"on_demand_usd_per_hour": 55.0}  # the teams have budgets: every usable type priced
    config = SharesConfig.model_validate(raw)
    records = [
        record("r1", "ProdExp1", "RUNNING", 3, NOW - 5000, held=NOW - 4000, started=NOW - 3900),
        record("r2", "ProdExp2", "RUNNING", 1, NOW - 3000, held=NOW - 2500, started=NOW - 2400),
        record("w1", "ProdExp2", "RUNNABLE", 2, NOW - 1000),
    ]

    def stored(instance_type: str, count: int, timeout: int) -> ServiceJobRequest:
        payload = {"ResourceConfig": {"InstanceType": instance_type, "InstanceCount": count}}
        return ServiceJobRequest(
            job_name="j",
            job_queue=QUEUE,
            service_job_type="SAGEMAKER_TRAINING",
            service_request_payload=json.dumps(payload),
            timeout_config={"attemptDurationSeconds": timeout},
        )

    # r1 started 3900 s ago with a 5100 s limit (ends in 1200 s); r2 2400 s ago with 2700 s (in 300 s).
    requests = {
        ARN + "r1": stored(p4d, 3, 5100),
        ARN + "r2": stored(p4d, 1, 2700),
        ARN + "w1": stored(p4d, 2, 600),
    }
    policy = QueuePolicy(
        QueueKind.FAIRSHARE, 6, weights={"ProdExp1": 1.0, "ProdExp2": 1.0}, decay_seconds=3600
    )
    live, history = live_from_records(records, policy, NOW)
    twin = Twin(QUEUE, NOW, records, {}, policy, live, history, config, requests.get)

    report = json.loads(json.dumps(why_json(why_report(twin, records[2], samples=20))))

    held = {f["code"]: f["text"] for f in report["heldBackBy"]}
    assert (
        "capacity frees by 1970-01-12T14:06:40+00:00 at the latest (in 20m00s): r1 reaches its time limit"
        in (held["time_limit"])
    )
    sooner = {f["code"]: f["text"] for f in report["startSooner"]}
    assert sooner["other_instance_type"] == (
        f"the same job on {p5} would fit now: 2 instance(s), 16 GPUs as asked; 2 of that type are free"
    )
    # Without the stored requests nothing is claimed: no time limit, no instance type to move from.
    bare = why_json(why_report(replace(twin, request_of=lambda _arn: None), records[2], samples=20))
    assert "time_limit" not in [f["code"] for f in bare["heldBackBy"]]
    assert "other_instance_type" not in [f["code"] for f in bare["startSooner"]]
