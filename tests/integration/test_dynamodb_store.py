"""The DynamoDB store on moto: one write per applied event, none for duplicates, races never lose."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from moto import mock_aws
from shareplane.adapters.dynamodb_store import DynamoJobStore
from shareplane.domain.cost.billing import AttemptCost, BillableSource
from shareplane.domain.errors import ConcurrentUpdateError
from shareplane.domain.jobs.lifecycle import Decision, JobObservation, JobStatus, decide
from shareplane.schemas import parse_state_event
from shareplane.service.record_state import record_observation

from tests.aws import create_jobs_table
from tests.conftest import load_scenario
from tests.properties import examples
from tests.streams import lifecycle


class RecordingSink:
    """MetricsSink that keeps what it was given."""

    def __init__(self) -> None:
        self.names: Counter[str] = Counter()

    def emit(self, events: Any, dimensions: Any, properties: Any) -> None:
        self.names.update(e.name for e in events)


class CallCounter:
    """Counts AWS API calls by operation through a botocore hook."""

    def __init__(self, client: Any) -> None:
        self.calls: Counter[str] = Counter()
        client.meta.events.register("before-call", self._count)

    def _count(self, model: Any, **_: Any) -> None:
        self.calls[model.name] += 1


@pytest.fixture
def dynamodb(aws_credentials: None) -> Any:
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        create_jobs_table(client)
        yield client


@pytest.fixture
def store(dynamodb: Any) -> DynamoJobStore:
    return DynamoJobStore(dynamodb, "shareplane-jobs")


def test_a_whole_life_is_stored_with_history_in_order(store: DynamoJobStore) -> None:
    sink = RecordingSink()
    for event in load_scenario("job_whole_life"):
        record_observation(parse_state_event(event), store, sink, None)
    jobs = store.jobs()
    assert [j.status for j in jobs] == [JobStatus.SUCCEEDED]
    history = store.job_history(jobs[0].job_arn)
    assert [h.status.value for h in history] == ["RUNNABLE", "SCHEDULED", "STARTING", "RUNNING", "SUCCEEDED"]
    tj = store.load_training_job(jobs[0].latest_training_job_arn or "")
    assert tj is not None and tj.status.value == "Completed"
    assert store.job_for_training_job(tj.training_job_arn) == jobs[0].job_arn
    assert sink.names["Transitions"] == 5 and sink.names["RunSeconds"] == 1


def test_a_training_jobs_sagemaker_events_and_cost_are_read_back_for_the_jobs_story(
    store: DynamoJobStore,
) -> None:
    # GIVEN a whole life recorded, SageMaker's events (one of them sent twice) among Batch's
    for event in load_scenario("job_whole_life"):
        record_observation(parse_state_event(event), store, RecordingSink(), None)
    (job,) = store.jobs()
    arn = job.latest_training_job_arn or ""
    # THEN each distinct SageMaker event is read back once, oldest first, labelled by its secondary status
    history = store.training_history(arn)
    assert [e.label for e in history] == [
        "sagemaker:Downloading",
        "sagemaker:Training",
        "sagemaker:Completed",
    ]
    assert [e.at for e in history] == sorted(e.at for e in history) and history[0].at > 0
    assert store.training_history("arn:aws:sagemaker:us-east-1:123456789012:training-job/none") == []
    # AND its cost reads back as written (None for a training job never costed)
    cost = AttemptCost(
        arn, "ProdExp1", "MIDPRI", "ml.p4d.24xlarge", 4, 5400.0, 37.688, 1, BillableSource.REPORTED
    )
    assert store.training_cost(arn) is None
    assert store.record_cost(cost)
    assert store.training_cost(arn) == cost
    assert store.training_cost("arn:aws:sagemaker:us-east-1:123456789012:training-job/none") is None


def test_each_applied_event_is_one_write_and_a_duplicate_is_at_most_its_check(
    dynamodb: Any, store: DynamoJobStore
) -> None:
    counter = CallCounter(dynamodb)
    events = lifecycle(["capacity", "preempt"], "succeed")
    for obs in events:
        record_observation(obs, store, RecordingSink(), None)
    writes = counter.calls["TransactWriteItems"] + counter.calls["PutItem"] + counter.calls["UpdateItem"]
    assert writes == len(events)
    counter.calls.clear()
    for obs in events:  # every event delivered again
        assert record_observation(obs, store, RecordingSink(), None).decision is Decision.DUPLICATE
    assert counter.calls["TransactWriteItems"] == 0, "a duplicate caught on read needs no write at all"


def test_a_duplicate_that_slips_past_the_read_is_stopped_by_the_conditional_write(
    store: DynamoJobStore,
) -> None:
    obs = lifecycle([], "succeed")[0]
    transition = decide(None, obs)
    assert store.save_job(transition) is True
    # The same transition written again (a second Lambda read before the first wrote): refused, no change.
    assert store.save_job(transition) is False
    assert store.load_job(obs.job_arn).version == 1  # type: ignore[union-attr]


def test_a_stale_writer_gets_a_conflict_not_a_lost_update(store: DynamoJobStore) -> None:
    first, second, third = lifecycle([], "succeed")[:3]
    record_observation(first, store, RecordingSink(), None)
    stale_view = store.load_job(first.job_arn)
    record_observation(second, store, RecordingSink(), None)
    with pytest.raises(ConcurrentUpdateError):
        store.save_job(decide(stale_view, third))


def _writer(store: DynamoJobStore, part: list[JobObservation]) -> Iterator[None]:
    """One Lambda recording its events; it pauses between its read and its write."""
    for obs in part:
        while True:
            current = store.load_job(obs.job_arn)
            yield  # the other writer may run here: between our read and our conditional write
            transition = decide(current, obs)
            if transition.decision is Decision.DUPLICATE:
                break
            try:
                store.save_job(transition)
                break
            except ConcurrentUpdateError:
                continue  # re-read and re-decide, as the service does


@settings(
    max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(schedule=st.lists(st.integers(0, 1), min_size=1, max_size=200))
def test_racing_writers_never_lose_a_transition_or_move_the_state_backwards(
    dynamodb: Any, schedule: list[int]
) -> None:
    # GIVEN a job's stream split between two writers whose reads and writes interleave arbitrarily
    table = f"race-{uuid.uuid4().hex[:8]}"
    create_jobs_table(dynamodb, table)
    store = DynamoJobStore(dynamodb, table)
    events = lifecycle(["capacity", "retry", "preempt"], "succeed")
    expected = None
    for obs in events:
        expected = decide(expected, obs).state
    writers = [_writer(store, events[0::2]), _writer(store, events[1::2])]
    # WHEN they run in the drawn interleaving (then to completion)
    for pick in [*schedule, *([0, 1] * 200)]:
        if writers[pick] is not None:
            try:
                next(writers[pick])  # type: ignore[call-overload]
            except StopIteration:
                writers[pick] = None  # type: ignore[call-overload]
    # THEN every transition is in history once and the state is the in-order result
    state = store.load_job(events[0].job_arn)
    assert state is not None and expected is not None
    assert (state.status, state.seq, state.version) == (expected.status, expected.seq, expected.version)
    assert len(store.job_history(state.job_arn)) == len(events)
