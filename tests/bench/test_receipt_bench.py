"""The submit receipt's first prediction, and the watch's choice of jobs, on a deep queue.

The live state 25 days into the Philly replay (fair-share), as the jobs table would hold it: 2,831 jobs
waiting, 109 running, the newest finished runs (as in ``test_eta_bench``'s watch step). A job submitted
now sits at the back of the queue.

The claims: the receipt's forecast of that job (the twin read as the submit path reads it, then 100 runs)
fits its own budget (RECEIPT_FORECAST_SECONDS, 10 s in template.yaml) and so a small part of submit_job's
120 s; and once every waiting job has a prediction, the watch's next tick predicts the new job (before
this change it predicted the 500 longest-waiting only, so the job had none until it was among them).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from gpusim.forecast.live_view import LiveView
from gpusim.whatif.config import Policy
from gpusim.whatif.run import PolicyRun
from shareplane.domain.forecast.prediction import StartPrediction
from shareplane.domain.jobs.lifecycle import JobStatus
from shareplane.service.receipt_prediction import ReceiptForecast, predict_first_starts
from shareplane.service.start_predictions import ForecastLimits, ForecastPorts, predict_starts

from tests.bench.test_eta_bench import DAY_25, SEED, CountingStore, _put, forecast_ports
from tests.bench.test_eta_bench import scenario as scenario  # noqa: F401 - the Philly scenario fixture

REPO = Path(__file__).resolve().parents[2]
ARN = "arn:aws:batch:us-east-1:123456789012:service-job/"


def _template_function(logical_id: str) -> dict[str, Any]:
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("!", lambda loader, suffix, node: None)
    template = yaml.load((REPO / "template.yaml").read_text(), Loader=Loader)  # noqa: S506 - SafeLoader
    return dict(template["Resources"][logical_id]["Properties"])


SUBMIT = _template_function("SubmitJobFunction")
#: submit_job's timeout and its receipt's forecast budget, as deployed.
SUBMIT_TIMEOUT_SECONDS = float(SUBMIT["Timeout"])
RECEIPT_BUDGET_SECONDS = float(SUBMIT["Environment"]["Variables"]["RECEIPT_FORECAST_SECONDS"])


@dataclass
class DeepQueue:
    """The day-25 table, the ports the forecasts read it through, and a job just submitted behind it."""

    store: CountingStore
    ports: ForecastPorts
    now: float
    waiting: list[str]
    running: int
    new_job: str


@pytest.fixture(scope="module")
def deep_queue(scenario: Any) -> Iterator[DeepQueue]:  # noqa: F811 - the imported fixture
    run = PolicyRun(scenario, Policy.FAIRSHARE, SEED)
    view = LiveView(run)
    run.start()
    run.model.run(until=DAY_25)
    probe = next(j for j in scenario.jobs if j.submit >= DAY_25)
    live, history = view.live_queue(probe, 86400.0)
    now = live.now
    store = CountingStore()
    waiting = []
    for job in sorted(live.queued, key=lambda j: (j.submitted_at, j.order)):
        name = f"q-{job.order}"
        _put(
            store, name, JobStatus.RUNNABLE, job.share, job.instances, job.submitted_at, priority=job.priority
        )
        waiting.append(ARN + name)
    for n, held in enumerate(live.running):
        _put(
            store,
            f"r-{n}",
            JobStatus.RUNNING,
            held.share,
            held.instances,
            held.started_at,
            held=held.started_at,
        )
    for n, done in enumerate(reversed(history.finished[-600:])):
        ended = now - 60.0 * (n + 1)
        _put(store, f"f-{n}", JobStatus.SUCCEEDED, done.share, 1, ended - done.held_seconds - 86400,
             held=ended - done.held_seconds, ended=ended)  # fmt: skip
    # The job just submitted: the back of the queue, in the share of the newest waiting job, as the
    # submit path records it (SUBMITTED, created at the drop's time).
    newest = max(live.queued, key=lambda j: (j.submitted_at, j.order))
    _put(store, "new", JobStatus.SUBMITTED, newest.share, 1, now, priority=newest.priority)
    ports = forecast_ports(store, live)
    yield DeepQueue(store, ports, now, waiting, len(live.running), ARN + "new")


@pytest.mark.bench
def test_the_receipts_forecast_at_the_back_of_a_deep_queue_fits_its_budget(deep_queue: DeepQueue) -> None:
    # GIVEN the receipt's forecast as deployed: the template's budget, the watch's runs and history
    forecast = ReceiptForecast(
        twin=deep_queue.ports, clock=time.perf_counter, budget_seconds=RECEIPT_BUDGET_SECONDS
    )
    deep_queue.store.requests.clear()
    # WHEN the job just submitted is forecast (the table's reads counted; their latency is not in it)
    started = time.perf_counter()
    first = predict_first_starts(forecast, [deep_queue.new_job], deep_queue.now)
    elapsed = time.perf_counter() - started
    requests = dict(deep_queue.store.requests)
    prediction = first.predictions.get(deep_queue.new_job)
    print(
        f"\nreceipt forecast: 1 job behind {len(deep_queue.waiting)} waiting, {deep_queue.running} running; "
        f"{elapsed:.2f} s (forecast's own {first.seconds:.2f} s) for {prediction.samples if prediction else 0} "
        f"runs; requests {requests}; prediction {prediction.as_record() if prediction else first.reason}; "
        f"budget {RECEIPT_BUDGET_SECONDS:.0f} s of submit_job's {SUBMIT_TIMEOUT_SECONDS:.0f} s"
    )
    # THEN the whole forecast (every run asked for) fits its budget, a twelfth of the function's timeout
    assert prediction is not None and first.reason is None
    assert prediction.samples == deep_queue.ports.limits.samples
    assert elapsed < RECEIPT_BUDGET_SECONDS <= SUBMIT_TIMEOUT_SECONDS / 12
    # AND the twin read what the watch's step reads: the active statuses and the newest finished jobs
    # by the index, 30 days of arrival counts, the histories of the jobs that held capacity, and the
    # new job by its key
    assert requests["Query (ByStatus)"] == 6
    assert requests["Query (ByStatus, newest)"] == 2
    assert requests["Query (arrival counts)"] == 1
    assert requests["Query (history)"] == deep_queue.running + deep_queue.ports.limits.history_jobs


@pytest.mark.bench
def test_the_watch_predicts_a_new_job_at_its_next_tick_behind_a_deep_queue(deep_queue: DeepQueue) -> None:
    # GIVEN every job already waiting predicted at earlier ticks (the oldest predictions the stalest)
    store, now = deep_queue.store, deep_queue.now
    for n, arn in enumerate(deep_queue.waiting):
        store.predictions[arn] = StartPrediction(
            int((now - 3000 + n % 6 * 300) * 1000), None, None, None, 0.0, 100
        )
    limits = ForecastLimits()
    assert len(deep_queue.waiting) > limits.max_jobs
    active = {status: store.jobs(status.value) for status in JobStatus}
    # WHEN the watch's prediction step runs with its template limits (500 jobs x 100 runs)
    started = time.perf_counter()
    predictions = predict_starts(deep_queue.ports, active, now)
    elapsed = time.perf_counter() - started
    print(
        f"\nwatch step, {len(deep_queue.waiting)} waiting + 1 new: {len(predictions)} predicted in "
        f"{elapsed:.2f} s; new job: {predictions[deep_queue.new_job].in_words() if deep_queue.new_job in predictions else 'none'}"
    )
    # THEN the new job is among the predicted, with the 499 stalest of the others
    assert len(predictions) == limits.max_jobs and deep_queue.new_job in predictions
    stalest = sorted(
        deep_queue.waiting, key=lambda a: (store.predictions[a].predicted_at, deep_queue.waiting.index(a))
    )
    assert set(predictions) == {deep_queue.new_job, *stalest[: limits.max_jobs - 1]}
