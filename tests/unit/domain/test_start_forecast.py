"""The start forecast: its sampling choices, its forward model's order, and its bad-input errors."""

from __future__ import annotations

import heapq
import math
import random
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shareplane.domain.errors import InvalidInputError
from shareplane.domain.forecast import start_forecast
from shareplane.domain.forecast.start_forecast import (
    UNCALIBRATED,
    Arrival,
    Calibration,
    FinishedRun,
    ForecastSettings,
    History,
    LiveQueue,
    QueuedJob,
    QueueKind,
    RunningJob,
    RunTimes,
    ShareState,
    decayed_usage,
    fair_entitlements,
    forecast_starts,
    from_log_wait,
    log_wait,
    size_class,
    track_margin,
)
from shareplane.domain.shares import fairshare

from tests.properties import examples

# The model's own quantiles: the tests below check its order and draws, not the shipped calibration.
FEW = ForecastSettings(samples=40, calibration=UNCALIBRATED)


def queue(kind: QueueKind = QueueKind.FAIRSHARE, **kw) -> LiveQueue:
    base = {
        "now": 1000.0,
        "capacity": 2,
        "kind": kind,
        "shares": (ShareState("a"), ShareState("b")),
        "running": (RunningJob("r1", "a", 1, 400.0), RunningJob("r2", "b", 1, 900.0)),
        "queued": (QueuedJob("q1", "a", 1, 10, 950.0, 1), QueuedJob("q2", "a", 1, 10, 960.0, 2)),
    }
    return LiveQueue(**{**base, **kw})


def history(*runs: tuple[str, float]) -> History:
    return History(finished=tuple(FinishedRun(s, d) for s, d in runs))


def test_same_seed_same_forecast_and_another_seed_moves_it() -> None:
    h = history(*[("a", 100.0 + 50 * i) for i in range(30)], *[("b", 300.0 + 20 * i) for i in range(30)])
    one = forecast_starts(queue(), h, settings=FEW, seed=7)
    assert one == forecast_starts(queue(), h, settings=FEW, seed=7)
    assert one != forecast_starts(queue(), h, settings=FEW, seed=8)


def test_remaining_time_is_conditioned_on_time_already_run() -> None:
    times = RunTimes.of([FinishedRun("a", d) for d in (100.0, 200.0, 900.0, 1000.0)], 1, 3600.0)
    rng = random.Random(0)
    draws = {times.remaining("a", 500.0, rng) for _ in range(200)}
    assert draws == {400.0, 500.0}  # only the runs that lasted longer than 500 s
    beyond = [times.remaining("a", 5000.0, rng) for _ in range(200)]
    assert all(d > 0.0 for d in beyond)  # longer than all history: still ends later, never "now"


def test_running_jobs_count_as_censored_runs_so_long_runs_are_not_forgotten() -> None:
    finished = [FinishedRun("a", d) for d in (100.0, 200.0, 300.0, 400.0)]
    running = [RunningJob(f"r{n}", "a", 1, 0.0) for n in range(4)]  # each has run 10,000 s so far
    rng = random.Random(1)
    alone = RunTimes.of(finished, 1, 3600.0)
    censored = RunTimes.of(finished, 1, 3600.0, running, 10_000.0)
    assert max(alone.draw("a", rng) for _ in range(400)) == 400.0
    # Half the runs seen are still going after 10,000 s: about half the draws last that long.
    long = sum(censored.draw("a", rng) >= 10_000.0 for _ in range(400))
    assert 150 <= long <= 250


