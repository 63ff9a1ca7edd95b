"""The rebalancer's observation -> snapshot rule, and the project's one percentile convention."""

from __future__ import annotations

import copy
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shareplane.domain.config.shares import SchedulingMode, Tier
from shareplane.domain.errors import InvalidInputError
from shareplane.domain.shares.observation import (
    QueueObservation,
    ShareObservation,
    TierObservation,
    percentile,
    snapshot_from_observation,
    tier_wait,
)
from shareplane.domain.shares.rebalance import TierWait

from tests.properties import examples

P4D = "ml.p4d.24xlarge"


@pytest.mark.parametrize(
    ("values", "q", "expected"),
    [
        ([], 0.9, None),
        ([7.0], 0.5, 7.0),
        ([1, 2, 3, 4], 0.5, 2.0),
        ([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0.9, 9.0),
        ([10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 11], 0.9, 10.0),
        (list(range(1, 20)), 0.95, 19.0),
        (list(range(1, 21)), 0.95, 19.0),
        ([3, 1, 2], 1.0, 3.0),
    ],
    ids=[
        "no values have no percentile",
        "one value is every percentile",
        "the p50 of four values is the 2nd smallest (nearest rank, no interpolation)",
        "the p90 of ten values is the 9th smallest",
        "the p90 of eleven values is the 10th smallest, whatever the input order",
        "the p95 of fewer than 20 values is the largest",
        "the p95 of 20 values is the 19th",
        "q = 1 is the largest",
    ],
)
def test_percentile_is_nearest_rank(values: list[float], q: float, expected: float | None) -> None:
    assert percentile(values, q) == expected


@pytest.mark.parametrize("q", [0.0, -0.5, 1.5, 90], ids=["zero", "negative", "above one", "a percent"])
def test_percentile_refuses_a_q_that_is_not_a_fraction(q: float) -> None:
    with pytest.raises(InvalidInputError, match="fraction"):
        percentile([1.0], q)


@settings(max_examples=examples(60), deadline=None)
@given(values=st.lists(st.floats(0, 1e6), min_size=1, max_size=40), q=st.floats(0.01, 1.0))
def test_percentile_is_a_value_with_at_least_q_of_the_values_at_or_below_it(
    values: list[float], q: float
) -> None:
    p = percentile(values, q)
    assert p in values
    assert sum(v <= p for v in values) >= q * len(values) - 1e-9
    shuffled = values[:]
    random.Random(len(values)).shuffle(shuffled)
    assert percentile(shuffled, q) == p


@pytest.mark.parametrize(
    ("recent", "ages", "expected"),
    [
        ((2900.0,), (), 2900.0),
        ((100.0, 200.0, 300.0, 2900.0), (), 2900.0),
        ((100.0,), (5000.0,), 5000.0),
        ((), (100.0, 200.0), 200.0),
        ((), (), None),
        ((600.0, 700.0), (10.0,) * 9 + (9000.0,), 700.0),
        ((600.0, 700.0), (9000.0,) * 2 + (10.0,) * 8, 9000.0),
    ],
    ids=[
        "one job that started in the window gives its wait",
        "the p90 of four started jobs is the longest (nearest rank)",
        "a job still waiting longer than every started one sets the p90",
        "with nothing started, the waiting jobs' ages are the p90",
        "a tier with no waits at all has no entry",
        "one old waiter among ten is not the p90 of the waiters (every waiter counts, not the oldest)",
        "two old waiters among ten are",
    ],
)
def test_tier_wait_is_the_larger_of_the_two_p90s(
    recent: tuple[float, ...], ages: tuple[float, ...], expected: float | None
) -> None:
    wait = tier_wait(TierObservation(slo_seconds=900, recent_waits=recent, waiting_ages=ages))
    assert wait == (None if expected is None else TierWait(expected, 900.0))


def observation(**update: object) -> QueueObservation:
    base = QueueObservation(
        now=10_000.0,
        mode=SchedulingMode.FAIRSHARE,
        capacity={P4D: 100},
        shares=(
            ShareObservation(
                "ProdExp1",
                {P4D: 60},
                {P4D: 69.9999999999},
                {P4D: 10},
                {Tier.LOWPRI: 10, Tier.HIGHPRI: 0},
                usage_history=5.0,
                ledger_balance=-2.0,
                weight_factor=1.0,
            ),
            ShareObservation("ProdExp2", {P4D: 40}, {P4D: 30.4}, {}, {}, weight_factor=1.5),
        ),
        tiers={
            Tier.HIGHPRI: TierObservation(900, (100.0,), (2000.0, 50.0)),
            Tier.LOWPRI: TierObservation(14400),
        },
        last_applied_at=9_000.0,
        ledger_as_of=9_700.0,
        gpus_per_instance={P4D: 8},
    )
    return QueueObservation(**{**base.__dict__, **update})  # type: ignore[arg-type]


def test_the_snapshot_derives_demand_from_use_and_waiting_and_keeps_the_rest() -> None:
    # GIVEN fractional in-use figures as Batch reports them
    obs = observation()
    before = copy.deepcopy(obs)
    # WHEN the snapshot is built
    snap = snapshot_from_observation(obs)
    p1, p2 = snap.share("ProdExp1"), snap.share("ProdExp2")
    # THEN use rounds up (float noise just above an integer does not add an instance), demand adds waiting
    assert (p1.in_use, p1.demand, p2.in_use, p2.demand) == ({P4D: 70}, {P4D: 80}, {P4D: 31}, {P4D: 31})
    assert p1.waiting_by_tier == {Tier.LOWPRI: 10} and p2.waiting_by_tier == {}
    assert (p1.usage_history, p1.ledger_balance, p1.weight_factor, p2.weight_factor) == (5.0, -2.0, 1.0, 1.5)
    # ... a tier with no waits has no entry, the others follow tier_wait
    assert snap.tiers == {Tier.HIGHPRI: TierWait(2000.0, 900.0)}
    assert (snap.now, snap.last_applied_at, snap.ledger_as_of) == (10_000.0, 9_000.0, 9_700.0)
    assert snap.capacity == {P4D: 100} and snap.gpus_per_instance == {P4D: 8}
    # ... and the observation is not modified
    assert obs == before


@settings(max_examples=examples(40), deadline=None)
@given(seed=st.integers(0, 2**16))
def test_the_snapshot_does_not_depend_on_the_order_of_the_raw_waits(seed: int) -> None:
    rng = random.Random(seed)
    recent = [rng.uniform(0, 5000) for _ in range(rng.randint(0, 30))]
    ages = [rng.uniform(0, 5000) for _ in range(rng.randint(0, 30))]
    tiers = {Tier.MIDPRI: TierObservation(3600, tuple(recent), tuple(ages))}
    shuffled = {Tier.MIDPRI: TierObservation(3600, tuple(rng.sample(recent, len(recent))), tuple(ages[::-1]))}
    assert snapshot_from_observation(observation(tiers=tiers)) == snapshot_from_observation(
        observation(tiers=shuffled)
    )
