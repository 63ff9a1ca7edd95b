"""A trigger dated far ahead is refused: it cannot silence the rebalancer's later ticks, nor make watch
escalate and alert, nor make reclaim stop jobs, as if that time had come."""

from __future__ import annotations

import copy
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shareplane.adapters.due_messages import due_body
from shareplane.domain.errors import InvalidInputError
from shareplane.domain.reclaim.record import ReclaimDue
from shareplane.schemas.scheduled import MAX_TICK_LEAD_SECONDS, check_tick_lead
from shareplane.service.rebalance_shares import SKIP_DUPLICATE_TICK, rebalance_shares
from shareplane.service.reclaim_capacity import RECLAIM_RUNNER
from shareplane.service.reclaim_capacity import handle_message as reclaim
from shareplane.service.watch_jobs import MANUAL_RUN, WATCH_RUNNER, read_tick, watch_tick

from tests.fakes.failure_world import World
from tests.fakes.metrics import FakeMetrics
from tests.fakes.rebalance_world import NOW, shares_config
from tests.fakes.reclaim_world import AFTER, T0, ReclaimWorld, borrowed_cluster
from tests.fakes.reclaim_world import tick as reclaim_tick
from tests.fakes.share_store import FakeShareStore
from tests.fakes.shares_batch import FakeSharesBatch
from tests.properties import examples
from tests.unit.service.test_rebalance_shares import SETTINGS, world

YEAR = 365 * 86400.0


def tick_id(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def tick(batch: FakeSharesBatch, store: FakeShareStore, metrics: FakeMetrics, at: float, clock: float) -> str:
    """Deliver the tick dated ``at`` while the Lambda's clock reads ``clock``; its outcome's action."""
    outcome = rebalance_shares(
        tick_id(at), at, shares_config(), SETTINGS, batch, store, metrics, clock_now=clock
    )
    return outcome.action


def test_a_tick_dated_far_ahead_is_refused_and_later_ticks_still_run() -> None:
    # GIVEN a running rebalancer (one tick handled)
    batch, store, metrics = world({"ProdExp1": 0.5, "ProdExp2": 0.5})
    tick(batch, store, metrics, NOW, NOW)
    before = copy.deepcopy(store.state)
    # WHEN a tick dated 74 years ahead arrives
    with pytest.raises(InvalidInputError) as refused:
        tick(batch, store, metrics, NOW + 74 * YEAR, NOW + 1)
    # THEN it is refused naming the time and the fix (to the DLQ alone), and the state is untouched
    assert refused.value.field == "time" and "ahead of this function's clock" in refused.value.problem
    assert store.state == before
    # AND the next genuine tick is handled, not skipped as a redelivery
    assert tick(batch, store, metrics, NOW + 300, NOW + 300) != SKIP_DUPLICATE_TICK


def test_a_chain_of_ticks_each_ahead_of_the_last_cannot_walk_the_bound_forward() -> None:
    # GIVEN a handled tick, then ticks 23 h apart, each ahead of the clock (and of the last handled)
    batch, store, metrics = world({"ProdExp1": 0.5, "ProdExp2": 0.5})
    tick(batch, store, metrics, NOW, NOW)
    for day in range(1, 8):
        with pytest.raises(InvalidInputError):
            tick(batch, store, metrics, NOW + day * 23 * 3600, NOW + 60)
    # THEN the watermark never moved: the next real tick runs
    assert tick(batch, store, metrics, NOW + 300, NOW + 300) != SKIP_DUPLICATE_TICK
    # AND the bound is the function's clock and its small lead alone
    check_tick_lead(NOW + MAX_TICK_LEAD_SECONDS, NOW)
    with pytest.raises(InvalidInputError):
        check_tick_lead(NOW + MAX_TICK_LEAD_SECONDS + 1, NOW)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    offsets=st.lists(
        st.one_of(st.floats(-3600, 3600), st.floats(2 * 86400, 100 * YEAR)), min_size=1, max_size=6
    )
)
def test_no_sequence_of_ticks_silences_the_next_genuine_one(offsets: list[float]) -> None:
    # GIVEN ticks dated anywhere from an hour behind the clock to a century ahead, delivered in turn
    batch, store, metrics = world({"ProdExp1": 0.5, "ProdExp2": 0.5})
    clock = NOW
    for offset in offsets:
        clock += 60
        try:
            tick(batch, store, metrics, round(clock + offset), clock)
        except InvalidInputError:
            assert offset > MAX_TICK_LEAD_SECONDS - 60
    # THEN a genuine tick well after the last one (at the clock, an hour on) is handled, never skipped
    assert tick(batch, store, metrics, round(clock + 2 * 3600), clock + 2 * 3600) != SKIP_DUPLICATE_TICK