def test_runs_started_before_the_historys_window_count_from_when_it_opened() -> None:
    # GIVEN a history of the runs that ended in the window opening at t = 10,000: a hundred 100 s runs
    # started in it, and two runs started at t = 0 that are in it only because they outlasted its
    # start (their 100 s contemporaries ended unseen): one ended at 20,000 s, one is still running.
    started_in_window = [FinishedRun("a", 100.0, ended_at=10_000.0 + 100.0 * n) for n in range(1, 101)]
    old_ones = [FinishedRun("a", 20_000.0, ended_at=20_000.0)]
    running = [RunningJob("r", "a", 1, 0.0)]
    rng = random.Random(0)
    # WHEN the window's start is known, the old runs are at risk only from age 10,000 s
    truncated = RunTimes.of([*started_in_window, *old_ones], 1, 3600.0, running, 30_000.0, since=10_000.0)
    plain = RunTimes.of([*started_in_window, *old_ones], 1, 3600.0, running, 30_000.0)
    # THEN a new job's draw is a 100 s run: the curve reaches the old runs' lengths only after every
    # run observed from its start has ended (S(100) = 0), where without the window 2 of 102 go on
    assert {truncated.draw("a", rng) for _ in range(500)} == {100.0}
    assert plain.of_pool("a", 0).survival_at(100.0) == pytest.approx(2 / 102)
    # and a job already running longer than that still ends later, not now
    assert truncated.remaining("a", 15_000.0, rng) > 0.0
    # A run that ended as the window opened was never under observation in it: left out.
    edge = RunTimes.of([FinishedRun("a", 50.0, ended_at=10_000.0)], 1, 3600.0, since=10_000.0)
    assert edge.of_pool("a", 0).events == 0


def test_runs_started_lately_weigh_more_than_runs_started_weeks_ago() -> None:
    # GIVEN a share whose 3 runs started four weeks ago are still going and whose 97 runs started
    # in the last two hours have all ended, after half an hour each
    day, now = 86400.0, 40 * 86400.0
    old = [RunningJob(f"old{n}", "a", 1, now - 28 * day) for n in range(3)]
    recent = [FinishedRun("a", 1800.0, ended_at=now - 3600.0) for _ in range(97)]
    # WHEN every run weighs alike, 3% of new runs last the four weeks
    plain = RunTimes.of(recent, 1, 3600.0, old, now)
    assert plain.of_pool("a", 0).survival_at(day) == pytest.approx(3 / 100)
    # THEN with a week's half-life the old runs weigh 1/16 each (four half-lives), the recent ones
    # nearly 1 (5,400 s since they started): new runs last a day 16 times less often
    weighted = RunTimes.of(recent, 1, 3600.0, old, now, half_life=7 * day)
    recent_weight = 0.5 ** (5400.0 / (7 * day))
    expected = (3 / 16) / (97 * recent_weight + 3 / 16)
    assert weighted.of_pool("a", 0).survival_at(day) == pytest.approx(expected)
    assert expected < 3 / 100 / 15
    # and the curve still counts its finished runs as runs (the fallback threshold), not their weight
    assert weighted.of_pool("a", 0).events == 97


def test_a_share_with_too_few_runs_draws_from_everyone() -> None:
    times = RunTimes.of([FinishedRun("a", 10.0), *[FinishedRun("b", 99.0)] * 5], 3, 3600.0)
    rng = random.Random(0)
    assert {times.draw("a", rng) for _ in range(100)} == {10.0, 99.0}
    assert {times.draw("b", rng) for _ in range(100)} == {99.0}


def test_size_classes_double() -> None:
    assert [size_class(n) for n in (1, 2, 3, 4, 5, 8, 9, 16, 17)] == [0, 1, 2, 2, 3, 3, 4, 4, 5]


def test_a_big_job_draws_from_big_jobs_runs_not_from_the_many_small_ones() -> None:
    small = [FinishedRun("a", 60.0, 1) for _ in range(50)]
    big = [FinishedRun("a", 90_000.0, 8) for _ in range(20)]
    times = RunTimes.of([*small, *big], 20, 3600.0)
    rng = random.Random(0)
    assert {times.draw("a", rng, 8) for _ in range(50)} == {90_000.0}
    assert {times.draw("a", rng, 1) for _ in range(50)} == {60.0}
    # A running 8-instance job is conditioned on the big jobs' curve as well.
    assert {times.remaining("a", 1000.0, rng, 8) for _ in range(20)} == {89_000.0}


