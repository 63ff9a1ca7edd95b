"""Read side: job records for the CLI and reports, straight from the store."""

from __future__ import annotations

from typing import Any

from ..domain.config import SharesConfig
from ..domain.records import job_record
from .ports import JobStore


def job_records(
    reader: JobStore,
    status: str | None = None,
    share: str | None = None,
    *,
    config: SharesConfig | None = None,
    team: str | None = None,
    tier: str | None = None,
) -> list[dict[str, Any]]:
    """Every job (optionally one status, share identifier, team or tier) as a record with its history.

    Team and tier come from the config's mapping of each job's share identifier, so filtering on them
    needs the config.
    """
    records = []
    for state in reader.jobs(status):
        if share and share not in (state.share_identifier, state.quota_share_name):
            continue
        training = (
            reader.load_training_job(state.latest_training_job_arn) if state.latest_training_job_arn else None
        )
        record = job_record(state, reader.job_history(state.job_arn), training, config)
        if (team and record["team"] != team) or (tier and record["tier"] != tier):
            continue
        records.append(record)
    return records
