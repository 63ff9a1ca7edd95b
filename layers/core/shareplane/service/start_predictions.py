"""The watch's prediction step: each waiting GPU job's start forecast on the live twin, stored on its record.

Each watch tick, after the reconcile has brought the table up to Batch, the twin is read
(``live_twin.read_live_twin``, as `shareplane why`, `top` and `submit --dry-run` read it too) from a
bounded set of jobs so that one tick fits the Lambda (120 s, 512 MB): every active job of the GPU queue
(running jobs hold capacity, waiting ones are the queue) and the newest ``history_jobs`` finished ones
of the last 30 days (their run times; read from the ByStatus index's end, not a scan), and the finished
jobs' arrivals of those days from the arrival counts (``domain.arrival_counts``: one item an hour, where
reading each job would be tens of thousands of items a tick on a busy queue). The forecast runs
``samples`` times with a seed of the tick's time, so a redelivered tick forecasts the same. At most
``max_jobs`` jobs are its targets, one write each (``prediction_targets``): when more wait, the jobs
never predicted come first (a job submitted behind a deep queue is not left without a prediction until
it is among the oldest), then those whose stored prediction is the stalest (one BatchGetItem per 100
waiting jobs reads when each was last predicted).

Each prediction is stored with the tick's time as ``predictedAt``, conditionally: it replaces a stored
one only when its tick is later, so ticks handled out of order leave the newest tick's prediction.

This module is light: the forecast's modules load only when a job is waiting (inside
``predict_starts``), so a tick with an empty queue, and the handler's cold start, never load them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Protocol

from ..domain.config.shares import SharesConfig
from ..domain.errors import ConfigError
from ..domain.forecast.prediction import StartPrediction
from ..domain.jobs.arns import queue_name
from ..domain.jobs.lifecycle import JobState, JobStatus
from .ports import ArrivalCounts, JobStore, PredictionStore, QueueReader, RecentJobs

if TYPE_CHECKING:  # the twin loads the forecast: only the paths that forecast import it
    from ..domain.explain.record import JobRecord
    from .live_twin import LiveTwin

#: The statuses of a job still waiting for capacity (the forecast's queue).
WAITING = (JobStatus.SUBMITTED, JobStatus.PENDING, JobStatus.RUNNABLE)
#: The statuses of a job holding capacity now.
HOLDING = (JobStatus.SCHEDULED, JobStatus.STARTING, JobStatus.RUNNING)
#: The statuses whose jobs' run times are the forecast's history.
FINISHED = (JobStatus.SUCCEEDED, JobStatus.FAILED)
#: How far back finished jobs and arrivals are read: the forecast's arrival lookback
#: (``ForecastSettings``, not imported here: this module stays light); run times count for 14 days
#: of it (``wait_explain.HISTORY_SECONDS``).
READ_SECONDS = 30 * 86400


@dataclass(frozen=True)
class ForecastLimits:
    """How much one watch tick forecasts (FORECAST_MAX_JOBS, FORECAST_SAMPLES, FORECAST_HISTORY_JOBS)."""

    #: The longest-waiting jobs predicted each tick (the rest keep their stored prediction).
    max_jobs: int = 500
    #: Forward runs of the twin per tick (the p10-p90 range's resolution).
    samples: int = 100
    #: Finished jobs (newest first) whose run times are read; each costs one history query.
    history_jobs: int = 500

    def __post_init__(self) -> None:
        for name, value, top in (
            ("FORECAST_MAX_JOBS", self.max_jobs, 5000),
            ("FORECAST_SAMPLES", self.samples, 1000),
            ("FORECAST_HISTORY_JOBS", self.history_jobs, 5000),
        ):
            if not 0 <= value <= top:
                raise ConfigError(name, f"is {value}", f"set it within 0..{top} (0 turns predictions off)")

    @property
    def enabled(self) -> bool:
        """Whether the watch predicts at all (any limit at 0 turns it off)."""
        return self.max_jobs > 0 and self.samples > 0


class ForecastStore(JobStore, PredictionStore, ArrivalCounts, Protocol):
    """The jobs table as the prediction step reads and writes it."""


@dataclass(frozen=True)
class ForecastPorts:
    """What the prediction step talks to; built by bootstrap (``Root.forecast_ports``)."""

    store: ForecastStore
    #: Finished jobs by status and creation time (the ByStatus index).
    recent: RecentJobs
    batch: QueueReader
    config: SharesConfig
    #: The GPU queue's name (the queue the twin models).
    queue: str
    limits: ForecastLimits = field(default_factory=ForecastLimits)


def prediction_of(
    low: float | None,
    median: float | None,
    high: float | None,
    *,
    started_fraction: float,
    samples: int,
    now: float,
) -> StartPrediction:
    """A forecast's quantiles (epoch seconds) as the prediction stored at ``now``'s tick."""

    def ms(at: float | None) -> int | None:
        return None if at is None or math.isinf(at) else int(round(at * 1000))

    return StartPrediction(
        predicted_at=int(round(now * 1000)),
        p10=ms(low),
        p50=ms(median),
        p90=ms(high),
        started_fraction=started_fraction,
        samples=samples,
    )


def prediction_targets(waiting: Sequence[str], last_predicted: Mapping[str, int], cap: int) -> list[str]:
    """The jobs a tick predicts, at most ``cap`` of ``waiting`` (longest-waiting first).

    First the jobs never predicted, longest-waiting first, so a job that just arrived behind a deep
    queue has a prediction at the next tick; then the stalest predictions (earliest ``predictedAt``,
    ``last_predicted``'s epoch ms), so over successive ticks every waiting job's is refreshed.
    """
    position = {name: n for n, name in enumerate(waiting)}
    ordered = sorted(
        waiting, key=lambda name: (name in last_predicted, last_predicted.get(name, 0), position[name])
    )
    return ordered[:cap]


def active_jobs(recent: RecentJobs) -> dict[JobStatus, list[JobState]]:
    """Every job holding capacity or waiting, by status, from the ByStatus index (one query each)."""
    return {status: list(recent.jobs_in_status(status.value)) for status in (*HOLDING, *WAITING)}


def bounded_twin(
    ports: ForecastPorts,
    active: Mapping[JobStatus, Sequence[JobState]],
    now: float,
    newest: Sequence[JobState] = (),
    name_of: Callable[[JobRecord], str] | None = None,
) -> LiveTwin:
    """The twin as the watch (and the submit receipt, and `shareplane why`, `top` and `submit --dry-run`)
    read it: bounded, to fit a Lambda.

    Every active job (``newest``, jobs just written, in place of any listed copy) and the newest
    ``history_jobs`` finished ones created in the last ``READ_SECONDS``, read whole (their histories
    give run times and usage); the finished jobs' arrivals come from the arrival counts (one item an
    hour), not from their records: a busy queue finishes tens of thousands of jobs in the window.
    The arrivals are complete since the table's first job (the ByStatus index's first key of each
    finished status, or an older active job), which may be long before the window. A job that
    finishes between the watch's read of the active jobs and this read, and is not among the
    newest, is read as active this tick and counted twice (one of the window's thousands).

    ``name_of`` names each job in the forecast (default: its ARN, as the watch keys its predictions;
    the CLI names them as `why` shows them).
    """
    from ..domain.explain.wait import counted_arrivals, job_arn_label
    from ..domain.forecast.arrivals import hour_of
    from .live_twin import TwinSources, read_live_twin

    since_ms = int((now - READ_SECONDS) * 1000)
    fresh = {s.job_arn for s in newest}
    cap = ports.limits.history_jobs
    finished = sorted(
        (
            job
            for status in FINISHED
            for job in ports.recent.newest_in_status(status.value, since_ms, cap)
            if job.job_arn not in fresh
        ),
        key=lambda j: (j.created_at or 0, j.job_arn),
        reverse=True,
    )[:cap]
    # Past the cap, the finished jobs created before the oldest one read are left out with their runs:
    # the run-time curves count the history as complete only from then.
    complete_since = None
    if len(finished) == cap and finished:
        complete_since = min(j.created_at or 0 for j in finished) / 1000.0
    # A job that finished between the two reads and is among the newest is listed in both: its
    # finished state stands (an older one is read as active this tick, and counted twice).
    done = fresh | {j.job_arn for j in finished}
    unfinished = [
        s for status in (*HOLDING, *WAITING) for s in active.get(status, ()) if s.job_arn not in done
    ]
    whole = [*unfinished, *finished, *newest]
    firsts = [ms for status in FINISHED if (ms := ports.recent.oldest_created_ms(status.value)) is not None]
    firsts += [s.created_at for s in whole if s.created_at]
    # Counted arrivals sit at their hour's start: observation starts at the first job's hour.
    since = hour_of(min(firsts)) / 1000.0 if firsts else now
    counts = ports.store.arrival_counts(queue_name(ports.queue), since_ms)
    twin = read_live_twin(
        TwinSources(ports.store, ports.batch, ports.config),
        ports.queue,
        now,
        states=whole,
        finished_arrivals=counted_arrivals(counts),
        arrivals_since=since,
        name_of=name_of or job_arn_label,
        complete_since=complete_since,
    )
    return replace(twin, counts_hour_ms=max((key.hour_ms for key, _ in counts), default=None))


def predict_starts(
    ports: ForecastPorts, active: Mapping[JobStatus, Sequence[JobState]], now: float
) -> dict[str, StartPrediction]:
    """Forecast the GPU queue's waiting jobs at ``now`` (the tick's time); job ARN -> its prediction.

    Every prediction is offered to the store; one from a later tick already stored stays (see the
    module docstring). What is returned is this tick's forecast, stored or not.
    """
    queue = queue_name(ports.queue)
    waiting = [j for s in WAITING for j in active.get(s, ()) if queue_name(j.job_queue) == queue]
    if not waiting or not ports.limits.enabled:
        return {}
    # The forecast loads here, on the one path that runs it.
    from ..domain.forecast.start_forecast import ForecastSettings, forecast_starts

    twin = bounded_twin(ports, active, now)
    queued = sorted(twin.live.queued, key=lambda j: (j.submitted_at, j.order))
    names = [j.name for j in queued]
    # Over the cap, what each job was last predicted decides which ones this tick predicts.
    last = ports.store.prediction_times(names) if len(names) > ports.limits.max_jobs else {}
    targets = prediction_targets(names, last, ports.limits.max_jobs)
    if not targets:
        return {}
    forecasts = forecast_starts(
        twin.live,
        twin.history,
        targets=targets,
        settings=ForecastSettings(samples=ports.limits.samples),
        seed=int(round(now * 1000)),
    )
    return {
        arn: prediction_of(
            f.low, f.median, f.high, started_fraction=f.started_fraction, samples=f.samples, now=now
        )
        for arn, f in forecasts.items()
    }
