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

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..domain.alerts import (
    DEFAULT_QUIET_SECONDS,
    Alert,
    AlertKind,
    failure_alert,
    logs_link,
    simple_alert,
)
from ..domain.arns import queue_name
from ..domain.config import SharesConfig, Tier
from ..domain.errors import InvalidInputError, RejectedByServiceError
from ..domain.failure_rules import FailureClass, Severity
from ..domain.failures import (
    Action,
    FailureContext,
    FailureDecision,
    FailureSignal,
    classify,
    decide,
    repeated_preemption_alert,
)
from ..domain.lifecycle import HistoryEntry, JobStatus, ObservationKind
from ..domain.reclaim_reason import beneficiary_of
from ..domain.requeue import ChainState, build_requeue
from ..domain.tags import SUBMISSION_TAG, TEAM_TAG
from ..schemas.event_time import envelope_time, event_time
from .alerting import ONCE_PER_JOB_SECONDS, AlertSender, count_failure_metric, send_alert
from .ports import (
    AlertPublisher,
    FailureLedger,
    JobStore,
    MetricsSink,
    RequeueTimer,
    ServiceJobs,
    TrainingJobs,
)

logger = logging.getLogger(__name__)

#: The body of this path's own delayed messages.
REQUEUE_DUE = "requeue-due"


@dataclass(frozen=True)
class FailurePorts:
    """Everything the failure path talks to; built once per cold start by bootstrap."""

    store: JobStore
    ledger: FailureLedger
    batch: ServiceJobs
    training: TrainingJobs
    alerts: AlertPublisher
    timer: RequeueTimer
    metrics: MetricsSink
    config: SharesConfig
    region: str
    #: The wall clock, only where no event dates a decision: a message with no time, a manual watch
    #: run, and the lease on an unconfirmed alert claim. Decisions take ``now`` from their trigger.
    clock: Callable[[], float]
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
def handle_message(raw: Mapping[str, Any], ports: FailurePorts) -> FailureOutcome:
    """Route one queue message: an EventBridge event or this path's own requeue-due message."""
    if raw.get("shareplane") == REQUEUE_DUE:
        return apply_due(str(raw.get("decisionKey") or ""), ports, message_time(raw, ports))
    detail_type = raw.get("detail-type")
    detail = raw.get("detail")
    if not isinstance(detail, Mapping):
        raise InvalidInputError("detail", "is missing or not an object", "send the event as AWS documents it")
    now = message_time(raw, ports)
    if detail_type == "Batch Service Job State Change":
        if detail.get("status") != JobStatus.FAILED.value:
            return FailureOutcome(detail.get("jobArn"), f"status {detail.get('status')}: nothing to do")
        return handle_failed_job(_job_id(detail), ports, now, hint=detail)
    if detail_type == "SageMaker Training Job State Change":
        return _training_job_ended(detail, ports, now)
    if detail_type == "Batch Service Job Preemption Completed":
        return _preempted(detail, ports, now)
    if detail_type == "Batch Service Job Queue Blocked":
        return _queue_blocked(detail, ports, now)
    raise InvalidInputError(
        "detail-type", f"{detail_type!r} is not a failure-path event", "route only failure events here"
    )


def message_time(raw: Mapping[str, Any], ports: FailurePorts) -> float:
    """The time (epoch seconds) a message is decided at: the time it carries, never its arrival.

    A requeue-due message carries the due time it was sent for; an event, the latest epoch-ms time
    in its detail, else its envelope ``time``. Only a message carrying no time at all (a hand-made
    event, a requeue-due message sent before messages carried one) falls back to the clock.
    """
    if raw.get("shareplane") == REQUEUE_DUE:
        due = raw.get("dueAt")
        if isinstance(due, (int, float)) and not isinstance(due, bool):
            return float(due)
        return ports.clock()
    if raw.get("detail-type") == "Batch Service Job Queue Blocked":
        # Its detail dates only the job's creation, which may be hours before the queue blocked.
        found = envelope_time(raw)
        found = found if found is not None else event_time(raw)
    else:
        found = event_time(raw)
    return found if found is not None else ports.clock()


def _job_id(detail: Mapping[str, Any]) -> str:
    job_id = detail.get("jobId") or str(detail.get("jobArn") or "").rsplit("/", 1)[-1]
    if not job_id:
        raise InvalidInputError("detail.jobArn", "is missing", "send the event as AWS documents it")
    return str(job_id)