def test_a_size_class_with_too_few_runs_falls_back_to_everyones_of_that_size_then_its_share() -> None:
    runs = [
        *[FinishedRun("a", 60.0, 1) for _ in range(30)],
        *[FinishedRun("a", 500.0, 4) for _ in range(2)],  # too few of the share's own
        *[FinishedRun("b", 7000.0, 4) for _ in range(30)],
    ]
    times = RunTimes.of(runs, 20, 3600.0)
    rng = random.Random(0)
    # Everyone's 3-4 instance runs (a's two among them), never a's one-instance runs.
    assert {times.draw("a", rng, 4) for _ in range(200)} == {500.0, 7000.0}
    # No run of 5-8 instances anywhere: the share's own curve of every size.
    assert {times.draw("a", rng, 8) for _ in range(400)} == {60.0, 500.0}


def test_known_run_times_give_exact_starts_in_priority_then_submission_order() -> None:
    # One run time per share makes every run identical, so the quantiles collapse to exact starts.
    h = history(*[("a", 700.0)] * 20, *[("b", 300.0)] * 20)
    q = queue(
        queued=(
            QueuedJob("low", "a", 1, 10, 950.0, 1),
            QueuedJob("high", "a", 1, 50, 960.0, 2),
        )
    )
    f = forecast_starts(q, h, settings=FEW)
    # r1 (share a, started 400) ends at 1100; r2 (share b, started 900) at 1200. "high" goes first.
    assert (f["high"].low, f["high"].median, f["high"].high) == (1100.0, 1100.0, 1100.0)
    assert f["low"].median == 1200.0
    assert f["low"].started_fraction == 1.0


def test_fairshare_serves_the_share_below_its_usage_first() -> None:
    h = history(*[("a", 500.0)] * 20, *[("b", 500.0)] * 20)
    q = queue(
        capacity=1,
        shares=(ShareState("a", usage=50_000.0), ShareState("b", usage=0.0)),
        running=(RunningJob("r", "a", 1, 900.0),),
        queued=(QueuedJob("qa", "a", 1, 10, 500.0, 1), QueuedJob("qb", "b", 1, 10, 990.0, 2)),
    )
    f = forecast_starts(q, h, settings=FEW)
    assert f["qb"].median == 1400.0  # b is far below a: its job goes first though submitted later
    assert f["qa"].median == 1900.0
    fifo = forecast_starts(
        queue(QueueKind.FIFO, **{k: getattr(q, k) for k in ("capacity", "shares", "running", "queued")}),
        h,
        settings=FEW,
    )
    assert fifo["qa"].median == 1400.0  # FIFO: submission order


def test_quota_share_over_its_limit_waits_without_borrowing() -> None:
    h = history(*[("a", 500.0)] * 20, *[("b", 5000.0)] * 20)
    common = {
        "capacity": 2,
        "shares": (ShareState("a", limit=1), ShareState("b", limit=1)),
        "running": (RunningJob("r", "a", 1, 900.0),),
        "queued": (QueuedJob("qa", "a", 1, 10, 950.0, 1),),
    }
    lend = forecast_starts(queue(QueueKind.QUOTA, borrow=True, **common), h, settings=FEW)
    reserve = forecast_starts(queue(QueueKind.QUOTA, borrow=False, **common), h, settings=FEW)
    assert lend["qa"].median == 1000.0  # b's idle instance is lent
    assert reserve["qa"].median == 1400.0  # waits for a's own instance


def test_a_job_that_never_fits_has_no_start_within_the_horizon() -> None:
    q = queue(queued=(QueuedJob("huge", "a", 3, 10, 950.0, 1),))
    f = forecast_starts(
        q, history(*[("a", 100.0)] * 30), settings=ForecastSettings(samples=5, horizon_seconds=3600)
    )
    assert f["huge"].median is None and f["huge"].started_fraction == 0.0


#: A job of share "a" (far over its usage) waiting for the one instance, which a "b" job holds.
ONE_INSTANCE = queue(
    capacity=1,
    shares=(ShareState("a", usage=1e6), ShareState("b")),
    running=(RunningJob("r", "b", 1, 990.0),),
    queued=(QueuedJob("qa", "a", 1, 10, 995.0, 1),),
)
#: Ten-minute runs of both shares, and 200 arrivals of share "b" in the last 100 minutes.
TEN_MINUTE_RUNS = history(*[("a", 600.0)] * 20, *[("b", 600.0)] * 20)
B_BURST = tuple(Arrival(1000.0 - 30 * i, "b", 1, 10) for i in range(200))


