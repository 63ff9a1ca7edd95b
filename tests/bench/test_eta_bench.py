"""Start forecast: the backtest on the Philly trace, its cost against a plain replay, and a Lambda's budget.

The claims (issue "Why is my job waiting"): on the jobs that waited at least 10 minutes, the
forecast's median absolute error is at most half the baseline's (the median wait of the same tier's
jobs that started in the 24 h before), and the actual start falls inside p10-p90 for 70-95% of them;
the backtest costs a stated multiple of a plain replay; 500 queued jobs x 100 runs fit well inside a
watch_jobs invocation (120 s).
"""

from __future__ import annotations

import json
import time
import tracemalloc
from pathlib import Path

import pytest
from gpusim.eta import backtest, evaluate
from gpusim.trace import NAMED_TRACES, load_trace
from gpusim.whatif import Policy, PolicyRun, build_scenario, load_whatif_config, run_policy
from shareplane.domain.start_forecast import ForecastSettings, forecast_starts

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "config" / "whatif.yaml"
SEED = 0
SAMPLE = 1000
LAMBDA_TIMEOUT_SECONDS = 120.0
DAY_25 = 25 * 86400.0


@pytest.fixture(scope="module")
def scenario():
    return build_scenario(load_trace(NAMED_TRACES["philly"]), load_whatif_config(CONFIG), None, SEED)


@pytest.mark.bench
def test_forecast_of_500_queued_jobs_x_100_runs_fits_a_lambda(scenario) -> None:
    # A live state from the replay 25 days in (thousands waiting), cut to its 500 oldest waiting jobs.
    from gpusim.eta import LiveView

    run = PolicyRun(scenario, Policy.FAIRSHARE, SEED)
    view = LiveView(run)
    run.start()
    run.model.run(until=DAY_25)
    probe = next(j for j in scenario.jobs if j.submit >= DAY_25)
    live, history = view.live_queue(probe, 86400.0)
    live = type(live)(**{**live.__dict__, "queued": tuple(sorted(live.queued, key=lambda j: j.order)[:500])})
    assert len(live.queued) == 500
    started = time.perf_counter()
    forecasts = forecast_starts(live, history, settings=ForecastSettings(samples=100))
    elapsed = time.perf_counter() - started
    # Memory, measured apart (tracing slows the run): the peak Python allocation during the forecast.
    tracemalloc.start()
    forecast_starts(live, history, settings=ForecastSettings(samples=100))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(
        f"\n500 queued x 100 runs: {elapsed:.2f} s, peak {peak / 2**20:.1f} MiB allocated "
        f"({len(live.running)} running, {len(history.finished)} finished runs in the history); "
        f"Lambda: {LAMBDA_TIMEOUT_SECONDS:.0f} s, 512 MB"
    )
    assert len(forecasts) == 500
    assert elapsed < LAMBDA_TIMEOUT_SECONDS / 4
    assert peak < 128 * 2**20


@pytest.mark.bench
def test_backtest_on_the_philly_trace(scenario) -> None:
    # Wall time and this process's CPU time: on a shared machine the CPU ratio is the steadier one.
    started, cpu = time.perf_counter(), time.process_time()
    plain = run_policy(scenario, Policy.FAIRSHARE, SEED)
    plain_seconds, plain_cpu = time.perf_counter() - started, time.process_time() - cpu
    started, cpu = time.perf_counter(), time.process_time()
    result = evaluate(backtest(scenario, Policy.FAIRSHARE, seed=SEED, sample=SAMPLE))
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu
    summary = result.summary()
    print(
        f"\nbacktest, fairshare, {len(scenario.jobs)} jobs, {summary['predictions']} predictions: "
        f"{seconds:.1f} s against a plain replay's {plain_seconds:.1f} s = x{seconds / plain_seconds:.1f}; "
        f"CPU {cpu_seconds:.1f} s against {plain_cpu:.1f} s = x{cpu_seconds / plain_cpu:.1f}"
    )
    print(json.dumps(summary, indent=1))
    assert result.result.finished == plain.finished == len(scenario.jobs)
    assert result.result.wait_seconds == plain.wait_seconds  # predicting changes nothing in the replay
    # The targets, on the later half, with what was tuned on the earlier half.
    later = summary["later_half"]
    tuned = later["tuned_on_earlier_half"]
    assert summary["predictions"] >= 1000
    assert tuned["median_abs_error_seconds"] <= later["baseline_median_abs_error_seconds"] / 2
    assert 0.70 <= tuned["coverage"] <= 0.95
