"""The backtest itself: replay a scenario, forecast sampled jobs at their submission, measure.

The world keeps submitting: the replay is of the trace followed by copies of itself
(``extend_scenario``), enough that every predicted job starts before the extended trace's last
submission, so no measured start comes from a queue that only drains. Predictions are made only at
the original trace's submissions. Forecasts run in this process or, with ``workers`` > 1, in a pool
beside the replay.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import time
from collections import deque
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from shareplane.domain.errors import InvalidInputError
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
from ..whatif.scenario import Scenario, ScenarioJob, extend_scenario
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
from .live_view import LiveView, sample_jobs
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

#: Rounds after the first in which the backtest appends one more copy, while a predicted job has
#: not started by the extended trace's last submission (each round a plain replay, ``_redispatch``).
#: Fixed before any run; ``Extension.bound_hit`` says when jobs were still waiting after the last.
MAX_EXTRA_ROUNDS = 4


@dataclass(frozen=True)
class Extension:
    """How far the replay went past the trace: the copies appended and where submissions ended.

    Predictions read back from a file written before the replay was extended have no copies: both
    last submissions are the trace's own.
    """

    copies: int = 0
    #: The original trace's last submission (seconds): a start after it fell in the appended copies.
    original_last_arrival: float | None = None
    #: The extended trace's last submission: a start after it comes from a queue that only drains,
    #: which no forecast made live can know (None when unknown, as for predictions read back alone).
    last_arrival: float | None = None
    #: Whether ``MAX_EXTRA_ROUNDS`` ran out with a predicted job still waiting.
    bound_hit: bool = False

    def summary(self) -> dict[str, Any]:
        return {"copies_appended": self.copies, "extension_bound_hit": self.bound_hit}


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
    extension: Extension = Extension()

    def summary(self) -> dict[str, Any]:
        """The ``eta`` object ``shareplane simulate --eta`` adds to the policy."""
        return {"predictions": len(self.predictions), **self.measures}


def predictions_json(results: Mapping[str, EtaResult]) -> dict[str, Any]:
    """Each policy's raw predictions (the runs' starts before any calibration), for ``load_predictions``,
    and how far its replay went past the trace, for ``load_extension``."""
    return {
        "predictions": {name: [asdict(p) for p in r.predictions] for name, r in results.items()},
        "extensions": {name: asdict(r.extension) for name, r in results.items()},
        # The first policy's, as files written before the replay was extended hold it.
        "last_arrival": next((r.extension.last_arrival for r in results.values()), None),
    }


def load_predictions(path: Path) -> dict[str, list[Prediction]]:
    """What ``predictions_json`` wrote (``shareplane simulate --eta --eta-predictions FILE``), by policy."""
    data = json.loads(path.read_text())
    return {
        name: [Prediction(**{**row, "starts": tuple(row["starts"])}) for row in rows]
        for name, rows in data["predictions"].items()
    }


def load_extension(path: Path, policy: str) -> Extension:
    """How far ``policy``'s replay went past the trace, as ``predictions_json`` wrote it. A file written
    before the replay was extended has the trace's last submission alone (none in an older one)."""
    data = json.loads(path.read_text())
    if policy in data.get("extensions", {}):
        return Extension(**data["extensions"][policy])
    last = data.get("last_arrival")
    return Extension(original_last_arrival=last, last_arrival=last)


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
    finished_since: float,
    span: tuple[int, int],
    name: str,
    settings: ForecastSettings,
    seed: str,
) -> tuple[tuple[float, ...], float]:
    """``_forecast_one`` in a pool process, its history's arrivals read from the process's own copy
    (the same history ``LiveView.live_queue`` gives: the same slice of the same arrivals)."""
    arrivals = _WORKER_ARRIVALS[span[0] : span[1]]
    history = History(finished, arrivals, _WORKER_OBSERVED_SINCE, finished_since)
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
            args = (live, history.finished, history.finished_since, span, name, settings, runs_seed)
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


def copies_for_horizon(scenario: Scenario, horizon_seconds: float) -> int:
    """The fewest copies (``extend_scenario``) whose last submission is at least the horizon past the
    original's: the k-th copy's last job arrives k x the window after the original's last."""
    if not math.isfinite(horizon_seconds):
        raise InvalidInputError(
            "horizon_seconds", "is unbounded", "backtest with a finite horizon (the trace is extended by it)"
        )
    return max(1, math.ceil(horizon_seconds / scenario.window))


def _waiting(targets: Sequence[ScenarioJob], first_dispatch: Mapping[str, float], last: float) -> int:
    """How many predicted jobs had not started by ``last`` (the extended trace's last submission).

    Every predicted job counts, not only those measured: one never started is not measured yet."""
    return sum(1 for t in targets if first_dispatch.get(t.name, math.inf) > last)


