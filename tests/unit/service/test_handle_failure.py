"""The failure path with fakes: requeue, alert, duplicates, storm guard, refusals, escalation."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shareplane.domain.alerts.alert import STALE_CLAIM_SECONDS
from shareplane.domain.errors import InvalidInputError
from shareplane.domain.failures.record import REQUEUE_DUE
from shareplane.domain.failures.requeue import TAG_FAILURES, TAG_ORIGIN, TAG_SPOT, client_token
from shareplane.domain.jobs.lifecycle import JobState, JobStatus
from shareplane.service.handle_failure import handle_message
from shareplane.service.watch_jobs import WatchReport, escalate, read_tick

from tests.conftest import load_event
from tests.fakes.alerts import SenderDied
from tests.fakes.failure_world import PAYLOAD, QUEUE_ARN, World, failed_event, failed_job, shares_config
from tests.properties import examples

#: When failed_job()'s job stopped: the time its FAILED event is decided at.
STOPPED_AT_MS = 1773720900000

CUDA_OOM = (
    "Received status from SageMaker: AlgorithmError: ExecuteUserScriptError:\nExitCode 1\nErrorMessage "
    '"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.22 GiB"'
)


def deliver_due(world: World) -> list[Any]:
    """Let every delayed message arrive (time moves past its delay)."""
    outcomes = []
    while world.timer.pending:
        message, delay = world.timer.pending.pop(0)
        world.clock.now += delay
        outcomes.append(handle_message(message, world.ports))
    return outcomes


def test_an_internal_error_is_requeued_with_the_same_payload_share_priority_and_checkpoint() -> None:
    # GIVEN a FAILED job that hit a SageMaker internal error on its first failure
    world = World()
    job = world.batch.add(failed_job(priority=90, share="ProdExp1"))
    # WHEN the FAILED event arrives, and the backoff delay passes
    first = handle_message(failed_event(job), world.ports)
    assert first.result.startswith("requeue due in") and world.batch.submits == []
    (due,) = deliver_due(world)
    # THEN exactly one SubmitServiceJob resubmits it unchanged apart from name, tags and token
    (params,) = world.batch.submits
    assert due.result == "requeued" and due.new_job_arn == world.batch.tokens[params["clientToken"]]
    assert json.loads(params["serviceRequestPayload"]) == PAYLOAD  # CheckpointConfig included
    assert params["jobQueue"] == QUEUE_ARN and params["shareIdentifier"] == "ProdExp1"
    assert params["schedulingPriority"] == 90
    assert params["retryStrategy"] == job["retryStrategy"] and params["timeoutConfig"] == job["timeoutConfig"]
    assert params["jobName"] == "name-job-1-rq1"
    assert params["tags"]["team"] == "ProdExp1" and params["tags"][TAG_ORIGIN] == "job-1"
    assert params["tags"][TAG_FAILURES] == "1"
    assert params["clientToken"] == client_token("job-1", "1.0")
    assert world.metrics.count("Requeues") == 1 and world.metrics.count("FailuresByClass") == 1
    assert world.alerts.sent == []


def test_a_spot_job_interrupted_again_and_again_is_requeued_on_demand_keeping_its_checkpoint() -> None:
    # GIVEN a job whose chain already saw two spot interruptions (the config switches after three)
    world = World()
    job = world.batch.add(
        failed_job(reason="Received status from SageMaker: MaxWaitTimeExceeded", tags={TAG_SPOT: "2"})
    )
    world.training.jobs[job["latestAttempt"]["serviceResourceId"]["value"].rsplit("/", 1)[-1]] = {
        "TrainingJobStatus": "Stopped",
        "SecondaryStatus": "MaxWaitTimeExceeded",
    }
    # WHEN it fails and the delay passes
    handle_message(failed_event(job), world.ports)
    deliver_due(world)
    # THEN the resubmission runs on demand: the mutations are applied, the checkpoint is kept
    (params,) = world.batch.submits
    payload = json.loads(params["serviceRequestPayload"])
    assert payload["EnableManagedSpotTraining"] is False
    assert "MaxWaitTimeInSeconds" not in payload["StoppingCondition"]
    assert payload["CheckpointConfig"] == PAYLOAD["CheckpointConfig"]
    assert params["tags"][TAG_SPOT] == "3" and params["tags"][TAG_FAILURES] == "0"


def test_the_budget_carries_over_the_chain_and_ends_in_one_alert() -> None:
    # GIVEN a MIDPRI job whose chain already used its whole failure budget (3)
    world = World()
    job = world.batch.add(failed_job(tags={TAG_FAILURES: "3", TAG_ORIGIN: "job-0"}))
    # WHEN it fails once more
    outcome = handle_message(failed_event(job), world.ports)
    # THEN it is not requeued; one alert says why
    assert outcome.decision == "alert" and world.batch.submits == [] and world.timer.pending == []
    ((subject, body, attributes),) = world.alerts.sent
    assert body["class"] == "internal_error" and body["attempt"] == 4 and "budget" in body["why"]
    # team and tier from the config's mapping of the job's share (tier: its priority, on a team share)
    assert attributes == {
        "severity": "critical",
        "team": "ProdExp1",
        "tier": "MIDPRI",
        "share": "ProdExp1",
        "kind": "failure",
        "queue": "search-p4d-queue",
    }
    assert len(subject) <= 100 and subject.isascii()


@given(
    copies=st.lists(st.sampled_from(["batch", "sagemaker", "due"]), min_size=1, max_size=12),
    due_copies=st.integers(min_value=1, max_value=4),
)
@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_any_number_of_duplicate_deliveries_in_any_order_submit_exactly_once(
    copies: list[str], due_copies: int
) -> None:
    # GIVEN a failed job, and its FAILED event, the training job's Failed event and the delayed
    # requeue-due message, each delivered any number of times in any order
    world = World()
    job = world.batch.add(failed_job())
    tj_arn = job["latestAttempt"]["serviceResourceId"]["value"]
    world.store.links[tj_arn] = job["jobArn"]
    sagemaker_event = {
        "detail-type": "SageMaker Training Job State Change",
        "source": "aws.sagemaker",
        "detail": {"TrainingJobArn": tj_arn, "TrainingJobStatus": "Failed"},
    }
    handle_message(failed_event(job), world.ports)
    ((due_message, delay),) = world.timer.pending
    world.timer.pending.clear()
    world.clock.now += delay
    stream = copies + ["due"] * due_copies
    # WHEN every copy is handled
    for kind in stream:
        message = {"batch": failed_event(job), "sagemaker": sagemaker_event, "due": due_message}[kind]
        handle_message(message, world.ports)
    # THEN Batch saw exactly one SubmitServiceJob, and nothing is left waiting
    assert len(world.batch.submits) == 1
    assert world.timer.pending == []
    assert world.metrics.count("FailuresByClass") == 1


def test_a_failure_storm_sends_one_digest_and_stops_requeueing() -> None:
    # GIVEN a share whose jobs keep failing with internal errors (the guard allows 10 per 600 s)
    world = World()
    outcomes = []
    for i in range(14):
        # each job fails 5 s after the previous one (the events' detail times say so)
        job = world.batch.add({**failed_job(f"job-{i}"), "stoppedAt": STOPPED_AT_MS + 5000 * i})
        world.clock.now += 5
        outcomes.append(handle_message(failed_event(job), world.ports))
    # THEN the first ten are requeued, the eleventh sends the one digest, the rest are ignored
    assert [o.decision for o in outcomes] == ["requeue"] * 10 + ["alert"] + ["ignore"] * 3
    ((subject, body, attributes),) = world.alerts.sent
    assert attributes["kind"] == "storm" and attributes["severity"] == "critical"
    assert body["failureCount"] == 11 and len(body["failures"]) == 11
    assert {f["job"].rsplit("/", 1)[-1] for f in body["failures"]} == {f"job-{i}" for i in range(11)}
    assert "storm" in subject


def test_an_unknown_failure_alerts_once_and_is_not_retried() -> None:
    # GIVEN a failure text no rule knows
    world = World()
    job = world.batch.add(failed_job(reason="Received status from SageMaker: Quantum flux misaligned"))
    # WHEN its FAILED event is delivered three times
    outcomes = [handle_message(failed_event(job), world.ports) for _ in range(3)]
    # THEN one alert, no requeue
    assert [o.decision for o in outcomes] == ["alert"] * 3
    assert len(world.alerts.sent) == 1 and world.batch.submits == [] and world.timer.pending == []
    body = world.alerts.sent[0][1]
    assert body["class"] == "unknown" and body["rule"] == "no-rule-matched"
    assert "Quantum flux misaligned" in body["reason"]
    assert body["logs"].startswith("https://console.aws.amazon.com/cloudwatch/home?region=us-east-1#logsV2:")


def test_a_cuda_oom_alerts_once_with_the_fix_and_a_logs_link() -> None:
    world = World()
    job = world.batch.add(failed_job(reason=CUDA_OOM))
    handle_message(failed_event(job), world.ports)
    handle_message(failed_event(job), world.ports)
    ((subject, body, attributes),) = world.alerts.sent
    assert body["class"] == "gpu_oom" and "batch size" in body["fix"]
    assert "TrainingJobs$3FlogStreamNameFilter$3DAWSBatchjob-1" in body["logs"]
    assert world.batch.submits == []


def test_batch_refusing_the_requeue_becomes_an_alert_with_its_message() -> None:
    # GIVEN Batch refuses the resubmission
    world = World()
    world.batch.refuse = "shareIdentifier ProdExp1 exceeds the 500 active share identifiers"
    job = world.batch.add(failed_job())
    handle_message(failed_event(job), world.ports)
    # WHEN the requeue is due
    (outcome,) = deliver_due(world)
    # THEN no crash: one alert carrying Batch's words, and the decision is settled
    assert outcome.result.startswith("requeue refused")
    ((subject, body, attributes),) = world.alerts.sent
    assert attributes["kind"] == "requeue_refused" and "500 active share identifiers" in body["reason"]
    assert world.metrics.count("RequeuesRefused") == 1
    handle_message(failed_event(job), world.ports)
    assert len(world.batch.submits) == 1 and len(world.alerts.sent) == 1


def test_a_job_batch_still_owns_is_left_alone() -> None:
    # GIVEN a capacity error: the training job Failed, Batch put the job back to RUNNABLE
    world = World()
    job = world.batch.add({**failed_job(), "status": "RUNNABLE"})
    tj_arn = job["latestAttempt"]["serviceResourceId"]["value"]
    world.store.links[tj_arn] = job["jobArn"]
    event = {
        "detail-type": "SageMaker Training Job State Change",
        "source": "aws.sagemaker",
        "detail": {"TrainingJobArn": tj_arn, "TrainingJobStatus": "Failed"},
    }
    outcome = handle_message(event, world.ports)
    assert "Batch still owns it" in outcome.result
    assert world.batch.submits == [] and world.alerts.sent == [] and world.ledger.items == {}


def test_a_failed_publish_releases_the_claim_so_the_retry_alerts() -> None:
    world = World()
    job = world.batch.add(failed_job(reason=CUDA_OOM))
    world.alerts.fail = True
    with pytest.raises(ConnectionError):
        handle_message(failed_event(job), world.ports)
    world.alerts.fail = False
    handle_message(failed_event(job), world.ports)
    assert len(world.alerts.sent) == 1


def test_repeated_preemption_alerts_once_past_the_threshold() -> None:
    world = World()
    job = world.batch.add({**failed_job(preempted=3), "status": "RUNNABLE"})
    event = {
        "detail-type": "Batch Service Job Preemption Completed",
        "source": "aws.batch",
        "detail": {"preemptedJobArn": job["jobArn"], "status": "RUNNABLE"},
    }
    handle_message(event, world.ports)
    handle_message(event, world.ports)
    ((subject, body, attributes),) = world.alerts.sent
    assert attributes["kind"] == "repeated_preemption" and body["preemptions"] == 3


def test_a_requeue_due_message_for_an_unknown_decision_is_refused() -> None:
    world = World()
    with pytest.raises(Exception, match="names no stored decision"):
        handle_message({"shareplane": REQUEUE_DUE, "decisionKey": "DECISION#nope#1.0"}, world.ports)


def waiting_in_batch(world: World, job: JobState) -> JobState:
    """Hold the table's waiting job in the fake Batch too: UpdateServiceJob refuses a job Batch lacks."""
    world.batch.add(
        {"jobId": job.job_id, "jobArn": job.job_arn, "jobQueue": job.job_queue, "status": "RUNNABLE"}
    )
    return job


