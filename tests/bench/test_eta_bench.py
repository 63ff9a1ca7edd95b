"""Start forecast: the backtest on the Philly trace, its cost against a plain replay, and a Lambda's budget.

The claims (issue "Why is my job waiting"): on the jobs that waited at least 10 minutes, the
forecast's median absolute error is at most half the baseline's (the median wait of the same tier's
jobs that started in the 24 h before), and the actual start falls inside the shown (calibrated)
p10-p90 for 70-95% of them, both on the later half, and the earlier half's untuned error is at most
half its baseline's too; the shipped calibration is the one chosen on the earlier half, and the
predictions it was chosen on (committed, so the regular tests check the choice) are this code's; the
world keeps submitting (the trace is replayed followed by copies of itself) and every measured job
starts before the extended trace's last submission; the backtest costs at most x150 a plain replay
of the same extended trace (wall, 2 forecast processes); 500 queued jobs x 100 runs
fit well inside a watch_jobs invocation (120 s). The error and coverage targets are checked again on
a second seed nothing was chosen on.
"""

from __future__ import annotations

import json
import time
import tracemalloc
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from gpusim.forecast.backtest import EtaResult, backtest, evaluate, load_extension, load_predictions
from gpusim.trace import NAMED_TRACES, load_trace
from gpusim.whatif.config import Policy, load_whatif_config
from gpusim.whatif.run import PolicyRun, run_policy
from gpusim.whatif.scenario import build_scenario, extend_scenario
from shareplane.domain.forecast.start_forecast import ForecastSettings, forecast_starts
from shareplane.domain.jobs.lifecycle import CapacityUsage, HistoryEntry, JobState, JobStatus, ObservationKind
from shareplane.service.start_predictions import ForecastPorts, predict_starts
from shareplane_cli.config_file import load_config

from tests.fakes.job_store import FakeJobStore
from tests.fakes.shares_batch import FakeSharesBatch
from tests.sim.traces import PHILLY_PREDICTIONS, PHILLY_PREDICTIONS_SEED1

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
    from gpusim.forecast.live_view import LiveView

    run = PolicyRun(scenario, Policy.FAIRSHARE, SEED)
    view = LiveView(run)
    run.start()
    run.model.run(until=DAY_25)
    probe = next(j for j in scenario.jobs if j.submit >= DAY_25)
    live, history = view.live_queue(probe, ForecastSettings().arrival_lookback_seconds)
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


@dataclass
class CountingStore(FakeJobStore):
    """The jobs table in memory, counting the requests the prediction step would make of DynamoDB."""

    requests: Counter[str] = field(default_factory=Counter)

    def job_history(self, job_arn: str) -> Sequence[HistoryEntry]:
        self.requests["Query (history)"] += 1
        return super().job_history(job_arn)

    def load_training_job(self, training_job_arn: str) -> Any:
        self.requests["GetItem (training job)"] += 1
        return super().load_training_job(training_job_arn)

    def jobs_in_status(self, status: str, created_after_ms: int | None = None) -> list[JobState]:
        self.requests["Query (ByStatus)"] += 1
        return super().jobs_in_status(status, created_after_ms)

    def newest_in_status(self, status: str, created_after_ms: int, limit: int) -> list[JobState]:
        self.requests["Query (ByStatus, newest)"] += 1
        return super().newest_in_status(status, created_after_ms, limit)

    def arrival_counts(self, queue: str, since_ms: int) -> list[tuple[Any, int]]:
        self.requests["Query (arrival counts)"] += 1
        return super().arrival_counts(queue, since_ms)

    def save_prediction(self, job_arn: str, prediction: Any) -> bool:
        self.requests["PutItem (prediction)"] += 1
        return super().save_prediction(job_arn, prediction)


def _entry(status: JobStatus, at: float, n: int) -> HistoryEntry:
    at_ms = int(at * 1000)
    return HistoryEntry(f"{at_ms:013d}#{n}", status, at_ms, None, ObservationKind.STATE_CHANGE, f"d{n}")


def _put(
    store: FakeJobStore,
    name: str,
    status: JobStatus,
    share: str,
    instances: int,
    created: float,
    *,
    priority: int = 0,
    held: float | None = None,
    ended: float | None = None,
) -> None:
    """One job of the live state as the jobs table holds it: its state and the history of its holds."""
    state = JobState(
        job_arn=f"arn:aws:batch:us-east-1:123456789012:service-job/{name}",
        status=status,
        seq="a",
        job_id=name,
        job_name=name,
        job_queue="search-p4d-queue",
        share_identifier=share,
        scheduling_priority=priority,
        created_at=int(created * 1000),
        stopped_at=int(ended * 1000) if ended is not None else None,
        capacity_usage=(CapacityUsage("NUM_INSTANCES", instances),),
    )
    history = [_entry(JobStatus.SUBMITTED, created, 0), _entry(JobStatus.RUNNABLE, created, 1)]
    if held is not None:
        history.append(_entry(JobStatus.SCHEDULED, held, 2))
    if ended is not None:
        history.append(_entry(JobStatus.SUCCEEDED, ended, 3))
    store.put_states(state)
    store.histories[state.job_arn] = {e.key: e for e in history}


