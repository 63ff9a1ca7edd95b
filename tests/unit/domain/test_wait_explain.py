"""`explain_wait`'s time limit pending and another instance type with room, from job records."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from shareplane.domain.config.shares import SharesConfig
from shareplane.domain.explain.record import JobRecord
from shareplane.domain.explain.wait import (
    HeldRun,
    InstanceTypes,
    QueuePolicy,
    TypeRoom,
    explain_wait,
    instance_types_for,
    live_from_records,
    requested_resources,
    time_limit_ends_at,
)
from shareplane.domain.forecast.start_forecast import QueueKind
from shareplane.domain.jobs.lifecycle import (
    CapacityUsage,
    HistoryEntry,
    JobState,
    JobStatus,
    ObservationKind,
    gpus_per_instance,
)
from shareplane.domain.jobs.service_job_request import ServiceJobRequest

from tests.properties import examples

REPO = Path(__file__).resolve().parents[3]
NOW = 1_000_000.0
P4D, P5, G5 = "ml.p4d.24xlarge", "ml.p5.48xlarge", "ml.g5.12xlarge"


def config(mode: str = "fairshare", **team1: Any) -> SharesConfig:
    """The repo's config with three GPU types: p4d (4), p5 (2) and g5.12xlarge (4 GPUs each, 4)."""
    raw = yaml.safe_load((REPO / "config" / "shares.yaml").read_text())
    raw["mode"] = mode
    raw["instance_types"] = {P4D: {"capacity": 4}, P5: {"capacity": 2}, G5: {"capacity": 4}}
    raw["teams"]["ProdExp1"] |= {"entitlement": {P4D: 2, P5: 1}, "allowed_instance_types": [P4D, P5, G5]}
    raw["teams"]["ProdExp1"] |= team1
    raw["teams"]["ProdExp2"] |= {"entitlement": {P4D: 2, G5: 4}, "allowed_instance_types": [P4D, G5]}
    raw.pop("budgets", None)
    return SharesConfig.model_validate(raw)


def record(
    name: str,
    share: str,
    status: str,
    instances: int,
    created: float,
    *,
    held: float | None = None,
    started: float | None = None,
    instance_type: str | None = None,
) -> JobRecord:
    """A job record as `shareplane jobs` reads it (times in epoch ms)."""

    def entry(status: JobStatus, at: float) -> HistoryEntry:
        return HistoryEntry("", status, int(at * 1000), None, ObservationKind.STATE_CHANGE, "")

    history = [entry(JobStatus.SUBMITTED, created), entry(JobStatus.RUNNABLE, created)]
    if held is not None:
        history.append(entry(JobStatus.SCHEDULED, held))
    state = JobState(
        job_arn=f"arn:aws:batch:us-east-1:111122223333:service-job/{name}",
        status=JobStatus(status),
        seq="s",
        job_id=name,
        job_name=name,
        share_identifier=share,
        scheduling_priority=10,
        created_at=int(created * 1000),
        started_at=None if started is None else int(started * 1000),
        instance_type=instance_type,
        capacity_usage=(CapacityUsage("NUM_INSTANCES", float(instances)),),
    )
    return JobRecord(state, tuple(history))


def request(
    instance_type: str = P4D, count: int = 2, *, timeout: int | None = 3600, spot: bool = False
) -> ServiceJobRequest:
    """A SubmitServiceJob request as the submit path stores it."""
    stopping = {"MaxRuntimeInSeconds": 7200} | ({"MaxWaitTimeInSeconds": 9000} if spot else {})
    payload = {
        "ResourceConfig": {"InstanceType": instance_type, "InstanceCount": count},
        "StoppingCondition": stopping,
        "EnableManagedSpotTraining": spot,
    }
    return ServiceJobRequest(
        job_name="w1",
        job_queue="search-p4d-queue",
        service_job_type="SAGEMAKER_TRAINING",
        service_request_payload=json.dumps(payload),
        timeout_config=None if timeout is None else {"attemptDurationSeconds": timeout},
    )