def _redispatch(
    extended: Scenario, policy: Policy, seed: int, before: Mapping[str, float], unchanged_until: float
) -> tuple[PolicyResult, dict[str, float], float]:
    """A plain replay of ``extended`` (one more copy than the replay ``before`` came from): its result,
    its first dispatches and its wall seconds.

    The predictions already made stand: each read only what happened before its instant, all before
    the copy added now arrives (``tests/sim/test_eta.py`` changes the future and no prediction moves).
    So is every dispatch before ``unchanged_until``, checked.
    """
    started = time.perf_counter()
    run = PolicyRun(extended, policy, seed)
    view = LiveView(run)
    result = run.replay()
    seconds = time.perf_counter() - started
    moved = [
        name for name, at in before.items() if at < unchanged_until and view.first_dispatch.get(name) != at
    ]
    if moved:
        raise RuntimeError(
            f"appending a copy after {unchanged_until} s moved {len(moved)} earlier first dispatches "
            f"(e.g. {moved[0]}) in the {policy} replay: its past depends on its future"
        )
    return result, view.first_dispatch, seconds


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
    """Replay ``scenario`` extended by copies of itself under ``policy``, forecasting each sampled job
    of the original (or ``jobs``) at its submission.

    The copies are the fewest that reach the forecast horizon past the original's last submission
    (``copies_for_horizon``); while a predicted job has not started by the extended trace's last
    submission, one more copy is appended and the extended trace replayed again (at most
    ``MAX_EXTRA_ROUNDS`` times). ``workers`` > 1 runs the forecasts in that many processes while the
    replay goes on: each reads only the live state copied at its instant and draws from its own
    seed, so the predictions are the same as in-process ones, in less wall time (the CPU time is the
    same).
    """
    targets = list(jobs) if jobs is not None else sample_jobs(scenario, sample, seed)
    copies = copies_for_horizon(scenario, settings.horizon_seconds)
    extended = extend_scenario(scenario, copies)
    run = PolicyRun(extended, policy, seed)
    forecaster = _Forecaster(run, settings, seed, workers)
    # Scheduled before the replay's own arrivals, so each runs before its job (and anything else
    # arriving at that instant) is submitted.
    for target in targets:
        run.model.engine.schedule_at(target.submit, forecaster.predict, target)
    result, wall = forecaster.replay()
    first_dispatch, replay_seconds = forecaster.view.first_dispatch, wall - forecaster.spent
    original_last, last = scenario.jobs[-1].submit, extended.jobs[-1].submit
    for _ in range(MAX_EXTRA_ROUNDS):
        if not _waiting(targets, first_dispatch, last):
            break
        copies += 1
        extended = extend_scenario(scenario, copies)
        result, first_dispatch, seconds = _redispatch(extended, policy, seed, first_dispatch, last)
        replay_seconds += seconds
        last = extended.jobs[-1].submit
    predictions = [replace(p, actual_start=first_dispatch.get(p.job)) for p in forecaster.made]
    return EtaResult(
        policy,
        predictions,
        result,
        forecaster.spent,
        replay_seconds,
        forecaster.worker_cpu,
        extension=Extension(copies, original_last, last, _waiting(targets, first_dispatch, last) > 0),
    )


def evaluate(result: EtaResult) -> EtaResult:
    """Fill ``measures``: untuned on the whole and both halves; tuned on the earlier, shown on the later."""
    preds = sorted(result.predictions, key=lambda p: (p.submitted_at, p.job))
    half = len(preds) // 2
    earlier, later = preds[:half], preds[half:]
    chosen = tune(earlier)
    result.calibration = chosen
    extension = result.extension

    def untuned(predictions: Sequence[Prediction]) -> dict[str, Any]:
        return measure(
            predictions,
            last_arrival=extension.last_arrival,
            original_last_arrival=extension.original_last_arrival,
        )

    def by_tier(predictions: Sequence[Prediction], calibration: Calibration = UNTUNED) -> dict[str, Any]:
        """``tier_measures`` of each tier's predictions (those the baseline guesses apart)."""
        return {
            tier.value: tier_measures([p for p in predictions if p.tier == tier.value], calibration)
            for tier in TIERS
        }

    whole = untuned(preds)
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
        "starts_in_appended_copies": whole["starts_in_appended_copies"],
        **extension.summary(),
        "earlier_half": {
            **_renamed(untuned(earlier)),
            "by_tier": by_tier(earlier),
            # Which margins' method, chosen inside the earlier half: fitted on its first half,
            # measured on its second (``choose_method``); ``tune`` fits the shippable one chosen so.
            "method_selection": {"coverage": validation, "chosen": method},
        },
        "later_half": {
            **_renamed(untuned(later)),
            "by_tier": by_tier(later),
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
                "by_tier": by_tier(later, chosen),
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


def tier_measures(predictions: Sequence[Prediction], calibration: Calibration = UNTUNED) -> dict[str, Any]:
    """One tier's measured count, error, baseline error, their ratio and the p10-p90 coverage."""
    m = measure(predictions, calibration)
    error, baseline = m["median_abs_error_seconds"], m["baseline_median_abs_error_seconds"]
    return {
        "measured": m["measured"],
        "median_abs_error_seconds": error,
        "baseline_median_abs_error_seconds": baseline,
        "error_to_baseline": round(error / baseline, 3) if error is not None and baseline else None,
        "coverage_p10_p90": m["coverage"],
    }


def _renamed(measures: dict[str, Any]) -> dict[str, Any]:
    """``measure``'s output with its coverage named for the p10-p90 interval it was measured on."""
    out = dict(measures)
    out["coverage_p10_p90"] = out.pop("coverage")
    return out
