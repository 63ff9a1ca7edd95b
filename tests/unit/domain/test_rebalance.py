"""The share rebalancer: water-filling, ledger, SLO boost, guard rails, request shapes and rollback."""

from __future__ import annotations

import copy
import json
import math
from dataclasses import replace
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shareplane.adapters.batch_policy import quota_share_request, scheduling_policy_request
from shareplane.domain.config.shares import (
    RebalanceConfig,
    RebalanceDesign,
    SchedulingMode,
    SharesConfig,
    Tier,
)
from shareplane.domain.errors import ConfigError, InvalidInputError
from shareplane.domain.shares.batch_shares import (
    SchedulingPolicy,
    plan_to_update_quota_share_requests,
    plan_to_update_scheduling_policy,
)
from shareplane.domain.shares.rebalance import (
    WEIGHT_FACTOR_MAX,
    LedgerEntry,
    QuotaSettings,
    RebalancePlan,
    ShareSnapshot,
    ShareState,
    SharingStrategy,
    TierWait,
    credit_rates,
    lend_borrow_rates,
    plan_rebalance,
    rollback_plan,
    target_allocation,
    update_ledger,
)

from tests.properties import examples

P4 = "ml.p4d.24xlarge"
P5 = "ml.p5.48xlarge"
NOW = 1_760_000_000.0
DEFAULTS = RebalanceConfig()
#: The defaults with quota plans setting borrowLimit (off by default), where borrow limits are tested.
MANAGED_BORROW = RebalanceConfig(manage_borrow_limit=True)
ARN = "arn:aws:batch:us-east-1:123456789012:scheduling-policy/gpu"


def share(
    name: str,
    entitled: int,
    demand: int,
    running: int | None = None,
    weight: float | None = 1.0,
    **more: object,
) -> ShareState:
    """A one-instance-type share; running defaults to min(demand, entitlement)."""
    running = min(demand, entitled) if running is None else running
    return ShareState(name, {P4: entitled}, {P4: demand}, {P4: running}, weight_factor=weight, **more)


def quota_share(
    name: str,
    entitled: int,
    demand: int,
    running: int | None = None,
    limit: int | None = None,
    **quota: object,
) -> ShareState:
    """A quota-mode share whose limit defaults to its entitlement."""
    settings_ = QuotaSettings({P4: limit or entitled}, **quota)
    return replace(
        share(name, entitled, demand, running, weight=None),
        quota=settings_,
        quota_share_arn=f"arn:aws:batch:us-east-1:123456789012:quota-share/gpu/{name}",
    )


def snapshot(*shares: ShareState, capacity: int = 100, **more: object) -> ShareSnapshot:
    """A fair-share snapshot (quota mode when the shares carry quota settings), ledger up to date."""
    mode = SchedulingMode.QUOTA if shares and shares[0].quota else SchedulingMode.FAIRSHARE
    fields: dict[str, object] = {"ledger_as_of": NOW, "gpus_per_instance": {P4: 8}}
    fields.update(more)
    return ShareSnapshot(now=NOW, mode=mode, capacity={P4: capacity}, shares=shares, **fields)


def weights(plan: RebalancePlan) -> dict[str, float]:
    return {change.share: change.after for change in plan.changes}


def applied(snap: ShareSnapshot, plan: RebalancePlan, advance: float) -> ShareSnapshot:
    """The next snapshot after an adapter applied ``plan``: settings, ledger and clock move on."""
    after = {change.share: change.after for change in plan.changes}
    shares = tuple(
        replace(
            s,
            weight_factor=after[s.name] if snap.mode is SchedulingMode.FAIRSHARE else None,
            quota=after[s.name] if snap.mode is SchedulingMode.QUOTA else None,
            ledger_balance=plan.ledger[s.name].balance if plan.ledger else s.ledger_balance,
        )
        for s in snap.shares
    )
    return replace(
        snap,
        now=snap.now + advance,
        shares=shares,
        last_applied_at=snap.now if not plan.is_empty else snap.last_applied_at,
        ledger_as_of=plan.ledger_as_of,
    )


# ---------------------------------------------------------------------------------------------
# Water-filling

WATER_FILLING = [
    pytest.param(
        100,
        {"A": 100, "B": 0},
        {"A": 60, "B": 40},
        {"A": 60, "B": 40},
        {"A": 100, "B": 0},
        id="60/40 entitlements with demands 100/0 give all 100 to the share with demand",
    ),
    pytest.param(
        100,
        {"A": 100, "B": 100},
        {"A": 60, "B": 40},
        {"A": 60, "B": 40},
        {"A": 60, "B": 40},
        id="60/40 entitlements with demands 100/100 give 60/40",
    ),
    pytest.param(
        100,
        {"A": 30, "B": 100},
        {"A": 60, "B": 40},
        {"A": 60, "B": 40},
        {"A": 30, "B": 70},
        id="60/40 entitlements with demands 30/100 lend the idle 30 to the other share",
    ),
    pytest.param(
        100,
        {"A": 100, "B": 100, "C": 100},
        {"A": 1, "B": 2, "C": 1},
        {},
        {"A": 25, "B": 50, "C": 25},
        id="three hungry shares weighted 1:2:1 get 25/50/25",
    ),
    pytest.param(
        100,
        {"A": 10, "B": 100, "C": 100},
        {"A": 1, "B": 1, "C": 2},
        {},
        {"A": 10, "B": 30, "C": 60},
        id="a share capped at its demand leaves the rest to be split 1:2 by weight",
    ),
    pytest.param(
        100,
        {"A": 50, "B": 100, "C": 100},
        {"A": 1, "B": 1, "C": 1},
        {"A": 50},
        {"A": 50, "B": 25, "C": 25},
        id="a guarantee is served before the remainder is water-filled",
    ),
    pytest.param(
        100,
        {"A": 0, "B": 100},
        {"A": 60, "B": 40},
        {"A": 60, "B": 40},
        {"A": 0, "B": 100},
        id="a share with zero demand gets nothing and its entitlement is lent",
    ),
    pytest.param(
        100,
        {"A": 100, "B": 100},
        {"A": 1, "B": 0},
        {},
        {"A": 100, "B": 0},
        id="a zero-weight share gets nothing while a weighted share still wants more",
    ),
    pytest.param(
        100,
        {"A": 30, "B": 100},
        {"A": 1, "B": 0},
        {},
        {"A": 30, "B": 70},
        id="a zero-weight share gets what the weighted shares cannot use",
    ),
    pytest.param(
        100,
        {"A": 100, "B": 100},
        {"A": 0, "B": 0},
        {},
        {"A": 50, "B": 50},
        id="all-zero weights split the capacity equally",
    ),
    pytest.param(
        50,
        {"A": 100, "B": 100},
        {"A": 60, "B": 40},
        {"A": 60, "B": 40},
        {"A": 30, "B": 20},
        id="capacity below the guarantees is split in proportion to the guarantees",
    ),
    pytest.param(
        40,
        {"A": 10, "B": 100},
        {"A": 60, "B": 40},
        {"A": 60, "B": 40},
        {"A": 10, "B": 30},
        id="capacity below the guarantees never gives a share more than its demand",
    ),
    pytest.param(
        0, {"A": 10, "B": 100}, {"A": 1, "B": 1}, {}, {"A": 0, "B": 0}, id="zero capacity allocates nothing"
    ),
    pytest.param(
        100,
        {"A": 10, "B": 20},
        {"A": 1, "B": 5},
        {"A": 50},
        {"A": 10, "B": 20},
        id="total demand below capacity gives every share its demand",
    ),
]


