"""Read side: job records for the CLI and reports, straight from the store."""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial
from typing import Any

from ..domain.config.shares import SharesConfig
from ..domain.explain.listing import job_record
from ..domain.jobs.lifecycle import JobState
from .ports import JobStore, PayloadStore, PredictionStore

logger = logging.getLogger(__name__)


def job_records(
    reader: JobStore,
    status: str | None = None,
    share: str | None = None,
    *,
    config: SharesConfig | None = None,
    team: str | None = None,
    tier: str | None = None,
    payloads: PayloadStore | None = None,
    predictions: PredictionStore | None = None,
) -> list[dict[str, Any]]:
    """Every job (optionally one status, share identifier, team or tier) as a record with its history.

    Team and tier come from the config's mapping of each job's share identifier, so filtering on them
    needs the config. With ``payloads``, each record also has ``uploader``: who dropped the job's spec
    (account, S3 request id and, once CloudTrail's event is in, the principal), from its payload item;
    None for a job the submit path did not submit. With ``predictions``, each record also has
    ``prediction``: the newest start prediction a watch tick stored for it (``StartPrediction.as_record``),
    None before its first.
    """
    records = []
    for state in reader.jobs(status):
        if share and share not in (state.share_identifier, state.quota_share_name):
            continue
        record = job_record_of(reader, state, config)
        if (team and record["team"] != team) or (tier and record["tier"] != tier):
            continue
        if payloads is not None:
            record["uploader"] = _readable(state, "payload", partial(_uploader, payloads))
        if predictions is not None:
            record["prediction"] = _readable(state, "prediction", partial(_prediction, predictions))
        records.append(record)
    return records


def _uploader(payloads: PayloadStore, state: JobState) -> dict[str, Any] | None:
    payload = payloads.load_payload(state.job_arn)
    return dict(payload.uploader) if payload and payload.uploader is not None else None


def _prediction(predictions: PredictionStore, state: JobState) -> dict[str, Any] | None:
    prediction = predictions.load_prediction(state.job_arn)
    return prediction.as_record() if prediction else None


def _readable(
    state: JobState, what: str, read: Callable[[JobState], dict[str, Any] | None]
) -> dict[str, Any] | None:
    """``read(state)``, or None (shown as "-") when the stored item cannot be read: one malformed item (a
    prediction with a non-numeric time, written by hand or by an older version) hides only itself."""
    try:
        return read(state)
    except (KeyError, TypeError, ValueError) as exc:
        logger.warning("job %s: unreadable stored %s skipped: %r", state.job_arn, what, exc)
        return None


def job_submission(payloads: PayloadStore, job_arn: str) -> dict[str, Any] | None:
    """What the submit path kept of a job's submission: the spec's source, the request, when and who.

    None for a job it did not submit (submitted by hand, or a reclaim's resubmission of another job).
    """
    payload = payloads.load_payload(job_arn)
    if not payload:
        return None
    return {
        "source": dict(payload.source) or None,
        "request": dict(payload.request) if payload.request is not None else None,
        "submittedAt": payload.submitted_at,
        "uploader": dict(payload.uploader) if payload.uploader is not None else None,
    }


def job_record_of(
    reader: JobStore, state: JobState, config: SharesConfig | None = None, *, with_training: bool = True
) -> dict[str, Any]:
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