def runnable(priority: int, waited: float, now: float) -> JobState:
    return JobState(
        job_arn="arn:aws:batch:us-east-1:123456789012:service-job/wait-1",
        status=JobStatus.RUNNABLE,
        seq="x",
        job_id="wait-1",
        job_queue=QUEUE_ARN,
        share_identifier="ProdExp2",
        scheduling_priority=priority,
        created_at=int((now - waited) * 1000),
    )


@pytest.mark.parametrize(
    ("priority", "waited", "expected"),
    [(50, 3000, None), (50, 3700, 55), (50, 3600 * 30, 89), (10, 14400 * 100, 49), (90, 10**7, 9999)],
    ids=[
        "a MIDPRI job inside its SLO keeps its priority",
        "a MIDPRI job just past its SLO rises one step",
        "a MIDPRI job waiting for a day stops below HIGHPRI",
        "a LOWPRI job waiting forever stops below MIDPRI",
        "a HIGHPRI job may rise to the maximum",
    ],
)
def test_escalation_is_bounded_by_the_next_tier(priority: int, waited: float, expected: int | None) -> None:
    world = World(config=shares_config())
    report = WatchReport()
    job = waiting_in_batch(world, runnable(priority, waited, world.clock.now))
    escalate([job], world.ports, world.clock.now, report)
    assert world.batch.priorities == ([] if expected is None else [("wait-1", expected)])
    if expected is not None:
        (history,) = world.ledger.history.values()
        assert history["toPriority"] == expected and "wait SLO" in history["entry"].reason