def forecast_ports(store: FakeJobStore, live: Any) -> ForecastPorts:
    """The forecast's ports over ``store``, with Batch showing the live state's fair-share policy."""
    policy = {
        "arn": "arn:aws:batch:us-east-1:123456789012:scheduling-policy/philly",
        "name": "philly",
        "fairsharePolicy": {
            "shareDecaySeconds": int(live.decay_seconds),
            "computeReservation": live.compute_reservation,
            "shareDistribution": [
                {"shareIdentifier": s.name, "weightFactor": s.weight_factor} for s in live.shares
            ],
        },
    }
    return ForecastPorts(
        store=store,
        recent=store,
        batch=FakeSharesBatch(policy=policy, capacity=live.capacity),
        config=load_config(REPO / "config" / "shares.yaml"),
        queue="search-p4d-queue",
    )


@pytest.mark.bench
def test_the_watch_prediction_step_fits_a_lambda(scenario) -> None:
    """The Lambda's own path (``predict_starts``, then one conditional write each) on the live state 25
    days into the Philly replay as the jobs table would hold it: every waiting and running job, the
    newest 500 finished runs; the 500 longest-waiting jobs predicted (FORECAST_MAX_JOBS) with 100 runs."""
    from gpusim.forecast.live_view import LiveView

    run = PolicyRun(scenario, Policy.FAIRSHARE, SEED)
    view = LiveView(run)
    run.start()
    run.model.run(until=DAY_25)
    probe = next(j for j in scenario.jobs if j.submit >= DAY_25)
    live, history = view.live_queue(probe, 86400.0)
    now = live.now
    store = CountingStore()
    for job in live.queued:
        _put(
            store,
            f"q-{job.order}",
            JobStatus.RUNNABLE,
            job.share,
            job.instances,
            job.submitted_at,
            priority=job.priority,
        )
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
    # The newest finished runs' lengths, ended a minute apart back from now, each after a day's wait
    # (so the arrival rate comes from the waiting and running jobs' own submission times).
    for n, done in enumerate(reversed(history.finished[-600:])):
        ended = now - 60.0 * (n + 1)
        _put(
            store,
            f"f-{n}",
            JobStatus.SUCCEEDED,
            done.share,
            1,
            ended - done.held_seconds - 86400,
            held=ended - done.held_seconds,
            ended=ended,
        )
    ports = forecast_ports(store, live)
    active = {status: store.jobs(status.value) for status in JobStatus}
    started = time.perf_counter()
    predictions = predict_starts(ports, active, now)
    stored = sum(store.save_prediction(arn, p) for arn, p in predictions.items())
    elapsed = time.perf_counter() - started
    requests = dict(store.requests)
    tracemalloc.start()
    predict_starts(ports, active, now + 300)  # a later tick's, for its memory (tracing slows it)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(
        f"\nwatch prediction step: {len(live.queued)} waiting, {len(live.running)} running, "
        f"{ports.limits.history_jobs} finished read; {ports.limits.max_jobs} predicted x "
        f"{ports.limits.samples} runs: {elapsed:.2f} s, peak {peak / 2**20:.1f} MiB allocated; "
        f"{stored} stored; requests {requests}; Lambda: {LAMBDA_TIMEOUT_SECONDS:.0f} s, 512 MB"
    )
    assert stored == ports.limits.max_jobs
    # Waiting jobs that never held capacity have no hold to read: only the others' histories are queried.
    assert requests["Query (history)"] == len(live.running) + ports.limits.history_jobs
    # The step's own work; the table's requests above (a few ms each) come on top of it.
    assert elapsed < LAMBDA_TIMEOUT_SECONDS / 2
    assert peak < 256 * 2**20


def _assert_predicts(result: EtaResult, path: Path) -> None:
    """The backtest made exactly the committed predictions, each job's actual start in the same
    extended replay (the trace followed by as many copies)."""
    assert load_extension(path, "fairshare") == result.extension
    assert result.predictions == load_predictions(path)["fairshare"]


