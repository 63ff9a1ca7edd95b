"""The live twin: the GPU queue's state read from Batch and the jobs table, ready for the forecast.

Read-only: GetJobQueueSnapshot, DescribeJobQueues, DescribeServiceEnvironments,
DescribeSchedulingPolicies (or ListQuotaShares) and the jobs table. `shareplane why`, `top` and
`submit --dry-run` read the twin the watch_jobs Lambda predicts with
(``shareplane.service.start_predictions.bounded_twin``: every active job, the newest finished ones and
the arrival counts, never the whole table) and say how fresh those inputs are (``Freshness``); the
forecast itself is ``shareplane.domain.forecast.start_forecast`` (pure), the code the backtest measures.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import cached_property
from typing import Any

from shareplane.domain.config.shares import SharesConfig
from shareplane.domain.explain.durations import duration_text
from shareplane.domain.explain.record import JobRecord, recorded_now
from shareplane.domain.explain.wait import (
    HOLDING,
    Finding,
    HeldRun,
    InstanceTypes,
    QueuePolicy,
    WaitExplanation,
    dispatch_order,
    explain_wait,
    instance_types_for,
    job_label,
    requested_resources,
    time_limit_ends_at,
)
from shareplane.domain.forecast.start_forecast import (
    ForecastSettings,
    History,
    LiveQueue,
    QueuedJob,
    StartForecast,
    forecast_starts,
)
from shareplane.domain.jobs.arns import queue_name
from shareplane.domain.jobs.lifecycle import JobState
from shareplane.domain.jobs.service_job_request import ServiceJobRequest
from shareplane.service.queries import job_record_of
from shareplane.service.start_predictions import FINISHED, ForecastPorts, active_jobs, bounded_twin

from .aws import Target


@dataclass(frozen=True)
class Freshness:
    """How fresh the twin's inputs are: what `why`, `top` and `submit --dry-run` say beside their answer."""

    #: The twin's now (epoch s).
    now: float
    #: The newest time any record read holds (epoch s; None: no job read).
    newest_record: float | None
    #: The start of the newest hour of arrival counts read (epoch s; None: no finished job counted).
    arrivals_hour: float | None
    #: Finished jobs read whole (their run times), and the most the twin reads (FORECAST_HISTORY_JOBS).
    finished_read: int
    finished_cap: int

    def text(self) -> str:
        """One line for people."""
        return inputs_text(self.as_json())

    def as_json(self) -> dict[str, Any]:
        """The same as JSON fields."""
        age = None if self.newest_record is None else max(0, round(self.now - self.newest_record))
        return {
            "at": when(self.now),
            "newestRecordAt": when(self.newest_record),
            "newestRecordAgeSeconds": age,
            "arrivalCountsHour": when(self.arrivals_hour),
            "finishedJobsRead": self.finished_read,
            "finishedJobsCap": self.finished_cap,
        }