# ------------------------------------------------------------------------------------------------
# Decided at the trigger's time, never the clock's
# ------------------------------------------------------------------------------------------------
#: Ninety days: how far the wall clock may sit behind the local stack's virtual one (or ahead of it).
FAR = 90 * 86400.0
WATCH_TICK = load_event("scheduled_event_watch_jobs")
TICK_AT = datetime(2026, 3, 17, 6, 10, tzinfo=UTC).timestamp()


def decide_storm(clocks: list[float | None]) -> tuple[list[Any], list[Any], list[Any]]:
    """Fourteen ProdExp1 jobs failing 5 s apart, the i-th FAILED event handled while the clock reads
    ``clocks[i]`` (None: leave it): the decisions, the delayed messages and the alerts that result."""
    world = World()
    for i, clock in enumerate(clocks):
        job = world.batch.add({**failed_job(f"job-{i}"), "stoppedAt": STOPPED_AT_MS + 5000 * i})
        if clock is not None:
            world.clock.now = clock
        handle_message(failed_event(job), world.ports)
    decisions = [
        (k, r["action"], r["storm"], r["decidedAt"], r["dueAt"])
        for k, r in sorted(world.ledger.items.items())
        if k.startswith("DECISION#")
    ]
    return decisions, world.timer.pending, world.alerts.sent


