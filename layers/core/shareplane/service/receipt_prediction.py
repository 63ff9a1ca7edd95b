"""The submit receipt's first start prediction: a drop's new GPU jobs forecast on the live twin, in a budget.

Right after SubmitServiceJob the submit path reads the live twin as the watch does
(``start_predictions.bounded_twin``: the GPU queue's active jobs, the newest finished ones whole and
the finished ones' arrival counts) plus the new jobs' own states (read consistently: the ByStatus index
may not list a job written a moment ago), and forecasts the new jobs with the watch's
``FORECAST_SAMPLES`` runs. The receipt carries what it finds; the job's record is the watch's (its
ticks store and refresh the prediction there).

Nothing here may fail or hold up a submission: the jobs are submitted and recorded before this runs,
every error becomes the receipt's reason for carrying no prediction, and the work stops when its budget
is spent: ``budget_seconds`` on the ports' clock, and the invocation's ``time_left`` (from the handler:
its remaining time less a reserve for the rest of the drop and the batch), both asked before every
table read of the twin and between chunks of ``CHUNK_SAMPLES`` runs.
A forecast cut short keeps the runs it finished when they are at least ``MIN_SAMPLES`` (the
prediction says how many); fewer, and the receipt says it ran out of time.

This module is light; the forecast's modules load inside ``predict_first_starts``, on a drop that
submitted a GPU job only, never at the handler's cold start.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

from ..domain.forecast.prediction import StartPrediction
from ..domain.jobs.arns import queue_name
from .start_predictions import ForecastPorts, active_jobs, bounded_twin, prediction_of

logger = logging.getLogger(__name__)

#: Forward runs per chunk: the budget is checked between chunks.
CHUNK_SAMPLES = 10
#: The fewest runs a receipt's prediction is made from (a forecast cut short with fewer has none).
MIN_SAMPLES = 20


@dataclass(frozen=True)
class ReceiptForecast:
    """What the receipt's forecast reads (the watch's forecast ports) and how long it may take."""

    twin: ForecastPorts
    #: A monotonic clock (seconds), the one the budget is measured on.
    clock: Callable[[], float]
    #: Seconds one drop's forecast may take (RECEIPT_FORECAST_SECONDS; 0 turns it off).
    budget_seconds: float = 10.0

    @property
    def enabled(self) -> bool:
        """Whether submissions forecast at all."""
        return self.budget_seconds > 0 and self.twin.limits.samples > 0


@dataclass(frozen=True)
class FirstPredictions:
    """The new jobs' predictions by job ARN, and why a job has none (None when every one has)."""

    predictions: dict[str, StartPrediction]
    reason: str | None = None
    #: Seconds the forecast took (on the ports' clock), for the log; None when it never ran.
    seconds: float | None = None


class _OutOfTime(Exception):
    """The receipt's forecast spent its budget."""


class _Budget:
    """The forecast's time: ``budget_seconds`` from its start, and never past the invocation's end."""

    def __init__(
        self, clock: Callable[[], float], budget_seconds: float, time_left: Callable[[], float] | None
    ) -> None:
        self._clock = clock
        self._time_left = time_left
        self._started = clock()
        self._budget = budget_seconds

    def left(self) -> float:
        """Seconds left: of the budget, or of the invocation, whichever is less."""
        left = self._started + self._budget - self._clock()
        return left if self._time_left is None else min(left, self._time_left())

    def check(self) -> None:
        """Raise ``_OutOfTime`` once nothing is left."""
        if self.left() <= 0:
            raise _OutOfTime

    def spent(self) -> float:
        """Seconds since the budget started."""
        return self._clock() - self._started


class _Budgeted:
    """A port of the twin's (the table, Batch's queue settings) asking the budget before each call."""

    def __init__(self, store: Any, budget: _Budget) -> None:
        self._store = store
        self._budget = budget

    def __getattr__(self, name: str) -> Any:
        self._budget.check()
        return getattr(self._store, name)


