"""Handle a failed GPU job: load what is known, decide with ``domain.failures.decide``, apply once.

Triggers: a ``Batch Service Job State Change`` to FAILED, a SageMaker training job that Failed or
Stopped (found through the ``TJ#<arn>`` link record_state writes), a preemption or a blocked queue,
and this path's own "requeue due" messages. Batch is asked for the job (DescribeServiceJob, so jobs
shareplane did not submit work too); the decision is written once as ``DECISION#<job>#<attempt>``
together with a FAILURE_DECISION history item, then applied:

- requeue: SubmitServiceJob of the same payload, queue, share and priority with the decision's
  mutations and a clientToken from the job id and attempt, now or after the backoff delay;
- alert: one SNS message per job and kind within a quiet window; a storm is one digest per share;
- left to Batch / ignore: recorded only.

A redelivered trigger finds the decision stored: applied means nothing to do, not yet applied means
finish applying the stored decision (never a new one), so any number of duplicates requeue once.

Every decision is made at the trigger's own time, never the clock's: a failure event's latest
detail time (else its envelope ``time``), a requeue-due message's due time, a watch tick's time. A
redelivered trigger is decided with the same ``now``, and on the local stack, whose emulator stamps
events with a sped-up virtual clock, backoffs, storm windows and quiet windows run in that time.
The ``clock`` port is left for what no event dates: messages without a time, and how long an
unconfirmed alert claim has been held (a processing lease, not an event time).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..domain.alerts.alert import Alert, failure_alert, job_alert, logs_link, storm_dedupe_key
from ..domain.alerts.kinds import AlertKind
from ..domain.config.failure_rules import FailureClass
from ..domain.config.shares import SharesConfig, Tier
from ..domain.errors import InvalidInputError, RejectedByServiceError
from ..domain.failures.decision import (
    Action,
    FailureContext,
    FailureDecision,
    FailureSignal,
    classify,
    decide,
    repeated_preemption_alert,
)
from ..domain.failures.record import Applied, DecisionRecord, RequeueDue, StormFailure
from ..domain.failures.requeue import ChainState, build_requeue
from ..domain.jobs.arns import arn_tail, job_id_of, queue_name
from ..domain.jobs.described_job import DescribedJob
from ..domain.jobs.lifecycle import HistoryEntry, JobStatus, ObservationKind
from ..domain.jobs.tags import SUBMISSION_TAG, TEAM_TAG
from ..domain.jobs.training import TrainingJobFacts
from ..domain.reclaim.reason import beneficiary_of
from .alerting import AlertSender, count_failure_metric
from .ports import (
    FailureLedger,
    JobStore,
    MetricsSink,
    RequeueTimer,
    ServiceJobs,
    TickWatermarks,
    TrainingJobs,
)

if TYPE_CHECKING:
    from ..schemas.batch import PreemptionDetail
    from ..schemas.failure import FailureTrigger
    from ..schemas.sagemaker import TrainingJobDetail
    from ..schemas.service_job import ServiceJobDetail

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class FailureWatchPorts:
    """Everything the failure path and the watch (which reconciles and alerts through the failure path)
    talk to; built once per cold start by bootstrap."""

    store: JobStore
    ledger: FailureLedger
    batch: ServiceJobs
    training: TrainingJobs
    #: Every alert of the failure path and the watch goes out through it (deduplicated, listed).
    sender: AlertSender
    timer: RequeueTimer
    metrics: MetricsSink
    config: SharesConfig
    region: str
    #: The wall clock, only where no event dates a decision: a message with no time, a manual watch
    #: run, and the lease on an unconfirmed alert claim. Decisions take ``now`` from their trigger.
    clock: Callable[[], float]
    #: The watch's tick watermark (the newest schedule tick it handled).
    ticks: TickWatermarks
    #: The GPU queue's name as deployed (gauges and alarms use it); empty: the shares config's.
    gpu_queue: str = ""


@dataclass(frozen=True)
class FailureOutcome:
    """What handling one trigger did, for logs and tests."""

    job_arn: str | None
    result: str
    decision: str | None = None
    new_job_arn: str | None = None


# ------------------------------------------------------------------------------------------------
# Entry point
# ------------------------------------------------------------------------------------------------
def handle_message(raw: Mapping[str, Any], ports: FailureWatchPorts) -> FailureOutcome:
    """Parse one queue message and run it: the handler's whole path, for callers holding a raw message."""
    from ..schemas.failure import parse_failure_trigger

    return handle_failure(parse_failure_trigger(raw), ports)