@given(
    clocks=st.lists(
        st.floats(min_value=STOPPED_AT_MS / 1000 - FAR, max_value=STOPPED_AT_MS / 1000 + FAR),
        min_size=14,
        max_size=14,
    )
)
@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_backoff_and_the_storm_guard_do_not_depend_on_when_the_events_are_handled(
    clocks: list[float],
) -> None:
    # GIVEN a storm's fourteen failures, handled while the clock reads anything (months behind the
    # events, as the wall clock is behind the local stack's virtual one, or hours after, as a replay)
    # THEN every decision, backoff deadline, delayed message and the digest are the same as in step
    assert decide_storm(clocks) == decide_storm([None] * len(clocks))


def test_a_redelivered_failure_event_is_decided_with_the_same_now_however_late_it_comes() -> None:
    # GIVEN a requeue decided from a FAILED event: decided at the job's stoppedAt, due a backoff later
    world = World()
    job = world.batch.add(failed_job())
    first = handle_message(failed_event(job), world.ports)
    ((key, record),) = [(k, r) for k, r in world.ledger.items.items() if k.startswith("DECISION#")]
    ((message, delay),) = world.timer.pending
    assert record["decidedAt"] == STOPPED_AT_MS / 1000 and record["dueAt"] == record["decidedAt"] + delay
    assert message == {
        "shareplane": REQUEUE_DUE,
        "decisionKey": key,
        "jobArn": job["jobArn"],
        "dueAt": record["dueAt"],
    }
    # WHEN the same event is redelivered a day later by the clock
    world.clock.now += 86400
    again = handle_message(failed_event(job), world.ports)
    # THEN it sees the same wait as the first delivery did: nothing is submitted early, nothing re-sent
    assert (
        first.result == f"requeue due in {delay}s" and again.result == f"requeue scheduled, due in {delay}s"
    )
    assert world.batch.submits == [] and len(world.timer.pending) == 1