def predict_first_starts(
    forecast: ReceiptForecast,
    job_arns: Sequence[str],
    now: float,
    time_left: Callable[[], float] | None = None,
) -> FirstPredictions:
    """The first predicted start of each of ``job_arns`` (just submitted to the GPU queue) at ``now``.

    ``time_left``: seconds the invocation can still give the forecast (the handler's: its remaining
    time less a reserve); without it only ``budget_seconds`` bounds it. Never raises: a failure, or a
    budget spent before ``MIN_SAMPLES`` runs, is the result's reason.
    """
    if not job_arns:
        return FirstPredictions({})
    if not forecast.enabled:
        return FirstPredictions({}, "the forecast at submission is off (RECEIPT_FORECAST_SECONDS is 0)")
    budget = _Budget(forecast.clock, forecast.budget_seconds, time_left)
    try:
        predictions, cut = _forecast(forecast, job_arns, now, budget)
    except _OutOfTime:
        return FirstPredictions(
            {},
            f"the live twin was not read within the forecast's {_budget_words(forecast, budget)}",
            budget.spent(),
        )
    except Exception as exc:  # noqa: BLE001 - nothing may fail a submission; the receipt says what failed
        logger.warning("the receipt's forecast failed", exc_info=True)
        return FirstPredictions({}, f"the forecast failed: {type(exc).__name__}: {exc}"[:300], budget.spent())
    if predictions is None:
        return FirstPredictions(
            {},
            f"fewer than {MIN_SAMPLES} forecast runs finished within its {_budget_words(forecast, budget)}",
            budget.spent(),
        )
    missing = [a for a in job_arns if a not in predictions]
    reason = None
    if missing:
        reason = f"{len(missing)} job(s) were not waiting in the GPU queue's twin when it was read"
    elif cut:
        reason = f"the forecast stopped at its {_budget_words(forecast, budget)}: fewer runs than asked"
    return FirstPredictions(predictions, reason, budget.spent())


def _budget_words(forecast: ReceiptForecast, budget: _Budget) -> str:
    return (
        f"budget ({forecast.budget_seconds:g} s, or the invocation's time left; {budget.spent():.1f} s spent)"
    )


def _forecast(
    forecast: ReceiptForecast, job_arns: Sequence[str], now: float, budget: _Budget
) -> tuple[dict[str, StartPrediction] | None, bool]:
    """(each waiting job's prediction, whether the runs were cut short); None when fewer than
    ``MIN_SAMPLES`` runs finished; ``_OutOfTime`` while reading the twin."""
    # The forecast loads here, on the one path that runs it.
    from ..domain.forecast.start_forecast import ForecastSettings, forecast_starts

    ports = replace(
        forecast.twin,
        store=cast(Any, _Budgeted(forecast.twin.store, budget)),
        recent=cast(Any, _Budgeted(forecast.twin.recent, budget)),
        batch=cast(Any, _Budgeted(forecast.twin.batch, budget)),
    )
    store = ports.store
    active = active_jobs(ports.recent)
    # The new jobs as written a moment ago (the index may not list them yet), in place of any listed copy.
    new = [state for arn in job_arns if (state := store.load_job(arn)) is not None]
    twin = bounded_twin(ports, active, now, newest=new)
    budget.check()
    queued = {j.name for j in twin.live.queued}
    targets = [a for a in job_arns if a in queued]
    if not targets:
        return {}, False
    starts: dict[str, list[float]] = {a: [] for a in targets}
    runs, cut = 0, False
    while runs < ports.limits.samples:
        if budget.left() <= 0:
            cut = True
            break
        size = min(CHUNK_SAMPLES, ports.limits.samples - runs)
        chunk = forecast_starts(
            twin.live,
            twin.history,
            targets=targets,
            settings=ForecastSettings(samples=size),
            seed=f"{round(now * 1000)}:{runs}",
        )
        for arn, one in chunk.items():
            starts[arn].extend(one.starts)
        runs += size
    if runs < MIN_SAMPLES:
        return None, cut
    low, high = ForecastSettings().low_quantile, ForecastSettings().high_quantile
    out = {}
    for arn, values in starts.items():
        values.sort()
        out[arn] = prediction_of(
            _quantile(values, runs, low),
            _quantile(values, runs, 0.5),
            _quantile(values, runs, high),
            started_fraction=len(values) / runs,
            samples=runs,
            now=now,
        )
    return out, cut


def _quantile(values: Sequence[float], runs: int, q: float) -> float | None:
    """The ``q`` quantile of ``runs`` runs' starts (``values``, sorted; a run that never started the job is
    later than all of them), as ``forecast_starts`` computes it: None when it falls past the started ones."""
    k = max(1, math.ceil(q * runs))
    return values[k - 1] if k <= len(values) else None


def gpu_jobs(job_arns_and_queues: Mapping[str, str], gpu_queue: str) -> list[str]:
    """The ARNs of the jobs submitted to the GPU queue (the one the twin models), in their order."""
    return [a for a, q in job_arns_and_queues.items() if queue_name(q) == queue_name(gpu_queue)]