def test_arrivals_from_recent_history_can_push_a_job_back() -> None:
    q, h = ONE_INSTANCE, TEN_MINUTE_RUNS
    quiet = forecast_starts(q, h, settings=FEW)
    busy_history = History(h.finished, B_BURST)
    # The 200 arrivals of the last 100 minutes, read over a 6-hour window.
    busy = forecast_starts(q, busy_history, settings=replace(FEW, arrival_lookback_seconds=6 * 3600.0))
    assert quiet["qa"].median == 1590.0
    assert busy["qa"].median is None or busy["qa"].median > quiet["qa"].median


def test_the_last_weeks_rate_holds_for_the_first_week_ahead_then_the_lookbacks() -> None:
    # GIVEN 30 days of submissions: one a day for 23 days, then 100 a day for the last 7
    day, now = 86400.0, 30 * 86400.0
    quiet = [Arrival(d * day + 1.0, "a", 1, 0) for d in range(23)]
    burst = [Arrival(23 * day + k * day / 100 + 1.0, "a", 1, 0) for k in range(700)]
    history = History(arrivals=tuple(quiet + burst), arrivals_since=0.0)
    # WHEN the forward runs' arrival process is set up
    (recent, switch_at, later), copied = start_forecast.arrival_rates(history, now, ForecastSettings())
    # THEN the first 7 days ahead arrive at the last 7 days' rate, the rest at the 30 days', each a
    # copy of one of the 30 days' submissions
    assert recent == pytest.approx(700 / (7 * day))
    assert later == pytest.approx(723 / (30 * day))
    assert switch_at == now + 7 * day
    assert len(copied) == 723
    # and a forward run draws them so: ~700 in the week ahead, ~169 in the week after
    live = LiveQueue(now=now, capacity=1, kind=QueueKind.FAIRSHARE, shares=(), running=(), queued=())
    kinds = start_forecast.arrival_kinds(copied, live.kind)
    run = start_forecast._Run(
        live, RunTimes.of([], 1, 3600.0), (recent, switch_at, later), kinds, set(), 14 * day,
        random.Random(0), {},
    )  # fmt: skip
    times, t = [], now
    while (t := run._after(t)) < now + 14 * day:
        times.append(t)
    first_week = sum(1 for x in times if x < switch_at)
    assert 600 <= first_week <= 800
    assert 120 <= len(times) - first_week <= 220
    # With no recent window, one rate from now on.
    one = replace(ForecastSettings(), recent_arrival_seconds=0.0)
    assert start_forecast.arrival_rates(history, now, one)[0] == (later, now, later)


def test_the_arrival_rate_is_measured_over_the_part_of_the_lookback_observed() -> None:
    arrivals = [Arrival(t, "a", 1, 10) for t in (100.0, 400.0, 700.0, 1000.0)]
    # The whole lookback observed: 3 arrivals in the last 850 s (a 4th before it).
    assert start_forecast.arrival_rate(arrivals, 1000.0, 850.0)[0] == 3 / 850.0
    # Observed only since 400 s (a new table, the trace's start): 3 in 600 s, not 3 in the 850 s
    # asked for, of which the unobserved 250 s would read as a time nothing arrived.
    rate, recent = start_forecast.arrival_rate(arrivals, 1000.0, 850.0, since=400.0)
    assert rate == 3 / 600.0 and [a.at for a in recent] == [400.0, 700.0, 1000.0]
    # Nothing observed yet: no rate, not a division by zero.
    assert start_forecast.arrival_rate(arrivals, 1000.0, 850.0, since=1001.0)[0] == 0.0
    # A young table's burst is counted over the shortest span at least (never over more than the lookback).
    assert start_forecast.arrival_rate(arrivals, 1000.0, 850.0, since=400.0, shortest=800.0)[0] == 3 / 800.0
    assert start_forecast.arrival_rate(arrivals, 1000.0, 850.0, since=400.0, shortest=5000.0)[0] == 3 / 850.0