@pytest.mark.parametrize(("capacity", "demands", "weights_", "guarantees", "expected"), WATER_FILLING)
def test_water_filling_examples(capacity, demands, weights_, guarantees, expected) -> None:
    assert target_allocation(capacity, demands, weights_, guarantees) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        pytest.param(
            {"demands": {"A": -1}, "weights": {"A": 1}}, "demands.A", id="a negative demand is rejected"
        ),
        pytest.param(
            {"demands": {"A": 1}, "weights": {}}, "weights", id="a share without a weight is rejected"
        ),
        pytest.param(
            {"demands": {"A": 1}, "weights": {"A": 1}, "guarantees": {"B": 1}},
            "guarantees",
            id="a guarantee for an unknown share is rejected",
        ),
        pytest.param(
            {"demands": {"A": 1}, "weights": {"A": math.nan}}, "weights.A", id="a NaN weight is rejected"
        ),
        pytest.param(
            {"capacity": math.inf, "demands": {"A": 1}, "weights": {"A": 1}},
            "capacity",
            id="an infinite capacity is rejected",
        ),
    ],
)
def test_water_filling_rejects_bad_input_naming_the_field(kwargs, field) -> None:
    kwargs = {"capacity": 10, **kwargs}
    with pytest.raises(InvalidInputError) as raised:
        target_allocation(**kwargs)
    assert raised.value.field == field


allocation_inputs = st.integers(1, 6).flatmap(
    lambda n: st.tuples(
        st.integers(0, 500),
        st.lists(st.integers(0, 300), min_size=n, max_size=n),
        st.lists(st.one_of(st.just(0.0), st.floats(0.01, 100)), min_size=n, max_size=n),
        st.lists(st.integers(0, 200), min_size=n, max_size=n),
    )
)


@settings(max_examples=examples(300), deadline=None)
@given(allocation_inputs)
def test_allocation_respects_demand_and_capacity_and_is_work_conserving(inputs) -> None:
    capacity, demands, weights_, guarantees = inputs
    names = [f"s{i}" for i in range(len(demands))]
    alloc = target_allocation(
        capacity,
        dict(zip(names, demands, strict=True)),
        dict(zip(names, weights_, strict=True)),
        dict(zip(names, guarantees, strict=True)),
    )
    assert all(0 <= alloc[n] <= d for n, d in zip(names, demands, strict=True))
    assert sum(alloc.values()) == pytest.approx(min(capacity, sum(demands)), abs=1e-6)
    claims = [min(d, g) for d, g in zip(demands, guarantees, strict=True)]
    if sum(claims) <= capacity:
        # THEN every share has at least its guaranteed claim
        assert all(alloc[n] >= c - 1e-9 for n, c in zip(names, claims, strict=True))


@settings(max_examples=examples(150), deadline=None)
@given(allocation_inputs, st.randoms(use_true_random=False))
def test_allocation_does_not_depend_on_the_order_of_the_shares(inputs, rng) -> None:
    capacity, demands, weights_, guarantees = inputs
    rows = [(f"s{i}", d, w, g) for i, (d, w, g) in enumerate(zip(demands, weights_, guarantees, strict=True))]
    shuffled = rows[:]
    rng.shuffle(shuffled)
    first, second = (
        target_allocation(
            capacity, {r[0]: r[1] for r in rs}, {r[0]: r[2] for r in rs}, {r[0]: r[3] for r in rs}
        )
        for rs in (rows, shuffled)
    )
    assert first == second


# ---------------------------------------------------------------------------------------------
# Ledger, nudge, SLO boost


@pytest.mark.parametrize(
    ("shares", "capacity", "expected"),
    [
        pytest.param(
            (share("A", 60, 100, running=80), share("B", 40, 100, running=20)),
            100,
            {"A": (0, 160), "B": (160, 0)},
            id="a share over its entitlement while the other waits borrows what the other lends",
        ),
        pytest.param(
            (share("A", 60, 100, running=80), share("B", 40, 20, running=20)),
            100,
            {"A": (0, 0), "B": (0, 0)},
            id="using idle capacity nobody is waiting for is neither lent nor borrowed",
        ),
        pytest.param(
            (share("A", 40, 100, running=60), share("B", 40, 100, running=20)),
            100,
            {"A": (0, 0), "B": (0, 0)},
            id="borrowing out of unentitled capacity costs nothing",
        ),
        pytest.param(
            (share("A", 40, 100, running=60), share("B", 40, 100, running=20)),
            90,
            {"A": (0, 80), "B": (80, 0)},
            id="borrowing beyond the unentitled capacity is charged against the waiting owner",
        ),
    ],
)
def test_lend_and_borrow_rates(shares, capacity, expected) -> None:
    rates = lend_borrow_rates(snapshot(*shares, capacity=capacity))
    assert {name: pytest.approx(rate) for name, rate in rates.items()} == expected
    assert sum(lent for lent, _ in rates.values()) == pytest.approx(sum(b for _, b in rates.values()))