FAIR = QueuePolicy(QueueKind.FAIRSHARE, 4, weights={"ProdExp1": 1.0, "ProdExp2": 1.0}, decay_seconds=3600)
#: r1 holds 3 of the 4 instances and r2 the last one; w1 waits for 2.
RECORDS = [
    record(
        "r1", "ProdExp1", "RUNNING", 3, NOW - 5000, held=NOW - 4000, started=NOW - 3900, instance_type=P4D
    ),
    record(
        "r2", "ProdExp2", "RUNNING", 1, NOW - 3000, held=NOW - 2500, started=NOW - 2400, instance_type=P4D
    ),
    record("w1", "ProdExp2", "RUNNABLE", 2, NOW - 1000),
]


def codes(findings) -> list[str]:
    return [f.code for f in findings]


# ------------------------------------------------------------------------------ the request's limits
def test_the_requests_time_limit_is_batchs_timeout_else_sagemakers_stopping_condition() -> None:
    assert requested_resources(request(timeout=3600)) == (P4D, 2, 3600.0)
    assert requested_resources(request(timeout=None)) == (P4D, 2, 7200.0)
    # A managed spot job may wait for spot capacity as well: MaxWaitTimeInSeconds bounds it.
    assert requested_resources(request(timeout=None, spot=True)) == (P4D, 2, 9000.0)
    assert requested_resources(None) == (None, None, None)
    assert requested_resources(replace(request(timeout=None), service_request_payload="not json")) == (
        None,
        None,
        None,
    )


def test_the_limit_counts_from_the_holding_attempts_start_and_not_before_it_started() -> None:
    running = RECORDS[0]
    assert time_limit_ends_at(running, 3600) == NOW - 3900 + 3600
    assert time_limit_ends_at(running, None) is None
    # SCHEDULED, not started: its clock has not begun, so its limit bounds nothing yet.
    assert time_limit_ends_at(record("s", "ProdExp1", "SCHEDULED", 1, NOW - 50, held=NOW - 10), 3600) is None
    # startedAt of an earlier attempt (before this hold began) is not this attempt's start.
    stale = record("p", "ProdExp1", "SCHEDULED", 1, NOW - 900, held=NOW - 10, started=NOW - 800)
    assert time_limit_ends_at(stale, 3600) is None
    # A waiting job holds nothing.
    assert time_limit_ends_at(RECORDS[2], 3600) is None


def test_the_history_holds_every_submission_since_the_oldest_record() -> None:
    old = record("old", "ProdExp1", "SUCCEEDED", 1, NOW - 20 * 86400)
    _, history = live_from_records([*RECORDS, old], FAIR, NOW)
    # Arrivals are not cut here (the forecast's lookback does that), and they are known complete
    # from the oldest record on: the rate is measured over no more than that.
    assert [a.at for a in history.arrivals][0] == NOW - 20 * 86400
    assert len(history.arrivals) == len(RECORDS) + 1
    assert history.arrivals_since == NOW - 20 * 86400
    assert live_from_records([], FAIR, NOW)[1].arrivals_since == NOW


# --------------------------------------------------------------------------------- a time limit pending
def test_capacity_frees_by_the_time_limit_of_the_last_job_it_needs() -> None:
    live, _ = live_from_records(RECORDS, FAIR, NOW)
    # r2 (1 instance) reaches its limit in 300 s, r1 (3) in 1200 s: w1 needs 2, so r1's limit is the bound.
    runs = {"r1": HeldRun(P4D, NOW + 1200), "r2": HeldRun(P4D, NOW + 300)}
    explanation = explain_wait(live, "w1", held_runs=runs)
    (limit,) = [f for f in explanation.held_back_by if f.code == "time_limit"]
    assert "capacity frees by 1970-01-12T14:06:40+00:00 at the latest (in 20m00s)" in limit.text
    assert "r1 reaches its time limit" in limit.text and "1 job(s) before it" in limit.text
    # One instance needed: r2's own limit is enough.
    one = live_from_records([*RECORDS[:2], record("w1", "ProdExp2", "RUNNABLE", 1, NOW - 1000)], FAIR, NOW)[0]
    (limit,) = [f for f in explain_wait(one, "w1", held_runs=runs).held_back_by if f.code == "time_limit"]
    assert "(in 5m00s): r2 reaches its time limit" in limit.text and "before it" not in limit.text