def handle_failure(trigger: FailureTrigger, ports: FailureWatchPorts) -> FailureOutcome:
    """Route one parsed message: an EventBridge failure event or this path's own requeue-due message."""
    # Imported here, not at the top: the watch reuses handle_failed_job and never parses an event, so
    # its cold start does not build the Batch and SageMaker event models.
    from ..schemas.failure import (
        ServiceJobPreempted,
        ServiceJobStateChanged,
        TrainingJobStateChanged,
    )

    message = trigger.message
    now = trigger.at if trigger.at is not None else ports.clock()
    if isinstance(message, RequeueDue):
        return apply_due(message.decision_key, ports, now)
    if isinstance(message, ServiceJobStateChanged):
        detail = message.detail
        if detail.status != JobStatus.FAILED.value:
            return FailureOutcome(detail.jobArn, f"status {detail.status}: nothing to do")
        job_id = detail.jobId or job_id_of(detail.jobArn)
        if not job_id:
            raise InvalidInputError("detail.jobArn", "is empty", "send the event as AWS documents it")
        return handle_failed_job(job_id, ports, now, hint=detail)
    if isinstance(message, TrainingJobStateChanged):
        return _training_job_ended(message.detail, ports, now)
    if isinstance(message, ServiceJobPreempted):
        return _preempted(message.detail, ports, now)
    return _queue_blocked(message.detail, ports, now)


# ------------------------------------------------------------------------------------------------
# A failed job
# ------------------------------------------------------------------------------------------------
def handle_failed_job(
    job_id: str, ports: FailureWatchPorts, now: float, hint: ServiceJobDetail | None = None
) -> FailureOutcome:
    """Decide and apply, once, what happens to a service job Batch reports FAILED, as of ``now``.

    ``now`` is the time of the trigger (the failure event's, or the reconciling tick's): backoff,
    storm window and quiet windows are measured from it, so a redelivery decides the same way.
    """
    described = ports.batch.describe(job_id)
    if described is None:
        return _unknown_failed(job_id, ports, hint, now)
    job_arn = described.job_arn
    if described.status != JobStatus.FAILED.value:
        # Batch still owns the job (a capacity requeue, a retry, a preemption): it comes back to
        # this path only if it ends FAILED.
        return FailureOutcome(job_arn, f"Batch still owns it ({described.status})")
    key = decision_key(described)
    stored = ports.ledger.load_decision(key)
    if stored is not None:
        return _resume(key, stored, ports, now)
    record = _decided(described, job_id, ports, now)
    history = _history(described, record.decision, key, now)
    existing = ports.ledger.claim_decision(key, record, history, _storm_failure(record, now))
    if existing is not None:  # a concurrent delivery decided first: finish its decision, not ours
        return _resume(key, existing, ports, now)
    decision = record.decision
    dimensions = {
        "Queue": queue_name(described.job_queue),
        "Team": record.team or "none",
        "Class": decision.failure_class.value,
    }
    count_failure_metric(ports.metrics, "FailuresByClass", dimensions, job_arn)
    logger.info(
        "failure decided",
        extra={
            "job_arn": job_arn,
            "class": decision.failure_class.value,
            "rule": decision.rule_id,
            "action": decision.action.value,
            "why": decision.why,
        },
    )
    return _apply(key, record, ports, now)


