"""JobStore (adapters/dynamodb_store.py DynamoJobStore) and the payload items, in memory.

Payload items are kept in the table's layout and read back through ``adapters/payload_items.py``,
as the adapter reads them.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from shareplane.adapters.payload_items import payload_of
from shareplane.domain.cost.billing import AttemptCost, OpenAttempt
from shareplane.domain.errors import ConcurrentUpdateError
from shareplane.domain.forecast.arrivals import ArrivalKey, arrival_moves, hour_of
from shareplane.domain.forecast.prediction import StartPrediction
from shareplane.domain.jobs.arns import training_job_key
from shareplane.domain.jobs.lifecycle import HistoryEntry, JobState, Transition
from shareplane.domain.jobs.training import TrainingJobObservation, TrainingJobState, TrainingTransition
from shareplane.domain.submit.payload import SubmittedPayload

_T = TypeVar("_T")


def _by_training_job(items: Mapping[str, _T], training_job_arn: str) -> _T | None:
    """An entry keyed as the table keys it (training_job_key), else under the ARN as spelled: one
    written before the normalisation (or placed by a test), read as the table reads its legacy key."""
    return items.get(training_job_key(training_job_arn)) or items.get(training_job_arn)


def index_order(state: JobState) -> tuple[int, str]:
    """Where a job sits in the ByStatus index (its sort key: creation time, then ARN)."""
    return (state.created_at or 0, state.job_arn)


def newest_of(states: Iterable[JobState], status: str, created_after_ms: int, limit: int) -> list[JobState]:
    """The ByStatus index read from its end: the ``limit`` newest of ``status`` after a time."""
    listed = [s for s in states if s.status.value == status and (s.created_at or 0) >= created_after_ms]
    return sorted(listed, key=index_order, reverse=True)[: max(0, limit)]


def as_stored(value: Any) -> Any:
    """A value as DynamoDB gives it back: None members of a map dropped, whole floats as ints."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {k: as_stored(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [as_stored(v) for v in value]
    return value


