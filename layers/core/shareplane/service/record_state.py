"""Record one job state observation: decide against the stored state, write once, measure once."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from ..domain.config import SharesConfig
from ..domain.errors import ConcurrentUpdateError
from ..domain.lifecycle import Decision, JobObservation, JobState, decide
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


def record_observation(
    observation: JobObservation | TrainingJobObservation,
    store: JobStore,
    metrics: MetricsSink,
    config: SharesConfig | None,
) -> RecordOutcome:
    """Record a Batch job or SageMaker training job observation exactly once."""
    if isinstance(observation, TrainingJobObservation):
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
        metrics.emit(transition.metrics, metric_dimensions(transition.state, config), {"jobArn": obs.job_arn})
        return RecordOutcome(obs.job_arn, transition.decision, transition.state.status.value)
    raise ConcurrentUpdateError(f"{obs.job_arn}: still contended after {MAX_CONFLICT_RETRIES} attempts")


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


def metric_dimensions(state: JobState, config: SharesConfig | None) -> dict[str, str]:
    """Queue, team, tier and status of a job: low-cardinality dimensions, never the job id.

    The team comes from the config's mapping of the job's share identifier (or quota share); the tier
    from the identifier in the team_tier layout, else from the job's schedulingPriority.
    """
    share = state.share_identifier or state.quota_share_name
    tier = config.job_tier(share, state.scheduling_priority) if config else None
    team = config.team_for_share(share) if config else None
    return {
        "Queue": queue_name(state.job_queue),
        "Team": team or "none",
        "Tier": tier.value if tier else "none",
        "Status": state.status.value,
    }


def queue_name(job_queue: str | None) -> str:
    """The queue's name from its ARN (events carry the ARN, dashboards show names)."""
    if not job_queue:
        return "unknown"
    return job_queue.rsplit("/", 1)[-1]
