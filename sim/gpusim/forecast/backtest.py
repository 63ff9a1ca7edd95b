"""The backtest itself: replay a scenario, forecast sampled jobs at their submission, measure.

Forecasts run in this process or, with ``workers`` > 1, in a pool beside the replay.
"""

from __future__ import annotations

import json
import multiprocessing
import time
from collections import deque
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from shareplane.domain.forecast.start_forecast import (
    Arrival,
    FinishedRun,
    ForecastSettings,
    History,
    LiveQueue,
    forecast_starts,
)

from ..whatif.config import TIERS, Policy
from ..whatif.run import PolicyResult, PolicyRun
from ..whatif.scenario import Scenario, ScenarioJob
from .calibration import (
    ONLINE_STEP,
    UNTUNED,
    Calibration,
    choose_method,
    measure,
    measure_online,
    online_margins,
    tune,
)
from .live_view import LiveView, run_submits, sample_jobs
from .prediction import Prediction

#: Predictions are made for this many jobs (seeded sample) unless told otherwise.
DEFAULT_SAMPLE = 1000


#: The backtest's forecast: the live path's settings (a 30-day horizon, 30 days of arrivals) with 10
#: runs a prediction (cost: 1,000 predictions on the 52k-job Philly trace at 0.95 load, where
#: thousands wait, must stay practical on 2 shared cores). Shorter arrival windows carried a burst
#: into every day of a weeks-long forecast: higher-priority copies of it kept passing LOWPRI jobs
#: (with 14 days, no run started 57 of 187 measured earlier-half jobs of a 200-job sample within 30
#: days). Predictions keep the runs' raw starts; ``Calibration`` applies what is tuned.
BACKTEST_SETTINGS = ForecastSettings(samples=10)


@dataclass
class EtaResult:
    """Every prediction of one policy's backtest, and its measures."""

    policy: Policy
    predictions: list[Prediction]
    result: PolicyResult
    forecast_seconds: float
    replay_seconds: float
    #: CPU seconds the forecast processes spent (0 when the forecasts ran in this process).
    worker_cpu_seconds: float = 0.0
    calibration: Calibration = UNTUNED
    measures: dict[str, Any] = field(default_factory=dict)
    #: The trace's last submission (seconds): a start after it comes from a queue that only drains,
    #: which no forecast made live can know (None when unknown, as for predictions read back alone).
    last_arrival: float | None = None

    def summary(self) -> dict[str, Any]:
        """The ``eta`` object ``shareplane simulate --eta`` adds to the policy."""
        return {"predictions": len(self.predictions), **self.measures}


def predictions_json(results: Mapping[str, EtaResult]) -> dict[str, Any]:
    """Each policy's raw predictions (the runs' starts before any calibration), for ``load_predictions``,
    and the trace's last submission, for ``load_last_arrival``."""
    last = next((r.last_arrival for r in results.values()), None)
    return {
        "predictions": {name: [asdict(p) for p in r.predictions] for name, r in results.items()},
        "last_arrival": last,
    }


def load_predictions(path: Path) -> dict[str, list[Prediction]]:
    """What ``predictions_json`` wrote (``shareplane simulate --eta --eta-predictions FILE``), by policy."""
    data = json.loads(path.read_text())
    return {
        name: [Prediction(**{**row, "starts": tuple(row["starts"])}) for row in rows]
        for name, rows in data["predictions"].items()
    }


def load_last_arrival(path: Path) -> float | None:
    """The trace's last submission ``predictions_json`` wrote (None in a file written before it was)."""
    value = json.loads(path.read_text()).get("last_arrival")
    return None if value is None else float(value)


def _forecast_one(
    live: LiveQueue, history: History, name: str, settings: ForecastSettings, seed: str
) -> tuple[tuple[float, ...], float]:
    """One target's runs' starts and the CPU seconds they took."""
    cpu = time.process_time()
    starts = forecast_starts(live, history, targets={name}, settings=settings, seed=seed)[name].starts
    return starts, time.process_time() - cpu


#: A forecast process's copy of ``LiveView.arrivals``, given once when the process starts
#: (``_start_worker``): each forecast then sends only where its slice is.
_WORKER_ARRIVALS: tuple[Arrival, ...] = ()
_WORKER_OBSERVED_SINCE = 0.0