def _assert_targets(summary: dict[str, Any]) -> None:
    """The issue's targets: on the later half, the median absolute error at most half the baseline's
    and the p10-p90 range chosen on the earlier half covering 0.70-0.95; on the earlier half, untuned,
    the error at most half its baseline's too."""
    later, earlier = summary["later_half"], summary["earlier_half"]
    tuned = later["tuned_on_earlier_half"]
    assert tuned["median_abs_error_seconds"] <= later["baseline_median_abs_error_seconds"] / 2
    assert 0.70 <= tuned["coverage"] <= 0.95
    assert earlier["median_abs_error_seconds"] <= earlier["baseline_median_abs_error_seconds"] / 2


#: The backtest's cost target, set before the run: 1,000 predictions in about half an hour on 2 cores
#: for the Philly trace (a plain replay takes ~13 s), so a 30k-job trace stays practical: at most
#: x150 a plain replay of the same trace and policy in wall time, with the forecasts in 2 processes.
COST_TARGET_WALL_RATIO = 150.0
WORKERS = 2


@pytest.mark.bench
def test_backtest_on_the_philly_trace(scenario) -> None:
    # Wall time and CPU time (this process's and the forecast workers'): on a shared machine the CPU
    # ratio is the steadier one; the target is on wall time, what a user waits for.
    started, cpu = time.perf_counter(), time.process_time()
    result = evaluate(backtest(scenario, Policy.FAIRSHARE, seed=SEED, sample=SAMPLE, workers=WORKERS))
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu
    # The workers are the pool's processes, not this one's children: each reports its own CPU time.
    cpu_seconds += result.worker_cpu_seconds
    # The plain replay is of the same extended trace (the trace and the copies the backtest appended).
    extended = extend_scenario(scenario, result.extension.copies)
    started, cpu = time.perf_counter(), time.process_time()
    plain = run_policy(extended, Policy.FAIRSHARE, SEED)
    plain_seconds, plain_cpu = time.perf_counter() - started, time.process_time() - cpu
    summary = result.summary()
    print(
        f"\nbacktest, fairshare, {len(scenario.jobs)} jobs and {result.extension.copies} copies, "
        f"{summary['predictions']} predictions, {WORKERS} forecast processes: {seconds:.1f} s against "
        f"a plain replay's {plain_seconds:.1f} s = x{seconds / plain_seconds:.1f} "
        f"(target <= x{COST_TARGET_WALL_RATIO:.0f}); CPU {cpu_seconds:.1f} s against {plain_cpu:.1f} s "
        f"= x{cpu_seconds / plain_cpu:.1f}; started after the last arrival "
        f"{summary['started_after_last_arrival']}, in the appended copies "
        f"{summary['starts_in_appended_copies']}"
    )
    print(json.dumps(summary, indent=1))
    assert result.result.finished == plain.finished == len(extended.jobs)
    assert result.result.wait_seconds == plain.wait_seconds  # predicting changes nothing in the replay
    # Every measured job started while the world was still submitting.
    assert summary["started_after_last_arrival"] == 0 and not summary["extension_bound_hit"]
    # What users are shown is what was measured: the shipped calibration is the earlier half's choice,
    # and these are the predictions tests/sim/test_eta.py checks that choice on.
    assert ForecastSettings().calibration == result.calibration.shown
    _assert_predicts(result, PHILLY_PREDICTIONS)
    assert summary["predictions"] >= 1000
    assert seconds / plain_seconds <= COST_TARGET_WALL_RATIO
    # The targets, on the later half with what was tuned on the earlier half, and on the earlier half.
    _assert_targets(summary)


@pytest.mark.bench
def test_the_backtests_targets_hold_on_another_seed() -> None:
    """Seed 1: the scenario's synthetic attributes (teams, tiers), the sample and the draws change;
    nothing was chosen on it. Its predictions are committed, so the regular tests check the method
    choice and the coverage on them; this checks the code predicts them, and the targets."""
    seed = 1
    scenario = build_scenario(load_trace(NAMED_TRACES["philly"]), load_whatif_config(CONFIG), None, seed)
    result = evaluate(backtest(scenario, Policy.FAIRSHARE, seed=seed, sample=SAMPLE, workers=WORKERS))
    summary = result.summary()
    print(json.dumps(summary, indent=1))
    assert summary["started_after_last_arrival"] == 0 and not summary["extension_bound_hit"]
    _assert_predicts(result, PHILLY_PREDICTIONS_SEED1)
    # Measured at the extended replay: coverage 0.8092; the error 23,830.5 s against the baseline's
    # 92,530.8 s on the later half (0.2575x) and 87,439.2 s against 337,900.8 s on the earlier
    # (0.2588x) (docs/design/start-forecast.md).
    _assert_targets(summary)