def test_ledger_credits_the_interval_and_decays_by_the_half_life() -> None:
    # GIVEN balances of +100/-100 GPU-hours one half-life ago and 10 instances (80 GPUs) held from B
    config = RebalanceConfig(ledger_half_life_seconds=3600, ledger_max_interval_seconds=3600)
    snap = snapshot(
        share("A", 60, 100, running=70, ledger_balance=-100.0),
        share("B", 40, 100, running=30, ledger_balance=100.0),
        ledger_as_of=NOW - 3600,
    )
    ledger = update_ledger(snap, config)
    # THEN the balances halve, and one hour of 80 GPUs moves from A to B
    assert ledger["A"] == LedgerEntry(lent=0.0, borrowed=80.0, balance=pytest.approx(-50.0 - 80.0))
    assert ledger["B"] == LedgerEntry(lent=80.0, borrowed=0.0, balance=pytest.approx(50.0 + 80.0))


@pytest.mark.parametrize(
    ("ledger_as_of", "credited_hours"),
    [
        pytest.param(None, 0.0, id="without a previous update nothing is credited"),
        pytest.param(NOW - 600, 600 / 3600, id="the time since the last update is credited"),
        pytest.param(NOW - 86400, 3600 / 3600, id="a long gap is credited at most the configured interval"),
        pytest.param(NOW + 60, 0.0, id="a last update in the future credits nothing"),
    ],
)
def test_ledger_interval(ledger_as_of, credited_hours) -> None:
    snap = snapshot(
        share("A", 60, 100, running=70), share("B", 40, 100, running=30), ledger_as_of=ledger_as_of
    )
    assert update_ledger(snap, DEFAULTS)["B"].lent == pytest.approx(80 * credited_hours)


CREDITS = RebalanceConfig(design=RebalanceDesign.CREDITS, max_step=10, credit_scale_hours=24)


@pytest.mark.parametrize(
    ("shares", "capacity", "expected"),
    [
        pytest.param(
            (share("A", 60, 100, running=80), share("B", 40, 100, running=20)),
            100,
            {"A": (0, 160), "B": (160, 0)},
            id="a share over its entitlement borrows what the other leaves idle",
        ),
        pytest.param(
            (share("A", 60, 100, running=80), share("B", 40, 20, running=20)),
            100,
            {"A": (0, 160), "B": (160, 0)},
            id="idle entitlement is lent whether or not its owner has work waiting",
        ),
        pytest.param(
            (share("A", 40, 100, running=60), share("B", 40, 100, running=20)),
            100,
            {"A": (0, 0), "B": (0, 0)},
            id="borrowing out of unentitled capacity costs nothing",
        ),
        pytest.param(
            (share("A", 20, 100, running=50), share("B", 40, 0, running=0), share("C", 40, 20, running=20)),
            100,
            {"A": (0, 240), "B": (160, 0), "C": (80, 0)},
            id="with two lenders the loan splits by idle entitlement, never counted twice",
        ),
    ],
)
def test_credit_rates_follow_karma(shares, capacity, expected) -> None:
    rates = credit_rates(snapshot(*shares, capacity=capacity))
    assert {name: pytest.approx(rate) for name, rate in rates.items()} == expected
    assert sum(lent for lent, _ in rates.values()) == pytest.approx(sum(b for _, b in rates.values()))


def test_the_credits_design_earns_credits_for_idle_entitlement_the_demand_targets_design_does_not() -> None:
    # GIVEN B with no work, leaving 20 instances of its entitlement to A, for one hour
    snap = snapshot(share("A", 60, 100, running=80), share("B", 40, 20, running=20), ledger_as_of=NOW - 3600)
    # THEN only the credits ledger credits B (160 GPU-hours); the demand-targets ledger needs B waiting
    assert update_ledger(snap, CREDITS)["B"].balance == pytest.approx(160.0)
    assert update_ledger(snap, DEFAULTS)["B"].balance == 0.0


def test_owed_credits_are_earned_only_while_waiting_and_weigh_like_credits() -> None:
    owed = CREDITS.model_copy(update={"design": RebalanceDesign.OWED_CREDITS})
    idle_lender = snapshot(
        share("A", 60, 100, running=80), share("B", 40, 20, running=20), ledger_as_of=NOW - 3600
    )
    waiting_lender = snapshot(
        share("A", 60, 100, running=80), share("B", 40, 100, running=20), ledger_as_of=NOW - 3600
    )
    # THEN B earns nothing for entitlement it left idle, and 160 GPU-hours for what it waited for
    assert update_ledger(idle_lender, owed)["B"].balance == 0.0
    assert update_ledger(waiting_lender, owed)["B"].balance == pytest.approx(160.0)
    # AND the weights follow the same credits rule as the credits design
    scale = 24 * 30 * 8
    credited = snapshot(share("A", 30, 100, ledger_balance=-scale), share("B", 30, 100, ledger_balance=scale))
    assert weights(plan_rebalance(credited, owed)) == weights(plan_rebalance(credited, CREDITS))


def test_credits_weigh_the_entitlement_by_the_favour_whatever_the_demand_now() -> None:
    # GIVEN equal shares, B holding credits of one scale (24 h of its 30-instance entitlement, 8 GPUs each)
    scale = 24 * 30 * 8
    for demand_a, demand_b in ((100, 100), (100, 35), (31, 100)):
        even = plan_rebalance(snapshot(share("A", 30, demand_a), share("B", 30, demand_b)), CREDITS)
        credited = plan_rebalance(
            snapshot(
                share("A", 30, demand_a, ledger_balance=-scale),
                share("B", 30, demand_b, ledger_balance=scale),
            ),
            CREDITS,
        )
        # THEN without credits both keep weight 1.0; with them B gets 1.0 and A (1 + n tanh 1) / (1 - n tanh 1)
        assert weights(even) == {"A": 1.0, "B": 1.0}
        favour = CREDITS.ledger_nudge * math.tanh(1.0)
        assert weights(credited)["B"] == 1.0
        assert weights(credited)["A"] == pytest.approx((1 + favour) / (1 - favour), abs=1e-4)