def _decided(described: DescribedJob, job_id: str, ports: FailureWatchPorts, now: float) -> DecisionRecord:
    """What to do about one failure as of ``now``, from Batch's, SageMaker's and the ledger's facts."""
    config = ports.config
    training = _training_facts(described, ports)
    signal = FailureSignal(
        status_reason=described.status_reason,
        failure_reason=training.failure_reason,
        secondary_status=training.secondary_status,
        training_job_status=training.status,
        was_terminated=described.is_terminated,
    )
    share = described.share or "none"
    team = job_team(config, share, described.tags)
    scope = storm_scope(share, team)
    tier = config.job_tier(share, described.scheduling_priority) or Tier.LOWPRI
    chain = ChainState.from_tags(described.tags)
    found = classify(signal, config.failures.ordered_rules)
    spot = chain.spot_interruptions + (1 if found.failure_class is FailureClass.SPOT_INTERRUPTION else 0)
    recent = ports.ledger.share_failures(scope, now - config.failures.storm.window_seconds)
    ctx = FailureContext(
        signal=signal,
        job_id=described.job_id or job_id,
        share=scope,
        tier=tier,
        now=now,
        instance_type=described.payload_instance_type,
        budget_used=chain.failures,
        preemption_count=described.preempted_attempts or 0,
        preemption_retries_before_termination=described.preemption_retries_before_termination,
        spot_interruptions=spot,
        share_recent_failures=tuple(f.at for f in recent),
        share_storm_alerted_at=ports.sender.ledger.alert_sent_at(storm_dedupe_key(scope)),
        team=team,
    )
    decision = decide(ctx, config)
    new_chain = ChainState(
        origin_job_id=chain.origin_job_id or ctx.job_id,
        failures=decision.attempt or chain.failures,
        requeues=chain.requeues + 1,
        spot_interruptions=spot,
        displaced_by=chain.displaced_by,
        reclaimed_at=chain.reclaimed_at,
    )
    beneficiary = beneficiary_of(signal.status_reason)
    if decision.failure_class is FailureClass.RECLAIMED and beneficiary:
        # The requeued job carries whom it was stopped for, so it never reclaims from that job.
        new_chain = new_chain.displaced(beneficiary, now)
    return DecisionRecord(
        job_arn=described.job_arn,
        decision=decision,
        chain=new_chain,
        decided_at=now,
        due_at=now + decision.delay_seconds,
        job_id=described.job_id,
        job_name=described.job_name,
        job_queue=described.job_queue,
        share=share,
        training_job_name=training.name,
        tier=tier.value,
        team=team,
        storm_scope=scope,
    )


def _storm_failure(record: DecisionRecord, now: float) -> StormFailure | None:
    """The failure the storm guard counts for this decision (None: its class is exempt)."""
    decision = record.decision
    if not decision.counts_toward_storm:
        return None
    return StormFailure(
        scope=record.storm_scope or record.share,
        at=now,
        job_arn=record.job_arn,
        job_name=record.job_name,
        failure_class=decision.failure_class.value,
        reason=decision.reason_excerpt,
    )


def job_team(config: SharesConfig, share: str | None, tags: Mapping[str, Any] | None) -> str | None:
    """The team a job belongs to: its share's, by the config's mapping, else its team tag's.

    A CPU FIFO job has no share, so its team comes from the ``shareplane:team`` tag the submit path
    sets (a spec cannot set it: reserved tags are refused). Only a job without a share is read from
    its tag (a share the config does not name stays no team's), and only a team the config names counts.
    """
    if share and share != "none":
        return config.team_for_share(share)
    team = None
    if isinstance(tags, Mapping):
        tagged = tags.get(TEAM_TAG)
        team = tagged if isinstance(tagged, str) and tagged in config.teams else None
    return team


def storm_scope(share: str, team: str | None) -> str:
    """What the storm guard counts a failure under: the job's share, else its team (CPU FIFO jobs).

    Jobs without a share are grouped per team, so one team's CPU failures never trip another's guard;
    only jobs of no known team share the ``none`` scope.
    """
    if share != "none" or team is None:
        return share
    return f"team:{team}"


def decision_key(described: DescribedJob) -> str:
    """``DECISION#<job arn>#<attempt>``: attempts and preemptions so far identify this failure."""
    attempts = len(described.attempts or ())
    preempted = described.preempted_attempts or 0
    return f"DECISION#{described.job_arn}#{attempts}.{preempted}"


