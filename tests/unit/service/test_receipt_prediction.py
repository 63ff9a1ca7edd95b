"""The submit receipt's first start prediction: the new jobs forecast on the live twin, within a budget."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import pytest
from shareplane.domain.jobs.lifecycle import JobStatus
from shareplane.domain.submit.submission import FIRST_PREDICTION, first_predictions_of, with_first_predictions
from shareplane.service.receipt_prediction import (
    CHUNK_SAMPLES,
    MIN_SAMPLES,
    ReceiptForecast,
    gpu_jobs,
    predict_first_starts,
)
from shareplane.service.start_predictions import ForecastLimits, ForecastPorts

from tests.fakes.failure_world import World
from tests.fakes.job_store import FakeJobStore
from tests.unit.service.test_start_predictions import (
    ARN,
    NOW,
    busy_world,
    forecast_inputs,
    forecast_ports,
    put_job,
)

NEW = ARN + "new-0"


@dataclass
class TickingClock:
    """A monotonic clock that moves ``step`` seconds each time it is read (a slow table, a slow forecast)."""

    step: float = 0.0
    now: float = 0.0

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def world_with_a_new_job(waiting: int = 4) -> World:
    """The busy queue, and a job just submitted behind it (SUBMITTED, as the submit path records it)."""
    world = busy_world(waiting=waiting)
    put_job(world.store, "new-0", JobStatus.SUBMITTED, NOW, priority=50)
    return world


def receipt_forecast(
    world: World, clock: Callable[[], float] | None = None, budget: float = 10.0, samples: int = 40
) -> ReceiptForecast:
    return ReceiptForecast(
        twin=forecast_ports(world, ForecastLimits(samples=samples)),
        clock=clock or TickingClock(),
        budget_seconds=budget,
    )


def test_a_new_job_behind_a_busy_queue_gets_its_p10_p50_p90_at_submission() -> None:
    # GIVEN a full queue with four jobs waiting and a job just submitted behind them
    world = world_with_a_new_job()
    # WHEN the receipt's forecast runs at the submission's time
    first = predict_first_starts(receipt_forecast(world), [NEW], NOW)
    # THEN the job has a prediction made at that time, from every run asked for
    assert first.reason is None and set(first.predictions) == {NEW}
    prediction = first.predictions[NEW]
    assert prediction.predicted_at == int(NOW * 1000) and prediction.samples == 40
    assert prediction.p10 is not None and prediction.p50 is not None
    assert NOW * 1000 <= prediction.p10 <= prediction.p50 <= (prediction.p90 or prediction.p50)
    # AND it waits behind the queue: not before the jobs already waiting are predicted to start
    queue_head = predict_first_starts(receipt_forecast(world), [ARN + "wait-0"], NOW).predictions
    assert prediction.p50 >= (queue_head[ARN + "wait-0"].p50 or 0)
    # AND nothing is stored on the job's record (the record's predictions are the watch's)
    assert world.store.load_prediction(NEW) is None


def test_the_same_submission_time_forecasts_the_same() -> None:
    world = world_with_a_new_job()
    assert predict_first_starts(receipt_forecast(world), [NEW], NOW) == predict_first_starts(
        receipt_forecast(world), [NEW], NOW
    )


def test_a_job_the_index_does_not_list_yet_is_read_by_its_key() -> None:
    # GIVEN the ByStatus index, eventually consistent, not listing the job written a moment ago
    world = world_with_a_new_job()
    store = world.store
    listed = store.jobs_in_status
    store.jobs_in_status = lambda status, after=None: [  # type: ignore[method-assign]
        s for s in listed(status, after) if s.job_arn != NEW
    ]
    # WHEN the receipt's forecast runs, THEN the job is still forecast
    assert set(predict_first_starts(receipt_forecast(world), [NEW], NOW).predictions) == {NEW}


def counting_chunks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Each chunk of forecast runs the receipt's forecast starts, counted."""
    import shareplane.domain.forecast.start_forecast as start_forecast

    chunks: list[int] = []
    forecast = start_forecast.forecast_starts

    def counted(*args: Any, **kwargs: Any) -> Any:
        chunks.append(1)
        return forecast(*args, **kwargs)

    monkeypatch.setattr(start_forecast, "forecast_starts", counted)
    return chunks