def test_a_share_that_lent_a_lot_gets_more_of_the_surplus_and_a_better_weight() -> None:
    # GIVEN two equal shares, 40 unentitled instances to share, and B with a large lending credit
    even = (share("A", 30, 100), share("B", 30, 100))
    credited = (share("A", 30, 100, ledger_balance=-1e6), share("B", 30, 100, ledger_balance=1e6))
    config = RebalanceConfig(max_step=10)
    plan_even = plan_rebalance(snapshot(*even), config)
    plan_credited = plan_rebalance(snapshot(*credited), config)
    # THEN B's target rises above A's, within the nudge, and B's weightFactor becomes the better one
    assert plan_even.targets == pytest.approx({"A": 50, "B": 50})
    assert plan_credited.targets["B"] > 50 > plan_credited.targets["A"]
    assert plan_credited.targets["B"] / plan_credited.targets["A"] <= 1.2 / 0.8 * (70 / 30)
    assert weights(plan_credited)["B"] == 1.0 < weights(plan_credited)["A"]


SLO_CASES = [
    pytest.param(
        {Tier.HIGHPRI: TierWait(1800, 900)},
        {Tier.HIGHPRI: 10},
        True,
        id="a share waiting in a tier over its SLO is boosted",
    ),
    pytest.param(
        {Tier.HIGHPRI: TierWait(600, 900)},
        {Tier.HIGHPRI: 10},
        False,
        id="a share waiting in a tier within its SLO is not boosted",
    ),
    pytest.param(
        {Tier.HIGHPRI: TierWait(1800, 900)},
        {Tier.LOWPRI: 10},
        False,
        id="a share with no work in the breached tier is not boosted",
    ),
]


@pytest.mark.parametrize(("tiers", "waiting", "boosted"), SLO_CASES)
def test_slo_boost(tiers, waiting, boosted) -> None:
    snap = snapshot(share("A", 30, 100), share("B", 30, 100, waiting_by_tier=waiting), tiers=tiers)
    plan = plan_rebalance(snap, DEFAULTS)
    if boosted:
        # 40 surplus split 1:1.5 -> B gets 30 + 24
        assert plan.targets == pytest.approx({"A": 46, "B": 54})
        assert "SLO boost for HIGHPRI" in next(c.why for c in plan.changes if c.share == "B")
    else:
        assert plan.targets == pytest.approx({"A": 50, "B": 50})


# ---------------------------------------------------------------------------------------------
# plan_rebalance: fair-share mode and guard rails


def test_the_best_served_share_gets_weight_one_and_the_others_proportionally_more() -> None:
    snap = snapshot(share("A", 60, 100, weight=1.5), share("B", 40, 100, weight=1.5))
    plan = plan_rebalance(snap, RebalanceConfig(max_step=10))
    assert weights(plan) == {"A": 1.0, "B": 1.5}
    assert plan.reason == "rebalanced" and not plan.is_empty


GUARD_RAILS = [
    pytest.param(
        RebalanceConfig(),
        (1.0, 1.0),
        {"A": 1.0, "B": 1.25},
        id="a weight moves at most one step toward its target",
    ),
    pytest.param(
        RebalanceConfig(max_step=10),
        (1.0, 1.0),
        {"A": 1.0, "B": 1.5},
        id="a large enough step reaches the target in one plan",
    ),
    pytest.param(
        RebalanceConfig(max_step=10, weight_factor_max=1.2),
        (1.0, 1.0),
        {"A": 1.0, "B": 1.2},
        id="the global maximum clips a target above it",
    ),
    pytest.param(
        RebalanceConfig(max_step=10, shares={"B": {"weight_factor_max": 1.1}}),
        (1.0, 1.0),
        {"A": 1.0, "B": 1.1},
        id="a per-share maximum overrides the global one",
    ),
    pytest.param(
        RebalanceConfig(weight_factor_min=0.5),
        (0.01, 1.5),
        {"A": 0.5, "B": 1.5},
        id="a weight below the minimum is brought into bounds in one plan, beyond the step",
    ),
    pytest.param(
        RebalanceConfig(deadband=0.5),
        (1.0, 1.2),
        {"A": 1.0, "B": 1.2},
        id="a change smaller than the deadband is dropped",
    ),
]


@pytest.mark.parametrize(("config", "before", "after"), GUARD_RAILS)
def test_guard_rails(config, before, after) -> None:
    # GIVEN 60/40 entitlements, both shares hungry: the target weights are 1.0 / 1.5
    snap = snapshot(share("A", 60, 100, weight=before[0]), share("B", 40, 100, weight=before[1]))
    assert weights(plan_rebalance(snap, config)) == pytest.approx(after)


def test_a_plan_within_the_deadband_is_empty_and_says_so() -> None:
    snap = snapshot(share("A", 60, 100, weight=1.0), share("B", 40, 100, weight=1.47))
    plan = plan_rebalance(snap, DEFAULTS)
    assert plan.is_empty and plan.reason == "within deadband"
    assert next(c for c in plan.changes if c.share == "B").why.startswith("within deadband")


