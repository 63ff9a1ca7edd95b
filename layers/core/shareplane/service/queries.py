"""Read side: job records for the CLI and reports, straight from the store."""

from __future__ import annotations

from typing import Any, Protocol

from ..domain.lifecycle import HistoryEntry, JobState
from ..domain.records import job_record
from ..domain.training import TrainingJobState


class JobReader(Protocol):
    """What the read side needs from a store."""

    def jobs(self, status: str | None = None) -> list[JobState]: ...
    def job_history(self, job_arn: str) -> list[HistoryEntry]: ...
    def load_training_job(self, training_job_arn: str) -> TrainingJobState | None: ...


def job_records(
    reader: JobReader, status: str | None = None, share: str | None = None
) -> list[dict[str, Any]]:
    """Every job (optionally one status, one share) as a record with its history."""
    records = []
    for state in reader.jobs(status):
        if share and share not in (state.share_identifier, state.quota_share_name):
            continue
        training = (
            reader.load_training_job(state.latest_training_job_arn) if state.latest_training_job_arn else None
        )
        records.append(job_record(state, reader.job_history(state.job_arn), training))
    return records
