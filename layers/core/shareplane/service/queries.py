"""Read side: job records for the CLI and reports, straight from the store."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import TypeVar

from ..domain.config.shares import SharesConfig
from ..domain.explain.record import JobRecord, job_record
from ..domain.jobs.lifecycle import JobState
from .ports import JobStore, PayloadStore, PredictionStore

logger = logging.getLogger(__name__)

_Read = TypeVar("_Read")


@dataclass(frozen=True)
class JobQuery:
    """Which jobs a listing wants. Each filter is a set of values a job may have (empty: any); every one
    runs on the job's state, before its history, training job, payload or prediction is read."""

    statuses: frozenset[str] = frozenset()
    #: Share identifiers or quota shares.
    shares: frozenset[str] = frozenset()
    #: Teams and tiers as the shares config maps each job's share (so these two need the config).
    teams: frozenset[str] = frozenset()
    tiers: frozenset[str] = frozenset()
    #: One job's name, id or ARN (a name may match several jobs).
    job: str | None = None
    #: Only jobs created at or after this time (epoch ms).
    created_since_ms: int | None = None

    def wants(self, state: JobState, config: SharesConfig | None) -> bool:
        """Whether a job's state passes every filter it can decide.

        A job with no share (the CPU FIFO queue) has no team or tier in the config's mapping: those two
        are decided on its record (``wants_team_and_tier``), once its payload has told them.
        """
        if self.statuses and state.status.value not in self.statuses:
            return False
        if self.job and self.job not in (state.job_name, state.job_id, state.job_arn):
            return False
        if self.created_since_ms is not None and (state.created_at or 0) < self.created_since_ms:
            return False
        if self.shares and not self.shares & {state.share_identifier, state.quota_share_name}:
            return False
        if state.share is None:
            return True
        team = config.team_for_share(state.share) if config else None
        tier = config.job_tier(state.share, state.scheduling_priority) if config else None
        return self.wants_team_and_tier(team, tier.value if tier else None)

    def wants_team_and_tier(self, team: str | None, tier: str | None) -> bool:
        """Whether a job of this team and tier passes the team and tier filters (unknown: it does not)."""
        return (not self.teams or team in self.teams) and (not self.tiers or tier in self.tiers)


#: Every job.
ALL_JOBS = JobQuery()


def job_records(
    reader: JobStore,
    query: JobQuery = ALL_JOBS,
    *,
    config: SharesConfig | None = None,
    payloads: PayloadStore | None = None,
    predictions: PredictionStore | None = None,
    states: Iterable[JobState] | None = None,
) -> list[JobRecord]:
    """The jobs ``query`` wants, each as a record with its history.

    Team and tier come from the config's mapping of each job's share identifier, so filtering on them
    needs the config. The filters run on each job's state before anything else of it is read (its
    history, training job, payload and prediction are a read each). With ``payloads``, each record
    also has its ``uploader``: who dropped the job's spec (account, S3 request id and, once
    CloudTrail's event is in, the principal), from its payload item; None for a job the submit path
    did not submit. With ``predictions``, each record also has its ``prediction``: the newest start
    prediction a watch tick stored for it, None before its first. ``states``: the jobs to choose from,
    when the caller has read them (default: the table's; one status asked for is read by its index).
    """
    only = next(iter(query.statuses)) if len(query.statuses) == 1 else None
    records = []
    for state in reader.jobs(only) if states is None else states:
        if not query.wants(state, config):
            continue
        record = job_record_of(reader, state, config)
        if payloads is not None:
            payload = _readable(state, "payload", lambda s: payloads.load_payload(s.job_arn))
            record = replace(record, uploader=payload.uploader if payload else None)
            if state.share is None and payload is not None:
                # No share to map (the CPU FIFO queue): the team and tier it was submitted as.
                record = replace(record, team=payload.team, tier=payload.tier)
        if state.share is None and not query.wants_team_and_tier(
            record.team, record.tier and record.tier.value
        ):
            continue
        if predictions is not None:
            read = _readable(state, "prediction", lambda s: predictions.load_prediction(s.job_arn))
            record = replace(record, prediction=read)
        records.append(record)
    return records


def _readable(state: JobState, what: str, read: Callable[[JobState], _Read | None]) -> _Read | None:
    """``read(state)``, or None (shown as "-") when the stored item cannot be read: one malformed item (a
    prediction with a non-numeric time, written by hand or by an older version) hides only itself."""
    try:
        return read(state)
    except (KeyError, TypeError, ValueError) as exc:
        logger.warning("job %s: unreadable stored %s skipped: %r", state.job_arn, what, exc)
        return None


def job_record_of(
    reader: JobStore, state: JobState, config: SharesConfig | None = None, *, with_training: bool = True
) -> JobRecord:
    """One job's record with its history (and, ``with_training``, its training job's facts), read from
    the store."""
    try:
        training = (
            reader.load_training_job(state.latest_training_job_arn)
            if with_training and state.latest_training_job_arn
            else None
        )
        return job_record(state, reader.job_history(state.job_arn), training, config)
    except (KeyError, TypeError, ValueError) as exc:
        # One job whose stored history or training job cannot be read still leaves the others listed.
        logger.warning("job %s: unreadable stored rows skipped: %r", state.job_arn, exc)
        return job_record(state, (), None, config)
