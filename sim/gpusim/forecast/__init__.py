"""The start-forecast backtest: predict at submission, compare with the replay's actual first dispatch.

``shareplane simulate --eta`` replays the scenario once per policy, as a plain ``simulate`` does,
followed by copies of itself: the world keeps submitting. Each copy is the trace shifted by its span
(new job names; the same teams, sizes, tiers and run times: ``whatif.scenario.extend_scenario``);
the copies appended are the fewest that reach the forecast horizon past the trace's last
submission, and one more (a replay again, at most ``backtest.MAX_EXTRA_ROUNDS`` times) while a
predicted job has not started by the extended trace's last submission. Only the original trace's
jobs are predicted, and each prediction is compared with its job's first dispatch in the extended
replay. For a seeded sample of jobs, at each one's submission instant (before it and anything
arriving at the same instant is submitted), ``live_queue`` reads the model the way the control plane reads
Batch and the jobs table (``live_view``), and ``shareplane.domain.forecast.start_forecast.forecast_starts``
(the same code `shareplane why` runs) predicts its start. Nothing it reads is in the future: run
times appear only once an attempt has ended, arrivals only once submitted (``tests/sim/test_eta.py``
changes the future and checks no prediction moves).

Start is the first dispatch (SCHEDULED); wait is start minus submission. Reported per policy
(``EtaResult.summary``), on the jobs that waited at least ``min_wait_seconds`` (10 minutes):

- ``median_abs_error_seconds``: median of |predicted p50 start - actual start| (null when more than
  half the jobs had no p50 within the horizon: the median error is then unbounded);
- ``coverage_p10_p90``: the share of actual starts within [p10, p90] (a bound the forecast left
  open, because too few runs started the job within the horizon, counts as "later than any");
- ``started_after_last_arrival``: how many of those jobs started after the extended trace's last
  submission, when the replay's queue only drains (0 expected): a forecast made live carries the
  recent arrivals forward and cannot know they stop, so such starts would measure the trace's end
  as much as the forecast; ``starts_in_appended_copies``: how many started after the original
  trace's last submission (what the backtest reported as started after the last arrival before the
  trace was extended); ``copies_appended`` and ``extension_bound_hit`` (``Extension``);
- ``baseline_median_abs_error_seconds``: the same error for the guess a person makes from the
  dashboard: the median wait of the same tier's jobs that started in the 24 h before the prediction
  (0 when none did). The trace has no requested time limits, so a Slurm-style ``squeue --start``
  estimate cannot be built from it; this is the simplest honest baseline it supports.

Anything tuned (``tune``: a scale on the p50 wait and conformal margins that widen the p10-p90
range, one per bound; which way of making the margins, ``choose_method``, inside the earlier half) is
chosen on the earlier half of the predicted jobs (by submission) and reported on the later half
(``later_half.tuned_on_earlier_half``); the untuned p50 and p10-p90 figures are reported beside it,
for the whole sample and both halves. The margins are split conformal prediction (conformalized
quantile regression): the Monte Carlo range holds the run-time and arrival draws' spread but not the
model's own error, which the earlier half measures. All are applied by the domain's
``Calibration``, the code every live path runs (``ForecastSettings.calibration``), and its shipped
values are the earlier half's choice on the predictions kept in tests/sim/data
(``tests/sim/test_eta.py`` checks the choice, ``tests/bench/test_eta_bench.py`` that this code
predicts them): what the later half measures is what ``shareplane why`` shows.
``later_half.online`` reports the alternative that needs no split: the margin adapted online from
outcomes known at each prediction (``online_margins``: adaptive conformal inference).

With ``workers`` > 1 the forecasts run in a process pool beside the replay (same predictions); each
process gets the trace's arrivals once, and each forecast sends only where its history's slice is.

Modules (this file imports none of them): ``prediction`` (one forecast, and which ones count),
``live_view`` (the model read as the control plane reads it), ``calibration`` (tuning the interval,
measuring error and coverage), ``backtest`` (the replay with its forecasts, and ``evaluate``).
"""