def _resume(key: str, record: DecisionRecord, ports: FailureWatchPorts, now: float) -> FailureOutcome:
    if record.applied:
        return FailureOutcome(
            record.job_arn, "duplicate: already applied", record.decision.action.value, record.new_job_arn
        )
    return _apply(key, record, ports, now)


def _apply(key: str, record: DecisionRecord, ports: FailureWatchPorts, now: float) -> FailureOutcome:
    decision = record.decision
    job_arn = record.job_arn
    if decision.action is Action.REQUEUE:
        due = record.due_at or now
        wait = int(round(due - now))
        if wait > 0:
            if record.scheduled:  # a duplicate trigger: the requeue-due message is on its way
                return FailureOutcome(job_arn, f"requeue scheduled, due in {wait}s", decision.action.value)
            ports.timer.after(RequeueDue(key, job_arn, due), wait, now)
            # A crash before this line re-enqueues on the next delivery; a duplicate message is harmless.
            ports.ledger.mark_scheduled(key)
            return FailureOutcome(job_arn, f"requeue due in {wait}s", decision.action.value)
        return _requeue(key, record, ports, now)
    if decision.action is Action.ALERT:
        alert = _failure_alert(record, ports, now)
        sent = ports.sender.send(alert, now)
        ports.ledger.mark_applied(key, Applied(alerted=sent))
        return FailureOutcome(job_arn, "alerted" if sent else "alert already sent", decision.action.value)
    ports.ledger.mark_applied(key, Applied())
    return FailureOutcome(job_arn, decision.summary(), decision.action.value)


def apply_due(key: str, ports: FailureWatchPorts, now: float) -> FailureOutcome:
    """A requeue's delay has passed by ``now`` (the due time the message carries): submit it, once."""
    record = ports.ledger.load_decision(key)
    if record is None:
        raise InvalidInputError(
            "decisionKey", f"{key!r} names no stored decision", "send requeue-due only for stored decisions"
        )
    action = record.decision.action.value
    if record.applied:
        return FailureOutcome(record.job_arn, "duplicate: already applied", action, record.new_job_arn)
    due = record.due_at or now
    if due - now > 1:  # a message dated before its decision's due time (sent by hand, or long ago): wait
        ports.timer.after(RequeueDue(key, record.job_arn, due), int(due - now), now)
        return FailureOutcome(record.job_arn, f"requeue due in {int(due - now)}s", action)
    return _requeue(key, record, ports, now)


def _requeue(key: str, record: DecisionRecord, ports: FailureWatchPorts, now: float) -> FailureOutcome:
    job_arn, decision = record.job_arn, record.decision
    described = ports.batch.describe(record.job_id or job_id_of(job_arn))
    dims = {"Queue": queue_name(record.job_queue), "Team": record.team or _team(ports, record.share)}
    if described is None:
        return _refused(
            key, record, "AWS Batch no longer describes the job, so its payload is gone", ports, now
        )
    request = build_requeue(
        described,
        attempt=key.rsplit("#", 1)[-1],
        mutations=decision.mutations,
        chain=record.chain,
        # A job stopped for a higher tier had waited its turn already: it resumes ahead of its
        # tier's queued work, as a preempted job keeps its place in Batch's own queue.
        scheduling_priority=(
            ports.config.resume_priority(described.scheduling_priority)
            if decision.failure_class is FailureClass.RECLAIMED and described.scheduling_priority is not None
            else None
        ),
    )
    try:
        new_arn = ports.batch.submit(request.request).job_arn
    except RejectedByServiceError as exc:
        # Batch rejects a repeat of a request it accepted: a retry after the first try's submit went
        # through (and the record was not marked) finds that job instead of calling it refused.
        resubmitted = request.request
        found = ports.batch.find_submitted(
            resubmitted.job_queue, resubmitted.job_name, SUBMISSION_TAG, request.client_token
        )
        if found is None:
            count_failure_metric(ports.metrics, "RequeuesRefused", dims, job_arn)
            return _refused(key, record, exc.problem, ports, now)
        new_arn = found.job_arn
    ports.ledger.mark_applied(key, Applied(new_job_arn=new_arn, client_token=request.client_token))
    count_failure_metric(ports.metrics, "Requeues", dims, job_arn)
    logger.info("requeued", extra={"job_arn": job_arn, "new_job_arn": new_arn})
    return FailureOutcome(job_arn, "requeued", decision.action.value, new_arn)