@pytest.mark.parametrize(
    "clock",
    [STOPPED_AT_MS / 1000 - FAR, STOPPED_AT_MS / 1000 + FAR],
    ids=[
        "a requeue-due message is requeued at its due time while the clock sits months behind it",
        "a requeue-due message replayed from the dead-letter queue months later is requeued once",
    ],
)
def test_a_requeue_due_message_is_decided_at_the_due_time_it_carries(clock: float) -> None:
    world = World()
    job = world.batch.add(failed_job())
    handle_message(failed_event(job), world.ports)
    ((message, _delay),) = world.timer.pending
    world.timer.pending.clear()
    world.clock.now = clock
    outcomes = [handle_message(message, world.ports) for _ in range(2)]
    assert [o.result for o in outcomes] == ["requeued", "duplicate: already applied"]
    assert len(world.batch.submits) == 1 and world.timer.pending == []


def test_a_requeue_due_message_that_carries_no_due_time_waits_by_the_clock() -> None:
    # GIVEN a requeue-due message sent before messages carried their due time
    world = World()
    job = world.batch.add(failed_job())
    handle_message(failed_event(job), world.ports)
    ((message, _delay),) = world.timer.pending
    world.timer.pending.clear()
    due = message.pop("dueAt")
    # WHEN it arrives 30 s early by the clock
    world.clock.now = due - 30
    early = handle_message(message, world.ports)
    # THEN it waits the rest, and the message it sends itself carries the due time
    assert early.result == "requeue due in 30s" and world.batch.submits == []
    ((resent, wait),) = world.timer.pending
    assert (resent["dueAt"], wait) == (due, 30)
    assert handle_message(resent, world.ports).result == "requeued"


def test_a_blocked_queue_alert_is_dated_by_its_event_not_by_the_jobs_creation() -> None:
    # GIVEN the blocked-queue sample: its detail dates only the job's creation, ten minutes earlier
    world = World()
    world.clock.now = 0.0
    event = load_event("batch_service_job_queue_blocked")
    # WHEN it is handled (twice)
    outcomes = [handle_message(event, world.ports) for _ in range(2)]
    # THEN one alert, dated by the event's envelope time (neither the creation time nor the clock)
    assert [o.result for o in outcomes] == ["alerted", "alert already sent"]
    (sent_at,) = [item["sentAt"] for item in world.alert_ledger.items.values() if "sentAt" in item]
    assert sent_at == datetime(2026, 3, 17, 12, 30, 1, tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    ("later", "sent"),
    # Either side of the real ledger's limit: a fake with another limit fails one of the two.
    [(STALE_CLAIM_SECONDS - 1.0, 0), (STALE_CLAIM_SECONDS + 1.0, 1)],
    ids=[
        "a redelivery just inside the stale limit by the clock leaves the claim to the sender that may still publish",
        "a redelivery just past the stale limit by the clock sends the alert the dead sender never did",
    ],
)
def test_an_unconfirmed_alert_claim_goes_stale_by_the_clock_not_by_event_time(
    later: float, sent: int
) -> None:
    # GIVEN a CUDA OOM whose alert sender died mid-publish (its claim is held, never confirmed)
    world = World()
    job = world.batch.add(failed_job(reason=CUDA_OOM))
    world.alerts.die = True
    with pytest.raises(SenderDied):
        handle_message(failed_event(job), world.ports)
    world.alerts.die = False
    # WHEN the same event (same time) is redelivered later by the clock
    world.clock.now += later
    handle_message(failed_event(job), world.ports)
    # THEN the claim is taken over only once it is stale by the clock; the alert stays dated by the event
    assert len(world.alerts.sent) == sent
    if sent:
        (item,) = [i for i in world.alert_ledger.items.values() if "sentAt" in i]
        assert item["sentAt"] == STOPPED_AT_MS / 1000


def test_the_watch_tick_is_run_at_its_time_and_only_a_manual_run_reads_the_clock() -> None:
    world = World()
    world.clock.now = TICK_AT + 90  # delivered after its time: the tick decides, not the clock
    tick = read_tick(WATCH_TICK, world.ports)
    assert (tick.now, tick.tick) == (TICK_AT, "2026-03-17T06:10:00Z")
    world.clock.now = 42.0
    assert read_tick({"shareplane": "watch"}, world.ports).now == 42.0


