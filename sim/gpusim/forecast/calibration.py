"""Tuning the forecast's interval on earlier predictions, and measuring any calibration's error and coverage.

The p50 scale and the conformal margins (split conformal prediction; ``choose_method`` picks how the
margins are made), and the online alternative (``online_margins``: adaptive conformal inference).
"""

from __future__ import annotations

import heapq
import math
import statistics
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from typing import Any

from shareplane.domain.forecast.start_forecast import Calibration as ShownCalibration
from shareplane.domain.forecast.start_forecast import (
    log_wait,
    track_margin,
)

from .prediction import MIN_WAIT_SECONDS, Prediction, measured


@dataclass(frozen=True)
class Calibration:
    """What the backtest may tune on the earlier half: a scale on the p50 wait and the conformal
    margins (``low_margin`` moves the ``low`` bound down, ``high_margin`` the ``high`` bound up, on
    the ``log_wait`` scale; a job too few runs started has the range [the horizon's end, later)).
    All are applied by the domain's ``Calibration`` (``shown``), the code the live forecast runs.
    """

    low: float = 0.1
    high: float = 0.9
    p50_scale: float = 1.0
    low_margin: float = 0.0
    high_margin: float = 0.0

    @property
    def shown(self) -> ShownCalibration:
        """The p50 scale and margins as the forecast applies them (``ForecastSettings.calibration``)."""
        return ShownCalibration(
            p50_scale=self.p50_scale, low_log_margin=self.low_margin, high_log_margin=self.high_margin
        )

    def with_margin(self, margin: float) -> Calibration:
        """One margin for both bounds (the symmetric methods, and the online one, use one)."""
        return replace(self, low_margin=margin, high_margin=margin)

    def beyond_horizon(self, p: Prediction) -> bool:
        """Whether ``p``'s range is [the horizon's end, later): fewer than ``low`` of its runs started it."""
        return p.raw(self.low) is None

    def bounds(self, p: Prediction) -> tuple[float, float]:
        low, _, high = self.shown.shown(
            p.raw(self.low), p.raw(0.5), p.raw(self.high), p.submitted_at, p.horizon_seconds
        )
        return low, math.inf if high is None else high

    def below(self, p: Prediction) -> float:
        """How far (``log_wait`` scale) the actual start fell below the runs' low; negative above it."""
        assert p.actual_wait is not None
        low = p.raw(self.low)
        low_wait = p.horizon_seconds if low is None else low - p.submitted_at
        return log_wait(low_wait) - log_wait(p.actual_wait)

    def above(self, p: Prediction) -> float:
        """How far the actual start fell above the runs' high (-inf when the high is open)."""
        assert p.actual_wait is not None
        high = p.raw(self.high)
        return -math.inf if high is None else log_wait(p.actual_wait) - log_wait(high - p.submitted_at)

    def nonconformity(self, p: Prediction) -> float:
        """How far the actual start fell outside the runs' [low, high], either side; negative inside.

        Conformalized quantile regression (Romano, Patterson, Candes 2019): the interval widened by
        the ``target`` quantile of these scores on held-out jobs covers about ``target`` of new ones.
        """
        return max(self.below(p), self.above(p))

    def point(self, p: Prediction) -> float:
        shown = self.shown.median(p.raw(0.5), p.submitted_at)
        return math.inf if shown is None else shown


UNTUNED = Calibration()
P50_SCALE_CHOICES = (0.5, 0.67, 0.8, 1.0, 1.25, 1.5, 2.0)
#: A group (kind of range, tier) gets a margin of its own from at least this many measured
#: predictions; with fewer, it takes the margin of all of them (fixed before any run).
MIN_GROUP_SIZE = 30


def measure(
    predictions: Sequence[Prediction],
    calibration: Calibration | Fitted = UNTUNED,
    last_arrival: float | None = None,
    original_last_arrival: float | None = None,
) -> dict[str, Any]:
    """Errors and coverage on the jobs that waited at least 10 minutes (see the module docstring).

    ``calibration`` is one for every prediction or, for a method with a margin per group, a
    function giving each prediction its own. ``started_after_last_arrival`` counts the jobs that
    started after the (extended) trace's last submission, ``starts_in_appended_copies`` those that
    started after the original trace's (each None without its submission)."""
    waited = measured(predictions)

    def started_after(last: float | None) -> int | None:
        if last is None:
            return None
        return sum(1 for p in waited if p.actual_start is not None and p.actual_start > last)

    drained = {
        "started_after_last_arrival": started_after(last_arrival),
        "starts_in_appended_copies": started_after(original_last_arrival),
    }
    if not waited:
        return {
            "measured": 0,
            "no_run_started": 0,
            "median_abs_error_seconds": None,
            "coverage": None,
            "baseline_median_abs_error_seconds": None,
            **drained,
        }
    of = calibration if callable(calibration) else (lambda p: calibration)
    errors = [abs(of(p).point(p) - p.actual_start) for p in waited]  # type: ignore[operator]
    baseline = [abs(p.submitted_at + p.baseline_wait - p.actual_start) for p in waited]  # type: ignore[operator]
    inside = 0
    for p in waited:
        low, high = of(p).bounds(p)
        inside += low <= p.actual_start <= high  # type: ignore[operator]
    error = statistics.median(errors)
    return {
        "measured": len(waited),
        # Jobs no run started within the horizon (their range is [horizon, later) less the margin).
        "no_run_started": sum(1 for p in waited if not p.starts),
        "median_abs_error_seconds": round(error, 1) if math.isfinite(error) else None,
        "coverage": round(inside / len(waited), 4),
        "baseline_median_abs_error_seconds": round(statistics.median(baseline), 1),
        **drained,
    }