def test_a_forecast_that_runs_out_of_time_keeps_the_runs_it_finished(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN an invocation whose time runs out after three chunks of runs, of the 100 runs asked for
    world = world_with_a_new_job()
    chunks = counting_chunks(monkeypatch)
    ports = receipt_forecast(world, samples=100)
    first = predict_first_starts(ports, [NEW], NOW, lambda: -1.0 if len(chunks) >= 3 else 5.0)
    # THEN the prediction stands on the runs finished in time, and the receipt says it was cut short
    prediction = first.predictions[NEW]
    assert len(chunks) == 3 and prediction.samples == 3 * CHUNK_SAMPLES >= MIN_SAMPLES
    assert first.reason is not None and "fewer runs than asked" in first.reason


def test_the_budget_is_measured_on_the_ports_clock() -> None:
    # GIVEN a clock on which each reading takes 0.5 s, and a 10 s budget
    world = world_with_a_new_job()
    first = predict_first_starts(receipt_forecast(world, TickingClock(step=0.5), samples=100), [NEW], NOW)
    # THEN the forecast stops once 10 s have passed on it, and the receipt says so
    assert first.predictions == {} and first.reason is not None and "10 s" in first.reason
    assert first.seconds is not None and first.seconds >= 10.0


@pytest.mark.parametrize(
    ("step", "time_left", "words"),
    [
        (3.0, None, "not read within"),
        (0.0, 0.0, "not read within"),
        (0.0, lambda: -1.0, "not read within"),
    ],
    ids=[
        "a slow table spends the budget while the twin is read",
        "no time left in the invocation",
        "the invocation's reserve already reached",
    ],
)
def test_no_time_means_no_prediction_and_a_reason(step: float, time_left: Any, words: str) -> None:
    world = world_with_a_new_job()
    left = (lambda: time_left) if isinstance(time_left, float) else time_left
    first = predict_first_starts(receipt_forecast(world, TickingClock(step=step)), [NEW], NOW, left)
    assert first.predictions == {} and first.reason is not None and words in first.reason


def test_too_few_runs_in_the_budget_means_no_prediction(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN an invocation whose time runs out once the first chunk of runs has finished
    world = world_with_a_new_job()
    chunks = counting_chunks(monkeypatch)
    ports = receipt_forecast(world, samples=100)
    first = predict_first_starts(ports, [NEW], NOW, lambda: -1.0 if chunks else 5.0)
    # THEN one chunk ran, too few to stand on: no prediction, and the receipt says why
    assert len(chunks) == 1 and first.predictions == {}
    assert first.reason is not None and f"fewer than {MIN_SAMPLES} forecast runs" in first.reason


def test_a_failing_read_becomes_the_reason_and_never_raises() -> None:
    world = world_with_a_new_job()

    class Unreachable:
        def __getattr__(self, name: str) -> Any:
            raise ConnectionError("Batch endpoint unreachable")

    ports = receipt_forecast(world)
    broken = replace(ports, twin=replace(ports.twin, batch=Unreachable()))  # type: ignore[arg-type]
    first = predict_first_starts(broken, [NEW], NOW)
    assert first.predictions == {}
    assert first.reason == "the forecast failed: ConnectionError: Batch endpoint unreachable"


def test_a_job_no_longer_waiting_is_named_in_the_reason() -> None:
    # GIVEN a job of the drop already running when the twin is read (an idle queue took it at once)
    world = world_with_a_new_job()
    put_job(world.store, "quick-0", JobStatus.RUNNING, NOW, held=NOW)
    first = predict_first_starts(receipt_forecast(world), [NEW, ARN + "quick-0"], NOW)
    assert set(first.predictions) == {NEW}
    assert first.reason == "1 job(s) were not waiting in the GPU queue's twin when it was read"


def test_runs_not_a_multiple_of_a_chunk_are_run_exactly() -> None:
    world = world_with_a_new_job()
    first = predict_first_starts(receipt_forecast(world, samples=25), [NEW], NOW)
    assert first.reason is None and first.predictions[NEW].samples == 25


def test_a_slow_batch_read_is_stopped_by_the_budget() -> None:
    # GIVEN Batch's queue settings answering after the budget is spent
    world = world_with_a_new_job()
    clock = TickingClock()
    ports = receipt_forecast(world, clock)
    batch = ports.twin.batch

    class Slow:
        def __getattr__(self, name: str) -> Any:
            clock.now += 60.0
            return getattr(batch, name)

    slow = replace(ports, twin=replace(ports.twin, batch=Slow()))  # type: ignore[arg-type]
    # THEN the next read stops the forecast, and the receipt says the twin was not read in time
    first = predict_first_starts(slow, [NEW], NOW)
    assert first.predictions == {} and first.reason is not None and "not read within" in first.reason


def test_a_budget_of_zero_turns_the_forecast_off() -> None:
    world = world_with_a_new_job()
    first = predict_first_starts(receipt_forecast(world, budget=0.0), [NEW], NOW)
    assert first.predictions == {} and first.reason is not None and "RECEIPT_FORECAST_SECONDS" in first.reason


def test_nothing_to_forecast_reads_nothing() -> None:
    ports = ForecastPorts(
        store=FakeJobStore(),
        recent=FakeJobStore(),
        batch=None,
        config=None,
        queue="q",  # type: ignore[arg-type]
    )
    first = predict_first_starts(ReceiptForecast(twin=ports, clock=TickingClock()), [], NOW)
    assert first.predictions == {} and first.reason is None


def test_only_jobs_of_the_gpu_queue_are_forecast() -> None:
    queues = {
        "a": "arn:aws:batch:us-east-1:1:job-queue/search-p4d-queue",
        "b": "search-cpu-fifo",
        "c": "search-p4d-queue",
    }
    assert gpu_jobs(queues, "search-p4d-queue") == ["a", "c"]


# -- the receipt document ----------------------------------------------------------------------------
RECEIPT: dict[str, Any] = {
    "kind": "receipt",
    "jobs": [{"jobArn": "gpu", "name": "a"}, {"jobArn": "cpu", "name": "b"}],
    "prediction": FIRST_PREDICTION,
}
RECORD = {
    "predictedAt": 1,
    "startP10": 2,
    "startP50": 3,
    "startP90": 4,
    "startedFraction": 1.0,
    "samples": 100,
}


def test_the_receipt_carries_each_jobs_first_prediction_and_says_where_later_ones_are() -> None:
    document = with_first_predictions(RECEIPT, {"gpu": RECORD}, None)
    assert [j["prediction"] for j in document["jobs"]] == [RECORD, None]
    assert "submit_job" in document["prediction"]["predictedBy"]
    assert "watch_jobs tick" in document["prediction"]["predictedBy"]
    assert RECEIPT["jobs"][0].get("prediction") is None  # the input is not modified
    # AND read back, it is the same first prediction (a re-delivered drop keeps it)
    assert first_predictions_of(document) == ({"gpu": RECORD}, document["prediction"])


def test_a_receipt_without_a_prediction_says_why_and_where_the_first_one_will_be() -> None:
    document = with_first_predictions(RECEIPT, {}, "the forecast failed: X")
    assert [j["prediction"] for j in document["jobs"]] == [None, None]
    assert document["prediction"]["notAtSubmission"] == "the forecast failed: X"
    assert document["prediction"]["predictedBy"] == FIRST_PREDICTION["predictedBy"]


@pytest.mark.parametrize(
    "document",
    [None, {"kind": "receipt"}, RECEIPT, {"prediction": {}, "jobs": "x"}],
    ids=["no answer", "no prediction block", "an answer from before predictions", "a malformed answer"],
)
def test_an_answer_without_first_predictions_gives_none(document: Any) -> None:
    assert first_predictions_of(document) is None


def test_the_receipt_reads_the_twin_as_the_watch_does(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN the busy queue and a new job, with a cap of 10 finished jobs read whole
    world = world_with_a_new_job(waiting=3)
    seen = forecast_inputs(monkeypatch)
    forecast = receipt_forecast(world)
    forecast = replace(
        forecast, twin=replace(forecast.twin, limits=ForecastLimits(samples=40, history_jobs=10))
    )
    # WHEN the receipt forecasts the new job
    assert predict_first_starts(forecast, [NEW], NOW).reason is None
    # THEN the older finished jobs count as arrivals, as at the watch's tick, and the new job is one
    assert seen and all(len(h.finished) == 10 and len(h.arrivals) == 40 + 4 + 3 + 1 for h in seen)
