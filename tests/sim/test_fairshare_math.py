"""Table tests for the production fair-share math in shareplane.domain.shares.fairshare."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from shareplane.domain.errors import InvalidInputError
from shareplane.domain.shares import fairshare


@pytest.mark.parametrize(
    ("cr", "active", "fraction"),
    [
        (50, 1, 0.5),
        (50, 2, 0.25),
        (50, 3, 0.125),
        (25, 1, 0.25),
        (25, 2, 0.0625),
        (25, 3, 0.015625),
        (0, 2, 0.0),
    ],
    ids=[
        "computeReservation 50 holds half the capacity with one active share",
        "computeReservation 50 holds a quarter with two active shares",
        "computeReservation 50 holds an eighth with three active shares",
        "computeReservation 25 holds a quarter with one active share",
        "computeReservation 25 holds 6.25 percent with two active shares",
        "computeReservation 25 holds 1.56 percent with three active shares",
        "computeReservation 0 holds nothing",
    ],
)
def test_reserved_fraction(cr: int, active: int, fraction: float) -> None:
    assert fairshare.reserved_fraction(cr, active) == pytest.approx(fraction)


@pytest.mark.parametrize(
    ("capacity", "cr", "active", "usable"),
    [(8, 50, 1, 4), (8, 50, 2, 6), (8, 50, 3, 7), (1, 50, 1, 1), (100, 25, 2, 94)],
    ids=[
        "8 instances at 50 percent leave 4 usable with one active share",
        "8 instances at 50 percent leave 6 usable with two active shares",
        "8 instances at 50 percent leave 7 usable with three active shares",
        "a one-instance environment is never reserved entirely",
        "the reservation rounds down to whole instances",
    ],
)
def test_usable_capacity(capacity: int, cr: int, active: int, usable: int) -> None:
    assert fairshare.usable_capacity(capacity, cr, active) == usable


@pytest.mark.parametrize(
    ("seconds", "window"),
    [(0, 600.0), (1, 1.0), (3600, 3600.0), (604800, 604800.0)],
    ids=["zero means the 600 s minimum window", "one second", "an hour", "the 7-day maximum"],
)
def test_decay_window(seconds: int, window: float) -> None:
    assert fairshare.decay_window(seconds) == window


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda: fairshare.decay_window(604801), "shareDecaySeconds"),
        (lambda: fairshare.reserved_fraction(100, 1), "computeReservation"),
        (lambda: fairshare.ShareWeight("a", 0.0), "weightFactor"),
        (lambda: fairshare.ShareWeight("a", 1000.0), "weightFactor"),
    ],
    ids=[
        "a decay over seven days is refused",
        "a computeReservation of 100 is refused",
        "a weight of zero is refused",
        "a weight over 999.9999 is refused",
    ],
)
def test_out_of_range_inputs_name_the_field(call, field: str) -> None:
    with pytest.raises(InvalidInputError) as err:
        call()
    assert err.value.field == field


@pytest.mark.parametrize(
    ("share", "weight"),
    [("teamA", 0.5), ("teamB", 2.0), ("teamBx", 3.0), ("other", 1.0)],
    ids=[
        "an exact entry gives its weight",
        "a prefix entry covers a matching share",
        "the exact entry wins over a prefix",
        "an unlisted share weighs 1.0",
    ],
)
def test_weight_for(share: str, weight: float) -> None:
    dist = [
        fairshare.ShareWeight("teamA", 0.5),
        fairshare.ShareWeight("teamB*", 2.0),
        fairshare.ShareWeight("teamBx", 3.0),
    ]
    assert fairshare.weight_for(share, dist) == weight


def test_usage_decays_by_e_per_window_when_idle() -> None:
    # GIVEN 100 units of usage and a one-hour window WHEN an hour passes THEN 1/e of it is left
    assert fairshare.decayed(100.0, 3600, 3600.0) == pytest.approx(100.0 / math.e)


def test_constant_accrual_converges_to_rate_times_window() -> None:
    assert fairshare.accrue(0.0, 8 * 0.125, 10 * 3600, 3600.0) == pytest.approx(3600.0, rel=1e-4)


@given(
    usage=st.floats(0, 1e6),
    rate=st.floats(0, 1e3),
    a=st.floats(0, 1e5),
    b=st.floats(0, 1e5),
    window=st.floats(1, 1e6),
)
def test_accrual_does_not_depend_on_how_often_it_is_computed(usage, rate, a, b, window) -> None:
    once = fairshare.accrue(usage, rate, a + b, window)
    twice = fairshare.accrue(fairshare.accrue(usage, rate, a, window), rate, b, window)
    assert twice == pytest.approx(once, rel=1e-9, abs=1e-6)


@pytest.mark.parametrize(
    ("usage", "rate", "window", "expected"),
    [
        (0.0, 0.0, 600.0, 0.0),
        (100.0, 0.0, 600.0, 100.0),
        (0.0, 2.0, 600.0, 1200.0),
        (50.0, 0.125, 3600.0, 500.0),
    ],
    ids=[
        "an idle share with no history stands at zero",
        "an idle share stands at its decayed usage",
        "running jobs count at once as rate times window",
        "history and running jobs add up",
    ],
)
def test_standing(usage, rate, window, expected) -> None:
    assert fairshare.standing(usage, rate, window) == pytest.approx(expected)