def test_a_burst_on_a_young_table_is_not_projected_over_the_horizon() -> None:
    # GIVEN a share whose 200 jobs all arrived in the table's first 100 minutes
    q, burst = ONE_INSTANCE, History(TEN_MINUTE_RUNS.finished, B_BURST, 1000.0 - 6000)
    # THEN counted over a day, its copies arrive at 200 a day, and the job starts in every run
    young = forecast_starts(q, burst, settings=FEW)
    assert young["qa"].started_fraction == 1.0
    # (over the 100 minutes seen, at 2 a minute, they would keep it waiting in some runs at least)
    as_seen = forecast_starts(q, burst, settings=replace(FEW, shortest_arrival_span_seconds=0.0))
    assert as_seen["qa"].median is None or as_seen["qa"].median > young["qa"].median


def test_unknown_target_and_bad_state_name_the_field() -> None:
    with pytest.raises(InvalidInputError, match="targets"):
        forecast_starts(queue(), History(), targets={"nope"})
    with pytest.raises(InvalidInputError, match="capacity"):
        queue(capacity=0)
    with pytest.raises(InvalidInputError, match="samples"):
        ForecastSettings(samples=0)


@settings(max_examples=examples(60), deadline=None)
@given(
    holds=st.lists(
        st.tuples(st.floats(0, 5000), st.floats(1, 3000), st.integers(1, 8)), min_size=1, max_size=6
    ),
    weight=st.floats(0.1, 10),
)
def test_decayed_usage_matches_stepping_the_accrual(holds, weight) -> None:
    window, now = 600.0, 9000.0
    spans = [(s, s + d, n) for s, d, n in holds]
    # Step every instant where the rate changes, as Batch's counter (and gpusim's) would.
    points = sorted({0.0, now, *[p for s, e, _ in spans for p in (s, e) if p < now]})
    usage = 0.0
    for t0, t1 in zip(points, points[1:], strict=False):
        rate = sum(n * weight for s, e, n in spans if s <= t0 < e)
        usage = fairshare.accrue(usage, rate, t1 - t0, window)
    assert decayed_usage(spans, weight, window, now) == pytest.approx(usage, rel=1e-9, abs=1e-6)


def test_fair_entitlements_follow_inverse_weights() -> None:
    assert fair_entitlements(9, {"a": 1.0, "b": 0.5}) == pytest.approx({"a": 3.0, "b": 6.0})


def test_the_calibration_scales_the_p50_wait_and_widens_the_range_on_the_log_scale() -> None:
    cal = Calibration(p50_scale=0.5, low_log_margin=1.0, high_log_margin=0.25)
    now = 1000.0
    assert cal.median(now + 7200.0, now) == now + 3600.0
    assert cal.median(None, now) is None
    high = cal.high(now + 7200.0, now)
    low = cal.low(now + 7200.0, now, 86400.0)
    assert high is not None and log_wait(high - now) == pytest.approx(log_wait(7200.0) + 0.25)
    assert log_wait(low - now) == pytest.approx(log_wait(7200.0) - 1.0)
    assert cal.high(None, now) is None  # later than the horizon stays open
    assert UNCALIBRATED.low(None, now, 86400.0) == now + 86400.0


def test_a_low_beyond_the_horizon_is_the_horizons_end_less_the_low_margin() -> None:
    cal = Calibration(low_log_margin=0.25, high_log_margin=1.0)
    now, horizon = 1000.0, 86400.0
    # A low beyond the horizon is the horizon's end less the low's margin, not "no range".
    assert cal.low(None, now, horizon) == now + from_log_wait(log_wait(horizon) - 0.25)
    assert cal.low(None, now, horizon) == cal.low(now + horizon, now, horizon)


def test_the_forecast_shows_the_calibrated_quantiles() -> None:
    q = queue()
    h = history(*[("a", 600.0)] * 30, *[("b", 600.0)] * 30)
    raw = forecast_starts(q, h, settings=FEW)["q2"]
    cal = Calibration(p50_scale=2.0, low_log_margin=0.5, high_log_margin=0.5)
    shown = forecast_starts(q, h, settings=replace(FEW, calibration=cal))["q2"]
    assert shown.starts == raw.starts
    assert shown.median == cal.median(raw.median, q.now)
    assert shown.high == cal.high(raw.high, q.now)
    assert shown.low == cal.low(raw.low, q.now, FEW.horizon_seconds)
    assert shown.low is not None and raw.low is not None and shown.low < raw.low