def test_no_time_limit_is_claimed_without_the_data() -> None:
    live, _ = live_from_records(RECORDS, FAIR, NOW)
    assert "time_limit" not in codes(explain_wait(live, "w1").held_back_by)
    # r2's limit alone frees 1 of the 2 instances w1 needs; r1's limit is unknown.
    partial = {"r1": HeldRun(P4D, None), "r2": HeldRun(P4D, NOW + 300)}
    assert "time_limit" not in codes(explain_wait(live, "w1", held_runs=partial).held_back_by)
    # Jobs on another instance type free nothing the job can use.
    other = {"r1": HeldRun(P5, NOW + 100), "r2": HeldRun(P4D, NOW + 300)}
    types = instance_types_for(config(), "ProdExp2", P4D, RECORDS[:2])
    assert "time_limit" not in codes(
        explain_wait(live, "w1", held_runs=other, instance_types=types).held_back_by
    )


def test_a_job_that_fits_now_has_no_time_limit_finding() -> None:
    live, _ = live_from_records(RECORDS[1:], FAIR, NOW)
    explanation = explain_wait(live, "w1", held_runs={"r2": HeldRun(P4D, NOW + 300)})
    assert codes(explanation.held_back_by) == ["next"]


# ------------------------------------------------------------------------------ another instance type
def test_the_same_gpus_on_another_allowed_type_with_room_is_offered() -> None:
    cfg = config()
    live, _ = live_from_records(RECORDS, FAIR, NOW)
    # ProdExp2 may use p4d and g5.12xlarge: 2 x p4d = 16 GPUs = 4 x g5.12xlarge, and 4 g5 are free.
    types = instance_types_for(cfg, "ProdExp2", P4D, RECORDS[:2])
    assert types is not None and [r.instance_type for r in types.rooms] == [G5, P4D]
    sooner = [
        f for f in explain_wait(live, "w1", instance_types=types).sooner if f.code == "other_instance_type"
    ]
    assert [f.text for f in sooner] == [
        f"the same job on {G5} would fit now: 4 instance(s), 16 GPUs as asked; 4 of that type are free"
    ]
    # ProdExp1 may use p5 too (8 GPUs each: 2 instances, both free).
    mine = [
        f.text
        for f in explain_wait(
            live_from_records([*RECORDS[:2], record("w1", "ProdExp1", "RUNNABLE", 2, NOW - 1000)], FAIR, NOW)[
                0
            ],
            "w1",
            instance_types=instance_types_for(cfg, "ProdExp1", P4D, RECORDS[:2]),
        ).sooner
        if f.code == "other_instance_type"
    ]
    assert any(f"on {P5} would fit now: 2 instance(s), 16 GPUs" in t for t in mine)
    assert any(f"on {G5} would fit now: 4 instance(s)" in t for t in mine)


def test_no_other_type_when_it_is_full_not_allowed_too_large_or_the_job_fits() -> None:
    cfg = config(max_instance_count=3)
    p5_busy = record("r5", "ProdExp2", "RUNNING", 2, NOW - 100, held=NOW - 90, instance_type=P5)
    w = record("w1", "ProdExp1", "RUNNABLE", 2, NOW - 1000)
    live = live_from_records([*RECORDS[:2], w], FAIR, NOW)[0]
    types = instance_types_for(cfg, "ProdExp1", P4D, [*RECORDS[:2], p5_busy])
    assert types is not None and types.room(P5) == TypeRoom(P5, 8, 0, None)
    # p5 is full; 4 x g5.12xlarge is past ProdExp1's max_instance_count of 3.
    assert "other_instance_type" not in codes(explain_wait(live, "w1", instance_types=types).sooner)
    # A type the team may not use is never a room.
    assert P5 not in [r.instance_type for r in instance_types_for(cfg, "ProdExp2", P4D, RECORDS[:2]).rooms]
    # A job that fits on its own type is not sent elsewhere.
    fits = live_from_records([RECORDS[1], w], FAIR, NOW)[0]
    assert explain_wait(fits, "w1", instance_types=types).sooner == ()


