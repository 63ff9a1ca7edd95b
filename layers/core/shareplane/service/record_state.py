"""Record one job state observation: decide against the stored state, write once, measure once."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from ..domain.arns import queue_name
from ..domain.config import SharesConfig
from ..domain.errors import ConcurrentUpdateError
from ..domain.lifecycle import Decision, JobMetricEvent, JobObservation, JobState, decide
from ..domain.training import TrainingJobObservation, decide_training
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
        if config is not None:
            _record_cost(observation, store, metrics, config)
        return _record_training(observation, store)
    return _record_job(observation, store, metrics, config)


def _record_job(
    obs: JobObservation, store: JobStore, metrics: MetricsSink, config: SharesConfig | None
) -> RecordOutcome:
    for _ in range(MAX_CONFLICT_RETRIES):
        transition = decide(store.load_job(obs.job_arn), obs)
        if transition.decision is Decision.DUPLICATE:
            return RecordOutcome(obs.job_arn, Decision.DUPLICATE, transition.state.status.value)
        try:
            written = store.save_job(transition)
        except ConcurrentUpdateError:
            logger.info("concurrent update, re-reading", extra={"job_arn": obs.job_arn})
            continue
        if not written:
            return RecordOutcome(obs.job_arn, Decision.DUPLICATE, transition.state.status.value)
        dimensions = metric_dimensions(transition.state, config)
        metrics.emit(transition.metrics, dimensions, {"jobArn": obs.job_arn})
        slo = slo_metric(transition.metrics, transition.state, config)
        if slo is not None:
            metrics.emit([slo], dimensions, {"jobArn": obs.job_arn})
        return RecordOutcome(obs.job_arn, transition.decision, transition.state.status.value)
    raise ConcurrentUpdateError(f"{obs.job_arn}: still contended after {MAX_CONFLICT_RETRIES} attempts")


def _record_cost(
    obs: TrainingJobObservation, store: JobStore, metrics: MetricsSink, config: SharesConfig
) -> None:
    """Cost a training job that has ended, once: every final event tries, the first one writes.

    Tried before the state is written and whether or not the event is a duplicate, so a redelivery
    after a failure between the two still costs the attempt; the store's condition keeps it to once.
    """
    # Imported here: only SageMaker's events are costed, and a Batch event's cold start skips it.
    from ..domain.cost import attempt_cost, cost_dimensions, cost_metrics

    cost = attempt_cost(obs, config)
    if cost is not None and store.record_cost(cost):
        metrics.emit(
            cost_metrics(cost), cost_dimensions(cost, config), {"trainingJobArn": obs.training_job_arn}
        )


def _record_training(obs: TrainingJobObservation, store: JobStore) -> RecordOutcome:
    for _ in range(MAX_CONFLICT_RETRIES):
        transition = decide_training(store.load_training_job(obs.training_job_arn), obs)
        if transition.decision is Decision.DUPLICATE:
            return RecordOutcome(obs.training_job_arn, Decision.DUPLICATE, transition.state.status.value)
        try:
            written = store.save_training_job(transition, obs)
        except ConcurrentUpdateError:
            continue
        decision = transition.decision if written else Decision.DUPLICATE
        return RecordOutcome(obs.training_job_arn, decision, transition.state.status.value)
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