def _start_worker(arrivals: tuple[Arrival, ...], observed_since: float) -> None:
    global _WORKER_ARRIVALS, _WORKER_OBSERVED_SINCE
    _WORKER_ARRIVALS, _WORKER_OBSERVED_SINCE = arrivals, observed_since


def _forecast_in_worker(
    live: LiveQueue,
    finished: tuple[FinishedRun, ...],
    span: tuple[int, int],
    name: str,
    settings: ForecastSettings,
    seed: str,
) -> tuple[tuple[float, ...], float]:
    """``_forecast_one`` in a pool process, its history's arrivals read from the process's own copy
    (the same history ``LiveView.live_queue`` gives: the same slice of the same arrivals)."""
    history = History(finished, _WORKER_ARRIVALS[span[0] : span[1]], _WORKER_OBSERVED_SINCE)
    return _forecast_one(live, history, name, settings, seed)


class _Forecaster:
    """The backtest's forecasts, each made at its target's submission instant during the replay.

    In this process, or (``workers`` > 1) in a pool of processes beside the replay: then each
    forecast holds a copy of the live state until ``collect`` takes its result.
    """

    def __init__(self, run: PolicyRun, settings: ForecastSettings, seed: int, workers: int) -> None:
        self.run = run
        self.view = LiveView(run)
        self.settings = settings
        self.seed = seed
        self.workers = workers
        self.made: list[Prediction] = []
        #: Seconds this process spent forecasting (or handing forecasts to the pool).
        self.spent = 0.0
        #: CPU seconds the pool's processes spent.
        self.worker_cpu = 0.0
        self.pool = (
            ProcessPoolExecutor(
                workers,
                mp_context=multiprocessing.get_context("forkserver"),
                initializer=_start_worker,
                initargs=(self.view.arrivals, self.view.observed_since),
            )
            if workers > 1
            else None
        )
        self.in_flight: deque[tuple[int, Future[tuple[tuple[float, ...], float]]]] = deque()

    def collect(self, block_until: int) -> None:
        """Take the pool's results until at most ``block_until`` forecasts are still in flight."""
        while len(self.in_flight) > block_until:
            index, future = self.in_flight.popleft()
            starts, cpu = future.result()
            self.made[index] = replace(self.made[index], starts=starts)
            self.worker_cpu += cpu

    def predict(self, target: ScenarioJob) -> None:
        """Forecast ``target``'s start from the live state now, before it is submitted."""
        started = time.perf_counter()
        settings, now = self.settings, self.run.model.engine.now
        live, history = self.view.live_queue(target, settings.arrival_lookback_seconds)
        name, runs_seed = target.name, f"{self.seed}-{target.name}"
        self.made.append(
            Prediction(
                target.name,
                now,
                TIERS[target.tier].value,
                () if self.pool else _forecast_one(live, history, name, settings, runs_seed)[0],
                settings.samples,
                self.view.baseline_wait(target.tier, now),
                horizon_seconds=settings.horizon_seconds,
            )
        )
        if self.pool:
            span = self.view.arrival_span(settings.arrival_lookback_seconds)
            args = (live, history.finished, span, name, settings, runs_seed)
            forecast = self.pool.submit(_forecast_in_worker, *args)
            self.in_flight.append((len(self.made) - 1, forecast))
            # A few forecasts ahead of the workers at most: each holds a copy of the live state.
            self.collect(2 * self.workers)
        self.spent += time.perf_counter() - started

    def replay(self) -> tuple[PolicyResult, float]:
        """Run the replay to the end and gather every forecast: its result and its wall seconds."""
        started = time.perf_counter()
        try:
            result = self.run.replay()
            waited = time.perf_counter()
            self.collect(0)
            self.spent += time.perf_counter() - waited
        finally:
            if self.pool:
                self.pool.shutdown(cancel_futures=True)
        return result, time.perf_counter() - started