def conformal_margin(scores: Sequence[float], target: float) -> float:
    """The split-conformal margin for ``target``: the ceil((n + 1) x target)-th smallest score.

    A score is infinite only for a range with no end (an infinite horizon): no margin reaches it, so
    the widest finite one stands in (the range then covers less than ``target``).
    """
    ordered = sorted(scores)
    if not ordered:
        return 0.0
    k = min(len(ordered), math.ceil((len(ordered) + 1) * target))
    finite = [x for x in ordered if math.isfinite(x)]
    return ordered[k - 1] if math.isfinite(ordered[k - 1]) else max(finite, default=0.0)


# ------------------------------------------------------------------- choosing the margins' method
#: A method's margins as fitted: each prediction's calibration.
Fitted = Callable[[Prediction], Calibration]
#: A method: fitted on the measured predictions, from a calibration without margins, for a target.
MarginMethod = Callable[[Sequence[Prediction], Calibration, float], Fitted]


def pooled_margin(waited: Sequence[Prediction], base: Calibration, target: float) -> Calibration:
    """One margin for both bounds of every range (conformalized quantile regression)."""
    return base.with_margin(round(conformal_margin([base.nonconformity(p) for p in waited], target), 4))


def asymmetric_margins(waited: Sequence[Prediction], base: Calibration, target: float) -> Calibration:
    """A margin for each bound, each covering (1 + target) / 2 on its own side (the asymmetric
    variant of Romano, Patterson and Candes 2019): for a model whose misses are mostly on one side."""
    side = (1.0 + target) / 2
    return replace(
        base,
        low_margin=round(conformal_margin([base.below(p) for p in waited], side), 4),
        high_margin=round(conformal_margin([base.above(p) for p in waited], side), 4),
    )


def _for_all(fit: Callable[[Sequence[Prediction], Calibration, float], Calibration]) -> MarginMethod:
    """A method whose one calibration serves every prediction."""

    def fitted(waited: Sequence[Prediction], base: Calibration, target: float) -> Fitted:
        calibration = fit(waited, base, target)
        return lambda p: calibration

    return fitted


def _by_group(key: Callable[[Calibration, Prediction], object]) -> MarginMethod:
    """One symmetric margin per group of ranges, a group known when the range is made
    (group-conditional, "Mondrian", conformal prediction, Vovk et al. 2005); a group with fewer
    than ``MIN_GROUP_SIZE`` measured predictions takes the pooled margin."""

    def fit(waited: Sequence[Prediction], base: Calibration, target: float) -> Fitted:
        everyone = pooled_margin(waited, base, target)
        groups: dict[object, list[float]] = {}
        for p in waited:
            groups.setdefault(key(base, p), []).append(base.nonconformity(p))
        margins = {
            g: base.with_margin(round(conformal_margin(scores, target), 4))
            for g, scores in groups.items()
            if len(scores) >= MIN_GROUP_SIZE
        }
        return lambda p: margins.get(key(base, p), everyone)

    return fit


#: The candidate methods for the margins, in order of preference on a tie (fixed before their
#: selection was run; docs/design/start-forecast.md): by kind of range (within the horizon, or
#: beyond it) and by tier are group-conditional.
MARGIN_METHODS: dict[str, MarginMethod] = {
    "pooled": _for_all(pooled_margin),
    "by_kind": _by_group(lambda base, p: base.beyond_horizon(p)),
    "asymmetric": _for_all(asymmetric_margins),
    "by_tier": _by_group(lambda base, p: p.tier),
}
#: Two methods whose validation coverage is this close count as a tie.
METHOD_TIE = 0.005