@pytest.mark.parametrize(
    ("last_applied_at", "reason"),
    [
        pytest.param(NOW - 60, "cooldown", id="a plan within the cooldown is empty"),
        pytest.param(NOW + 60, "cooldown", id="a last apply in the future counts as within the cooldown"),
        pytest.param(
            NOW - DEFAULTS.cooldown_seconds, "rebalanced", id="a plan after the cooldown moves weights"
        ),
        pytest.param(None, "rebalanced", id="a queue never rebalanced has no cooldown"),
    ],
)
def test_cooldown(last_applied_at, reason) -> None:
    snap = snapshot(
        share("A", 60, 100, running=80),
        share("B", 40, 100, running=20),
        last_applied_at=last_applied_at,
        ledger_as_of=NOW - 600,
    )
    plan = plan_rebalance(snap, DEFAULTS)
    assert plan.reason == reason
    assert plan.is_empty == (reason == "cooldown")
    # THEN the ledger is kept up to date even while the weights wait
    assert plan.ledger["B"].lent > 0 and plan.ledger_as_of == NOW


def test_no_demand_anywhere_gives_an_empty_plan() -> None:
    plan = plan_rebalance(snapshot(share("A", 60, 0, weight=2.0), share("B", 40, 0, weight=3.0)), DEFAULTS)
    assert plan.is_empty and plan.reason == "no demand"
    assert weights(plan) == {"A": 2.0, "B": 3.0}


def test_a_share_without_demand_keeps_its_weight_while_the_others_move() -> None:
    snap = snapshot(share("A", 60, 100, weight=3.0), share("B", 40, 0, weight=1.0))
    plan = plan_rebalance(snap, DEFAULTS)
    assert weights(plan) == {"A": 2.4, "B": 1.0}
    assert next(c for c in plan.changes if c.share == "B").why.startswith("no demand")


def test_a_zero_entitlement_share_squeezed_out_heads_for_the_maximum_weight() -> None:
    # GIVEN a best-effort share with no entitlement while the entitled shares use everything
    snap = snapshot(share("A", 60, 100), share("B", 40, 100), share("C", 0, 50, running=0, weight=50.0))
    plan = plan_rebalance(snap, RebalanceConfig(max_step=10))
    assert plan.targets["C"] == 0
    assert weights(plan)["C"] == DEFAULTS.weight_factor_max


def test_weight_factors_sum_instances_over_instance_types() -> None:
    snap = ShareSnapshot(
        now=NOW,
        mode=SchedulingMode.FAIRSHARE,
        capacity={P4: 100, P5: 20},
        shares=(
            ShareState("A", {P4: 60, P5: 20}, {P4: 100, P5: 20}, {P4: 60, P5: 20}, weight_factor=1.0),
            ShareState("B", {P4: 40}, {P4: 100}, {P4: 40}, weight_factor=1.0),
        ),
    )
    plan = plan_rebalance(snap, RebalanceConfig(max_step=10))
    assert plan.targets == {"A": 80, "B": 40}
    assert weights(plan) == {"A": 1.0, "B": 2.0}


def test_plan_rebalance_accepts_the_whole_shares_config() -> None:
    config = SharesConfig.model_validate(
        {
            "cluster": "search",
            "instance_types": {P4: {"capacity": 100}},
            "tiers": {
                t.value: {"scheduling_priority": p, "wait_slo_seconds": 900}
                for t, p in zip(Tier, (90, 50, 10), strict=True)
            },
            "teams": {
                "A": {"share": "A", "entitlement": {P4: 60}},
                "B": {"share": "B", "entitlement": {P4: 40}},
            },
            "rebalance": {"max_step": 10},
        }
    )
    snap = snapshot(share("A", 60, 100), share("B", 40, 100))
    assert plan_rebalance(snap, config) == plan_rebalance(snap, config.rebalance)
    assert weights(plan_rebalance(snap, config)) == {"A": 1.0, "B": 1.5}


# ---------------------------------------------------------------------------------------------
# Quota mode


QUOTA_CASES = [
    pytest.param(
        {},
        {},
        (100, 10),
        {"A": (60, 50), "B": (40, 0)},
        id="an unlimited borrowLimit is brought into bounds at what the target needs in one plan",
    ),
    pytest.param(
        {},
        {"borrow_limit": 0},
        (100, 10),
        {"A": (60, 25), "B": (40, 0)},
        id="a borrowLimit of 0 grows by at most one step of the reach",
    ),
    pytest.param(
        {"borrow_limit_max": 30},
        {},
        (100, 10),
        {"A": (60, 30), "B": (40, 0)},
        id="the borrowLimit maximum clips what the target needs",
    ),
    pytest.param(
        {"borrow_limit_min": 20},
        {"borrow_limit": 20},
        (50, 10),
        {"A": (60, 20), "B": (40, 20)},
        id="the borrowLimit minimum keeps some borrowing open for shares within their limit",
    ),
    pytest.param(
        {},
        {"strategy": SharingStrategy.LEND},
        (100, 10),
        {"A": (60, -1), "B": (40, -1)},
        id="a LEND share's borrowLimit is left alone",
    ),
    pytest.param(
        {"capacity_limit_min_fraction": 0.5},
        {},
        (100, 10),
        {"A": (60, 50), "B": (32, 0)},
        id="widened bounds let an underused share's limit shrink by one step",
    ),
    pytest.param(
        {"capacity_limit_min_fraction": 0.5},
        {"borrow_limit": 0},
        (100, 100, 45, 55, 60),
        {"A": (60, 0), "B": (55, 0)},
        id="a shrinking limit never goes below what the share is running",
    ),
]


@pytest.mark.parametrize(("rules", "quota", "load", "expected"), QUOTA_CASES)
def test_quota_mode(rules, quota, load, expected) -> None:
    # GIVEN 60/40 quota shares with limits at their entitlements on 100 instances
    running_a, running_b, limit_b = load[2:] if len(load) > 2 else (None, None, None)
    snap = snapshot(
        quota_share("A", 60, load[0], running_a, **quota),
        quota_share("B", 40, load[1], running_b, limit_b, **quota),
    )
    plan = plan_rebalance(snap, RebalanceConfig(manage_borrow_limit=True, **rules))
    after = {c.share: (c.after.capacity_limits[P4], c.after.borrow_limit) for c in plan.changes}
    assert after == expected
    assert all(c.after.strategy == c.before.strategy for c in plan.changes)
    assert sum(limit for limit, _ in after.values()) <= max(
        100, sum(c.before.capacity_limits[P4] for c in plan.changes)
    )