# ------------------------------------------------------------------------------------------------
# A failed job
# ------------------------------------------------------------------------------------------------
def handle_failed_job(
    job_id: str, ports: FailurePorts, now: float, hint: Mapping[str, Any] | None = None
) -> FailureOutcome:
    """Decide and apply, once, what happens to a service job Batch reports FAILED, as of ``now``.

    ``now`` is the time of the trigger (the failure event's, or the reconciling tick's): backoff,
    storm window and quiet windows are measured from it, so a redelivery decides the same way.
    """
    described = ports.batch.describe(job_id)
    if described is None:
        return _unknown_failed(job_id, ports, hint or {}, now)
    job_arn = described["jobArn"]
    if described.get("status") != JobStatus.FAILED.value:
        # Batch still owns the job (a capacity requeue, a retry, a preemption): it comes back to
        # this path only if it ends FAILED.
        return FailureOutcome(job_arn, f"Batch still owns it ({described.get('status')})")
    key = decision_key(described)
    stored = ports.ledger.load_decision(key)
    if stored is not None:
        return _resume(key, stored, ports, now)

    config = ports.config
    training = _training_facts(described, ports)
    signal = FailureSignal(
        status_reason=described.get("statusReason"),
        failure_reason=training.get("FailureReason"),
        secondary_status=training.get("SecondaryStatus"),
        training_job_status=training.get("TrainingJobStatus"),
        was_terminated=bool(described.get("isTerminated")),
    )
    share = described.get("shareIdentifier") or described.get("quotaShareName") or "none"
    team = job_team(config, share, described.get("tags"))
    scope = storm_scope(share, team)
    tier = config.job_tier(share, described.get("schedulingPriority")) or Tier.LOWPRI
    chain = ChainState.from_tags(described.get("tags"))
    summary = described.get("preemptionSummary") or {}
    preemptions = int(summary.get("preemptedAttemptCount") or 0)
    found = classify(signal, config.failures.ordered_rules)
    spot = chain.spot_interruptions + (1 if found.failure_class is FailureClass.SPOT_INTERRUPTION else 0)
    storm_window = config.failures.storm.window_seconds
    recent = ports.ledger.share_failures(scope, now - storm_window)
    cap = (described.get("preemptionConfiguration") or {}).get("preemptionRetriesBeforeTermination")
    ctx = FailureContext(
        signal=signal,
        job_id=described.get("jobId") or job_id,
        share=scope,
        tier=tier,
        now=now,
        instance_type=_payload_instance_type(described),
        budget_used=chain.failures,
        preemption_count=preemptions,
        preemption_retries_before_termination=cap,
        spot_interruptions=spot,
        share_recent_failures=tuple(float(f["at"]) for f in recent),
        share_storm_alerted_at=ports.ledger.alert_sent_at(f"ALERT#share:{scope}#{AlertKind.STORM.value}"),
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
    record = {
        **decision_record(decision, described, training, new_chain, now),
        "tier": tier.value,
        "team": team,
        "stormScope": scope,
    }
    history = _history(described, decision, key, now)
    share_failure = (
        {
            "share": scope,
            "at": now,
            "job": job_arn,
            "jobName": described.get("jobName"),
            "class": decision.failure_class.value,
            "reason": decision.reason_excerpt,
        }
        if decision.counts_toward_storm
        else None
    )
    existing = ports.ledger.claim_decision(key, record, history, job_arn, share_failure)
    if existing is not None:  # a concurrent delivery decided first: finish its decision, not ours
        return _resume(key, existing, ports, now)
    count_failure_metric(
        ports,
        "FailuresByClass",
        {"Queue": queue_name_of(described), "Team": team or "none", "Class": decision.failure_class.value},
        job_arn,
    )
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


def decision_key(described: Mapping[str, Any]) -> str:
    """``DECISION#<job arn>#<attempt>``: attempts and preemptions so far identify this failure."""
    attempts = len(described.get("attempts") or [])
    preempted = int((described.get("preemptionSummary") or {}).get("preemptedAttemptCount") or 0)
    return f"DECISION#{described['jobArn']}#{attempts}.{preempted}"


def decision_record(
    decision: FailureDecision,
    described: Mapping[str, Any],
    training: Mapping[str, Any],
    chain: ChainState,
    now: float,
) -> dict[str, Any]:
    """The stored form of a decision: enough to apply it later without deciding again."""
    return {
        "jobArn": described["jobArn"],
        "jobId": described.get("jobId"),
        "jobName": described.get("jobName"),
        "jobQueue": described.get("jobQueue"),
        "share": described.get("shareIdentifier") or described.get("quotaShareName") or "none",
        "trainingJobName": training.get("TrainingJobName"),
        "action": decision.action.value,
        "class": decision.failure_class.value,
        "rule": decision.rule_id,
        "reason": decision.reason_excerpt,
        "severity": decision.severity.value,
        "fix": decision.fix,
        "attempt": decision.attempt,
        "budgetLeft": decision.budget_left,
        "delaySeconds": decision.delay_seconds,
        "mutations": {k: v for k, v in decision.mutations.items()},
        "removals": [k for k, v in decision.mutations.items() if v is None],
        "storm": decision.storm,
        "why": decision.why,
        "summary": decision.summary(),
        "chain": {
            "origin": chain.origin_job_id,
            "failures": chain.failures,
            "requeues": chain.requeues,
            "spot": chain.spot_interruptions,
            "displacedBy": list(chain.displaced_by),
            "reclaimedAt": chain.reclaimed_at,
        },
        "decidedAt": now,
        "dueAt": now + decision.delay_seconds,
    }


def decision_from_record(record: Mapping[str, Any]) -> FailureDecision:
    """Rebuild the decision a record stores."""
    mutations: dict[str, object] = dict(record.get("mutations") or {})
    for removed in record.get("removals") or ():
        mutations[removed] = None
    return FailureDecision(
        action=Action(record["action"]),
        failure_class=FailureClass(record["class"]),
        rule_id=record["rule"],
        reason_excerpt=record.get("reason") or "",
        severity=Severity(record["severity"]),
        fix=record.get("fix") or "",
        attempt=int(record.get("attempt") or 0),
        budget_left=int(record.get("budgetLeft") or 0),
        delay_seconds=int(record.get("delaySeconds") or 0),
        mutations=mutations,
        storm=bool(record.get("storm")),
        why=record.get("why") or "",
    )


def _resume(key: str, record: Mapping[str, Any], ports: FailurePorts, now: float) -> FailureOutcome:
    if record.get("applied"):
        return FailureOutcome(
            record.get("jobArn"), "duplicate: already applied", record.get("action"), record.get("newJobArn")
        )
    return _apply(key, record, ports, now)


def _apply(key: str, record: Mapping[str, Any], ports: FailurePorts, now: float) -> FailureOutcome:
    decision = decision_from_record(record)
    job_arn = record["jobArn"]
    if decision.action is Action.REQUEUE:
        due = float(record.get("dueAt") or now)
        wait = int(round(due - now))
        if wait > 0:
            if record.get("scheduled"):  # a duplicate trigger: the requeue-due message is on its way
                return FailureOutcome(job_arn, f"requeue scheduled, due in {wait}s", decision.action.value)
            ports.timer.after(due_message(key, job_arn, due), wait, now)
            # A crash before this line re-enqueues on the next delivery; a duplicate message is harmless.
            ports.ledger.mark_scheduled(key)
            return FailureOutcome(job_arn, f"requeue due in {wait}s", decision.action.value)
        return _requeue(key, record, decision, ports, now)
    if decision.action is Action.ALERT:
        alert = _failure_alert(record, decision, ports, now)
        sent = send_alert(alert, ports, quiet_seconds=_quiet(alert, ports), now=now)
        ports.ledger.mark_applied(key, {"alerted": sent})
        return FailureOutcome(job_arn, "alerted" if sent else "alert already sent", decision.action.value)
    ports.ledger.mark_applied(key, {})
    return FailureOutcome(job_arn, decision.summary(), decision.action.value)


def due_message(key: str, job_arn: str, due: float) -> dict[str, Any]:
    """The requeue-due message of a decision: it carries its due time, which it is decided at."""
    return {"shareplane": REQUEUE_DUE, "decisionKey": key, "jobArn": job_arn, "dueAt": due}


def apply_due(key: str, ports: FailurePorts, now: float) -> FailureOutcome:
    """A requeue's delay has passed by ``now`` (the due time the message carries): submit it, once."""
    record = ports.ledger.load_decision(key)
    if record is None:
        raise InvalidInputError(
            "decisionKey", f"{key!r} names no stored decision", "send requeue-due only for stored decisions"
        )
    if record.get("applied"):
        return FailureOutcome(
            record.get("jobArn"), "duplicate: already applied", record.get("action"), record.get("newJobArn")
        )
    due = float(record.get("dueAt") or now)
    if due - now > 1:  # a message dated before its decision's due time (sent by hand, or long ago): wait
        ports.timer.after(due_message(key, record["jobArn"], due), int(due - now), now)
        return FailureOutcome(record.get("jobArn"), f"requeue due in {int(due - now)}s", record.get("action"))
    return _requeue(key, record, decision_from_record(record), ports, now)


def _requeue(
    key: str, record: Mapping[str, Any], decision: FailureDecision, ports: FailurePorts, now: float
) -> FailureOutcome:
    job_arn = record["jobArn"]
    described = ports.batch.describe(record.get("jobId") or job_arn.rsplit("/", 1)[-1])
    dims = {"Queue": queue_name_of(record), "Team": record.get("team") or _team(ports, record.get("share"))}
    if described is None:
        return _refused(
            key, record, "AWS Batch no longer describes the job, so its payload is gone", ports, now
        )
    chain = record.get("chain") or {}
    request = build_requeue(
        described,
        attempt=key.rsplit("#", 1)[-1],
        mutations=decision.mutations,
        chain=ChainState(
            chain.get("origin"),
            int(chain.get("failures") or 0),
            int(chain.get("requeues") or 1),
            int(chain.get("spot") or 0),
            tuple(chain.get("displacedBy") or ()),
            int(chain["reclaimedAt"]) if chain.get("reclaimedAt") is not None else None,
        ),
        # A job stopped for a higher tier had waited its turn already: it resumes ahead of its
        # tier's queued work, as a preempted job keeps its place in Batch's own queue.
        scheduling_priority=(
            ports.config.resume_priority(described["schedulingPriority"])
            if decision.failure_class is FailureClass.RECLAIMED
            and described.get("schedulingPriority") is not None
            else None
        ),
    )
    try:
        new_arn = ports.batch.submit(request.params).job_arn
    except RejectedByServiceError as exc:
        # Batch rejects a repeat of a request it accepted: a retry after the first try's submit went
        # through (and the record was not marked) finds that job instead of calling it refused.
        params = request.params
        found = ports.batch.find_submitted(
            str(params["jobQueue"]), str(params["jobName"]), SUBMISSION_TAG, request.client_token
        )
        if found is None:
            count_failure_metric(ports, "RequeuesRefused", dims, job_arn)
            return _refused(key, record, exc.problem, ports, now)
        new_arn = found.job_arn
    ports.ledger.mark_applied(key, {"newJobArn": new_arn, "clientToken": request.client_token})
    count_failure_metric(ports, "Requeues", dims, job_arn)
    logger.info("requeued", extra={"job_arn": job_arn, "new_job_arn": new_arn})
    return FailureOutcome(job_arn, "requeued", decision.action.value, new_arn)


def _refused(
    key: str, record: Mapping[str, Any], message: str, ports: FailurePorts, now: float
) -> FailureOutcome:
    job_arn = record["jobArn"]
    alert = simple_alert(
        AlertKind.REQUEUE_REFUSED,
        Severity.CRITICAL,
        share=record.get("share") or "none",
        queue=queue_name_of(record),
        job_arn=job_arn,
        job_name=record.get("jobName"),
        headline=f"requeue refused by AWS Batch ({record.get('class')})",
        reason=message,
        fix="fix what AWS Batch names (the payload, the share, a quota) and resubmit the job by hand",
        extra={
            "class": record.get("class"),
            "rule": record.get("rule"),
            "logs": logs_link(ports.region, record.get("trainingJobName")),
        },
    )
    owner = replace(alert, tier=record.get("tier"), team=record.get("team"))
    send_alert(owner, ports, quiet_seconds=DEFAULT_QUIET_SECONDS, now=now)
    ports.ledger.mark_applied(key, {"refused": message[:500]})
    return FailureOutcome(job_arn, f"requeue refused: {message}", Action.REQUEUE.value)


def _failure_alert(
    record: Mapping[str, Any], decision: FailureDecision, ports: FailurePorts, now: float
) -> Alert:
    share = record.get("share") or "none"
    recent: list[dict[str, Any]] = []
    if decision.storm:
        # The storm is its scope's (the share, or a shareless job's team): the digest keys and lists by it.
        share = record.get("stormScope") or share
        # The digest lists the failures the storm was decided on, whichever delivery applies it.
        since = float(record.get("decidedAt") or now) - ports.config.failures.storm.window_seconds
        recent = [
            {k: f.get(k) for k in ("at", "job", "jobName", "class", "reason")}
            for f in ports.ledger.share_failures(share, since)
        ]
    alert = failure_alert(
        decision,
        job_arn=record["jobArn"],
        job_name=record.get("jobName"),
        share=share,
        queue=queue_name_of(record),
        logs=logs_link(ports.region, record.get("trainingJobName")),
        recent=recent,
    )
    # Every alert carries the team, so the team's filter policy finds it (a CPU FIFO job has no share).
    alert = replace(alert, team=record.get("team"))
    # A storm is the share's, not one job's: its tier is the share's (owned_by), if it has one.
    return alert if decision.storm else replace(alert, tier=record.get("tier"))


def _quiet(alert: Alert, ports: FailurePorts) -> float:
    if alert.kind is AlertKind.STORM:
        return ports.config.failures.storm.window_seconds
    return DEFAULT_QUIET_SECONDS


def _team(ports: AlertSender, share: str | None) -> str:
    """The team a share identifier belongs to, by the config's mapping (the metrics' Team dimension)."""
    return ports.config.team_for_share(share) or "none"


def _unknown_failed(job_id: str, ports: FailurePorts, hint: Mapping[str, Any], now: float) -> FailureOutcome:
    job_arn = str(hint.get("jobArn") or job_id)
    alert = simple_alert(
        AlertKind.UNKNOWN_TO_BATCH,
        Severity.WARNING,
        share=hint.get("shareIdentifier") or hint.get("quotaShareName") or "none",
        queue=queue_name_of(hint),
        job_arn=job_arn,
        job_name=hint.get("jobName"),
        headline="failed, and AWS Batch no longer describes it",
        reason=str(hint.get("statusReason") or "no reason given"),
        fix="resubmit the job from its spec; Batch keeps finished jobs only for a limited time",
    )
    team = job_team(ports.config, alert.share, hint.get("tags")) or submitted_team(ports.store, job_arn)
    send_alert(replace(alert, team=team), ports, quiet_seconds=ONCE_PER_JOB_SECONDS, now=now)
    return FailureOutcome(job_arn, "unknown to Batch: alerted")


def submitted_team(store: JobStore, job_arn: str) -> str | None:
    """The team the submit path recorded with a job's payload: a CPU FIFO job has no share to name it,
    and a job Batch no longer describes has no tags either."""
    item = store.load_payload(job_arn)
    return str(item["team"]) if item and item.get("team") else None


# ------------------------------------------------------------------------------------------------
# SageMaker, preemption, blocked queue
# ------------------------------------------------------------------------------------------------
def _training_job_ended(detail: Mapping[str, Any], ports: FailurePorts, now: float) -> FailureOutcome:
    status = detail.get("TrainingJobStatus")
    arn = detail.get("TrainingJobArn")
    if status not in ("Failed", "Stopped") or not arn:
        return FailureOutcome(None, f"training job {status}: nothing to do")
    job_arn = ports.store.job_for_training_job(arn)
    if job_arn is None:
        # record_state links the two when Batch's event arrives; that FAILED event triggers us too.
        return FailureOutcome(
            None, "no Batch job linked to the training job yet; its Batch event will follow"
        )
    return handle_failed_job(job_arn.rsplit("/", 1)[-1], ports, now)


def _preempted(detail: Mapping[str, Any], ports: FailurePorts, now: float) -> FailureOutcome:
    job_arn = str(detail.get("preemptedJobArn") or "")
    if not job_arn:
        raise InvalidInputError("detail.preemptedJobArn", "is missing", "send the event as AWS documents it")
    described = ports.batch.describe(job_arn.rsplit("/", 1)[-1]) or {}
    summary = described.get("preemptionSummary") or detail.get("preemptionSummary") or {}
    count = int(summary.get("preemptedAttemptCount") or 0)
    text = repeated_preemption_alert(count, ports.config)
    if text is None:
        return FailureOutcome(job_arn, f"preempted {count} times: below the alert threshold")
    source = described or {"jobArn": job_arn}
    alert = simple_alert(
        AlertKind.REPEATED_PREEMPTION,
        Severity.WARNING,
        share=source.get("quotaShareName") or source.get("shareIdentifier") or "none",
        queue=queue_name_of(source),
        job_arn=job_arn,
        job_name=source.get("jobName"),
        headline=f"preempted {count} times",
        reason=text,
        fix="checkpoint more often, cap preemptionRetriesBeforeTermination, or use a share with "
        "reserved capacity",
        extra={"preemptions": count},
    )
    alert = replace(alert, team=job_team(ports.config, alert.share, source.get("tags")))
    sent = send_alert(alert, ports, quiet_seconds=ONCE_PER_JOB_SECONDS, now=now)
    return FailureOutcome(job_arn, "alerted" if sent else "alert already sent")


def _queue_blocked(detail: Mapping[str, Any], ports: FailurePorts, now: float) -> FailureOutcome:
    job_arn = str(detail.get("jobArn") or "")
    reason = str(detail.get("statusReason") or "no reason given")
    alert = simple_alert(
        AlertKind.QUEUE_BLOCKED,
        Severity.CRITICAL,
        share=detail.get("shareIdentifier") or detail.get("quotaShareName") or "none",
        queue=queue_name_of(detail),
        job_arn=job_arn,
        job_name=detail.get("jobName"),
        headline=f"blocks queue {queue_name_of(detail)}",
        reason=reason,
        fix="the job at the head of the queue can never run as requested: fix its instance type or count, "
        "raise the service environment's limits, or terminate it",
    )
    alert = replace(alert, team=job_team(ports.config, alert.share, detail.get("tags")))
    sent = send_alert(alert, ports, quiet_seconds=ONCE_PER_JOB_SECONDS, now=now)
    return FailureOutcome(job_arn, "alerted" if sent else "alert already sent")


# ------------------------------------------------------------------------------------------------
# Helpers
# ------------------------------------------------------------------------------------------------
def _training_facts(described: Mapping[str, Any], ports: FailurePorts) -> dict[str, Any]:
    """FailureReason and statuses of the job's last training job: the table first, then SageMaker."""
    arn = ((described.get("latestAttempt") or {}).get("serviceResourceId") or {}).get("value")
    if not arn:
        return {}
    name = arn.rsplit("/", 1)[-1]
    stored = ports.store.load_training_job(arn)
    if stored is not None and stored.status.is_final:
        return {
            "TrainingJobName": stored.training_job_name or name,
            "TrainingJobStatus": stored.status.value,
            "SecondaryStatus": stored.secondary_status,
            "FailureReason": stored.failure_reason,
        }
    described_tj = ports.training.describe(name) or {}
    return {
        "TrainingJobName": described_tj.get("TrainingJobName") or name,
        "TrainingJobStatus": described_tj.get("TrainingJobStatus"),
        "SecondaryStatus": described_tj.get("SecondaryStatus"),
        "FailureReason": described_tj.get("FailureReason"),
    }


def _payload_instance_type(described: Mapping[str, Any]) -> str | None:
    try:
        payload = json.loads(described.get("serviceRequestPayload") or "{}")
    except ValueError:
        return None
    resources = payload.get("ResourceConfig") if isinstance(payload, dict) else None
    return resources.get("InstanceType") if isinstance(resources, dict) else None


def _history(described: Mapping[str, Any], decision: FailureDecision, key: str, now: float) -> HistoryEntry:
    at = int(described.get("stoppedAt") or now * 1000)
    reason = (
        f"{decision.failure_class.value} (rule {decision.rule_id}): {decision.summary()}"
        + (f"; {decision.why}" if decision.why else "")
        + (f"; {decision.reason_excerpt}" if decision.reason_excerpt else "")
    )
    attempt = key.rsplit("#", 1)[-1]
    return HistoryEntry(
        key=f"{at:013d}#~{ObservationKind.FAILURE_DECISION.value}#{attempt}",
        status=JobStatus.FAILED,
        at=at,
        reason=reason,
        kind=ObservationKind.FAILURE_DECISION,
        digest=key,
        failure_class=decision.failure_class.value,
        rule=decision.rule_id,
        action=decision.action.value,
    )


def queue_name_of(source: Mapping[str, Any]) -> str:
    """The name of the queue a described job or event names."""
    return queue_name(source.get("jobQueue"))
