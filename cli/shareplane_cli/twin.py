"""The live twin: the GPU queue's state read from Batch and the jobs table, ready for the forecast.

Read-only: GetJobQueueSnapshot, DescribeJobQueues, DescribeServiceEnvironments,
DescribeSchedulingPolicies (or ListQuotaShares) and the jobs table. `shareplane why` and `shareplane
submit --dry-run` build it with the core library's builder (``shareplane.service.live_twin``, which the
watch_jobs Lambda predicts with too); the forecast itself is ``shareplane.domain.start_forecast``
(pure), the code the backtest measures.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from shareplane.domain.config import SharesConfig, Tier
from shareplane.domain.lifecycle import JobState
from shareplane.domain.start_forecast import (
    ForecastSettings,
    History,
    LiveQueue,
    QueuedJob,
    StartForecast,
    forecast_starts,
)
from shareplane.domain.wait_explain import QueuePolicy
from shareplane.service.live_twin import TwinSources, read_live_twin

from .aws import Target


@dataclass(frozen=True)
class Twin:
    """The GPU queue now: its records, Batch's snapshot, and the forecast's input built from them."""

    queue: str
    now: float
    records: Sequence[Mapping[str, Any]]
    snapshot: Mapping[str, Any]
    policy: QueuePolicy
    live: LiveQueue
    history: History
    config: SharesConfig

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
        out = {}
        for share in {s.name for s in self.live.shares}:
            tier = self.config.tier_for_share(share)
            if tier is not None:
                out[share] = tier.value
        return out

    def tier_priorities(self) -> dict[str, int]:
        """Each tier's schedulingPriority."""
        return {t.value: c.scheduling_priority for t, c in self.config.tiers.items()}

    def reclaim_due_at(self, record: Mapping[str, Any]) -> float | None:
        """When the job's tier may reclaim capacity for it (None: its tier never reclaims)."""
        tier = self.config.job_tier(
            record.get("shareIdentifier") or record.get("quotaShareName"), record.get("schedulingPriority")
        )
        after = self.config.tiers[tier].reclaim_after_seconds if tier in self.config.tiers else None
        created = record.get("createdAt")
        return None if after is None or created is None else created / 1000.0 + after

    def with_jobs(self, jobs: Sequence[QueuedJob]) -> LiveQueue:
        """The live queue with ``jobs`` waiting too, as its newest arrivals (a dry run's submission)."""
        first = max((j.order for j in self.live.queued), default=0) + 1
        added = tuple(replace(job, order=first + n) for n, job in enumerate(jobs))
        return replace(self.live, queued=(*self.live.queued, *added))


def load_twin(
    target: Target, config: SharesConfig, *, table: str | None = None, queue: str | None = None
) -> Twin:
    """Read the GPU queue's live state (no writes) and build the forecast's input from it.

    The builder is the core library's (``shareplane.service.live_twin``), the one the watch_jobs
    Lambda predicts with; the CLI reads every job of the table through it, and Batch's snapshot.
    """
    job_queue = queue or config.gpu_queue_name()
    root = target.root(table_name=table or target.output("JobsTableName"))
    sources = TwinSources(root.store, root.batch_policy, config)
    states = root.store.jobs()
    live_twin = read_live_twin(sources, job_queue, twin_now(time.time(), states), states=states)
    now = live_twin.now
    # The whole answer: `why` reads its frontOfQueue (the adapter's QueueUsage keeps only utilization).
    snapshot = dict(root.batch.get_job_queue_snapshot(jobQueue=job_queue))
    return Twin(
        job_queue,
        now,
        live_twin.records,
        snapshot,
        live_twin.policy,
        live_twin.live,
        live_twin.history,
        config,
    )


def twin_now(clock: float, states: Sequence[JobState]) -> float:
    """The twin's "now": the clock, or the newest time the table recorded when that is ahead of it.

    The jobs table is dated by the events' own times. A table ahead of this machine's clock (the
    local stack's emulator runs a sped-up virtual clock; a skewed laptop clock) would otherwise hold
    waiting jobs "submitted in the future", which the twin leaves out.
    """
    recorded = [
        t for s in states for t in (s.created_at, s.scheduled_at, s.started_at, s.stopped_at) if t is not None
    ]
    return max([clock, *(t / 1000.0 for t in recorded)])


def when(epoch: float | None) -> str | None:
    """Epoch seconds as an ISO UTC timestamp (None stays None)."""
    return None if epoch is None else datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds")


def forecast_json(forecast: StartForecast, submitted_at: float) -> dict[str, Any]:
    """A forecast as JSON: the p10/p50/p90 starts and the waits they mean from submission."""
    waits = forecast.waits_from(submitted_at)
    return {
        "startP10": when(forecast.low),
        "startP50": when(forecast.median),
        "startP90": when(forecast.high),
        "waitSecondsP10": None if waits[0] is None else round(waits[0]),
        "waitSecondsP50": None if waits[1] is None else round(waits[1]),
        "waitSecondsP90": None if waits[2] is None else round(waits[2]),
        "startedFraction": forecast.started_fraction,
        "samples": forecast.samples,
    }


def tier_name(config: SharesConfig, priority: int) -> str | None:
    """The tier a schedulingPriority falls in."""
    tier: Tier | None = config.tier_for_priority(priority)
    return tier.value if tier else None