@pytest.mark.parametrize(
    "body",
    [
        {"what": "else"},
        {k: v for k, v in WATCH_TICK.items() if k != "time"},
        {**WATCH_TICK, "time": "soon"},
        [],
    ],
    ids=[
        "a message that is neither a tick nor a manual run is refused",
        "a Scheduled Event without its time is refused, not run by the clock",
        "a Scheduled Event whose time is not a time is refused",
        "a body that is not an object is refused",
    ],
)
def test_a_watch_message_without_a_tick_time_is_refused_naming_the_field(body: Any) -> None:
    with pytest.raises(InvalidInputError):
        read_tick(body, World().ports)


def test_waits_are_measured_from_the_tick_so_a_redelivered_tick_escalates_the_same_way() -> None:
    # GIVEN a MIDPRI job created 3700 s before the tick (its SLO is 3600 s)
    world = World(config=shares_config())
    job = waiting_in_batch(world, runnable(50, 3700, TICK_AT))
    # WHEN the tick is handled as it arrives (the clock a little behind it, by skew), then
    # redelivered an hour later
    for clock in (TICK_AT - 30, TICK_AT + 3600):
        world.clock.now = clock
        escalate([job], world.ports, read_tick(WATCH_TICK, world.ports).now, WatchReport())
    # THEN both runs raise it one step to the same priority, recorded once in its history
    assert world.batch.priorities == [("wait-1", 55), ("wait-1", 55)]
    (history,) = world.ledger.history.values()
    assert history["entry"].at == int(TICK_AT * 1000) and "waited 3700s" in history["entry"].reason


@pytest.mark.parametrize(
    ("in_batch", "waited", "raised", "alerts"),
    [(89, 3600 * 30, None, 1), (60, 3600 * 3 + 1, 65, 0)],
    ids=[
        "a job Batch already holds at its ceiling is not raised again, and alerts once past twice its SLO",
        "a job Batch already raised goes one step on from Batch's priority, not the table's",
    ],
)
def test_escalation_starts_from_batchs_priority_when_the_table_lags_behind_it(
    in_batch: int, waited: float, raised: int | None, alerts: int
) -> None:
    # GIVEN a MIDPRI job the table still shows at 50, described by this run's reconcile at in_batch
    world = World(config=shares_config())
    job = waiting_in_batch(world, runnable(50, waited, world.clock.now))
    report = WatchReport(batch_priorities={job.job_arn: in_batch})
    # WHEN the watch escalates
    escalate([job], world.ports, world.clock.now, report)
    # THEN it starts from Batch's priority
    assert world.batch.priorities == ([] if raised is None else [("wait-1", raised)])
    assert [h["fromPriority"] for h in world.ledger.history.values()] == (
        [] if raised is None else [in_batch]
    )
    assert len(world.alerts.sent) == alerts
    if alerts:
        _, body, attributes = world.alerts.sent[0]
        assert f"schedulingPriority {in_batch} (escalation stops at 89 for MIDPRI)" in body["reason"]
        # on the team's plain share the alert still names the job's tier, for routing
        assert (attributes["team"], attributes["tier"], attributes["share"]) == (
            "ProdExp2",
            "MIDPRI",
            "ProdExp2",
        )


def test_a_reclaimed_job_is_requeued_at_once_ahead_of_its_tiers_queued_work() -> None:
    # GIVEN a LOWPRI job terminated by reclaim for a HIGHPRI job
    from shareplane.domain.config.shares import Tier
    from shareplane.domain.reclaim.reason import stop_reason

    world = World()
    reason = stop_reason("hi-1", "launch", Tier.HIGHPRI, 312)
    job = world.batch.add(failed_job(priority=10, share="ProdExp2", reason=reason, terminated=True))
    # WHEN its FAILED event arrives
    outcome = handle_message(failed_event(job), world.ports)
    # THEN it is resubmitted at once, same payload (its checkpoint), one priority step up inside LOWPRI
    assert outcome.result == "requeued" and world.timer.pending == []
    (params,) = world.batch.submits
    assert json.loads(params["serviceRequestPayload"]) == PAYLOAD
    assert params["schedulingPriority"] == 11 and params["shareIdentifier"] == "ProdExp2"
    assert "hi-1" in params["tags"]["shareplane:displaced-by"]


UNKNOWN_TEXT = "Received status from SageMaker: Quantum flux misaligned"


