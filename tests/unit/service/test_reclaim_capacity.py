"""Reclaim end to end over fakes: triggers, switches, budgets, audit, alerts, and re-delivery in any order."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shareplane.adapters.batch_service_jobs import described_job
from shareplane.domain.config.failure_rules import FailureClass
from shareplane.domain.config.shares import SchedulingMode, Tier
from shareplane.domain.failures.requeue import TAG_DISPLACED_BY, TAG_RECLAIMED_AT
from shareplane.domain.jobs.lifecycle import ObservationKind
from shareplane.domain.reclaim.plan import SKIP_JOB_BUDGET, SKIP_RUN_BUDGET
from shareplane.domain.reclaim.reason import beneficiary_of, stop_reason
from shareplane.schemas.reclaim import MANUAL_RUN, RECLAIM_DUE
from shareplane.service.handle_failure import handle_message as handle_failure
from shareplane.service.reclaim_capacity import handle_message, waiting_job

from tests.fakes.failure_world import World, failed_event, failed_job
from tests.fakes.reclaim_world import (
    AFTER,
    T0,
    ReclaimWorld,
    borrowed_cluster,
    reclaim_config,
    runnable_event,
    service_job,
    tick,
)
from tests.properties import examples

DUE = T0 + AFTER


def world(**kw: Any) -> ReclaimWorld:
    w = ReclaimWorld(**kw)
    borrowed_cluster(w)
    return w


def stopped(w: ReclaimWorld) -> list[str]:
    return [job_id for job_id, _ in w.batch.terminated]


# ------------------------------------------------------------------------------------------ one reclaim
def test_a_highpri_job_past_its_threshold_stops_the_borrowed_victim_that_loses_least() -> None:
    # GIVEN ProdExp2 borrows two instances and a HIGHPRI ProdExp1 job has waited its 300 s
    w = world()
    # WHEN the schedule ticks at the threshold
    outcome = handle_message(tick(DUE), w.ports)
    # THEN the borrowed job with the newest checkpoint is stopped, with a reason naming the waiting job
    assert outcome.stopped == {"hi": ["p2-5"]}
    ((victim, reason),) = w.batch.terminated
    assert victim == "p2-5" and beneficiary_of(reason) == "hi"
    assert (
        reason
        == "shareplane reclaim: stopped for hi (name-hi, HIGHPRI, waited 300 s); resumes from checkpoint"
    )
    # AND one audit record says who waited, for how long, and what the victim loses
    ((record),) = w.ledger.decisions.values()
    assert (record["team"], record["tier"], record["waitedSeconds"], record["applied"]) == (
        "ProdExp1",
        "HIGHPRI",
        300,
        True,
    )
    (v,) = record["victims"]
    assert (v["team"], v["tier"], v["borrowed"], v["checkpointAgeSeconds"]) == (
        "ProdExp2",
        "LOWPRI",
        True,
        360,
    )
    assert v["lostInstanceMinutes"] == 6.0 and v["gpuHoursLost"] == 0.8  # 1 instance x 360 s, 8 GPUs
    # AND the waiting job's and the victim's histories say so
    kinds = {(key.split("|")[0].rsplit("/", 1)[-1], e.kind) for key, e in w.ledger.history.items()}
    assert kinds == {("hi", ObservationKind.RECLAIM), ("p2-5", ObservationKind.RECLAIMED)}
    # AND the victim's team is alerted, with why; the routing attributes name its team and tier
    ((subject, body, attributes),) = w.alerts.sent
    assert attributes == {
        "severity": "warning",
        "team": "ProdExp2",
        "tier": "LOWPRI",
        "share": "ProdExp2",
        "kind": "reclaim",
        "queue": "search-p4d-queue",
    }
    assert body["team"] == "ProdExp2" and body["beneficiaryTier"] == "HIGHPRI" and "stopped for" in subject
    # AND the metrics count it per team and tier
    assert w.metrics.count("Reclaims") == 1 and w.metrics.count("ReclaimVictims") == 1
    assert w.metrics.count("ReclaimGpuHoursLost") == pytest.approx(0.8)


def test_only_candidate_victims_have_their_checkpoints_read() -> None:
    w = world()
    handle_message(tick(DUE), w.ports)
    # LOWPRI jobs are candidates for a HIGHPRI waiter; every read is under a LOWPRI job's prefix.
    assert w.checkpoints.reads and all("/ckpt/p" in uri for uri in w.checkpoints.reads)


def test_a_quiet_tick_reads_no_running_job() -> None:
    # GIVEN nobody has waited past a threshold
    w = world()
    w.batch.describe = lambda job_id: pytest.fail("described a job")  # type: ignore[method-assign]
    # THEN a tick before the threshold lists RUNNABLE jobs and stops there
    assert handle_message(tick(T0 + 10), w.ports).result == "no waiting job is due"


# ------------------------------------------------------------------------------------- triggers, switches
CASES = [
    (
        "the kill switch stops everything",
        {"enabled": False},
        tick(DUE),
        [],
        "disabled (ReclaimEnabled=false)",
    ),
    ("a manual run decides at the clock's time", {}, MANUAL_RUN, ["p2-5"], "stopped 1 for 1"),
    ("a tick before the threshold stops nothing", {}, tick(DUE - 60), [], "no waiting job is due"),
]


@pytest.mark.parametrize(("case", "kw", "message", "expected", "result"), CASES, ids=[c[0] for c in CASES])
def test_switches_and_triggers(
    case: str, kw: dict[str, Any], message: Any, expected: list[str], result: str
) -> None:
    w = world(**kw)
    w.clock.now = DUE + 1
    outcome = handle_message(message, w.ports)
    assert stopped(w) == expected, case
    assert outcome.result == result


def test_dry_run_audits_each_plan_once_and_stops_nothing() -> None:
    w = world(dry_run=True)
    for at in (DUE, DUE, DUE):
        outcome = handle_message(tick(at), w.ports)
    assert outcome.planned == {"hi": ["p2-5"]} and stopped(w) == []
    ((record),) = w.ledger.decisions.values()
    assert record["dryRun"] is True and not w.alerts.sent and w.ledger.per_day == {}


def test_a_quota_share_queue_is_left_to_batch_preemption() -> None:
    w = world()
    w.config = w.config.model_copy(update={"mode": SchedulingMode.QUOTA})
    assert "preempts" in handle_message(tick(DUE), w.ports).result and stopped(w) == []


def test_a_runnable_highpri_job_is_re_checked_when_it_becomes_due() -> None:
    # GIVEN the HIGHPRI job's RUNNABLE event, sent when it was created
    w = world()
    event = runnable_event(w.batch.jobs["hi"])
    # WHEN it is handled: nothing is due yet, so the job is re-checked at its threshold
    handle_message(event, w.ports)
    ((message, delay),) = w.timer.pending
    assert (message["shareplane"], message["jobId"], message["dueAt"], delay) == (
        RECLAIM_DUE,
        "hi",
        DUE,
        AFTER,
    )
    assert stopped(w) == []
    # AND the re-check decides at the due time it carries
    handle_message(message, w.ports)
    assert stopped(w) == ["p2-5"]


def test_a_threshold_past_the_sqs_delay_is_reached_in_hops_of_900_s() -> None:
    w = world(config=reclaim_config())
    w.config = w.config.model_copy(
        update={
            "tiers": {
                **w.config.tiers,
                Tier.HIGHPRI: w.config.tiers[Tier.HIGHPRI].model_copy(update={"reclaim_after_seconds": 2000}),
            }
        }
    )
    handle_message(runnable_event(w.batch.jobs["hi"]), w.ports)
    hops = []
    while w.timer.pending:
        message, delay = w.timer.pending.pop()
        hops.append(delay)
        handle_message(message, w.ports)
    assert hops == [900, 900, 200] and stopped(w) == ["p2-5"]


@pytest.mark.parametrize(
    ("case", "job"),
    [
        ("a MIDPRI job never reclaims", service_job("mid", "ProdExp1", "MIDPRI", "RUNNABLE", created=T0)),
        (
            "a job of another queue is not ours",
            {
                **service_job("x", "ProdExp1", "HIGHPRI", "RUNNABLE", created=T0),
                "jobQueue": "arn:aws:batch:us-east-1:123456789012:job-queue/cpu",
            },
        ),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_runnable_events_that_never_reclaim(case: str, job: dict[str, Any]) -> None:
    w = world()
    handle_message(runnable_event(job), w.ports)
    assert w.timer.pending == [] and stopped(w) == [], case


# ------------------------------------------------------------------------------------------------ budgets
def test_the_per_day_budget_stops_reclaim_for_the_day() -> None:
    w = world()
    day = datetime.fromtimestamp(DUE, UTC).strftime("%Y-%m-%d")
    w.ledger.per_day[day] = w.config.reclaim.max_victims_per_day
    outcome = handle_message(tick(DUE), w.ports)
    assert stopped(w) == [] and outcome.skipped == {"hi": SKIP_RUN_BUDGET}


def test_the_per_job_budget_is_read_from_the_stored_counter() -> None:
    w = world()
    w.ledger.per_job["hi"] = w.config.reclaim.max_victims_per_job
    outcome = handle_message(tick(DUE), w.ports)
    assert stopped(w) == [] and outcome.skipped == {"hi": SKIP_JOB_BUDGET}


def test_a_racing_run_that_overruns_the_budget_is_refused_by_the_ledger() -> None:
    # GIVEN the day's counter moved (another run) between this run's read and its write
    w = world(config=reclaim_config(max_victims_per_day=1))
    real = w.ledger.victims_on
    w.ledger.victims_on = lambda day: 0  # type: ignore[method-assign]
    w.ledger.per_day[datetime.fromtimestamp(DUE, UTC).strftime("%Y-%m-%d")] = 1
    outcome = handle_message(tick(DUE), w.ports)
    assert stopped(w) == [] and "racing" in outcome.skipped["hi"]
    w.ledger.victims_on = real  # type: ignore[method-assign]


def test_the_rate_limit_holds_across_triggers_seconds_apart() -> None:
    # GIVEN two HIGHPRI jobs past their threshold, two borrowed victims, and a rate limit of 1 a window
    w = world(config=reclaim_config(max_victims_per_window=1))
    w.batch.add(service_job("hi-2", "ProdExp1", "HIGHPRI", "RUNNABLE", created=T0))
    # WHEN four triggers come one second apart
    outcomes = [handle_message(tick(DUE + n), w.ports) for n in range(4)]
    # THEN one victim is stopped in the window; the other waiter is told the budget is spent
    assert len(stopped(w)) == 1
    assert outcomes[-1].skipped["hi-2"] == SKIP_RUN_BUDGET
    # AND the next window stops the next victim
    handle_message(tick(DUE + w.config.reclaim.rate_window_seconds), w.ports)
    assert len(stopped(w)) == 2


def test_a_claim_whose_waiting_job_no_longer_waits_is_released_and_nobody_is_stopped_or_told() -> None:
    # GIVEN the waiting job is dispatched between the plan's read and the stop
    w = world()
    describe = w.batch.describe

    def dispatched_after_the_plan(job_id: str) -> Any:
        found = describe(job_id)
        if job_id == "hi" and "hi" in w.ledger.stopping().values():
            w.batch.jobs["hi"]["status"] = "SCHEDULED"
            return describe(job_id)
        return found

    w.batch.describe = dispatched_after_the_plan  # type: ignore[method-assign]
    outcome = handle_message(tick(DUE), w.ports)
    # THEN no victim is stopped, no one is alerted, and the claim is gone with its counters and history
    assert stopped(w) == [] and w.alerts.sent == [] and outcome.released == {"hi": "SCHEDULED"}
    assert w.ledger.decisions == {} and w.ledger.stopping() == {} and w.ledger.history == {}
    assert (
        sum(w.ledger.per_day.values()) == sum(w.ledger.per_window.values()) == w.ledger.victims_for("hi") == 0
    )


def test_an_interrupted_reclaim_whose_waiting_job_was_cancelled_is_released_not_finished() -> None:
    # GIVEN a run died after its claim, before any stop; then the waiting job was cancelled
    w = world(config=reclaim_config(max_victims_per_window=1))
    w.batch.die_on_call = 1
    with pytest.raises(ConnectionError):
        handle_message(tick(DUE), w.ports)
    (claimed,) = w.ledger.stopping()
    w.batch.jobs["hi"]["status"] = "FAILED"
    # WHEN the next tick comes, with another HIGHPRI job waiting
    w.batch.add(service_job("hi-2", "ProdExp1", "HIGHPRI", "RUNNABLE", created=T0))
    outcome = handle_message(tick(DUE + 300), w.ports)
    # THEN the claim is released and nobody is told its victim was stopped for the cancelled job
    assert outcome.released == {"hi": "FAILED"} and w.ledger.victims_for("hi") == 0
    assert w.ledger.stopping().get(claimed) != "hi"
    assert all(beneficiary_of(reason) == "hi-2" for _, reason in w.batch.terminated)
    assert all(body["beneficiary"].endswith("/hi-2") for _, body, _ in w.alerts.sent)


# --------------------------------------------------------------------------------- re-delivery, crashes
def test_a_victim_still_stopping_is_not_stopped_again_and_its_capacity_is_the_waiters() -> None:
    # GIVEN Batch takes a while to stop a job (it is still RUNNING after TerminateServiceJob)
    w = world()
    w.batch.async_stop = True
    handle_message(tick(DUE), w.ports)
    # WHEN the tick is re-delivered, and the next tick comes
    handle_message(tick(DUE), w.ports)
    handle_message(tick(DUE + 300), w.ports)
    # THEN the victim was stopped once, audited once, alerted once
    assert stopped(w) == ["p2-5"] and len(w.ledger.decisions) == 1 and len(w.alerts.sent) == 1


def test_a_run_that_died_after_claiming_is_finished_by_the_next_delivery() -> None:
    # GIVEN the invocation dies on its first TerminateServiceJob (after the claim was written)
    w = world()
    w.batch.die_on_call = 1
    with pytest.raises(ConnectionError):
        handle_message(tick(DUE), w.ports)
    assert not next(iter(w.ledger.decisions.values()))["applied"]
    # WHEN SQS re-delivers the tick
    handle_message(tick(DUE), w.ports)
    # THEN the claimed victim is stopped, once, and announced once
    assert stopped(w) == ["p2-5"] and len(w.alerts.sent) == 1
    assert next(iter(w.ledger.decisions.values()))["applied"]


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    order=st.permutations(range(5)),
    duplicates=st.lists(st.integers(0, 4), max_size=6),
    async_stop=st.booleans(),
)
def test_duplicated_and_reordered_triggers_converge_to_the_same_victims_audits_and_alerts(
    order: list[int], duplicates: list[int], async_stop: bool
) -> None:
    w = world()
    w.batch.async_stop = async_stop
    event = runnable_event(w.batch.jobs["hi"])
    due = {
        "shareplane": RECLAIM_DUE,
        "jobArn": w.batch.jobs["hi"]["jobArn"],
        "jobId": "hi",
        "dueAt": DUE,
        "hopAt": DUE,
    }
    triggers = [event, due, tick(DUE), tick(DUE + 300), tick(DUE + 600)]
    for index in [*order, *duplicates]:
        handle_message(triggers[index], w.ports)
    assert stopped(w) == ["p2-5"]
    ((record),) = w.ledger.decisions.values()
    assert [v["jobId"] for v in record["victims"]] == ["p2-5"] and record["applied"]
    assert [a[2]["share"] for a in w.alerts.sent] == ["ProdExp2"]
    assert sum(1 for e in w.ledger.history.values() if e.kind is ObservationKind.RECLAIMED) == 1


# ------------------------------------------------------------------------------- the failure path's half
def test_the_victims_failed_event_requeues_it_at_once_without_budget_marked_with_whom_it_was_displaced_by() -> (
    None
):
    # GIVEN the FAILED event of a job reclaim terminated
    w = World()
    reason = stop_reason("hi", "name-hi", Tier.HIGHPRI, 300)
    w.batch.add(failed_job("p2-5", reason=reason, terminated=True, share="ProdExp2", priority=10))
    # WHEN the failure path handles it
    outcome = handle_failure(failed_event(w.batch.jobs["p2-5"]), w.ports)
    # THEN it is requeued now (no backoff), spends no budget, and carries the displacement
    assert outcome.result == "requeued"
    (decision,) = w.ledger.items.values()
    assert (decision["class"], decision["delaySeconds"], decision["attempt"]) == (
        FailureClass.RECLAIMED.value,
        0,
        0,
    )
    (submitted,) = w.batch.submits
    assert submitted["tags"][TAG_DISPLACED_BY] == "hi" and TAG_RECLAIMED_AT in submitted["tags"]
    assert '"CheckpointConfig"' in submitted["serviceRequestPayload"]


def test_a_requeued_victim_never_reclaims_from_the_job_that_displaced_it() -> None:
    job = service_job("back", "ProdExp2", "HIGHPRI", "RUNNABLE", tags={TAG_DISPLACED_BY: "older hi"})
    found = waiting_job(described_job(job), reclaim_config(), ReclaimWorld().ledger)
    assert found is not None and found.displaced_by == frozenset({"older", "hi"})


# ------------------------------------------------------------------------------------------ SLO metrics
@pytest.mark.parametrize(
    ("case", "wait", "expected"),
    [
        ("a HIGHPRI job started within its 900 s SLO attains it", 900, "SloAttained"),
        ("a HIGHPRI job started after its SLO misses it", 901, "SloMissed"),
    ],
    ids=lambda v: v if isinstance(v, str) and " " in v else "",
)
def test_the_first_start_counts_toward_the_tiers_wait_slo(case: str, wait: float, expected: str) -> None:
    from shareplane.domain.jobs.lifecycle import JobMetricEvent, JobState, JobStatus
    from shareplane.service.record_state import slo_metric

    state = JobState(
        "arn:aws:batch:us-east-1:123456789012:service-job/x", JobStatus.RUNNING, "s", scheduling_priority=90
    )
    found = slo_metric([JobMetricEvent("QueueWaitSeconds", wait, "Seconds")], state, reclaim_config())
    assert found is not None and found.name == expected, case
    assert slo_metric([JobMetricEvent("Transitions", 1, "Count")], state, reclaim_config()) is None


def test_in_the_team_layout_the_tier_comes_from_the_described_priority() -> None:
    # GIVEN one share identifier per team: ListServiceJobs summaries carry no schedulingPriority
    w = ReclaimWorld(config=reclaim_config().model_copy(update={"share_layout": "team"}))
    borrowed_cluster(w)
    for job in w.batch.jobs.values():
        job["shareIdentifier"] = job["shareIdentifier"].replace("LOWPRI", "").replace("HIGHPRI", "")
    # THEN the HIGHPRI job past its threshold is still found (by DescribeServiceJob) and reclaims
    assert handle_message(tick(DUE), w.ports).stopped == {"hi": ["p2-5"]}


def test_an_event_without_priority_or_tiered_share_is_re_checked_at_the_shortest_threshold() -> None:
    w = world()
    job = {**w.batch.jobs["hi"], "shareIdentifier": "ProdExp1"}
    event = runnable_event(job)
    del event["detail"]["schedulingPriority"]
    handle_message(event, w.ports)
    ((message, delay),) = w.timer.pending
    assert (message["dueAt"], delay) == (DUE, AFTER)