def test_quota_mode_offers_only_types_the_share_has_a_limit_and_room_on() -> None:
    cfg = config("quota", quota={"strategy": "RESERVE"})
    held = record("r5", "ProdExp1", "RUNNING", 1, NOW - 100, held=NOW - 90, instance_type=P5)
    types = instance_types_for(cfg, "ProdExp1", P4D, [*RECORDS[:2], held])
    assert types is not None
    # No entitlement of g5 (admission would refuse it); p5's limit of 1 is used by its own job.
    assert [r.instance_type for r in types.rooms] == [P4D]
    borrowing = instance_types_for(config("quota"), "ProdExp1", P4D, RECORDS[:2])
    assert borrowing is not None and borrowing.room(P5) == TypeRoom(P5, 8, 2, None)


def test_a_type_the_config_lacks_gives_no_rooms() -> None:
    assert instance_types_for(config(), "ProdExp1", "ml.p3.2xlarge", RECORDS) is None
    assert instance_types_for(config(), "nobody", P4D, RECORDS) is None


@settings(max_examples=examples(60), deadline=None)
@given(
    asked=st.integers(1, 4),
    own=st.sampled_from([P4D, P5, G5]),
    free=st.fixed_dictionaries({P4D: st.integers(0, 8), P5: st.integers(0, 8), G5: st.integers(0, 8)}),
    limit=st.none() | st.integers(1, 8),
)
def test_an_offered_type_keeps_the_gpus_and_fits_in_its_room(asked, own, free, limit) -> None:
    rooms = tuple(TypeRoom(t, gpus_per_instance(t), n) for t, n in free.items())
    types = InstanceTypes(own, gpus_per_instance(own), limit, rooms)
    live, _ = live_from_records([record("w1", "ProdExp1", "RUNNABLE", asked, NOW - 10)], FAIR, NOW)
    explanation = explain_wait(live, "w1", instance_types=types)
    offered = [f for f in explanation.sooner if f.code == "other_instance_type"]
    fits_own = free[own] >= asked and asked <= 4
    if fits_own:
        assert offered == []
    for f in offered:
        kind = f.text.split(" on ", 1)[1].split(" ", 1)[0]
        count = int(f.text.split("now: ", 1)[1].split(" ", 1)[0])
        assert kind != own and count * gpus_per_instance(kind) == asked * gpus_per_instance(own)
        assert count <= free[kind] and (limit is None or count <= limit)


# ------------------------------------------------------------------------- a FIFO queue has no shares
def test_a_fifo_queues_reasons_name_no_share() -> None:
    # GIVEN the CPU FIFO queue: one job holds its 4 instances, two wait (CPU jobs carry no share)
    records = [
        record("hold", "", "RUNNING", 4, NOW - 5000, held=NOW - 4000, started=NOW - 3900),
        record("first", "", "RUNNABLE", 1, NOW - 1000),
        record("second", "", "RUNNABLE", 1, NOW - 500),
    ]
    live, _ = live_from_records(records, QueuePolicy(QueueKind.FIFO, 4), NOW)
    # WHEN the second waiting job is explained
    why = explain_wait(live, "second")
    # THEN the job ahead of it is named by the queue's order, and capacity by jobs without a share
    found = {f.code: f.text for f in why.held_back_by}
    assert found["ahead_in_share"] == "1 job(s) submitted earlier go first (no shares: first in, first out)"
    assert found["capacity_held"] == "it needs 1 instances and 0 are free; held by jobs without a share 4"
    assert "share  " not in " ".join(found.values()) and "by  " not in " ".join(found.values())