def cpu_fifo_job(job_id: str, team: str, **fields: Any) -> dict[str, Any]:
    """A FAILED job of the CPU FIFO queue: no share identifier; its team only in the submit path's tag."""
    job = failed_job(job_id, tags={"shareplane:team": team}, **fields)
    return {
        **job,
        "shareIdentifier": None,
        "jobQueue": QUEUE_ARN.replace("search-p4d-queue", "search-cpu-fifo"),
    }


def test_a_cpu_fifo_failure_alert_carries_its_team_from_the_job_tag() -> None:
    # GIVEN a CPU FIFO job (no share) of ProdExp2 fails with an unknown reason
    world = World()
    job = world.batch.add(cpu_fifo_job("cpu-1", "ProdExp2", reason=UNKNOWN_TEXT))
    handle_message(failed_event(job), world.ports)
    # THEN its alert is filed under ProdExp2 (attribute and body), so the team's filter policy finds it
    ((_, body, attributes),) = world.alerts.sent
    assert attributes["team"] == "ProdExp2" and body["team"] == "ProdExp2"
    assert [d["Team"] for n, _, d in world.metrics.emitted if n == "FailuresByClass"] == ["ProdExp2"]


def test_a_team_tag_naming_no_configured_team_is_not_trusted() -> None:
    world = World()
    job = world.batch.add(cpu_fifo_job("cpu-1", "Mallory", reason=UNKNOWN_TEXT))
    handle_message(failed_event(job), world.ports)
    ((_, _, attributes),) = world.alerts.sent
    assert attributes["team"] == "none"


def test_one_teams_cpu_failures_never_trip_another_teams_storm_guard() -> None:
    # GIVEN ProdExp1's CPU jobs fail fast enough to storm (the guard allows 10 per 600 s)
    world = World()
    for i in range(12):
        job = world.batch.add({**cpu_fifo_job(f"a-{i}", "ProdExp1"), "stoppedAt": STOPPED_AT_MS + 1000 * i})
        handle_message(failed_event(job), world.ports)
    storms = [a for a in world.alerts.sent if a[2]["kind"] == "storm"]
    assert len(storms) == 1 and storms[0][2]["team"] == "ProdExp1"
    # WHEN a CPU job of ProdExp2 fails inside the same window
    job = world.batch.add({**cpu_fifo_job("b-0", "ProdExp2"), "stoppedAt": STOPPED_AT_MS + 12_000})
    outcome = handle_message(failed_event(job), world.ports)
    # THEN it is requeued as usual: ProdExp1's storm is not ProdExp2's
    assert outcome.decision == "requeue"


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    teams=st.lists(st.sampled_from(["ProdExp1", "ProdExp2"]), min_size=1, max_size=24),
    shared=st.booleans(),
)
def test_the_storm_guard_counts_each_teams_shareless_failures_alone(teams: list[str], shared: bool) -> None:
    # GIVEN any interleaving of two teams' failures (CPU FIFO jobs, or jobs on the teams' own shares)
    world = World()
    decisions: dict[str, list[str | None]] = {"ProdExp1": [], "ProdExp2": []}
    for i, team in enumerate(teams):
        job = cpu_fifo_job(f"j-{i}", team) if not shared else failed_job(f"j-{i}", share=team)
        job = world.batch.add({**job, "stoppedAt": STOPPED_AT_MS + 1000 * i})
        decisions[team].append(handle_message(failed_event(job), world.ports).decision)
    # THEN each team's decisions are those it would get alone: requeues until its own eleventh failure
    for made in decisions.values():
        expected = ["requeue"] * 10 + ["alert"] + ["ignore"] * (len(made) - 11)
        assert made == expected[: len(made)]
    assert all(a[2]["team"] in ("ProdExp1", "ProdExp2") for a in world.alerts.sent)


def test_a_team_tag_on_a_job_with_a_share_no_team_owns_is_not_trusted() -> None:
    world = World()
    job = world.batch.add(
        failed_job("j-x", share="Intern", reason=UNKNOWN_TEXT, tags={"shareplane:team": "ProdExp1"})
    )
    handle_message(failed_event(job), world.ports)
    ((_, _, attributes),) = world.alerts.sent
    assert attributes["team"] == "none"