def _refused(
    key: str, record: DecisionRecord, message: str, ports: FailureWatchPorts, now: float
) -> FailureOutcome:
    decision = record.decision
    alert = job_alert(
        AlertKind.REQUEUE_REFUSED,
        share=record.share or "none",
        queue=queue_name(record.job_queue),
        job_arn=record.job_arn,
        job_name=record.job_name,
        reason=message,
        facts={"failure_class": decision.failure_class.value},
        extra={
            "class": decision.failure_class.value,
            "rule": decision.rule_id,
            "logs": logs_link(ports.region, record.training_job_name),
        },
        team=record.team,
        tier=record.tier,
    )
    ports.sender.send(alert, now)
    ports.ledger.mark_applied(key, Applied(refused=message[:500]))
    return FailureOutcome(record.job_arn, f"requeue refused: {message}", Action.REQUEUE.value)


def _failure_alert(record: DecisionRecord, ports: FailureWatchPorts, now: float) -> Alert:
    decision = record.decision
    share = record.share or "none"
    recent: list[dict[str, Any]] = []
    if decision.storm:
        # The storm is its scope's (the share, or a shareless job's team): the digest keys and lists by it.
        share = record.storm_scope or share
        # The digest lists the failures the storm was decided on, whichever delivery applies it.
        since = (record.decided_at or now) - ports.config.failures.storm.window_seconds
        recent = [
            {
                "at": f.at,
                "job": f.job_arn,
                "jobName": f.job_name,
                "class": f.failure_class,
                "reason": f.reason,
            }
            for f in ports.ledger.share_failures(share, since)
        ]
    alert = failure_alert(
        decision,
        job_arn=record.job_arn,
        job_name=record.job_name,
        share=share,
        queue=queue_name(record.job_queue),
        logs=logs_link(ports.region, record.training_job_name),
        recent=recent,
    )
    # Every alert carries the team, so the team's filter policy finds it (a CPU FIFO job has no share).
    alert = replace(alert, team=record.team)
    # A storm is the share's, not one job's: its tier is the share's (owned_by), if it has one.
    return alert if decision.storm else replace(alert, tier=record.tier)


def _team(ports: FailureWatchPorts, share: str | None) -> str:
    """The team a share identifier belongs to, by the config's mapping (the metrics' Team dimension)."""
    return ports.config.team_for_share(share) or "none"


def _unknown_failed(
    job_id: str, ports: FailureWatchPorts, hint: ServiceJobDetail | None, now: float
) -> FailureOutcome:
    job_arn = hint.jobArn if hint is not None else job_id
    share = (hint.shareIdentifier or hint.quotaShareName) if hint is not None else None
    share = share or "none"
    tags = hint.tags if hint is not None else None
    alert = job_alert(
        AlertKind.UNKNOWN_TO_BATCH,
        share=share,
        queue=queue_name(hint.jobQueue if hint is not None else None),
        job_arn=job_arn,
        job_name=hint.jobName if hint is not None else None,
        reason=(hint.statusReason if hint is not None else None) or "no reason given",
        variant="failed",
        team=job_team(ports.config, share, tags) or submitted_team(ports.store, job_arn),
    )
    ports.sender.send(alert, now)
    return FailureOutcome(job_arn, "unknown to Batch: alerted")


def submitted_team(store: JobStore, job_arn: str) -> str | None:
    """The team the submit path recorded with a job's payload: a CPU FIFO job has no share to name it,
    and a job Batch no longer describes has no tags either."""
    payload = store.load_payload(job_arn)
    return payload.team if payload else None