def _p50_base(predictions: Sequence[Prediction]) -> Calibration:
    """No margins, and the p50 scale with the least median error on these predictions."""

    def error(scale: float) -> float:
        median = measure(predictions, Calibration(p50_scale=scale))["median_abs_error_seconds"]
        return math.inf if median is None else float(median)

    return Calibration(p50_scale=min(P50_SCALE_CHOICES, key=lambda k: (error(k), abs(k - 1.0))))


def choose_method(
    predictions: Sequence[Prediction], target: float = 0.8, among: Collection[str] | None = None
) -> tuple[str, dict[str, float | None]]:
    """Which of ``MARGIN_METHODS`` (those named ``among``, default all) to use, chosen on these
    predictions alone (the earlier half): each fitted on their first half (by submission), measured
    on their second; the method whose coverage there is nearest ``target`` wins, a tie going to the
    earlier in the list. Returns the method and each one's coverage there."""
    ordered = sorted(predictions, key=lambda p: (p.submitted_at, p.job))
    fit_on, check_on = ordered[: len(ordered) // 2], ordered[len(ordered) // 2 :]
    base, waited = _p50_base(fit_on), measured(fit_on)
    coverage = {
        name: measure(check_on, method(waited, base, target))["coverage"]
        for name, method in MARGIN_METHODS.items()
        if among is None or name in among
    }
    distance = {name: math.inf if c is None else abs(c - target) for name, c in coverage.items()}
    best = min(distance.values())
    return next(name for name, d in distance.items() if d <= best + METHOD_TIE), coverage


#: The margins' methods the live forecast can apply: the domain's ``Calibration`` has one margin per
#: bound, so a method with a margin per group of ranges is measured (``choose_method``), not shipped.
SHIPPABLE_METHODS: dict[str, Callable[[Sequence[Prediction], Calibration, float], Calibration]] = {
    "pooled": pooled_margin,
    "asymmetric": asymmetric_margins,
}


def tune(predictions: Sequence[Prediction], target: float = 0.8) -> Calibration:
    """On these predictions: the p50 scale with the least median error, and the margins of the
    shippable method ``choose_method`` chooses inside them, fitted on them all.

    ``target`` 0.8 is the middle of the 0.70-0.95 the issue asks for, set before any run.
    """
    method, _ = choose_method(predictions, target, among=SHIPPABLE_METHODS)
    return SHIPPABLE_METHODS[method](measured(predictions), _p50_base(predictions), target)


#: Online calibration's step on the ``log_wait`` scale, fixed before any run: a miss widens the range
#: by 0.8 x 0.05 = 0.04 (4% on each bound), a cover narrows it by 0.01.
ONLINE_STEP = 0.05


def online_margins(
    predictions: Sequence[Prediction], base: Calibration, target: float = 0.8, step: float = ONLINE_STEP
) -> dict[str, float]:
    """Each prediction's margin, adapted online from the outcomes known when it was made.

    Adaptive conformal inference (Gibbs and Candes 2021) on the margin's own scale (quantile
    tracking), one margin for both bounds: starting from none (``base``'s are ignored), every
    outcome seen widens the margin by ``step x target`` when the range missed and narrows it by
    ``step x (1 - target)`` when it covered, so over any sequence about ``target`` of the ranges
    cover. An outcome counts once it is known, as the live system would know it: a start (inside or
    below the range) at that start; a miss above once the range's high end has passed with the job
    still waiting. Only jobs known to have waited 10 minutes count (those measured). Nothing later
    than a prediction moves its margin.
    """
    ordered = sorted(predictions, key=lambda p: (p.submitted_at, p.job))
    known: list[tuple[float, int, bool]] = []  # (when known, tiebreak, missed)
    margin = 0.0
    out: dict[str, float] = {}
    for n, p in enumerate(ordered):
        while known and known[0][0] < p.submitted_at:
            _, _, missed = heapq.heappop(known)
            margin = track_margin(margin, missed, target, step)
        out[p.job] = margin
        if p.actual_start is None:
            continue
        low, high = base.with_margin(margin).bounds(p)
        missed = not low <= p.actual_start <= high
        # A start is known when it happens; a miss above as soon as the high end passes unstarted.
        when = high if p.actual_start > high else p.actual_start
        when = max(when, p.submitted_at + MIN_WAIT_SECONDS)
        if p.actual_start - p.submitted_at >= MIN_WAIT_SECONDS:
            heapq.heappush(known, (when, n, missed))
    return out


def measure_online(
    predictions: Sequence[Prediction], base: Calibration, margins: dict[str, float]
) -> dict[str, Any]:
    """``measure``'s coverage with each prediction's own online margin (``online_margins``)."""
    measures = measure(predictions, lambda p: base.with_margin(margins[p.job]))
    return {"measured": measures["measured"], "coverage": measures["coverage"]}
