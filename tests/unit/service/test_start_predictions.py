"""The watch's prediction step: each waiting GPU job's start forecast on the live twin, stored on its record."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shareplane.domain.errors import ConfigError
from shareplane.domain.explain.record_json import record_json
from shareplane.domain.explain.wait import HISTORY_SECONDS
from shareplane.domain.forecast import start_forecast
from shareplane.domain.forecast.prediction import StartPrediction
from shareplane.domain.forecast.start_forecast import ForecastSettings, History
from shareplane.domain.jobs.lifecycle import HistoryEntry, JobState, JobStatus, ObservationKind
from shareplane.service.queries import job_records
from shareplane.service.start_predictions import (
    READ_SECONDS,
    ForecastLimits,
    ForecastPorts,
    predict_starts,
    prediction_targets,
)
from shareplane.service.watch_jobs import watch

from tests.fakes.failure_world import QUEUE_ARN, World
from tests.fakes.job_store import FakeJobStore
from tests.fakes.shares_batch import TWO_TEAM_POLICY, FakeSharesBatch
from tests.properties import examples

NOW = 1773720000.0
ARN = "arn:aws:batch:us-east-1:123456789012:service-job/"
POLICY = TWO_TEAM_POLICY


def entry(status: JobStatus, at: float, n: int) -> HistoryEntry:
    at_ms = int(at * 1000)
    return HistoryEntry(f"{at_ms:013d}#{n}", status, at_ms, None, ObservationKind.STATE_CHANGE, f"d{n}")


def put_job(
    store: FakeJobStore,
    job_id: str,
    status: JobStatus,
    created: float,
    *,
    share: str = "ProdExp2",
    priority: int = 50,
    held: float | None = None,
    ended: float | None = None,
    queue: str = QUEUE_ARN,
) -> JobState:
    """A job as the table holds it: its state and the history a forecast reads its holds from."""
    state = JobState(
        job_arn=ARN + job_id,
        status=status,
        seq="a",
        job_id=job_id,
        job_name=job_id,
        job_queue=queue,
        share_identifier=share,
        scheduling_priority=priority,
        created_at=int(created * 1000),
        stopped_at=int(ended * 1000) if ended else None,
    )
    history = [entry(JobStatus.SUBMITTED, created, 0), entry(JobStatus.RUNNABLE, created, 1)]
    if held is not None:
        history += [entry(JobStatus.SCHEDULED, held, 2), entry(JobStatus.RUNNING, held + 60, 3)]
    if ended is not None:
        history.append(entry(JobStatus.SUCCEEDED, ended, 4))
    store.put_states(state)
    store.histories[state.job_arn] = {e.key: e for e in history}
    return state


def busy_world(waiting: int = 4) -> World:
    """A 4-instance fair-share queue: 40 finished runs of about an hour, 4 running, ``waiting`` waiting."""
    world = World()
    store = world.store
    for n in range(40):
        start = NOW - 20 * 3600 + n * 1200
        put_job(store, f"old-{n}", JobStatus.SUCCEEDED, start - 30, held=start, ended=start + 3000 + 60 * n)
    for n in range(4):
        put_job(store, f"run-{n}", JobStatus.RUNNING, NOW - 1800 - n * 300, held=NOW - 1500 - n * 300)
    for n in range(waiting):
        put_job(store, f"wait-{n}", JobStatus.RUNNABLE, NOW - 7500 + n * 100, priority=89)
    world.clock.now = NOW
    return world


def wait_alerts(world: World) -> list[tuple[str, dict[str, Any], dict[str, str]]]:
    """The wait alerts sent (the fake Batch knows none of the jobs, so the reconcile alerts them too)."""
    return [sent for sent in world.alerts.sent if sent[2]["kind"] == "wait_slo"]


def forecast_ports(world: World, limits: ForecastLimits | None = None) -> ForecastPorts:
    return ForecastPorts(
        store=world.store,
        recent=world.store,
        batch=FakeSharesBatch(policy=POLICY, capacity=4),
        config=world.config,
        queue="search-p4d-queue",
        limits=limits or ForecastLimits(samples=40),
    )


def test_each_waiting_job_gets_a_prediction_stored_at_the_ticks_time() -> None:
    # GIVEN a full queue with four jobs waiting
    world = busy_world()
    # WHEN the watch runs with the prediction step
    report = watch(world.ports, NOW, forecast_ports(world))
    # THEN each waiting job has a stored prediction, made at the tick's time, after it
    waiting = {ARN + f"wait-{n}" for n in range(4)}
    assert set(report.predictions) == waiting and report.predictions_stored == 4
    for arn in waiting:
        stored = world.store.load_prediction(arn)
        assert stored is not None and stored == report.predictions[arn]
        assert stored.predicted_at == int(NOW * 1000)
        assert stored.p10 is not None and stored.p50 is not None
        assert NOW * 1000 <= stored.p10 <= stored.p50 <= (stored.p90 or stored.p50)
    # AND running and finished jobs get none
    assert world.store.load_prediction(ARN + "run-0") is None


def test_the_same_tick_predicts_the_same_and_a_redelivery_stores_nothing_new() -> None:
    world = busy_world()
    first = watch(world.ports, NOW, forecast_ports(world))
    again = watch(world.ports, NOW, forecast_ports(world))
    assert again.predictions == first.predictions  # the seed is the tick's
    assert again.predictions_stored == 0


def test_the_jobs_listing_shows_the_stored_prediction_as_a_field() -> None:
    world = busy_world(waiting=1)
    report = watch(world.ports, NOW, forecast_ports(world))
    records = {
        r.job_arn: record_json(r, beside=True) for r in job_records(world.store, predictions=world.store)
    }
    assert records[ARN + "wait-0"]["prediction"] == report.predictions[ARN + "wait-0"].as_record()
    assert records[ARN + "run-0"]["prediction"] is None


def test_the_cap_predicts_the_longest_waiting_jobs_only() -> None:
    world = busy_world(waiting=5)
    ports = forecast_ports(world, ForecastLimits(max_jobs=2, samples=20))
    predictions = predict_starts(ports, {s: world.store.jobs(s.value) for s in JobStatus}, NOW)
    assert set(predictions) == {ARN + "wait-0", ARN + "wait-1"}


def test_over_the_cap_a_new_job_is_predicted_before_the_stalest_predictions_are_refreshed() -> None:
    # GIVEN three jobs waiting and room for two predictions a tick
    world = busy_world(waiting=3)
    ports = forecast_ports(world, ForecastLimits(max_jobs=2, samples=20))

    def tick(at: float) -> set[str]:
        active = {s: world.store.jobs(s.value) for s in JobStatus}
        predictions = predict_starts(ports, active, at)
        for arn, prediction in predictions.items():
            world.store.save_prediction(arn, prediction)
        return set(predictions)

    # WHEN the first tick runs, THEN it predicts the two longest-waiting
    assert tick(NOW) == {ARN + "wait-0", ARN + "wait-1"}
    # WHEN a job is submitted behind them, THEN the next tick predicts the two never predicted
    put_job(world.store, "wait-new", JobStatus.RUNNABLE, NOW + 100, priority=89)
    assert tick(NOW + 300) == {ARN + "wait-2", ARN + "wait-new"}
    # AND the tick after refreshes the stalest predictions
    assert tick(NOW + 600) == {ARN + "wait-0", ARN + "wait-1"}
    assert tick(NOW + 900) == {ARN + "wait-2", ARN + "wait-new"}


@pytest.mark.parametrize(
    ("last", "expected"),
    [
        ({}, ["a", "b"]),
        ({"a": 5, "b": 5}, ["c", "d"]),
        ({"a": 5, "b": 1, "c": 9, "d": 3}, ["b", "d"]),
        ({"a": 5, "c": 9, "d": 3}, ["b", "d"]),
    ],
    ids=[
        "none predicted: the longest-waiting",
        "the never predicted before any predicted",
        "all predicted: the stalest first",
        "a never predicted job, then the stalest",
    ],
)
def test_prediction_targets(last: dict[str, int], expected: list[str]) -> None:
    assert prediction_targets(["a", "b", "c", "d"], last, 2) == expected


@settings(max_examples=examples(200), deadline=None)
@given(
    last=st.dictionaries(st.integers(0, 29), st.integers(0, 5)),
    waiting=st.integers(1, 30),
    cap=st.integers(1, 12),
)
def test_prediction_targets_never_predicted_first_then_stalest_and_every_job_in_turn(
    last: dict[int, int], waiting: int, cap: int
) -> None:
    # GIVEN jobs waiting in queue order, some predicted at earlier ticks
    names = [f"j{n:02d}" for n in range(waiting)]
    times = {f"j{n:02d}": t for n, t in last.items() if n < waiting}
    chosen = prediction_targets(names, times, cap)
    # THEN the cap holds, the never predicted come first in queue order, then the stalest
    assert len(chosen) == min(cap, waiting) and len(set(chosen)) == len(chosen)
    never = [n for n in names if n not in times]
    assert chosen[: len(never)] == never[: len(chosen)]
    stale = [times[n] for n in chosen if n in times]
    assert stale == sorted(stale)
    assert all(times[n] >= max(stale, default=0) for n in names if n in times and n not in chosen)
    # AND ticks that store what they predict reach every waiting job within ceil(waiting / cap) ticks
    predicted = dict(times)
    for tick in range(-(-waiting // cap)):
        for name in prediction_targets(names, predicted, cap):
            predicted[name] = 100 + tick
    assert all(predicted.get(n, 0) >= 100 for n in names)


def test_under_the_cap_no_prediction_times_are_read() -> None:
    world = busy_world(waiting=3)
    read: list[object] = []
    world.store.prediction_times = lambda arns: read.append(arns) or {}  # type: ignore[method-assign]
    predict_starts(forecast_ports(world), {s: world.store.jobs(s.value) for s in JobStatus}, NOW)
    assert read == []


def test_no_waiting_job_means_no_forecast() -> None:
    world = World()
    put_job(world.store, "run-0", JobStatus.RUNNING, NOW - 600, held=NOW - 500)
    ports = forecast_ports(world)
    assert predict_starts(ports, {s: world.store.jobs(s.value) for s in JobStatus}, NOW) == {}


def test_jobs_of_other_queues_are_not_predicted() -> None:
    world = busy_world(waiting=1)
    put_job(world.store, "cpu-0", JobStatus.RUNNABLE, NOW - 600, queue=QUEUE_ARN.replace("p4d", "cpu-fifo"))
    predictions = predict_starts(
        forecast_ports(world), {s: world.store.jobs(s.value) for s in JobStatus}, NOW
    )
    assert set(predictions) == {ARN + "wait-0"}


def test_the_wait_alert_carries_the_jobs_latest_prediction() -> None:
    # GIVEN a MIDPRI job at its escalation ceiling (89), waiting more than twice its SLO
    world = busy_world(waiting=1)
    # WHEN the watch runs with the prediction step
    report = watch(world.ports, NOW, forecast_ports(world))
    # THEN its wait alert carries this tick's prediction, as a field and in words
    ((_, body, _),) = wait_alerts(world)
    prediction = report.predictions[ARN + "wait-0"]
    assert body["prediction"] == prediction.as_record()
    assert "predicted start p50" in body["reason"]


def test_without_a_prediction_this_tick_the_alert_carries_the_stored_one() -> None:
    world = busy_world(waiting=1)
    earlier = StartPrediction(int((NOW - 300) * 1000), int(NOW * 1000), int((NOW + 60) * 1000), None, 0.6, 40)
    world.store.save_prediction(ARN + "wait-0", earlier)
    watch(world.ports, NOW, forecast_ports(world, ForecastLimits(max_jobs=0)))
    ((_, body, _),) = wait_alerts(world)
    assert body["prediction"] == earlier.as_record()


@pytest.mark.parametrize(
    "limits",
    [{"max_jobs": -1}, {"samples": 1001}, {"history_jobs": 5001}],
    ids=["a negative job cap", "too many samples", "too much history"],
)
def test_limits_out_of_range_name_the_setting(limits: dict[str, int]) -> None:
    with pytest.raises(ConfigError) as raised:
        ForecastLimits(**limits)
    assert "FORECAST_" in str(raised.value)


# -- reordered and duplicated ticks converge ---------------------------------------------------------
TICKS = [NOW + 300 * k for k in range(4)]


@pytest.fixture(scope="module")
def tick_predictions() -> dict[float, dict[str, StartPrediction]]:
    """Each tick's predictions (deterministic per tick), computed once."""
    world = busy_world(waiting=2)
    ports = forecast_ports(world, ForecastLimits(samples=20))
    active = {s: world.store.jobs(s.value) for s in JobStatus}
    return {tick: predict_starts(ports, active, tick) for tick in TICKS}