@given(
    waits=st.lists(st.floats(0, 40 * 86400.0), min_size=3, max_size=3).map(sorted),
    open_from=st.integers(1, 3),
    scale=st.floats(0.1, 4.0),
    low_margin=st.floats(-2.0, 2.0),
    high_margin=st.floats(-2.0, 2.0),
)
def test_the_shown_range_holds_the_shown_p50_whatever_the_calibration(
    waits: list[float], open_from: int, scale: float, low_margin: float, high_margin: float
) -> None:
    # GIVEN the runs' raw p10 <= p50 <= p90 (those from ``open_from`` on beyond the horizon) and any
    # calibration: a p50 scaled below the low, or margins that narrow the range
    now, horizon = 1000.0, 30 * 86400.0
    raw = [now + w if n < open_from else None for n, w in enumerate(waits)]
    cal = Calibration(p50_scale=scale, low_log_margin=low_margin, high_log_margin=high_margin)
    low, median, high = cal.shown(raw[0], raw[1], raw[2], now, horizon)
    # THEN the shown range still holds the shown p50, and what is open stays open
    assert median is None or low <= median
    assert median is None or high is None or median <= high
    assert (median is None) == (raw[1] is None) and (high is None) == (raw[2] is None)


def test_a_job_no_run_started_gets_a_range_from_the_horizon_on() -> None:
    q = queue(queued=(QueuedJob("huge", "a", 3, 10, 950.0, 1),))
    f = forecast_starts(
        q,
        history(*[("a", 100.0)] * 30),
        settings=ForecastSettings(samples=5, horizon_seconds=3600, calibration=UNCALIBRATED),
    )
    assert (f["huge"].low, f["huge"].median, f["huge"].high) == (q.now + 3600, None, None)


@pytest.mark.parametrize(
    "field, value",
    [("p50_scale", 0.0), ("high_log_margin", float("inf")), ("low_log_margin", float("nan"))],
    ids=["a zero p50 scale", "an infinite margin", "a margin that is not a number"],
)
def test_a_bad_calibration_names_the_field(field, value) -> None:
    with pytest.raises(InvalidInputError, match=field):
        Calibration(**{field: value})


@given(st.lists(st.booleans(), min_size=200, max_size=400))
def test_online_margin_steps_toward_the_target_coverage(outcomes) -> None:
    """Tracking: the margin's net move is step x (misses - (1 - target) x outcomes)."""
    margin = 0.0
    for missed in outcomes:
        margin = track_margin(margin, missed, target=0.8, step=0.05)
    expected = 0.05 * (sum(outcomes) - 0.2 * len(outcomes))
    assert margin == pytest.approx(expected)


class _PlainRun(start_forecast._Run):
    """The forward run in its plain form: each rule one call (``fairshare.accrue``, ``standing``,
    ``rng.expovariate``, ``rng.randrange``), ranked by comparing (standing, order) pairs. The model's
    hand-written hot paths must give the same starts as this, float for float."""

    def _accrue(self, sh) -> None:
        if sh.t0 != self.now:
            sh.usage = fairshare.accrue(sh.usage, sh.rate, self.now - sh.t0, self.window)
            sh.t0 = self.now

    def _after(self, t: float) -> float:
        return t + self.rng.expovariate(self.rate) if self.rate > 0 and self.recent else math.inf

    def _arrive(self) -> None:
        lane, key, instances, share = self.recent[self.rng.randrange(len(self.recent))]
        sh = self._share(lane)
        self.next_order += 1
        heapq.heappush(sh.heap, (key, self.next_order, "", instances, share))

    def _start(self, sh) -> None:
        _, _, name, instances, share = heapq.heappop(sh.heap)
        if name in self.pending:
            self.pending.discard(name)
            self.starts[name] = self.now
        self._hold(sh, instances, self.now + self.run_times.draw(share, self.rng, instances))

    def _fairshare_pass(self) -> None:
        skipped: set[str] = set()
        while self.free > 0:
            heads = [sh for sh in self.shares.values() if sh.heap and sh.name not in skipped]
            if not heads:
                return
            for sh in heads:
                self._accrue(sh)
            best = min(
                heads, key=lambda sh: (fairshare.standing(sh.usage, sh.rate, self.window), sh.heap[0][1])
            )
            if best.heap[0][3] > self._usable_free():
                if self.q.head_of_line_blocking:
                    return
                skipped.add(best.name)
                continue
            self._start(best)

    def run(self) -> dict[str, float]:
        self._pass()
        while self.pending:
            t = min(self.finishes[0][0] if self.finishes else math.inf, self.next_arrival)
            if t > self.end or t == math.inf:
                break
            self.now = t
            while self.finishes and self.finishes[0][0] <= t:
                _, _, share, instances = heapq.heappop(self.finishes)
                sh = self.shares[share]
                self._accrue(sh)
                sh.rate = max(0.0, sh.rate - instances * sh.weight)
                sh.in_use -= instances
                self.free += instances
            while self.next_arrival <= t:
                self._arrive()
                self.next_arrival = self._after(self.next_arrival)
            self._pass()
        return self.starts


