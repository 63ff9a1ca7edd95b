"""What `shareplane why` and `top` read on the Philly trace's day 50: the watch's bounded twin against
the whole table they read before.

The table is the jobs table as the recorder leaves it 50 days into the Philly replay (fair-share):
every job submitted by then, finished ones with their holds, waiting and running ones as they stand.
Both reads build the twin `why` and `top` share (``shareplane_cli.twin.read_twin``; before, every job
of the table through ``read_live_twin``, as ``load_twin`` did), side by side in one run. Bytes are the
wire JSON of the items each read returns (state, history, arrival-count items, as DynamoDB answers
them); DynamoDB's time per request is not measured (no account here) and comes on top, one round trip
a page or a history query. A Scan's read capacity is the whole table's (history items too), not only
the items it returns: the bytes below understate the old read's cost.

Claim (set before the run): the bounded read returns at most a tenth of the old read's bytes and
takes at most a tenth of its time. Not met: 0.138x the bytes, 0.255x the time (first run). The
replay's queue is deep at day 50 (10,972 jobs waiting) and the twin reads every waiting job's state,
as the watch does (they are the queue): 11 of its 12 MiB. What it no longer reads is every finished
job with its history: 678 history queries instead of 35,304, 14,899 items instead of 187,314. The
assertions below guard that (no scan; at most a fifth of the bytes, half the time), not the claim.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from gpusim.forecast.live_view import LiveView
from gpusim.whatif.config import Policy
from gpusim.whatif.run import PolicyRun
from shareplane.adapters.dynamodb_items import marshal
from shareplane.adapters.dynamodb_store import history_item, job_state_item
from shareplane.domain.explain.record import recorded_now
from shareplane.domain.forecast.arrivals import ArrivalKey
from shareplane.domain.jobs.lifecycle import HistoryEntry, JobState, JobStatus
from shareplane.service.live_twin import TwinSources, read_live_twin
from shareplane_cli.commands.why import why_json, why_report
from shareplane_cli.twin import read_twin

from tests.bench.test_eta_bench import SEED, CountingStore, _put, forecast_ports
from tests.bench.test_eta_bench import scenario as scenario  # noqa: F401 - the Philly scenario fixture

pytestmark = pytest.mark.bench

DAY_50 = 50 * 86400.0
FINAL = {"SUCCEEDED": JobStatus.SUCCEEDED, "FAILED": JobStatus.FAILED}


def wire_bytes(item: dict[str, Any]) -> int:
    return len(json.dumps(marshal(item)))


@dataclass
class MeteredStore(CountingStore):
    """The jobs table in memory, counting the items and wire bytes each read returns."""

    items: int = 0
    bytes: int = 0
    state_bytes: dict[str, int] = field(default_factory=dict)
    history_bytes: dict[str, int] = field(default_factory=dict)

    def measure(self) -> None:
        """Each item's wire size, once (not in the reads' time)."""
        for arn, state in self.states.items():
            self.state_bytes[arn] = wire_bytes(job_state_item(state))
            self.history_bytes[arn] = sum(wire_bytes(history_item(arn, e)) for e in self.job_history(arn))

    def reset(self) -> None:
        self.items, self.bytes = 0, 0
        self.requests.clear()

    def _returned(self, states: Sequence[JobState]) -> None:
        self.items += len(states)
        self.bytes += sum(self.state_bytes.get(s.job_arn, 0) for s in states)

    def jobs(self, status: str | None = None) -> list[JobState]:
        if status is None:  # a status's jobs are counted as the ByStatus query that reads them
            self.requests["Scan (every job)"] += 1
        found = super().jobs(status)
        self._returned(found)
        return found

    def newest_in_status(self, status: str, created_after_ms: int, limit: int) -> list[JobState]:
        found = super().newest_in_status(status, created_after_ms, limit)
        self._returned(found)
        return found

    def oldest_created_ms(self, status: str) -> int | None:
        self.requests["Query (ByStatus, first key)"] += 1
        first = min(
            (s.created_at or 0 for s in self.states.values() if s.status.value == status), default=None
        )
        self.items += first is not None
        return first

    def job_history(self, job_arn: str) -> Sequence[HistoryEntry]:
        entries = super().job_history(job_arn)
        self.items += len(entries)
        self.bytes += self.history_bytes.get(job_arn, 0)
        return entries

    def arrival_counts(self, queue: str, since_ms: int) -> list[tuple[ArrivalKey, int]]:
        counts = super().arrival_counts(queue, since_ms)
        hours: dict[int, dict[str, Any]] = defaultdict(dict)
        for key, n in counts:
            hours[key.hour_ms][f"{key.share}|{key.instances}|{key.priority}"] = n
        for hour, cells in hours.items():
            self.bytes += wire_bytes({"pk": f"ARRIVALS#{queue}", "sk": f"HOUR#{hour:013d}", **cells})
        self.items += len(hours)
        return counts


@pytest.mark.bench
def test_why_and_top_read_the_watchs_twin_not_the_whole_table(scenario: Any) -> None:  # noqa: F811
    run = PolicyRun(scenario, Policy.FAIRSHARE, SEED)
    view = LiveView(run)
    run.start()
    run.model.run(until=DAY_50)
    probe = next(j for j in scenario.jobs if j.submit >= DAY_50)
    live, _history = view.live_queue(probe, 86400.0)
    now = live.now
    store = MeteredStore()
    for job in run.model.jobs.values():
        status = FINAL.get(job.status) or JobStatus(job.status)
        _put(store, job.id, status, view.share_of(job), job.count, job.created, priority=job.priority,
             held=job.scheduled_at, ended=job.stopped_at if status in FINAL.values() else None)  # fmt: skip
    store.measure()
    ports = forecast_ports(store, live)
    total = len(store.states)
    waiting = sum(
        s.status in (JobStatus.SUBMITTED, JobStatus.PENDING, JobStatus.RUNNABLE)
        for s in store.states.values()
    )

    # Before: every job of the table, each dispatched one's history, through the same builder.
    store.reset()
    started = time.perf_counter()
    states = store.jobs()
    full = read_live_twin(
        TwinSources(store, ports.batch, ports.config), ports.queue, recorded_now(now, states), states=states
    )
    full_seconds = time.perf_counter() - started
    full_items, full_bytes, full_requests = store.items, store.bytes, dict(store.requests)

    # Now: the watch's bounded twin (read_twin, what load_twin builds for `why` and `top`).
    store.reset()
    started = time.perf_counter()
    twin = read_twin(ports, lambda _queue: {}, now)
    bounded_seconds = time.perf_counter() - started
    bounded_items, bounded_bytes, bounded_requests = store.items, store.bytes, dict(store.requests)

    # The answer `why` gives from it, for the job at the back of the queue.
    back = max(twin.live.queued, key=lambda j: (j.submitted_at, j.order))
    record = next(r for r in twin.records if r.name == back.name)
    started = time.perf_counter()
    answer = why_json(why_report(twin, record, samples=100))
    why_seconds = time.perf_counter() - started
    assert answer["waiting"] is True
    assert twin.freshness is not None
    print(
        f"\n`why`/`top`'s twin at Philly's day 50 ({total} jobs in the table, {waiting} waiting, "
        f"{len(twin.live.running)} running):\n"
        f"  whole table: {len(full.records)} records, {full_items} items, {full_bytes / 2**20:.1f} MiB, "
        f"{full_seconds:.2f} s; requests {full_requests}\n"
        f"  bounded: {len(twin.records)} records, {bounded_items} items, {bounded_bytes / 2**20:.2f} MiB, "
        f"{bounded_seconds:.2f} s; requests {bounded_requests}\n"
        f"  ratio: bytes {bounded_bytes / full_bytes:.3f}, time {bounded_seconds / full_seconds:.3f}; "
        f"then `why` of the last waiting job, 100 runs: {why_seconds:.2f} s\n"
        f"  {twin.freshness.text()}"
    )
    assert store.requests.get("Scan (every job)", 0) == 0
    assert bounded_bytes <= full_bytes / 5
    assert bounded_seconds <= full_seconds / 2