@dataclass(frozen=True)
class Twin:
    """The GPU queue now: its records, Batch's snapshot, and the forecast's input built from them."""

    queue: str
    now: float
    records: Sequence[JobRecord]
    snapshot: Mapping[str, Any]
    policy: QueuePolicy
    live: LiveQueue
    history: History
    config: SharesConfig
    #: A job's SubmitServiceJob request as the submit path stored it, by job ARN (None: not stored).
    request_of: Callable[[str], ServiceJobRequest | None] = field(default=lambda _arn: None, repr=False)
    #: How fresh the inputs are (None: a twin built by hand).
    freshness: Freshness | None = None
    #: The records of a job (name, id or ARN) the twin did not read: a finished one older than those it
    #: read whole (None: nothing beyond ``records``).
    look_up: Callable[[str], Sequence[JobRecord]] | None = field(default=None, repr=False)

    def records_named(self, job: str) -> Sequence[JobRecord]:
        """The records of the queue's jobs named ``job`` (name, id or ARN): those the twin read, else
        the table's own (``look_up``)."""
        matches = [r for r in self.records if job in (r.state.job_name, r.state.job_id, r.job_arn)]
        if matches or self.look_up is None:
            return matches
        return [r for r in self.look_up(job) if queue_name(r.state.job_queue) == queue_name(self.queue)]

    def forecast(
        self,
        names: set[str] | None = None,
        *,
        live: LiveQueue | None = None,
        samples: int = 100,
        seed: int = 0,
    ) -> dict[str, StartForecast]:
        """Start forecasts for ``names`` (default: every waiting job)."""
        return forecast_starts(
            live or self.live,
            self.history,
            targets=names,
            settings=ForecastSettings(samples=samples),
            seed=seed,
        )

    def tier_of_share(self) -> dict[str, str]:
        """Each share identifier's tier (team_tier layout), for grouping the capacity held."""
        out: dict[str, str] = {}
        for share in {s.name for s in self.live.shares}:
            tier = self.config.tier_for_share(share)
            if tier is not None:
                out[share] = tier.value
        return out

    def tier_priorities(self) -> dict[str, int]:
        """Each tier's schedulingPriority."""
        return {t.value: c.scheduling_priority for t, c in self.config.tiers.items()}

    def reclaim_due_at(self, record: JobRecord) -> float | None:
        """When the job's tier may reclaim capacity for it (None: its tier never reclaims)."""
        tier = self.config.job_tier(record.state.share, record.state.scheduling_priority)
        tier_config = self.config.tiers.get(tier) if tier is not None else None
        after = tier_config.reclaim_after_seconds if tier_config is not None else None
        created = record.created_s
        return None if after is None or created is None else created + after

    def explain(self, record: JobRecord) -> WaitExplanation:
        """What holds the record's waiting job back and what would let it start sooner."""
        return explain_wait(
            self.live,
            record.name,
            tier_of=self.tier_of_share(),
            tier_priorities=self.tier_priorities(),
            reclaim_due_at=self.reclaim_due_at(record),
            held_runs=self.held_runs,
            instance_types=self.instance_types(record),
        )

    @cached_property
    def running_records(self) -> dict[str, JobRecord]:
        """The records of the jobs holding capacity now, by their name in the live queue."""
        holding = {r.name for r in self.live.running}
        return {r.name: r for r in self.records if r.state.status in HOLDING and r.name in holding}

    @cached_property
    def held_runs(self) -> dict[str, HeldRun]:
        """Each running job's instance type and when its time limit ends it (its stored request's)."""
        runs: dict[str, HeldRun] = {}
        for name, record in self.running_records.items():
            kind, _count, limit = requested_resources(self.request_of(record.job_arn))
            runs[name] = HeldRun(kind or record.instance_type, time_limit_ends_at(record, limit))
        return runs

    def instance_types(self, record: JobRecord) -> InstanceTypes | None:
        """The waiting job's instance type (its stored request's, else its record's) and its team's others."""
        kind, _count, _limit = requested_resources(self.request_of(record.job_arn))
        return self.instance_types_of(record.share, kind or record.instance_type)

    def instance_types_of(self, share: str, requested: str | None) -> InstanceTypes | None:
        """A job of ``share`` on ``requested``: the GPU types its team may use, with their room now."""
        if requested is None:
            return None
        running = self.running_records.values()
        known = {r.job_arn: self.held_runs[name].instance_type for name, r in self.running_records.items()}
        return instance_types_for(self.config, share, requested, running, known)

    def heads(self, count: int) -> list[Head]:
        """The first ``count`` waiting jobs: Batch's order for those GetJobQueueSnapshot lists, the twin's
        dispatch order for the rest (the snapshot lists at most 100)."""
        by_arn = {r.job_arn: r for r in self.records}
        by_name = {r.name: r for r in self.records}
        waiting = {j.name for j in self.live.queued}
        heads: list[Head] = []
        seen: set[str] = set()
        for entry in _front_of_queue(self.snapshot):
            record = by_arn.get(entry.get("jobArn") or "")
            if record is None or record.name not in waiting or record.name in seen:
                continue
            at = entry.get("earliestTimeAtPosition")
            heads.append(Head(record, "GetJobQueueSnapshot", None if at is None else at / 1000.0))
            seen.add(record.name)
        for job in dispatch_order(self.live):
            if job.name not in seen and job.name in by_name:
                heads.append(Head(by_name[job.name], "twin", None))
                seen.add(job.name)
        return heads[:count]

    def with_jobs(self, jobs: Sequence[QueuedJob]) -> LiveQueue:
        """The live queue with ``jobs`` waiting too, as its newest arrivals (a dry run's submission)."""
        first = max((j.order for j in self.live.queued), default=0) + 1
        added = tuple(replace(job, order=first + n) for n, job in enumerate(jobs))
        return replace(self.live, queued=(*self.live.queued, *added))