@pytest.mark.parametrize("borrow_limit", [-1, 0, 25])
def test_by_default_quota_plans_leave_borrow_limits_as_they_are(borrow_limit: int) -> None:
    # GIVEN ProdExp-like 60/40 quota shares, A wanting all 100 instances and B only 10 of its 40
    snap = snapshot(
        quota_share("A", 60, 100, borrow_limit=borrow_limit),
        quota_share("B", 40, 10, borrow_limit=borrow_limit),
    )
    # WHEN the default rules plan (limits pinned at the entitlements, borrowLimit not managed)
    plan = plan_rebalance(snap, DEFAULTS)
    # THEN no borrowLimit moves: a cap would only keep A off the instances B leaves idle
    assert {c.share: c.after.borrow_limit for c in plan.changes} == {"A": borrow_limit, "B": borrow_limit}
    assert plan.moved == ()


def test_quota_limit_raises_are_trimmed_to_the_capacity_left() -> None:
    # GIVEN A may grow to 2x its entitlement and B may shrink to half, B barely busy
    rules = RebalanceConfig(capacity_limit_min_fraction=0.5, capacity_limit_max_fraction=2.0)
    snap = snapshot(quota_share("A", 50, 100, borrow_limit=0), quota_share("B", 50, 10, borrow_limit=0))
    plan = plan_rebalance(snap, rules)
    limits = {c.share: c.after.capacity_limits[P4] for c in plan.changes}
    # THEN B steps down to 40 and A only gets the 10 that frees, not its 62 step
    assert limits == {"A": 60, "B": 40}


def test_quota_limits_restore_a_drifted_limit_toward_the_entitlement() -> None:
    snap = snapshot(
        quota_share("A", 60, 100, limit=50, borrow_limit=0), quota_share("B", 40, 100, borrow_limit=0)
    )
    plan = plan_rebalance(snap, DEFAULTS)
    assert {c.share: c.after.capacity_limits[P4] for c in plan.changes} == {"A": 60, "B": 40}


def test_quota_plan_builds_update_quota_share_requests() -> None:
    snap = snapshot(quota_share("A", 60, 100), quota_share("B", 40, 10))
    updates = plan_to_update_quota_share_requests(plan_rebalance(snap, MANAGED_BORROW))
    assert [quota_share_request(update) for update in updates] == [
        {
            "quotaShareArn": "arn:aws:batch:us-east-1:123456789012:quota-share/gpu/A",
            "capacityLimits": [{"maxCapacity": 60, "capacityUnit": P4}],
            "resourceSharingConfiguration": {"strategy": "LEND_AND_BORROW", "borrowLimit": 50},
        },
        {
            "quotaShareArn": "arn:aws:batch:us-east-1:123456789012:quota-share/gpu/B",
            "capacityLimits": [{"maxCapacity": 40, "capacityUnit": P4}],
            "resourceSharingConfiguration": {"strategy": "LEND_AND_BORROW", "borrowLimit": 0},
        },
    ]


def test_quota_requests_need_the_quota_share_arn() -> None:
    snap = snapshot(replace(quota_share("A", 60, 100), quota_share_arn=None), quota_share("B", 40, 10))
    with pytest.raises(InvalidInputError, match="quota_share_arn"):
        plan_to_update_quota_share_requests(plan_rebalance(snap, MANAGED_BORROW))


# ---------------------------------------------------------------------------------------------
# Inputs unchanged, determinism


@pytest.mark.parametrize(
    "snap",
    [
        pytest.param(
            snapshot(
                share("A", 60, 100, running=80, ledger_balance=-5.0, waiting_by_tier={Tier.HIGHPRI: 5}),
                share("B", 40, 100, running=20, weight=2.0),
                tiers={Tier.HIGHPRI: TierWait(2000, 900)},
                ledger_as_of=NOW - 900,
            ),
            id="planning in fair-share mode leaves the snapshot unchanged",
        ),
        pytest.param(
            snapshot(quota_share("A", 60, 100, running=70), quota_share("B", 40, 30, borrow_limit=5)),
            id="planning in quota mode leaves the snapshot unchanged",
        ),
    ],
)
def test_input_snapshot_is_unchanged(snap) -> None:
    before = copy.deepcopy(snap)
    plan = plan_rebalance(snap, MANAGED_BORROW)
    assert snap == before
    assert not plan.is_empty


shares_strategy = st.lists(
    st.tuples(st.integers(0, 60), st.integers(0, 150), st.floats(0.01, 100), st.floats(-1e4, 1e4)),
    min_size=1,
    max_size=5,
)


def random_snapshot(rows, **more) -> ShareSnapshot:
    return snapshot(
        *(
            share(f"s{i}", ent, dem, weight=round(w, 4), ledger_balance=bal)
            for i, (ent, dem, w, bal) in enumerate(rows)
        ),
        capacity=max(1, sum(r[0] for r in rows)),
        **more,
    )


designs = st.sampled_from(list(RebalanceDesign))


@settings(max_examples=examples(100), deadline=None)
@given(shares_strategy, st.randoms(use_true_random=False), designs)
def test_plans_are_deterministic_and_independent_of_share_order(rows, rng, design) -> None:
    config = RebalanceConfig(design=design)
    snap = random_snapshot(rows, ledger_as_of=NOW - 300)
    shuffled = list(snap.shares)
    rng.shuffle(shuffled)
    first = plan_rebalance(snap, config)
    assert plan_rebalance(snap, config) == first
    assert plan_rebalance(replace(snap, shares=tuple(shuffled)), config) == first
    # Every design's ledger is zero-sum over the interval.
    assert sum(e.lent for e in first.ledger.values()) == pytest.approx(
        sum(e.borrowed for e in first.ledger.values())
    )


@settings(max_examples=examples(100), deadline=None)
@given(shares_strategy, st.floats(0.05, 1.0), st.floats(0.0, 0.2), designs)
def test_every_weight_stays_in_bounds_and_within_one_step(rows, max_step, deadband, design) -> None:
    config = RebalanceConfig(max_step=max_step, deadband=deadband, design=design)
    plan = plan_rebalance(random_snapshot(rows), config)
    for change in plan.changes:
        assert config.weight_factor_min <= change.after <= config.weight_factor_max
        assert abs(math.log(change.after / change.before)) <= math.log(1 + max_step) + 1e-9
        if change.moved:
            assert abs(change.after / change.before - 1) >= deadband


