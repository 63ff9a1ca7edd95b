"""JobStore and the payload items (DynamoJobStore): the fake and the table agree."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shareplane.adapters.dynamodb_items import marshal
from shareplane.adapters.dynamodb_store import (
    LINK_SK,
    DynamoJobStore,
    cost_item,
    legacy_training_pk,
    training_state_item,
)
from shareplane.domain.cost.billing import AttemptCost, BillableSource
from shareplane.domain.errors import ConcurrentUpdateError
from shareplane.domain.forecast.arrivals import HOUR_MS, ArrivalKey, arrival_key
from shareplane.domain.forecast.prediction import StartPrediction
from shareplane.domain.jobs.lifecycle import CapacityUsage, Decision, JobObservation, JobStatus, decide
from shareplane.domain.jobs.service_job_request import ServiceJobRequest
from shareplane.domain.jobs.training import (
    TrainingJobObservation,
    TrainingJobState,
    TrainingJobStatus,
    decide_training,
)
from shareplane.schemas import parse_state_event
from shareplane.service.record_state import record_observation

from tests.aws import clear_table
from tests.conftest import load_scenario
from tests.fakes.job_store import FakeJobStore
from tests.fakes.metrics import FakeMetrics
from tests.properties import examples
from tests.streams import JOB, detours, lifecycle, outcomes

TRAINING_JOB = "arn:aws:sagemaker:us-east-1:123456789012:training-job/AWSBatchllm-run1"


@pytest.fixture(params=["fake", "on the table"])
def store(request: pytest.FixtureRequest) -> Any:
    if request.param == "fake":
        return FakeJobStore()
    return request.getfixturevalue("on_the_table")(DynamoJobStore)


def test_a_whole_life_is_recorded_with_its_history_in_order(store: Any) -> None:
    for event in load_scenario("job_whole_life"):
        record_observation(parse_state_event(event), store, FakeMetrics(), None)
    (job,) = store.jobs()
    assert (
        job.status is JobStatus.SUCCEEDED and store.jobs("SUCCEEDED") == [job] and store.jobs("RUNNING") == []
    )
    assert store.load_job(job.job_arn) == job
    history = [h.status.value for h in store.job_history(job.job_arn)]
    assert history == ["RUNNABLE", "SCHEDULED", "STARTING", "RUNNING", "SUCCEEDED"]
    training = store.load_training_job(job.latest_training_job_arn or "")
    assert training is not None and training.status is TrainingJobStatus.COMPLETED
    assert store.job_for_training_job(training.training_job_arn) == job.job_arn
    assert store.job_for_training_job(TRAINING_JOB + "-never") is None


def test_a_transition_is_written_once_and_a_redelivery_is_a_duplicate(store: Any) -> None:
    first = decide(None, lifecycle([], "succeed")[0])
    assert store.save_job(first) is True
    assert store.save_job(first) is False
    assert [h.key for h in store.job_history(JOB)] == [first.history.key]
    assert store.load_job(JOB) == first.state


def test_a_writer_that_read_an_older_version_is_refused_and_nothing_of_it_is_written(store: Any) -> None:
    runnable, scheduled, starting = lifecycle([], "succeed")[:3]
    store.save_job(decide(None, runnable))
    read = store.load_job(JOB)
    winner, loser = decide(read, scheduled), decide(read, starting)
    assert store.save_job(winner) is True
    with pytest.raises(ConcurrentUpdateError):
        store.save_job(loser)
    # a second "first" write of the job is refused as well: the state exists
    with pytest.raises(ConcurrentUpdateError):
        store.save_job(decide(None, starting))
    assert store.load_job(JOB) == winner.state
    assert [h.status for h in store.job_history(JOB)] == [JobStatus.RUNNABLE, JobStatus.SCHEDULED]


def test_a_duplicate_transition_has_nothing_to_write(store: Any) -> None:
    observation = lifecycle([], "succeed")[0]
    store.save_job(decide(None, observation))
    duplicate = decide(store.load_job(JOB), observation)
    assert duplicate.decision is Decision.DUPLICATE
    with pytest.raises(ValueError, match="nothing to write"):
        store.save_job(duplicate)


def test_the_training_job_links_are_written_with_the_state(store: Any) -> None:
    runnable, scheduled = lifecycle([], "succeed")[:2]
    store.save_job(decide(None, runnable))
    transition = decide(store.load_job(JOB), scheduled)
    assert transition.new_training_job_arns == (scheduled.latest_training_job_arn,)
    store.save_job(transition)
    assert store.job_for_training_job(scheduled.latest_training_job_arn) == JOB


def test_jobs_are_listed_by_creation_time_and_filtered_by_status(store: Any) -> None:
    def first_write(name: str, status: JobStatus, created: int) -> None:
        observation = JobObservation(job_arn=JOB + name, status=status, job_id=name, created_at=created)
        store.save_job(decide(None, observation))

    first_write("-c", JobStatus.RUNNING, 3000)
    first_write("-a", JobStatus.RUNNABLE, 2000)
    first_write("-b", JobStatus.RUNNABLE, 1000)
    assert [j.job_id for j in store.jobs()] == ["-b", "-a", "-c"]
    assert [j.job_id for j in store.jobs("RUNNABLE")] == ["-b", "-a"]
    assert store.jobs("FAILED") == []


REQUEST = ServiceJobRequest(
    job_name="a", job_queue="q", service_job_type="SAGEMAKER_TRAINING", service_request_payload="{}"
)


def test_a_payload_is_stored_once_as_the_table_gives_it_back_and_is_no_job(store: Any) -> None:
    item = {
        "team": "ProdExp1",
        "request": {
            **REQUEST.aws_fields(),
            "timeoutConfig": {"attemptDurationSeconds": 3600.0},
            "tags": None,
        },
        "uploader": {"account": "111122223333", "principal": None},
        "requestAt": None,
    }
    assert store.save_payload(JOB, item) is True
    assert store.save_payload(JOB, {**item, "team": "ProdExp2"}) is False
    stored = store.load_payload(JOB)
    assert stored is not None and stored.team == "ProdExp1" and stored.job_arn == JOB
    assert stored.uploader == {"account": "111122223333"} and stored.request_at is None
    assert stored.request == replace(REQUEST, timeout_config={"attemptDurationSeconds": 3600})
    assert store.load_payload(JOB + "-never") is None
    assert store.jobs() == [] and store.load_job(JOB) is None


def training_observation(status: TrainingJobStatus, modified: int) -> TrainingJobObservation:
    return TrainingJobObservation(
        training_job_arn=TRAINING_JOB,
        status=status,
        training_job_name="AWSBatchllm-run1",
        instance_type="ml.p4d.24xlarge",
        instance_count=2,
        last_modified_at=modified,
    )


def test_a_training_job_is_written_once_at_the_version_read(store: Any) -> None:
    started = decide_training(None, training_observation(TrainingJobStatus.IN_PROGRESS, 1000))
    observation = training_observation(TrainingJobStatus.IN_PROGRESS, 1000)
    assert store.save_training_job(started, observation) is True
    assert store.save_training_job(started, observation) is False
    read = store.load_training_job(TRAINING_JOB)
    assert read == started.state
    done = training_observation(TrainingJobStatus.COMPLETED, 2000)
    stopped = training_observation(TrainingJobStatus.STOPPED, 1500)
    assert store.save_training_job(decide_training(read, done), done) is True
    with pytest.raises(ConcurrentUpdateError):
        store.save_training_job(decide_training(read, stopped), stopped)
    assert store.load_training_job(TRAINING_JOB).status is TrainingJobStatus.COMPLETED
    assert store.load_training_job(TRAINING_JOB + "-never") is None


def test_a_stored_state_reads_back_equal_field_for_field(store: Any) -> None:
    written = None
    for observation in lifecycle(["preempt", "retry"], "fail"):
        transition = decide(store.load_job(JOB), observation)
        if transition.writes:
            assert store.save_job(transition) is True
            written = transition.state
    assert written is not None and written.status is JobStatus.FAILED and written.preemptions == 1
    assert store.load_job(JOB) == written and store.jobs("FAILED") == [written]


def late_fields(observations: list[JobObservation]) -> list[JobObservation]:
    """``observations`` as Batch may send them: capacity known from RUNNING on, and the final event
    without share, priority or capacity (as in Batch's official SUCCEEDED sample)."""
    two = (CapacityUsage("NUM_INSTANCES", 2),)
    out = [replace(o, capacity_usage=two) if o.status is JobStatus.RUNNING else o for o in observations]
    final = out[-1]
    return [*out[:-1], replace(final, share_identifier=None, scheduling_priority=None, capacity_usage=())]


@settings(
    max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data(), detours=detours, outcome=outcomes)
def test_any_delivery_order_with_redeliveries_is_stored_alike(
    jobs_table: tuple[Any, str], data: st.DataObject, detours: list[str], outcome: str
) -> None:
    # GIVEN one job's observations, the last without fields the earlier ones carry, shuffled and
    # partly delivered twice, recorded on the fake and the table
    observations = late_fields(lifecycle(detours, outcome))
    delivered = data.draw(st.permutations(observations + data.draw(st.lists(st.sampled_from(observations)))))
    fake = FakeJobStore()
    client, name = jobs_table
    clear_table(client, name)
    table = DynamoJobStore(client, name)
    for observation in delivered:
        for store in (fake, table):
            record_observation(observation, store, FakeMetrics(), None)
    # THEN both hold the same state and the same history, one item per distinct observation
    assert fake.load_job(JOB) == table.load_job(JOB)
    assert fake.job_history(JOB) == table.job_history(JOB)
    assert len(table.job_history(JOB)) == len({o.digest for o in observations})
    assert fake.jobs() == table.jobs()
    # AND both count the job once, under its final state's key (a late event's fields moved it)
    final = table.load_job(JOB)
    assert final is not None and final.instance_count == 2
    assert fake.arrival_counts("gpu", 0) == table.arrival_counts("gpu", 0) == [(arrival_key(final), 1)]


def test_a_finished_job_is_counted_once_in_its_queues_creation_hour(store: Any) -> None:
    # GIVEN one job recorded from its first event to its last
    observations = lifecycle(["preempt"], "succeed")
    for observation in observations:
        record_observation(observation, store, FakeMetrics(), None)
    # THEN it is counted once, under its queue, the hour it was created, its share, instances, priority
    created = observations[0].created_at or 0
    expected = ArrivalKey("gpu", created - created % HOUR_MS, "ProdExp1", 1, 50)
    assert store.arrival_counts("gpu", created) == [(expected, 1)]
    # and read only for its queue and from the hour a read starts in
    assert store.arrival_counts("cpu", created) == []
    assert store.arrival_counts("gpu", created + HOUR_MS) == []


def test_any_share_name_is_counted_and_read_back_under_it(store: Any) -> None:
    # GIVEN jobs of shares whose names hold the layout's separator, spaces and accents
    for n, share in enumerate(["Prod|Exp|1", "équipe a", ""]):
        for observation in lifecycle([], "succeed", created=1_773_690_900_000 + n):
            record_observation(
                replace(observation, job_arn=f"{JOB}-{n}", share_identifier=share), store, FakeMetrics(), None
            )
    # THEN each is counted under its own name
    hour = 1_773_690_900_000 - 1_773_690_900_000 % HOUR_MS
    assert store.arrival_counts("gpu", 0) == sorted(
        (ArrivalKey("gpu", hour, share, 1, 50), 1) for share in ["Prod|Exp|1", "équipe a", ""]
    )


def test_an_active_job_is_not_counted(store: Any) -> None:
    for observation in lifecycle([], "succeed")[:-1]:
        record_observation(observation, store, FakeMetrics(), None)
    assert store.arrival_counts("gpu", 0) == []


def attempt_cost(training_job: str, team: str | None, at_ms: int, billable_seconds: float) -> AttemptCost:
    return AttemptCost(
        training_job_arn=f"arn:aws:sagemaker:us-east-1:123456789012:training-job/{training_job}",
        team=team,
        tier="MIDPRI",
        instance_type="ml.p4d.24xlarge",
        instance_count=2,
        billable_seconds=billable_seconds,
        usd_per_hour=37.688,
        at=at_ms,
        source=BillableSource.REPORTED,
    )


def test_an_attempt_is_costed_once_and_its_team_month_adds_it_once(store: Any) -> None:
    november = 1_795_000_000_000  # 2026-11-18 UTC
    first = attempt_cost("AWSBatchllm-a1", "ProdExp1", november, 3600)
    assert store.record_cost(first) is True
    assert store.record_cost(first) is False
    assert store.record_cost(attempt_cost("AWSBatchllm-a2", "ProdExp1", november, 1800)) is True
    assert store.month_spend("ProdExp1", "2026-11") == pytest.approx(2 * 37.688 * 1.5)
    assert store.month_spend("ProdExp1", "2026-12") == 0.0
    assert store.month_spend("ProdExp2", "2026-11") == 0.0


def test_an_attempt_with_no_team_is_costed_but_counts_in_no_month(store: Any) -> None:
    orphan = attempt_cost("AWSBatchllm-o1", None, 1_795_000_000_000, 3600)
    assert store.record_cost(orphan) is True
    assert store.record_cost(orphan) is False
    assert store.month_spend("ProdExp1", "2026-11") == 0.0


def test_a_cost_across_a_month_boundary_adds_each_months_part_once(store: Any) -> None:
    # GIVEN 2 instances billed 48 h from noon on 31 January to noon on 2 February
    started = 1_769_860_800_000  # 2026-01-31T12:00:00Z
    cost = replace(
        attempt_cost("AWSBatchllm-x1", "ProdExp1", started + 48 * 3_600_000, 48 * 3600), started_at=started
    )
    assert store.record_cost(cost) is True and store.record_cost(cost) is False
    # THEN January has a quarter of it, February the rest, and they add up to the whole
    assert store.month_spend("ProdExp1", "2026-01") == pytest.approx(cost.usd / 4)
    assert store.month_spend("ProdExp1", "2026-02") == pytest.approx(cost.usd * 3 / 4)
    assert store.month_spend("ProdExp1", "2026-01") + store.month_spend(
        "ProdExp1", "2026-02"
    ) == pytest.approx(cost.usd, abs=1e-6)
    assert store.training_cost(cost.training_job_arn) == cost


def test_open_attempts_are_the_training_jobs_not_final_each_with_its_linked_job(store: Any) -> None:
    # GIVEN a Batch job linking two training jobs, one running and one completed, and a third unlinked
    linked = lifecycle([], "succeed")[0]
    run, done, stranger = TRAINING_JOB + "-run", TRAINING_JOB + "-done", TRAINING_JOB + "-stranger"
    store.save_job(decide(None, replace(linked, training_job_arns=(run, done))))
    for arn, status in (
        (run, TrainingJobStatus.IN_PROGRESS),
        (done, TrainingJobStatus.COMPLETED),
        (stranger, TrainingJobStatus.IN_PROGRESS),
    ):
        obs = TrainingJobObservation(
            arn, status, created_at=1_795_000_000_000, last_modified_at=1_795_000_060_000
        )
        store.save_training_job(decide_training(None, obs), obs)
    # THEN the open attempts are the running two, the linked one with its job's state
    opened = {a.training.training_job_arn: a for a in store.open_attempts()}
    assert set(opened) == {run, stranger}
    assert opened[run].job == store.load_job(JOB) and opened[stranger].job is None
    assert opened[run].training == store.load_training_job(run)
    # WHEN the running one ends THEN it is no longer open
    end = TrainingJobObservation(
        run, TrainingJobStatus.COMPLETED, created_at=1_795_000_000_000, last_modified_at=1_795_000_120_000
    )
    store.save_training_job(decide_training(store.load_training_job(run), end), end)
    assert [a.training.training_job_arn for a in store.open_attempts()] == [stranger]


# -- start predictions (the PREDICTION item beside the state) ---------------------------------------
def _prediction(tick_ms: int) -> StartPrediction:
    return StartPrediction(tick_ms, tick_ms + 60_000, tick_ms + 600_000, None, 0.7, 100)


def test_a_later_ticks_prediction_replaces_an_older_one_and_never_the_reverse(store: Any) -> None:
    older, newer = _prediction(1_000_000), _prediction(1_300_000)
    assert store.load_prediction(JOB) is None
    assert store.save_prediction(JOB, older) is True
    assert store.save_prediction(JOB, newer) is True
    assert store.save_prediction(JOB, older) is False
    assert store.save_prediction(JOB, newer) is False  # the same tick again
    assert store.load_prediction(JOB) == newer


def test_a_prediction_never_touches_the_jobs_state_or_its_version(store: Any) -> None:
    first = decide(None, lifecycle([], "succeed")[0])
    store.save_job(first)
    store.save_prediction(JOB, _prediction(1_000_000))
    assert store.load_job(JOB) == first.state and store.jobs() == [first.state]
    assert [h.key for h in store.job_history(JOB)] == [first.history.key]


@settings(
    max_examples=examples(15), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ticks=st.lists(st.integers(1, 6), min_size=1, max_size=8))
def test_ticks_stored_in_any_order_leave_the_newest(store: Any, ticks: list[int]) -> None:
    job = f"{JOB}-{'-'.join(map(str, ticks))}"  # one job per example: the table outlives examples
    for tick in ticks:
        store.save_prediction(job, _prediction(tick * 300_000))
    assert store.load_prediction(job) == _prediction(max(ticks) * 300_000)


def test_prediction_times_name_each_predicted_job_and_leave_out_the_others(store: Any) -> None:
    # GIVEN 230 jobs (more than BatchGetItem's 100 keys), every third one predicted at its own tick
    jobs = [f"{JOB}-times-{n}" for n in range(230)]
    for n, job in enumerate(jobs[::3]):
        store.save_prediction(job, _prediction(1_000_000 + n))
    # WHEN the times are read (a job named twice, and one the table never saw)
    times = store.prediction_times([*jobs, jobs[0], f"{JOB}-never"])
    # THEN each predicted job has its tick, and no other job is named
    assert times == {job: 1_000_000 + n for n, job in enumerate(jobs[::3])}
    assert store.prediction_times([]) == {}


def test_a_training_job_is_found_and_costed_once_by_its_arn_in_either_casing(store: Any) -> None:
    # GIVEN a job dispatched to a training job Batch names in its casing (AWSBatch...), and its events
    obs = JobObservation(
        JOB, JobStatus.SCHEDULED, created_at=1, scheduled_at=2, latest_training_job_arn=TRAINING_JOB
    )
    assert store.save_job(decide(None, obs)) is True
    started = training_observation(TrainingJobStatus.IN_PROGRESS, 1000)
    assert store.save_training_job(decide_training(None, started), started) is True
    # WHEN SageMaker names it lower-cased (ListTrainingJobs, DescribeTrainingJob)
    lowered = TRAINING_JOB.lower()
    # THEN the link, the state and its next write find the same training job, and its cost counts once
    assert store.job_for_training_job(lowered) == JOB
    read = store.load_training_job(lowered)
    assert read is not None and read.training_job_name == "AWSBatchllm-run1"
    done = replace(training_observation(TrainingJobStatus.COMPLETED, 2000), training_job_arn=lowered)
    assert store.save_training_job(decide_training(read, done), done) is True
    assert store.load_training_job(TRAINING_JOB).status is TrainingJobStatus.COMPLETED
    cost = replace(attempt_cost("AWSBatchllm-run1", "ProdExp1", 1_795_000_000_000, 3600))
    assert store.record_cost(cost) is True
    assert store.record_cost(replace(cost, training_job_arn=cost.training_job_arn.lower())) is False
    assert store.month_spend("ProdExp1", "2026-11") == pytest.approx(2 * 37.688)


def stored_before_the_normalisation(store: Any, state: TrainingJobState, cost: AttemptCost) -> None:
    """A training job's state, link and cost as a table written before the keys were normalised holds
    them: under the ARN as it was spelled."""
    arn = state.training_job_arn
    if isinstance(store, FakeJobStore):
        store.training_states[arn], store.links[arn], store.costs[arn] = state, JOB, cost
        return
    legacy = legacy_training_pk(arn)
    items = [
        training_state_item(state, legacy),
        {"pk": legacy, "sk": LINK_SK, "entity": "link", "jobArn": JOB},
        {**cost_item(cost), "pk": legacy},
    ]
    for item in items:
        store._client.put_item(TableName=store._table, Item=marshal(item))


def test_items_written_before_the_normalisation_are_read_and_written_in_place(store: Any) -> None:
    # GIVEN a table from before the normalisation: a training job's state, link and cost under its ARN
    started = training_observation(TrainingJobStatus.IN_PROGRESS, 1000)
    state = decide_training(None, started).state
    cost = attempt_cost("AWSBatchllm-run1", "ProdExp1", 1_795_000_000_000, 3600)
    stored_before_the_normalisation(store, state, cost)
    # WHEN the same ARN arrives again
    read = store.load_training_job(TRAINING_JOB)
    # THEN everything is found, the next state is written at the version read, the cost is not added twice
    assert read == state and store.job_for_training_job(TRAINING_JOB) == JOB
    done = training_observation(TrainingJobStatus.COMPLETED, 2000)
    assert store.save_training_job(decide_training(read, done), done) is True
    assert store.load_training_job(TRAINING_JOB).status is TrainingJobStatus.COMPLETED
    assert store.record_cost(cost) is False