@dataclass(frozen=True)
class Head:
    """A waiting job near the front of the queue, and who placed it there."""

    record: JobRecord
    #: ``GetJobQueueSnapshot`` (Batch's own order) or ``twin`` (past the jobs Batch lists).
    placed_by: str
    #: earliestTimeAtPosition (epoch s) when Batch placed it.
    at_position_since: float | None


def load_twin(
    target: Target, config: SharesConfig, *, queue: str | None = None, now: float | None = None
) -> Twin:
    """Read the GPU queue's live state (no writes) and build the forecast's input from it, at ``now``
    (epoch s; default: the target's clock now): the watch's bounded twin (``read_twin``)."""
    root = target.jobs_root(config=config)
    ports = replace(root.forecast_ports, queue=queue or config.gpu_queue_name())
    clock = target.now() if now is None else now

    def snapshot_of(job_queue: str) -> Mapping[str, Any]:
        # The whole answer: `why` reads its frontOfQueue (the adapter's QueueUsage keeps only utilization).
        return dict(root.batch.get_job_queue_snapshot(jobQueue=job_queue))

    return read_twin(ports, snapshot_of, clock)


def read_twin(ports: ForecastPorts, snapshot_of: Callable[[str], Mapping[str, Any]], clock: float) -> Twin:
    """The twin of ``ports.queue`` as the watch reads it (``bounded_twin``, with the watch's limits): every
    active job, the newest finished ones whole and the finished jobs' arrival counts, never every job
    of the table; and Batch's snapshot of the queue (``snapshot_of``)."""
    active = active_jobs(ports.recent)
    now = recorded_now(clock, [s for states in active.values() for s in states])
    live_twin = bounded_twin(ports, active, now, name_of=job_label)
    snapshot = snapshot_of(ports.queue)
    records = live_twin.records
    newest = max((r.newest_ms() for r in records), default=0)
    freshness = Freshness(
        now,
        newest / 1000.0 if newest else None,
        live_twin.counts_hour_ms / 1000.0 if live_twin.counts_hour_ms is not None else None,
        sum(1 for r in records if r.state.status in FINISHED),
        ports.limits.history_jobs,
    )
    store = ports.store

    def request_of(job_arn: str) -> ServiceJobRequest | None:
        # Read only for the jobs an explanation asks about (the waiting job and those running).
        payload = store.load_payload(job_arn) if job_arn else None
        return payload.request if payload else None

    def look_up(job: str) -> Sequence[JobRecord]:
        return [job_record_of(store, s, ports.config) for s in _states_named(store, job, records)]

    return Twin(
        ports.queue,
        now,
        records,
        snapshot,
        live_twin.policy,
        in_batchs_order(live_twin.live, snapshot, records),
        live_twin.history,
        ports.config,
        request_of,
        freshness,
        look_up,
    )


