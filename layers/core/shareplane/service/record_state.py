"""Record one job state observation: decide against the stored state, write once, measure once.

An attempt is costed when both its final training state and the link to its Batch job are in the
table, by whichever of the two events arrives second: the SageMaker event writes the state then
reads the link, the Batch event writes the link then reads the training state, both consistently,
so at least one of two racing events sees the other's write. The COST item's condition keeps it to
once. A final training job no Batch job links is not costed, and counted (UnownedTrainingJobs).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from ..domain.config.shares import SharesConfig
from ..domain.errors import ConcurrentUpdateError
from ..domain.jobs.arns import queue_name
from ..domain.jobs.lifecycle import Decision, JobMetricEvent, JobObservation, JobState, Transition, decide
from ..domain.jobs.training import TrainingJobObservation, TrainingJobState, decide_training
from .ports import JobStore, MetricsSink

logger = logging.getLogger(__name__)

#: Racing writers on one job are rare (a handful of events per minute per job); a few re-reads
#: settle them. Past this, the record fails and SQS redelivers it.
MAX_CONFLICT_RETRIES = 5


@dataclass(frozen=True)
class RecordOutcome:
    """What recording did, for logs and tests."""

    entity: str
    decision: Decision
    status: str


@dataclass(frozen=True)
class RecordStatePorts:
    """Everything recording a state change talks to; built once per cold start by bootstrap."""

    store: JobStore
    metrics: MetricsSink
    #: Maps share identifiers to teams and tiers in metric dimensions; None: no team or tier.
    config: SharesConfig | None


def record_state(
    observation: JobObservation | TrainingJobObservation, ports: RecordStatePorts
) -> RecordOutcome:
    """Record one state change event through the ports the composition root builds."""
    return record_observation(observation, ports.store, ports.metrics, ports.config)


def record_observation(
    observation: JobObservation | TrainingJobObservation,
    store: JobStore,
    metrics: MetricsSink,
    config: SharesConfig | None,
) -> RecordOutcome:
    """Record a Batch job or SageMaker training job observation exactly once."""
    if isinstance(observation, TrainingJobObservation):
        return _record_training(observation, store, metrics, config)
    return _record_job(observation, store, metrics, config)


def _record_job(
    obs: JobObservation, store: JobStore, metrics: MetricsSink, config: SharesConfig | None
) -> RecordOutcome:
    for _ in range(MAX_CONFLICT_RETRIES):
        transition = decide(store.load_job(obs.job_arn), obs)
        if transition.decision is Decision.DUPLICATE:
            if config is not None:
                # A redelivery after a failure between the link's write and the costing: try again.
                _cost_linked_attempts(
                    transition.state, _linked_now(transition, obs, False), store, metrics, config
                )
            return RecordOutcome(obs.job_arn, Decision.DUPLICATE, transition.state.status.value)
        try:
            written = store.save_job(transition)
        except ConcurrentUpdateError:
            logger.info("concurrent update, re-reading", extra={"job_arn": obs.job_arn})
            continue
        if config is not None:
            _cost_linked_attempts(
                transition.state, _linked_now(transition, obs, written), store, metrics, config
            )
        if not written:
            return RecordOutcome(obs.job_arn, Decision.DUPLICATE, transition.state.status.value)
        dimensions = metric_dimensions(transition.state, config)
        metrics.emit(transition.metrics, dimensions, {"jobArn": obs.job_arn})
        slo = slo_metric(transition.metrics, transition.state, config)
        if slo is not None:
            metrics.emit([slo], dimensions, {"jobArn": obs.job_arn})
        return RecordOutcome(obs.job_arn, transition.decision, transition.state.status.value)
    raise ConcurrentUpdateError(f"{obs.job_arn}: still contended after {MAX_CONFLICT_RETRIES} attempts")


def _linked_now(transition: Transition, obs: JobObservation, written: bool) -> tuple[str, ...]:
    """The training jobs a Batch observation may have to cost: those it linked now; on a redelivery
    (or a write that turned out a duplicate), those it names; and every one once its share is known."""
    state, previous = transition.state, transition.previous
    if previous is not None and not previous.share and state.share:
        return state.training_job_arns  # costed to nobody before: the share names the team now
    if written:
        return transition.new_training_job_arns
    named = set(obs.training_job_arns) | (
        {obs.latest_training_job_arn} if obs.latest_training_job_arn else set()
    )
    return tuple(arn for arn in state.training_job_arns if arn in named)


def _cost_linked_attempts(
    job: JobState, arns: Sequence[str], store: JobStore, metrics: MetricsSink, config: SharesConfig
) -> None:
    """Cost each of ``arns`` whose training state is final (read after the link was written)."""
    for arn in arns:
        training = store.load_training_job(arn)
        if training is not None and training.status.is_final:
            _cost(training, job, store, metrics, config, count_unowned=False)


def _cost(
    training: TrainingJobState,
    job: JobState | None,
    store: JobStore,
    metrics: MetricsSink,
    config: SharesConfig,
    *,
    count_unowned: bool,
) -> None:
    """Cost a final attempt to its Batch job's team, once (the COST item's condition); nobody's: never."""
    # Imported here: a Batch event's cold start skips the cost module unless it links a final attempt.
    from ..domain.cost.billing import (
        UNOWNED_NO_LINK,
        UNOWNED_SHARE_OF_NO_TEAM,
        attempt_cost,
        cost_dimensions,
        cost_metrics,
        unowned_metric,
    )
    from .spend import owner_of

    owner = owner_of(job, store, config)
    if owner is None:
        if count_unowned:
            reason = UNOWNED_NO_LINK if job is None else UNOWNED_SHARE_OF_NO_TEAM
            logger.warning(
                "training job not costed: no team's",
                extra={
                    "trainingJobArn": training.training_job_arn,
                    "reason": reason,
                    "jobArn": job and job.job_arn,
                },
            )
            metrics.emit(
                [unowned_metric()], {"Reason": reason}, {"trainingJobArn": training.training_job_arn}
            )
        return
    cost = attempt_cost(training, owner, config)
    if cost is not None and store.record_cost(cost):
        metrics.emit(
            cost_metrics(cost), cost_dimensions(cost, config), {"trainingJobArn": training.training_job_arn}
        )