@settings(max_examples=examples(60), deadline=None)
@given(shares_strategy, st.floats(0.1, 1.0), designs)
def test_a_steady_snapshot_reaches_a_fixed_point(rows, max_step, design) -> None:
    # GIVEN the same demand at every run; each plan is applied before the next run
    config = RebalanceConfig(max_step=max_step, design=design)
    bound = (
        math.ceil(math.log(config.weight_factor_max / config.weight_factor_min) / math.log(1 + max_step)) + 2
    )
    # Steady means nothing but the plan moves: no ledger balance, since a balance decays run by run
    # and moves the targets with it (a target drifting across the deadband moves again, rightly).
    snap = random_snapshot([(entitled, demand, weight, 0.0) for entitled, demand, weight, _ in rows])
    plans = []
    for _ in range(bound + 3):
        plan = plan_rebalance(snap, config)
        plans.append(plan)
        snap = applied(snap, plan, advance=config.cooldown_seconds)
    # THEN the plans stop moving within the bound and stay empty
    first_empty = next(i for i, p in enumerate(plans) if p.is_empty)
    assert first_empty <= bound
    assert all(p.is_empty for p in plans[first_empty:])


@settings(max_examples=examples(60), deadline=None)
@given(
    st.integers(20, 80),
    st.integers(1, 6),
    st.integers(2, 6),
    st.floats(0.05, 0.5),
    st.floats(0.0, 0.1),
)
def test_alternating_demand_moves_weights_within_the_step_and_does_not_oscillate(
    entitled_a, phase_length, phases, max_step, deadband
) -> None:
    # GIVEN A surges while B idles, then B surges while A idles, and so on
    config = RebalanceConfig(max_step=max_step, deadband=deadband)
    entitled = {"A": entitled_a, "B": 100 - entitled_a}
    snap = snapshot(share("A", entitled["A"], 0), share("B", entitled["B"], 0), ledger_as_of=None)
    history = {"A": [], "B": []}
    for phase in range(phases):
        surging = "AB"[phase % 2]
        for _ in range(phase_length):
            demand = {name: 100 if name == surging else 10 for name in entitled}
            snap = replace(
                snap,
                shares=tuple(
                    replace(s, demand={P4: demand[s.name]}, in_use={P4: min(demand[s.name], s.in_use[P4])})
                    for s in snap.shares
                ),
            )
            plan = plan_rebalance(snap, config)
            for change in plan.changes:
                history[change.share].append((change.before, change.after))
            snap = applied(snap, plan, advance=config.cooldown_seconds)
            # the next run's usage follows this plan's targets
            snap = replace(
                snap,
                shares=tuple(
                    replace(s, in_use={P4: min(s.demand[P4], math.floor(plan.targets[s.name]))})
                    for s in snap.shares
                ),
            )
    for moves in history.values():
        # THEN every move is within one step, and direction changes are bounded by the demand switches
        assert all(abs(math.log(after / before)) <= math.log(1 + max_step) + 1e-9 for before, after in moves)
        signs = [math.copysign(1, after - before) for before, after in moves if after != before]
        flips = sum(1 for x, y in pairwise(signs) if x != y)
        assert flips <= 2 * phases


# ---------------------------------------------------------------------------------------------
# Request shapes, audit and rollback


CURRENT_POLICY = {
    "name": "gpu",
    "arn": ARN,
    "fairsharePolicy": {
        "shareDecaySeconds": 3600,
        "computeReservation": 10,
        "shareDistribution": [
            {"shareIdentifier": "B", "weightFactor": 1.0},
            {"shareIdentifier": "Other*", "weightFactor": 5.0},
        ],
    },
    "tags": {},
}


def test_a_fairshare_plan_builds_the_update_scheduling_policy_request() -> None:
    current = copy.deepcopy(CURRENT_POLICY)
    plan = plan_rebalance(snapshot(share("A", 60, 100, weight=2.0), share("B", 40, 100)), DEFAULTS)
    request = scheduling_policy_request(
        plan_to_update_scheduling_policy(plan, SchedulingPolicy.from_dict(current))
    )
    assert request == {
        "arn": ARN,
        "fairsharePolicy": {
            "shareDecaySeconds": 3600,
            "computeReservation": 10,
            "shareDistribution": [
                {"shareIdentifier": "B", "weightFactor": 1.25},
                {"shareIdentifier": "Other*", "weightFactor": 5.0},
                {"shareIdentifier": "A", "weightFactor": 1.6},
            ],
        },
    }
    assert current == CURRENT_POLICY


@pytest.mark.parametrize(
    ("build", "plan_mode", "match"),
    [
        pytest.param(
            "policy", SchedulingMode.QUOTA, "plan.mode", id="a quota plan cannot update a scheduling policy"
        ),
        pytest.param(
            "quota", SchedulingMode.FAIRSHARE, "plan.mode", id="a fair-share plan cannot update quota shares"
        ),
    ],
)
def test_request_builders_reject_the_other_mode(build, plan_mode, match) -> None:
    plan = RebalancePlan(created_at=NOW, mode=plan_mode, changes=(), reason="rebalanced")
    with pytest.raises(InvalidInputError, match=match):
        if build == "policy":
            plan_to_update_scheduling_policy(plan, SchedulingPolicy.from_dict(CURRENT_POLICY))
        else:
            plan_to_update_quota_share_requests(plan)


def test_a_share_covered_by_a_prefix_entry_cannot_get_its_own_weight() -> None:
    plan = plan_rebalance(snapshot(share("A", 60, 100), share("OtherTeam", 40, 100)), DEFAULTS)
    with pytest.raises(InvalidInputError) as raised:
        plan_to_update_scheduling_policy(plan, SchedulingPolicy.from_dict(CURRENT_POLICY))
    assert raised.value.field == "shareDistribution.OtherTeam"