@settings(
    max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(order=st.lists(st.sampled_from(TICKS), min_size=1, max_size=10))
def test_ticks_in_any_order_and_number_leave_the_newest_ticks_prediction(
    tick_predictions: dict[float, dict[str, StartPrediction]], order: list[float]
) -> None:
    # GIVEN the ticks' predictions offered to the table in any order, some more than once
    store = FakeJobStore()
    for tick in order:
        for arn, prediction in tick_predictions[tick].items():
            store.save_prediction(arn, prediction)
    # THEN each job holds the prediction of the latest tick that ran
    newest = max(order)
    for arn, prediction in tick_predictions[newest].items():
        assert store.load_prediction(arn) == prediction
        assert prediction.predicted_at == int(newest * 1000)


def test_an_older_tick_never_replaces_a_newer_one() -> None:
    newer = StartPrediction(2000, 3000, 4000, 5000, 1.0, 10)
    older = replace(newer, predicted_at=1000, p50=9999)
    store = FakeJobStore()
    assert store.save_prediction("j", newer) is True
    assert store.save_prediction("j", older) is False
    assert store.save_prediction("j", newer) is False  # the same tick again: nothing new
    assert store.load_prediction("j") == newer


def test_the_twin_reads_no_history_of_a_waiting_job_that_never_held_capacity() -> None:
    # GIVEN the busy queue, with its reads of the jobs' histories recorded
    world = busy_world(waiting=3)
    read: list[str] = []
    history_of = world.store.job_history
    world.store.job_history = lambda arn: read.append(arn) or history_of(arn)  # type: ignore[method-assign]
    # WHEN the waiting jobs are predicted
    predictions = predict_starts(
        forecast_ports(world), {s: world.store.jobs(s.value) for s in JobStatus}, NOW
    )
    # THEN only the running and finished jobs' histories were read (a never-dispatched job has no hold)
    assert len(predictions) == 3
    assert not any("wait-" in arn for arn in read)
    assert {ARN + f"run-{n}" for n in range(4)} <= set(read)


def forecast_inputs(monkeypatch: pytest.MonkeyPatch) -> list[History]:
    """Every history the forecast is given from now on (its callers import it when they run)."""
    seen: list[History] = []
    real = start_forecast.forecast_starts

    def recording(live: Any, history: History, **kw: Any) -> Any:
        seen.append(history)
        return real(live, history, **kw)

    monkeypatch.setattr(start_forecast, "forecast_starts", recording)
    return seen


def test_past_the_history_cap_the_finished_jobs_arrive_from_the_counts_and_only_the_newest_are_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GIVEN the busy queue (40 finished, 4 running, 3 waiting), with its reads of finished jobs and
    # of histories recorded, and a cap of 10 finished jobs read whole (their run times)
    world = busy_world(waiting=3)
    read: list[str] = []
    history_of = world.store.job_history
    world.store.job_history = lambda arn: read.append(arn) or history_of(arn)  # type: ignore[method-assign]
    listed: list[str] = []
    newest_of, all_of = world.store.newest_in_status, world.store.jobs_in_status
    world.store.newest_in_status = (  # type: ignore[method-assign]
        lambda status, after, limit: [listed.append(j.job_arn) or j for j in newest_of(status, after, limit)]
    )
    world.store.jobs_in_status = lambda *a: listed.extend(["a whole status read"]) or all_of(*a)  # type: ignore[method-assign]
    seen = forecast_inputs(monkeypatch)
    # WHEN the watch predicts
    ports = forecast_ports(world, ForecastLimits(samples=40, history_jobs=10))
    predict_starts(ports, {s: world.store.jobs(s.value) for s in JobStatus}, NOW)
    # THEN only the 10 newest finished jobs are read and give run times, and every job of the window
    # is an arrival (the finished ones from the arrival counts): the rate is not what the cap lets through
    (history,) = seen
    assert (
        sorted(listed)
        == sorted(a for a in read if "old-" in a)
        == sorted(ARN + f"old-{n}" for n in range(30, 40))
    )
    assert len(history.finished) == 10
    assert len(history.arrivals) == 40 + 4 + 3
    # and the run-time curves count the history as complete only since the oldest job read was
    # created (old-30's runs and later ones'), not over the 14 days a whole read gives
    assert history.finished_since == NOW - 20 * 3600 + 30 * 1200 - 30


def test_a_job_that_finished_between_the_reads_arrives_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN the watch's read of the active jobs shows run-0 RUNNING; by the finished read it SUCCEEDED
    world = busy_world(waiting=3)
    active = {s: world.store.jobs(s.value) for s in JobStatus}
    put_job(world.store, "run-0", JobStatus.SUCCEEDED, NOW - 1800, held=NOW - 1500, ended=NOW - 10)
    seen = forecast_inputs(monkeypatch)
    # WHEN the watch predicts
    predict_starts(forecast_ports(world), active, NOW)
    # THEN the job is one arrival, and its finished state stands
    (history,) = seen
    assert len(history.arrivals) == 40 + 4 + 3
    # Under the cap every finished job is read: the history is complete over its 14 days.
    assert history.finished_since == NOW - HISTORY_SECONDS


def test_an_old_quiet_table_measures_a_burst_over_the_window_not_over_the_burst(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GIVEN a table whose first job finished 60 days ago, quiet until the busy queue's last 20 hours
    world = busy_world(waiting=3)
    put_job(
        world.store,
        "first",
        JobStatus.SUCCEEDED,
        NOW - 60 * 86400,
        held=NOW - 60 * 86400,
        ended=NOW - 59 * 86400,
    )
    seen = forecast_inputs(monkeypatch)
    # WHEN the watch predicts (it reads 30 days of finished jobs, not the first one)
    predict_starts(forecast_ports(world), {s: world.store.jobs(s.value) for s in JobStatus}, NOW)
    # THEN its arrivals are known complete since the table's first job (the index's first key), as
    # `why` reading the whole table knows: the 20 hours' jobs are a rate over the 30 days
    (history,) = seen
    assert history.arrivals_since == NOW - 60 * 86400
    assert all(a.at >= NOW - 30 * 86400 for a in history.arrivals)


def test_the_watch_reads_as_far_back_as_the_forecast_counts_arrivals() -> None:
    assert READ_SECONDS >= ForecastSettings().arrival_lookback_seconds