def _record_training(
    obs: TrainingJobObservation, store: JobStore, metrics: MetricsSink, config: SharesConfig | None
) -> RecordOutcome:
    for _ in range(MAX_CONFLICT_RETRIES):
        transition = decide_training(store.load_training_job(obs.training_job_arn), obs)
        written = False
        if transition.decision is not Decision.DUPLICATE:
            try:
                written = store.save_training_job(transition, obs)
            except ConcurrentUpdateError:
                continue
        state = transition.state
        if config is not None and state.status.is_final:
            # After the state's write (a redelivered final event too: a failure may have come between
            # the write and the cost), then the link, read consistently: see the module docstring.
            first_final = written and not (transition.previous and transition.previous.status.is_final)
            job_arn = store.job_for_training_job(obs.training_job_arn)
            job = store.load_job(job_arn) if job_arn else None
            _cost(state, job, store, metrics, config, count_unowned=first_final)
        decision = transition.decision if written else Decision.DUPLICATE
        return RecordOutcome(obs.training_job_arn, decision, state.status.value)
    raise ConcurrentUpdateError(
        f"{obs.training_job_arn}: still contended after {MAX_CONFLICT_RETRIES} attempts"
    )


def slo_metric(
    events: Sequence[JobMetricEvent], state: JobState, config: SharesConfig | None
) -> JobMetricEvent | None:
    """SloAttained or SloMissed when ``events`` hold the job's first start (its queue wait), else None."""
    wait = next((e.value for e in events if e.name == "QueueWaitSeconds"), None)
    tier = config.tier_for_priority(state.scheduling_priority) if config else None
    if wait is None or tier is None or config is None:
        return None
    within = wait <= config.tiers[tier].wait_slo_seconds
    return JobMetricEvent("SloAttained" if within else "SloMissed", 1, "Count")


def metric_dimensions(state: JobState, config: SharesConfig | None) -> dict[str, str]:
    """Queue, team, tier and status of a job: low-cardinality dimensions, never the job id.

    The team comes from the config's mapping of the job's share identifier (or quota share); the tier
    from the identifier in the team_tier layout, else from the job's schedulingPriority.
    """
    share = state.share
    tier = config.job_tier(share, state.scheduling_priority) if config else None
    team = config.team_for_share(share) if config else None
    return {
        "Queue": queue_name(state.job_queue),
        "Team": team or "none",
        "Tier": tier.value if tier else "none",
        "Status": state.status.value,
    }