def inputs_text(inputs: Mapping[str, Any]) -> str:
    """A twin's freshness (``Freshness.as_json``) as one line for people."""
    age = inputs.get("newestRecordAgeSeconds")
    newest = "no job recorded" if age is None else f"newest record {duration_text(age)} old"
    hour = inputs.get("arrivalCountsHour")
    return (
        f"Inputs as of {inputs['at']}: {newest}; arrival counts to "
        f"{'none' if hour is None else 'the hour of ' + hour}; {inputs['finishedJobsRead']} finished "
        f"job(s) read whole (at most {inputs['finishedJobsCap']})."
    )


def _states_named(store: Any, job: str, read: Sequence[JobRecord]) -> list[JobState]:
    """The states of the jobs ``job`` names that the twin did not read: by ARN one item, by id the ARN
    the queue's jobs share; by name (no index has names) every job of the table."""
    state = store.load_job(job) if job.startswith("arn:") else None
    if state is None and "/" not in job and read:
        prefix = read[0].job_arn.rpartition("/")[0]
        state = store.load_job(f"{prefix}/{job}")
    if state is not None:
        return [state]
    return [s for s in store.jobs() if job in (s.job_name, s.job_id, s.job_arn)]


def in_batchs_order(live: LiveQueue, snapshot: Mapping[str, Any], records: Sequence[JobRecord]) -> LiveQueue:
    """The live queue with the jobs GetJobQueueSnapshot lists ranked in Batch's order among themselves.

    The jobs table orders waiting jobs by createdAt, and jobs submitted in the same millisecond (one
    dropped spec) only by id; Batch knows its own order. The listed jobs keep the ranks they held
    between them, handed out in Batch's order; jobs past the snapshot keep theirs.
    """
    name_of = {r.job_arn: r.name for r in records}
    waiting = {j.name: j for j in live.queued}
    listed: list[str] = []
    for entry in _front_of_queue(snapshot):
        name = name_of.get(entry.get("jobArn") or "")
        if name in waiting and name not in listed:
            listed.append(name)
    ranks = dict(zip(listed, sorted(waiting[n].order for n in listed), strict=True))
    if all(waiting[n].order == rank for n, rank in ranks.items()):
        return live
    return replace(live, queued=tuple(replace(j, order=ranks.get(j.name, j.order)) for j in live.queued))


def _front_of_queue(snapshot: Mapping[str, Any]) -> Sequence[Mapping[str, Any]]:
    """The jobs GetJobQueueSnapshot lists at the front of the queue, in Batch's order."""
    front: Mapping[str, Any] = snapshot.get("frontOfQueue") or {}
    jobs: Sequence[Mapping[str, Any]] = front.get("jobs") or ()
    return jobs


def when(epoch: float | None) -> str | None:
    """Epoch seconds as an ISO UTC timestamp (None stays None)."""
    return None if epoch is None else datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds")


def whole_waits(forecast: StartForecast, submitted_at: float) -> list[int | None]:
    """The forecast's p10/p50/p90 waits from submission in whole seconds (None: not within the horizon)."""
    return [None if wait is None else round(wait) for wait in forecast.waits_from(submitted_at)]


def forecast_json(forecast: StartForecast, submitted_at: float) -> dict[str, Any]:
    """A forecast as JSON: the p10/p50/p90 starts and the waits they mean from submission."""
    waits = whole_waits(forecast, submitted_at)
    return {
        "startP10": when(forecast.low),
        "startP50": when(forecast.median),
        "startP90": when(forecast.high),
        "waitSecondsP10": waits[0],
        "waitSecondsP50": waits[1],
        "waitSecondsP90": waits[2],
        "startedFraction": forecast.started_fraction,
        "samples": forecast.samples,
    }


def findings_json(findings: Sequence[Finding]) -> list[dict[str, str]]:
    """Wait findings (what holds a job back, what would start it sooner) as JSON."""
    return [{"code": f.code, "text": f.text} for f in findings]