def test_a_requeue_retried_after_its_submit_went_through_finds_that_job_instead_of_a_refusal() -> None:
    # GIVEN a requeue whose SubmitServiceJob went through, then the run died before marking it applied
    world = World()
    job = world.batch.add(failed_job(priority=90, share="ProdExp1"))
    handle_message(failed_event(job), world.ports)
    ((message, _),) = world.timer.pending
    world.timer.pending.clear()
    mark_applied = world.ledger.mark_applied

    def die_once(key: str, result: Any) -> bool:
        world.ledger.mark_applied = mark_applied
        raise SenderDied("crashed between submit and record")

    world.ledger.mark_applied = die_once
    with pytest.raises(SenderDied):
        handle_message(message, world.ports)
    # WHEN the message is delivered again: Batch rejects the repeated clientToken, as AWS documents
    retried = handle_message(message, world.ports)
    # THEN the retry finds the job its first try created (by the token it carries as a tag): one job,
    # recorded as the requeue, no refusal alert
    first, second = world.batch.submits
    assert first["clientToken"] == second["clientToken"] == first["tags"]["shareplane:submission"]
    assert retried.result == "requeued" and retried.new_job_arn == world.batch.tokens[first["clientToken"]]
    assert len(world.batch.tokens) == 1 and world.alerts.sent == []
    assert world.metrics.count("RequeuesRefused") == 0


def training_stopped_event(described: dict[str, Any]) -> dict[str, Any]:
    """SageMaker's Stopped event of a described job's latest training job."""
    event = load_event("sagemaker_training_job_state_change_failed_cuda_oom")
    arn = described["latestAttempt"]["serviceResourceId"]["value"]
    event["resources"] = [arn]
    event["detail"].update(
        TrainingJobArn=arn,
        TrainingJobName=arn.rsplit("/", 1)[-1],
        TrainingJobStatus="Stopped",
        SecondaryStatus="Stopped",
        FailureReason=None,
    )
    return event


@pytest.mark.parametrize(
    "reason",
    [
        "shareplane reclaim: stopped for hi (name-hi, HIGHPRI, waited 300 s); resumes from checkpoint",
        "shareplane idle: every host below 5% of one GPU for 1800 s (window 1800 s); not requeued",
    ],
    ids=["a reclaimed job", "an idle-stopped job"],
)
@pytest.mark.parametrize("sagemaker_first", [False, True], ids=["Batch's event first", "SageMaker's first"])
def test_a_stopped_jobs_two_end_events_requeue_and_alert_at_most_once(
    reason: str, sagemaker_first: bool
) -> None:
    # GIVEN a job shareplane stopped: Batch's FAILED event and its training job's SageMaker Stopped event
    alone = World()
    alone.batch.add(failed_job("p2-5", reason=reason, terminated=True, share="ProdExp2", priority=10))
    handle_message(failed_event(alone.batch.jobs["p2-5"]), alone.ports)
    w = World()
    w.batch.add(failed_job("p2-5", reason=reason, terminated=True, share="ProdExp2", priority=10))
    described = w.batch.jobs["p2-5"]
    w.store.links[described["latestAttempt"]["serviceResourceId"]["value"]] = described["jobArn"]
    events = [failed_event(described), training_stopped_event(described)]
    # WHEN both arrive, in either order, and each is delivered twice
    for event in (events[::-1] if sagemaker_first else events) * 2:
        handle_message(event, w.ports)
    # THEN the job is requeued (or not) and its team told exactly as for Batch's event alone
    assert len(w.batch.submits) == len(alone.batch.submits) == (1 if "reclaim" in reason else 0)
    assert len(w.alerts.sent) == len(alone.alerts.sent) <= 1


def test_the_preemption_alert_names_the_share_as_job_state_share_does() -> None:
    # GIVEN a preempted job that Batch describes with both a share identifier and a quota share name
    world = World()
    job = world.batch.add(
        {**failed_job(preempted=3, share="ProdExp1"), "status": "RUNNABLE", "quotaShareName": "ProdExp2"}
    )
    event = {
        "detail-type": "Batch Service Job Preemption Completed",
        "source": "aws.batch",
        "detail": {"preemptedJobArn": job["jobArn"], "status": "RUNNABLE"},
    }
    # WHEN its preemption event arrives
    handle_message(event, world.ports)
    # THEN the alert carries the share JobState.share reads (the identifier first), as every other path
    state = JobState(
        job["jobArn"], JobStatus.RUNNABLE, "0", share_identifier="ProdExp1", quota_share_name="ProdExp2"
    )
    (alert,) = world.alerts.sent
    assert alert[2]["share"] == state.share == "ProdExp1"
