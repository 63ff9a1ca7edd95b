"""The jobs table's read side (adapters/dynamodb_store.py DynamoJobStore) as the failure path uses it."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from shareplane.domain.lifecycle import JobState


@dataclass
class FakeJobStore:
    """Stored payloads, training-job links and job states, in memory."""

    links: dict[str, str] = field(default_factory=dict)
    states: dict[str, list[JobState]] = field(default_factory=dict)
    payloads: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: (team, YYYY-MM) -> USD recorded in that month (the SPEND items).
    spend: dict[tuple[str, str], float] = field(default_factory=dict)

    def load_payload(self, job_arn: str) -> dict[str, Any] | None:
        return copy.deepcopy(self.payloads.get(job_arn))

    def load_training_job(self, arn: str) -> None:
        return None

    def job_for_training_job(self, arn: str) -> str | None:
        return self.links.get(arn)

    def jobs(self, status: str | None = None) -> list[JobState]:
        return list(self.states.get(status or "", []))

    def month_spend(self, team: str, month: str) -> float:
        return self.spend.get((team, month), 0.0)