@dataclass
class FakeJobStore:
    """The table's job, training-job, link and payload items, with the adapter's conditional writes.

    ``save_job`` / ``save_training_job`` are one transaction each, as on the table: the history item
    must be new (else the write is a duplicate: False), the state must still be at the version it was
    read at (else ConcurrentUpdateError).
    """

    states: dict[str, JobState] = field(default_factory=dict)
    histories: dict[str, dict[str, HistoryEntry]] = field(default_factory=dict)
    training_states: dict[str, TrainingJobState] = field(default_factory=dict)
    training_histories: dict[str, set[str]] = field(default_factory=dict)
    links: dict[str, str] = field(default_factory=dict)
    payloads: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Training job ARN -> its recorded cost (the COST items).
    costs: dict[str, AttemptCost] = field(default_factory=dict)
    #: (team, YYYY-MM) -> USD billed in that month (the SPEND items: each cost spread over its months).
    spend: dict[tuple[str, str], float] = field(default_factory=dict)
    #: Job ARN -> its newest stored start prediction (the PREDICTION items).
    predictions: dict[str, StartPrediction] = field(default_factory=dict)
    #: The arrival counts (the ARRIVALS items), moved by each state written, as on the table.
    arrivals: Counter[ArrivalKey] = field(default_factory=Counter)

    def put_states(self, *states: JobState) -> None:
        """Place job states as if they had been recorded (a test's starting table)."""
        for state in states:
            self._count(self.states.get(state.job_arn), state)
            self.states[state.job_arn] = state

    # -- jobs -------------------------------------------------------------------------------
    def load_job(self, job_arn: str) -> JobState | None:
        return self.states.get(job_arn)

    def save_job(self, transition: Transition) -> bool:
        state, entry = transition.state, transition.history
        if entry is None:
            raise ValueError("a DUPLICATE transition has nothing to write")
        if entry.key in self.histories.get(state.job_arn, {}):
            return False
        self._check_version(self.states.get(state.job_arn), transition.previous)
        self.histories.setdefault(state.job_arn, {})[entry.key] = entry
        self._count(transition.previous, state)
        self.states[state.job_arn] = state
        self.links.update(
            dict.fromkeys(map(training_job_key, transition.new_training_job_arns), state.job_arn)
        )
        return True

    def job_history(self, job_arn: str) -> Sequence[HistoryEntry]:
        entries = self.histories.get(job_arn, {})
        return [entries[key] for key in sorted(entries)]

    def jobs(self, status: str | None = None) -> list[JobState]:
        found = [s for s in self.states.values() if status is None or s.status.value == status]
        return sorted(found, key=lambda s: (s.created_at if isinstance(s.created_at, int) else 0, s.job_arn))

    def jobs_in_status(self, status: str, created_after_ms: int | None = None) -> list[JobState]:
        """The ByStatus index's time range (``RecentJobs``), as the share store reads it."""
        return [
            s
            for s in self.jobs(status)
            if created_after_ms is None or (s.created_at or 0) >= created_after_ms
        ]

    def newest_in_status(self, status: str, created_after_ms: int, limit: int) -> list[JobState]:
        """The ByStatus index read from its end (``RecentJobs``)."""
        return newest_of(self.states.values(), status, created_after_ms, limit)

    def arrival_counts(self, queue: str, since_ms: int) -> list[tuple[ArrivalKey, int]]:
        """The queue's counts above zero from the hour ``since_ms`` falls in (``ArrivalCounts``)."""
        return sorted(
            (key, n)
            for key, n in self.arrivals.items()
            if key.queue == queue and key.hour_ms >= hour_of(since_ms) and n > 0
        )

    def _count(self, previous: JobState | None, state: JobState) -> None:
        self.arrivals.update(arrival_moves(previous, state))

    def oldest_created_ms(self, status: str) -> int | None:
        """The ByStatus index's first key in one status (``RecentJobs``)."""
        return min((s.created_at or 0 for s in self.jobs(status)), default=None)

    def job_for_training_job(self, training_job_arn: str) -> str | None:
        return _by_training_job(self.links, training_job_arn)

    # -- payloads ---------------------------------------------------------------------------
    def save_payload(self, job_arn: str, item: Mapping[str, Any]) -> bool:
        if job_arn in self.payloads:
            return False
        self.payloads[job_arn] = as_stored(copy.deepcopy(dict(item)))
        return True

    def load_payload(self, job_arn: str) -> SubmittedPayload | None:
        item = self.payloads.get(job_arn)
        return payload_of(job_arn, copy.deepcopy(item)) if item is not None else None

    # -- start predictions ------------------------------------------------------------------
    def save_prediction(self, job_arn: str, prediction: StartPrediction) -> bool:
        """The table's condition: no prediction stored, or one from an earlier tick."""
        if not prediction.replaces(self.predictions.get(job_arn)):
            return False
        self.predictions[job_arn] = prediction
        return True

    def load_prediction(self, job_arn: str) -> StartPrediction | None:
        return self.predictions.get(job_arn)

    def prediction_times(self, job_arns: Sequence[str]) -> dict[str, int]:
        return {a: self.predictions[a].predicted_at for a in job_arns if a in self.predictions}

    # -- training jobs ----------------------------------------------------------------------
    def load_training_job(self, training_job_arn: str) -> TrainingJobState | None:
        return _by_training_job(self.training_states, training_job_arn)

    def save_training_job(self, transition: TrainingTransition, observation: TrainingJobObservation) -> bool:
        arn = training_job_key(transition.state.training_job_arn)
        if transition.previous is not None and arn not in self.training_states:
            arn = transition.previous.training_job_arn  # read from its legacy key: written back there
        if observation.seq in self.training_histories.get(arn, set()):
            return False
        self._check_version(self.training_states.get(arn), transition.previous)
        self.training_histories.setdefault(arn, set()).add(observation.seq)
        self.training_states[arn] = transition.state
        return True

    @staticmethod
    def _check_version(stored: JobState | TrainingJobState | None, previous: Any) -> None:
        """The table's condition on the state item: new when read as absent, else at the version read."""
        if (
            (stored is None)
            if previous is None
            else (stored is not None and stored.version == previous.version)
        ):
            return
        raise ConcurrentUpdateError("state changed since it was read")

    # -- cost -------------------------------------------------------------------------------
    def record_cost(self, cost: AttemptCost) -> bool:
        key = training_job_key(cost.training_job_arn)
        if key in self.costs or cost.training_job_arn in self.costs:
            return False
        self.costs[key] = cost
        if cost.team:
            for month, usd in cost.by_month().items():
                self.spend[(cost.team, month)] = self.spend.get((cost.team, month), 0.0) + usd
        return True

    def training_cost(self, training_job_arn: str) -> AttemptCost | None:
        return _by_training_job(self.costs, training_job_arn)

    def month_spend(self, team: str, month: str) -> float:
        return self.spend.get((team, month), 0.0)

    def open_attempts(self) -> list[OpenAttempt]:
        """The index's open training jobs (status not final), each with its linked job's state."""
        return [
            OpenAttempt(state, self.states.get(self.job_for_training_job(arn) or ""))
            for arn, state in sorted(
                self.training_states.items(), key=lambda kv: (kv[1].created_at or 0, kv[0])
            )
            if not state.status.is_final
        ]
