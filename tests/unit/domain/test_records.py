"""The job record `shareplane jobs` prints: history in order, failure decisions with class, rule and action."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from shareplane.adapters.dynamodb_store import history_from_item, history_item
from shareplane.domain.explain.record import job_record
from shareplane.domain.explain.record_json import record_json
from shareplane.domain.jobs.lifecycle import HistoryEntry, JobState, JobStatus, ObservationKind

JOB = "arn:aws:batch:us-east-1:123456789012:service-job/0f6e2c1a"
STATE = JobState(job_arn=JOB, status=JobStatus.FAILED, seq="s", job_name="int-ft-01")
RUNNING = HistoryEntry(
    key="1773720800000#3#RUNNING",
    status=JobStatus.RUNNING,
    at=1773720800000,
    reason=None,
    kind=ObservationKind.STATE_CHANGE,
    digest="a",
)
FAILED = HistoryEntry(
    key="1773720900000#6#FAILED",
    status=JobStatus.FAILED,
    at=1773720900000,
    reason="Received status from SageMaker: InternalServerError",
    kind=ObservationKind.STATE_CHANGE,
    digest="b",
    attempts=2,
)
DECIDED = HistoryEntry(
    key="1773720900000#~FAILURE_DECISION#2.0",
    status=JobStatus.FAILED,
    at=1773720900000,
    reason="internal_error (rule sagemaker-internal-error): requeue after 60s (budget left 2)",
    kind=ObservationKind.FAILURE_DECISION,
    digest=f"DECISION#{JOB}#2.0",
    failure_class="internal_error",
    rule="sagemaker-internal-error",
    action="requeue",
)


@pytest.mark.parametrize(
    ("entry", "shown"),
    [
        pytest.param(
            DECIDED,
            {
                "status": "FAILED",
                "at": 1773720900000,
                "reason": DECIDED.reason,
                "kind": "FAILURE_DECISION",
                "class": "internal_error",
                "rule": "sagemaker-internal-error",
                "action": "requeue",
            },
            id="a failure decision shows its class, rule and action",
        ),
        pytest.param(
            FAILED,
            {"status": "FAILED", "at": 1773720900000, "reason": FAILED.reason, "kind": "STATE_CHANGE"},
            id="a state change shows only status, time, reason and kind",
        ),
    ],
)
def test_history_entries_in_the_job_record(entry: HistoryEntry, shown: dict[str, object]) -> None:
    (record,) = record_json(job_record(STATE, [entry]))["history"]
    assert record == shown


@pytest.mark.parametrize(
    "entry",
    [DECIDED, FAILED, RUNNING],
    ids=[
        "a failure decision keeps class, rule and action through its table item",
        "a state change keeps its attempts through its table item",
        "a running entry round-trips with nothing added",
    ],
)
def test_history_entries_round_trip_through_their_table_items(entry: HistoryEntry) -> None:
    item = history_item(JOB, entry)
    assert history_from_item(item) == entry
    if entry.kind is not ObservationKind.FAILURE_DECISION:
        assert not {"failureClass", "rule", "action"} & set(item)


@given(st.permutations([RUNNING, FAILED, DECIDED]))
def test_the_history_reads_in_the_order_it_happened_whatever_order_it_is_loaded_in(
    entries: list[HistoryEntry],
) -> None:
    history = record_json(job_record(STATE, entries))["history"]
    assert [h["kind"] for h in history] == ["STATE_CHANGE", "STATE_CHANGE", "FAILURE_DECISION"]
    assert history == record_json(job_record(STATE, [RUNNING, FAILED, DECIDED]))["history"]