# ------------------------------------------------------------------------------------------------
# SageMaker, preemption, blocked queue
# ------------------------------------------------------------------------------------------------
def _training_job_ended(detail: TrainingJobDetail, ports: FailureWatchPorts, now: float) -> FailureOutcome:
    status = detail.TrainingJobStatus
    if status not in ("Failed", "Stopped"):
        return FailureOutcome(None, f"training job {status}: nothing to do")
    job_arn = ports.store.job_for_training_job(detail.TrainingJobArn)
    if job_arn is None:
        # record_state links the two when Batch's event arrives; that FAILED event triggers us too.
        return FailureOutcome(
            None, "no Batch job linked to the training job yet; its Batch event will follow"
        )
    return handle_failed_job(job_id_of(job_arn), ports, now)


def _preempted(detail: PreemptionDetail, ports: FailureWatchPorts, now: float) -> FailureOutcome:
    job_arn = detail.preemptedJobArn
    described = ports.batch.describe(job_id_of(job_arn))
    if described is not None and described.has_preemption_summary:
        count = described.preempted_attempts or 0
    else:
        count = (detail.preemptionSummary.preemptedAttemptCount if detail.preemptionSummary else None) or 0
    text = repeated_preemption_alert(count, ports.config)
    if text is None:
        return FailureOutcome(job_arn, f"preempted {count} times: below the alert threshold")
    # A job Batch no longer describes is alerted on by its ARN alone.
    source = described or DescribedJob(job_arn=job_arn, job_id=job_id_of(job_arn), status="")
    share = source.share or "none"
    alert = job_alert(
        AlertKind.REPEATED_PREEMPTION,
        share=share,
        queue=queue_name(source.job_queue),
        job_arn=job_arn,
        job_name=source.job_name,
        reason=text,
        facts={"count": count},
        extra={"preemptions": count},
        team=job_team(ports.config, share, source.tags),
    )
    sent = ports.sender.send(alert, now)
    return FailureOutcome(job_arn, "alerted" if sent else "alert already sent")


def _queue_blocked(detail: ServiceJobDetail, ports: FailureWatchPorts, now: float) -> FailureOutcome:
    queue = queue_name(detail.jobQueue)
    share = detail.shareIdentifier or detail.quotaShareName or "none"
    alert = job_alert(
        AlertKind.QUEUE_BLOCKED,
        share=share,
        queue=queue,
        job_arn=detail.jobArn,
        job_name=detail.jobName,
        reason=detail.statusReason or "no reason given",
        team=job_team(ports.config, share, detail.tags),
    )
    sent = ports.sender.send(alert, now)
    return FailureOutcome(detail.jobArn, "alerted" if sent else "alert already sent")


# ------------------------------------------------------------------------------------------------
# Helpers
# ------------------------------------------------------------------------------------------------
def _training_facts(described: DescribedJob, ports: FailureWatchPorts) -> TrainingJobFacts:
    """FailureReason and statuses of the job's last training job: the table first, then SageMaker."""
    arn = described.latest_training_job_arn
    if not arn:
        return TrainingJobFacts()
    name = arn_tail(arn)
    stored = ports.store.load_training_job(arn)
    if stored is not None and stored.status.is_final:
        return TrainingJobFacts(
            name=stored.training_job_name or name,
            status=stored.status.value,
            secondary_status=stored.secondary_status,
            failure_reason=stored.failure_reason,
        )
    found = ports.training.describe(name) or TrainingJobFacts()
    return replace(found, name=found.name or name)


def _history(described: DescribedJob, decision: FailureDecision, key: str, now: float) -> HistoryEntry:
    at = int(described.stopped_at or now * 1000)
    reason = (
        f"{decision.failure_class.value} (rule {decision.rule_id}): {decision.summary()}"
        + (f"; {decision.why}" if decision.why else "")
        + (f"; {decision.reason_excerpt}" if decision.reason_excerpt else "")
    )
    attempt = key.rsplit("#", 1)[-1]
    return HistoryEntry.note(
        ObservationKind.FAILURE_DECISION,
        at=at,
        tag=attempt,
        status=JobStatus.FAILED,
        reason=reason,
        digest=key,
        failure_class=decision.failure_class.value,
        rule=decision.rule_id,
        action=decision.action.value,
    )