@pytest.mark.parametrize(
    "snap",
    [
        pytest.param(
            snapshot(
                share("A", 60, 100, weight=2.0), share("B", 40, 100, weight=1.0), share("C", 0, 0, weight=7.0)
            ),
            id="rolling back a fair-share plan restores the previous weights",
        ),
        pytest.param(
            snapshot(quota_share("A", 60, 100), quota_share("B", 40, 10, borrow_limit=5)),
            id="rolling back a quota plan restores the previous quota settings",
        ),
    ],
)
def test_rollback_restores_the_state_before_an_applied_plan(snap) -> None:
    plan = plan_rebalance(snap, MANAGED_BORROW)
    assert not plan.is_empty
    audit = json.loads(json.dumps(plan.to_audit()))  # as stored and read back
    rollback = rollback_plan(audit, now=NOW + 60)
    # THEN applying the rollback to the applied state gives the original settings back
    restored = applied(applied(snap, plan, 0), replace(rollback, changes=_complete(rollback, plan)), 0)
    assert {s.name: (s.weight_factor, s.quota) for s in restored.shares} == {
        s.name: (s.weight_factor, s.quota) for s in snap.shares
    }
    assert all(c.why.startswith("rollback") for c in rollback.changes)
    assert {c.share for c in rollback.changes} == {c.share for c in plan.moved}
    assert rollback.created_at == NOW + 60 and not rollback.ledger


def _complete(rollback: RebalancePlan, plan: RebalancePlan) -> tuple:
    """The rollback's changes plus 'held' entries for shares it leaves alone, so ``applied`` sees all."""
    touched = {c.share for c in rollback.changes}
    return rollback.changes + tuple(
        replace(c, before=c.after) for c in plan.changes if c.share not in touched
    )


def test_a_rollback_plan_builds_requests_like_any_plan() -> None:
    snap = snapshot(share("A", 60, 100, weight=2.0), share("B", 40, 100))
    plan = plan_rebalance(snap, DEFAULTS)
    after = scheduling_policy_request(
        plan_to_update_scheduling_policy(plan, SchedulingPolicy.from_dict(CURRENT_POLICY))
    )
    rollback = scheduling_policy_request(
        plan_to_update_scheduling_policy(rollback_plan(plan.to_audit()), SchedulingPolicy.from_dict(after))
    )
    weights_back = {
        e["shareIdentifier"]: e["weightFactor"] for e in rollback["fairsharePolicy"]["shareDistribution"]
    }
    assert weights_back == {"A": 2.0, "B": 1.0, "Other*": 5.0}


def test_rollback_rejects_something_that_is_not_an_audit_record() -> None:
    with pytest.raises(InvalidInputError) as raised:
        rollback_plan({"changes": []})
    assert raised.value.field == "audit_before"


# ---------------------------------------------------------------------------------------------
# Snapshot and config validation


@pytest.mark.parametrize(
    ("build", "field"),
    [
        pytest.param(
            lambda: share("A", 60, 10, running=20),
            "shares.A.in_use.ml.p4d.24xlarge",
            id="more running than demanded is rejected",
        ),
        pytest.param(
            lambda: snapshot(share("A", 60, 10), share("A", 40, 10)),
            "shares",
            id="a share listed twice is rejected",
        ),
        pytest.param(
            lambda: ShareSnapshot(NOW, SchedulingMode.FAIRSHARE, {P5: 10}, (share("A", 1, 1),)),
            "shares.A.entitlement.ml.p4d.24xlarge",
            id="an instance type without capacity is rejected",
        ),
        pytest.param(
            lambda: snapshot(share("A", 60, 10, weight=None)),
            "shares.A.weight_factor",
            id="a fair-share snapshot needs every share's weight",
        ),
        pytest.param(
            lambda: snapshot(quota_share("A", 60, 10), share("B", 40, 10)),
            "shares.B.quota",
            id="a quota snapshot needs every share's quota settings",
        ),
        pytest.param(
            lambda: share("A", 60, 10, weight=WEIGHT_FACTOR_MAX * 2),
            "shares.A.weight_factor",
            id="a weight outside the API range is rejected",
        ),
        pytest.param(
            lambda: QuotaSettings({P4: 0}), f"capacityLimits.{P4}", id="a zero capacity limit is rejected"
        ),
    ],
)
def test_bad_snapshots_are_rejected_naming_the_field(build, field) -> None:
    with pytest.raises(InvalidInputError) as raised:
        build()
    assert raised.value.field == field
    assert raised.value.fix


@pytest.mark.parametrize(
    ("rules", "field"),
    [
        pytest.param(
            {"weight_factor_min": 2.0, "weight_factor_max": 1.0},
            "rebalance.weight_factor_min",
            id="a minimum weight above the maximum is a config error",
        ),
        pytest.param(
            {"shares": {"A": {"weight_factor_min": 200.0}}},
            "rebalance.shares.A.weight_factor_min",
            id="a per-share minimum above the global maximum is a config error",
        ),
        pytest.param(
            {"borrow_limit_min": 50, "borrow_limit_max": 10},
            "rebalance.borrow_limit_min",
            id="a borrowLimit minimum above the maximum is a config error",
        ),
    ],
)
def test_rebalance_config_bounds_must_be_ordered(rules, field) -> None:
    with pytest.raises(ConfigError) as raised:
        RebalanceConfig(**rules)
    assert raised.value.field == field


def test_rebalance_overrides_must_name_a_team_share() -> None:
    with pytest.raises(ConfigError) as raised:
        SharesConfig.model_validate(
            {
                "cluster": "search",
                "instance_types": {P4: {"capacity": 100}},
                "tiers": {t.value: {"scheduling_priority": 1, "wait_slo_seconds": 1} for t in Tier},
                "teams": {"A": {"share": "A", "entitlement": {P4: 60}}},
                "rebalance": {"shares": {"Nobody": {"weight_factor_max": 5}}},
            }
        )
    assert raised.value.field == "rebalance.shares.Nobody"