@settings(max_examples=examples(25), deadline=None)
@given(
    seed=st.integers(0, 10**6),
    kind=st.sampled_from(list(QueueKind)),
    hol=st.booleans(),
    reservation=st.sampled_from([0, 50]),
)
def test_the_runs_hot_paths_give_the_plain_forms_starts_float_for_float(seed, kind, hol, reservation) -> None:
    # Shares of unequal weight and usage, jobs of 1 to 4 instances (a 4 blocks the head of its
    # lane on 6 instances), arrivals of every share and priority: every rule the hot paths write out.
    rng = random.Random(seed)
    # d and e: idle and unused, so they tie on standing and the heads' order decides.
    shares = (
        ShareState("a", 0.5, 3000.0, 3),
        ShareState("b", 1.0, 100.0, 2),
        ShareState("c", 2.0, 0.0, 1),
        ShareState("d"),
        ShareState("e"),
    )
    names = ["a", "b", "c", "d", "e"]
    live = queue(
        kind,
        capacity=6,
        shares=shares,
        decay_seconds=3600,
        compute_reservation=reservation,
        head_of_line_blocking=hol,
        running=tuple(RunningJob(f"r{n}", names[n % 3], 1 + n % 2, 500.0 + 40 * n) for n in range(3)),
        queued=tuple(
            QueuedJob(f"q{n}", rng.choice(names), rng.choice([1, 1, 2, 4]), rng.choice([0, 5]), 900.0 + n, n)
            for n in range(12)
        ),
    )
    past = History(
        finished=tuple(
            FinishedRun(rng.choice(names), rng.uniform(60, 2000), rng.choice([1, 2])) for _ in range(60)
        ),
        arrivals=tuple(
            Arrival(1000.0 - 30 * n, rng.choice(names), rng.choice([1, 2, 4]), rng.choice([0, 5]))
            for n in range(30)
        ),
    )
    run_times = RunTimes.of(past.finished, 20, 3600.0, live.running, live.now)
    rate, recent = start_forecast.arrival_rate(past.arrivals, live.now, 3600.0)
    kinds, lanes = start_forecast.arrival_kinds(recent, kind), start_forecast.queued_lanes(live)
    targets, started = {j.name for j in live.queued}, 0
    for k in range(10):
        fast, plain = (
            cls(
                live,
                run_times,
                (rate, live.now, rate),
                kinds,
                targets,
                86400.0,
                random.Random(f"{seed}-{k}"),
                lanes,
            )
            for cls in (start_forecast._Run, _PlainRun)
        )
        assert fast.run() == plain.run()
        started += len(fast.starts)
        # Not only the same starts: the same floats, bit for bit, in every share's counters.
        assert fast.now == plain.now and fast.free == plain.free
        assert {n: (s.usage.hex(), s.t0.hex(), s.rate.hex()) for n, s in fast.shares.items()} == {
            n: (s.usage.hex(), s.t0.hex(), s.rate.hex()) for n, s in plain.shares.items()
        }
    assert started  # the runs went through starts, finishes and arrivals
