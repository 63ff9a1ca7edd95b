"""The job lifecycle: ordering through regressions, duplicates, stale events and correlation."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shareplane.domain.jobs.lifecycle import (
    Decision,
    JobObservation,
    JobState,
    JobStatus,
    ObservationKind,
    correlates,
    decide,
)
from shareplane.schemas import parse_state_event

from tests.conftest import load_scenario, scenario_names
from tests.properties import examples
from tests.streams import detours, lifecycle, outcomes


def fold(observations: list[JobObservation]) -> tuple[JobState | None, dict[str, object], list[Decision]]:
    """Record observations one by one as the store would: state, history by key, decisions."""
    state: JobState | None = None
    history: dict[str, object] = {}
    decisions = []
    for obs in observations:
        transition = decide(state, obs)
        decisions.append(transition.decision)
        if transition.history is not None:
            assert transition.history.key not in history, "a history key was written twice"
            history[transition.history.key] = transition.history
        state = transition.state
    return state, history, decisions


def job_observations(scenario: str) -> list[JobObservation]:
    return [o for o in map(parse_state_event, load_scenario(scenario)) if isinstance(o, JobObservation)]


def at(status: JobStatus, **changes: object) -> JobObservation:
    return replace(lifecycle([], "succeed")[0], status=status, **changes)


REGRESSIONS = [
    pytest.param(
        ["capacity"],
        JobStatus.SCHEDULED,
        JobStatus.RUNNABLE,
        id="a capacity error sends SCHEDULED back to RUNNABLE",
    ),
    pytest.param(
        ["preempt"], JobStatus.RUNNING, JobStatus.RUNNABLE, id="a preemption sends RUNNING back to RUNNABLE"
    ),
    pytest.param(
        ["retry"], JobStatus.RUNNING, JobStatus.RUNNABLE, id="a retry sends RUNNING back to RUNNABLE"
    ),
]


@pytest.mark.parametrize(("path", "before", "after"), REGRESSIONS)
def test_a_regression_in_order_is_applied(path: list[str], before: JobStatus, after: JobStatus) -> None:
    # GIVEN a job that goes backwards once WHEN its events arrive in order
    events = lifecycle(path, "succeed")
    _, _, decisions = fold(events)
    # THEN every state change applies, including the move backwards
    states = [e for e, d in zip(events, decisions, strict=True) if not e.is_annotation]
    assert all(d is Decision.APPLY for e, d in zip(events, decisions, strict=True) if not e.is_annotation)
    moves = [(a.status, b.status) for a, b in zip(states, states[1:], strict=False)]
    assert (before, after) in moves


@pytest.mark.parametrize(("path", "before", "after"), REGRESSIONS)
def test_the_state_before_a_regression_arriving_late_is_stale(
    path: list[str], before: JobStatus, after: JobStatus
) -> None:
    events = [e for e in lifecycle(path, "succeed") if not e.is_annotation]
    index = next(
        i
        for i, (a, b) in enumerate(zip(events, events[1:], strict=False))
        if (a.status, b.status) == (before, after)
    )
    # GIVEN the regression recorded first WHEN the state it regressed from arrives afterwards
    state, _, _ = fold(events[:index] + [events[index + 1]])
    transition = decide(state, events[index])
    # THEN it lands in history only and the job stays where the regression put it
    assert transition.decision is Decision.STALE
    assert transition.state.status is after


CASES = [
    pytest.param(
        at(JobStatus.RUNNABLE),
        at(JobStatus.RUNNABLE),
        Decision.DUPLICATE,
        id="the same content twice is a duplicate",
    ),
    pytest.param(
        at(JobStatus.RUNNING, started_at=2),
        at(JobStatus.RUNNABLE),
        Decision.STALE,
        id="RUNNABLE after RUNNING of the same attempt is stale",
    ),
    pytest.param(
        at(JobStatus.SUCCEEDED, stopped_at=9, attempts=1),
        at(JobStatus.RUNNING, started_at=10**13),
        Decision.STALE,
        id="nothing outranks a final state even with a later time",
    ),
    pytest.param(
        at(JobStatus.RUNNABLE),
        at(JobStatus.SCHEDULED, scheduled_at=2),
        Decision.APPLY,
        id="a dispatch after the first wait applies",
    ),
    pytest.param(
        at(JobStatus.RUNNING, started_at=5),
        at(JobStatus.RUNNABLE, attempts=1, stopped_at=6),
        Decision.APPLY,
        id="a retry with one more attempt applies",
    ),
    pytest.param(
        at(JobStatus.RUNNABLE, kind=ObservationKind.QUEUE_BLOCKED, status_reason="blocked"),
        at(JobStatus.RUNNABLE),
        Decision.STALE,
        id="the plain RUNNABLE behind a queue-blocked notice is stale",
    ),
]


@pytest.mark.parametrize(("first", "second", "expected"), CASES)
def test_decision(first: JobObservation, second: JobObservation, expected: Decision) -> None:
    state = decide(None, first).state
    frozen = copy.deepcopy(state)
    transition = decide(state, second)
    assert transition.decision is expected
    assert state == frozen, "decide() modified its input"


def test_capacity_requeue_counts_once_and_uses_no_attempt() -> None:
    state, _, _ = fold(lifecycle(["capacity", "capacity"], "succeed"))
    assert state is not None
    assert (state.capacity_requeues, state.attempts, state.status) == (2, 1, JobStatus.SUCCEEDED)


def test_preemptions_are_counted_from_the_summary_not_per_event() -> None:
    state, _, _ = fold(lifecycle(["preempt", "preempt"], "succeed"))
    assert state is not None and state.preemptions == 2


def test_a_sagemaker_training_job_correlates_through_attempts_never_the_name() -> None:
    state, _, _ = fold(job_observations("retry"))
    assert state is not None and len(state.training_job_arns) == 2
    assert all(correlates(state, arn) for arn in state.training_job_arns)
    # A training job whose name carries the Batch job name but that no attempt points at is not ours.
    impostor = "arn:aws:sagemaker:us-east-1:123456789012:training-job/AWSBatchasr-conformer-large" + "0" * 32
    assert not correlates(state, impostor)


def test_the_official_sample_keeps_job_id_and_arn_apart() -> None:
    from tests.conftest import load_event

    obs = parse_state_event(load_event("batch_service_job_state_change_official_sample"))
    assert isinstance(obs, JobObservation)
    assert obs.job_arn.endswith("4c7599ae-0a82-49aa-ba5a-4727fcce14a8")
    assert obs.job_id == "0bb17543-ece6-4480-b1a7-a556d344746b"


@pytest.mark.parametrize(
    "scenario", scenario_names(), ids=lambda s: f"the {s} scenario folds to its last state"
)
def test_scenarios_end_in_their_last_state(scenario: str) -> None:
    events = job_observations(scenario)
    state, _, _ = fold(events)
    last = [e for e in events if not e.is_annotation][-1]
    assert state is not None and state.status is last.status


def _shuffled_with_duplicates(data: st.DataObject, events: list[JobObservation]) -> list[JobObservation]:
    copies = data.draw(st.lists(st.sampled_from(events), max_size=len(events)), label="duplicates")
    return data.draw(st.permutations(events + copies), label="delivery order")


@settings(max_examples=examples(300), deadline=None)
@given(path=detours, outcome=outcomes, data=st.data())
def test_any_order_with_any_duplicates_converges_to_the_in_order_result(
    path: list[str], outcome: str, data: st.DataObject
) -> None:
    events = lifecycle(path, outcome)
    expected_state, expected_history, _ = fold(events)
    state, history, _ = fold(_shuffled_with_duplicates(data, events))
    assert state == expected_state
    assert history == expected_history
    assert [h.status for _, h in sorted(history.items())] == [e.status for e in events]


@settings(max_examples=examples(100), deadline=None)
@given(scenario=st.sampled_from(scenario_names()), data=st.data())
def test_recorded_scenarios_converge_under_any_delivery(scenario: str, data: st.DataObject) -> None:
    events = job_observations(scenario)
    expected = fold(events)[:2]
    assert fold(_shuffled_with_duplicates(data, events))[:2] == expected