def backtest(
    scenario: Scenario,
    policy: Policy,
    *,
    seed: int = 0,
    sample: int = DEFAULT_SAMPLE,
    settings: ForecastSettings = BACKTEST_SETTINGS,
    jobs: Sequence[ScenarioJob] | None = None,
    workers: int = 1,
) -> EtaResult:
    """Replay ``scenario`` under ``policy``, forecasting each sampled job (or ``jobs``) at its submission.

    ``workers`` > 1 runs the forecasts in that many processes while the replay goes on: each reads
    only the live state copied at its instant and draws from its own seed, so the predictions are
    the same as in-process ones, in less wall time (the CPU time is the same).
    """
    run = PolicyRun(scenario, policy, seed)
    forecaster = _Forecaster(run, settings, seed, workers)
    targets = list(jobs) if jobs is not None else sample_jobs(scenario, sample, seed)
    # Scheduled before the replay's own arrivals, so each runs before its job (and anything else
    # arriving at that instant) is submitted.
    for target in targets:
        run.model.engine.schedule_at(target.submit, forecaster.predict, target)
    result, wall = forecaster.replay()
    first_dispatch = forecaster.view.first_dispatch
    predictions = [replace(p, actual_start=first_dispatch.get(p.job)) for p in forecaster.made]
    submits = run_submits(scenario)
    return EtaResult(
        policy,
        predictions,
        result,
        forecaster.spent,
        wall - forecaster.spent,
        forecaster.worker_cpu,
        last_arrival=submits[-1] if submits else None,
    )


def evaluate(result: EtaResult) -> EtaResult:
    """Fill ``measures``: untuned on the whole and both halves; tuned on the earlier, shown on the later."""
    preds = sorted(result.predictions, key=lambda p: (p.submitted_at, p.job))
    half = len(preds) // 2
    earlier, later = preds[:half], preds[half:]
    chosen = tune(earlier)
    result.calibration = chosen
    last = result.last_arrival
    whole = measure(preds, last_arrival=last)
    tuned = measure(later, chosen)
    by_kind = {
        kind: measure([p for p in later if chosen.beyond_horizon(p) == beyond], chosen)
        for kind, beyond in (("within_horizon", False), ("beyond_horizon", True))
    }
    method, validation = choose_method(earlier)
    # Online: from no margin at the trace's start, adapted from outcomes as they become known.
    untuned_margins = chosen.with_margin(0.0)
    margins = online_margins(preds, untuned_margins)
    online = measure_online(later, untuned_margins, margins)
    result.measures = {
        "measured": whole["measured"],
        "median_abs_error_seconds": whole["median_abs_error_seconds"],
        "coverage_p10_p90": whole["coverage"],
        "baseline_median_abs_error_seconds": whole["baseline_median_abs_error_seconds"],
        "started_after_last_arrival": whole["started_after_last_arrival"],
        "earlier_half": {
            **_renamed(measure(earlier, last_arrival=last)),
            # Which margins' method, chosen inside the earlier half: fitted on its first half,
            # measured on its second (``choose_method``); ``tune`` fits the asymmetric one.
            "method_selection": {"coverage": validation, "chosen": method},
        },
        "later_half": {
            **_renamed(measure(later, last_arrival=last)),
            "tuned_on_earlier_half": {
                "interval": [chosen.low, chosen.high],
                "p50_scale": chosen.p50_scale,
                "low_margin_log_wait": chosen.low_margin,
                "high_margin_log_wait": chosen.high_margin,
                "median_abs_error_seconds": tuned["median_abs_error_seconds"],
                "coverage": tuned["coverage"],
                **{
                    kind: {"measured": m["measured"], "coverage": m["coverage"]}
                    for kind, m in by_kind.items()
                },
            },
            "online": {
                "target": 0.8,
                "step_log_wait": ONLINE_STEP,
                "margin_log_wait_first": round(margins[later[0].job], 4) if later else None,
                "margin_log_wait_last": round(margins[later[-1].job], 4) if later else None,
                "coverage": online["coverage"],
            },
        },
        "forecast_seconds": round(result.forecast_seconds, 2),
        "replay_seconds": round(result.replay_seconds, 2),
    }
    return result


def _renamed(measures: dict[str, Any]) -> dict[str, Any]:
    """``measure``'s output with its coverage named for the p10-p90 interval it was measured on."""
    out = dict(measures)
    out["coverage_p10_p90"] = out.pop("coverage")
    return out