# ------------------------------------------------------------------------------------------ watch_jobs
def test_a_watch_tick_dated_far_ahead_is_refused_and_a_genuine_one_moves_the_watermark() -> None:
    failures = World()
    now = failures.clock.now
    scheduled = reclaim_tick(now + 74 * YEAR)  # the same Scheduled Event shape, another rule's id
    # WHEN a tick 74 years ahead of the clock arrives, with no tick handled yet
    with pytest.raises(InvalidInputError) as refused:
        read_tick(scheduled, failures.ports)
    # THEN it is refused naming the time (to the DLQ alone) before any job is looked at
    assert refused.value.field == "time" and failures.ticks.ticks == {}
    # AND a genuine tick is run and becomes the watermark; a manual run leaves the watermark alone
    handled = read_tick(reclaim_tick(now + 60), failures.ports)
    watch_tick(failures.ports, handled)
    watch_tick(failures.ports, read_tick(MANUAL_RUN, failures.ports))
    assert failures.ticks.ticks == {WATCH_RUNNER: tick_id(now + 60)}


def test_a_watch_tick_ahead_of_the_clock_is_refused_whatever_the_watermark() -> None:
    failures = World()
    ahead = failures.clock.now + 3600
    failures.ticks.advance_tick(WATCH_RUNNER, tick_id(ahead - 300))
    with pytest.raises(InvalidInputError):
        read_tick(reclaim_tick(ahead), failures.ports)


# ------------------------------------------------------------------------------------------ reclaim
@pytest.mark.parametrize(
    "trigger",
    [
        reclaim_tick(T0 + AFTER + 74 * YEAR),
        due_body(ReclaimDue("hi", "hi", T0 + AFTER + 74 * YEAR, T0 + AFTER + 74 * YEAR)),
        reclaim_tick(T0 + 86400),
    ],
    ids=["a schedule tick", "a due re-check", "a tick a day ahead"],
)
def test_a_reclaim_trigger_dated_far_ahead_stops_nothing_and_the_next_genuine_tick_reclaims(
    trigger: dict,
) -> None:
    # GIVEN ProdExp2 borrows two instances and a HIGHPRI ProdExp1 job has waited 60 s
    reclaiming = ReclaimWorld()
    borrowed_cluster(reclaiming)
    reclaiming.clock.now = T0 + 60
    # WHEN a trigger dated decades ahead arrives (every waiting job would look long past due)
    with pytest.raises(InvalidInputError) as refused:
        reclaim(trigger, reclaiming.ports)
    # THEN it is refused naming the time, and no job is stopped
    assert refused.value.field == "time" and reclaiming.batch.terminated == []
    # AND the genuine tick at the threshold still reclaims, and dates the watermark
    reclaiming.clock.now = T0 + AFTER + 30
    assert reclaim(reclaim_tick(T0 + AFTER), reclaiming.ports).stopped == {"hi": ["p2-5"]}
    assert reclaiming.ticks.ticks == {RECLAIM_RUNNER: tick_id(T0 + AFTER)}
