"""The tier charge: a team's plain identifier pays for the usage of its own-tier identifiers."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from shareplane.domain.errors import InvalidInputError
from shareplane.domain.shares.fairshare import accrue
from shareplane.domain.shares.tier_charge import TeamTierUsage, charged_plain_weights

WEEK = 604800.0
usages = st.floats(0, 1e9, allow_nan=False)
held = st.integers(0, 500)
seconds = st.floats(0, 1e6, allow_nan=False)


@given(usages, usages)
def test_the_charge_is_all_the_teams_usage_over_its_plain_usage(own: float, plain: float) -> None:
    charge = TeamTierUsage(own, plain).charge
    assert charge >= 1.0
    if plain > 0:
        assert charge == pytest.approx((own + plain) / plain)
    else:
        assert charge == 1.0  # nothing to charge yet: a huge weight would starve the first plain job


@given(usages, usages, held, held, seconds, seconds)
def test_usage_accrues_like_batchs_decayed_usage_however_often_it_is_sampled(
    own: float, plain: float, own_held: int, plain_held: int, first: float, second: float
) -> None:
    # Two runs with the same instances held give what one run over both intervals gives.
    once = TeamTierUsage(own, plain).accrue(own_held, plain_held, first + second, WEEK)
    twice = TeamTierUsage(own, plain).accrue(own_held, plain_held, first, WEEK)
    twice = twice.accrue(own_held, plain_held, second, WEEK)
    assert once.own == pytest.approx(twice.own, rel=1e-9, abs=1e-6)
    assert once.plain == pytest.approx(twice.plain, rel=1e-9, abs=1e-6)
    assert once.own == pytest.approx(accrue(own, own_held, first + second, WEEK), rel=1e-12)


def test_at_steady_state_the_charged_plain_identifier_accrues_the_whole_teams_usage() -> None:
    # A team holding 3 HIGHPRI and 9 plain instances for long: its plain identifier at team weight x
    # charge accrues what the team's 12 instances would at the team weight.
    usage = TeamTierUsage().accrue(3, 9, 50 * WEEK, WEEK)
    assert usage.charge == pytest.approx(12 / 9)
    assert 9 * (1.0 * usage.charge) == pytest.approx(12 * 1.0)


@pytest.mark.parametrize(("own", "plain"), [(-1.0, 0.0), (0.0, math.inf), (math.nan, 1.0)])
def test_a_bad_usage_names_the_field(own: float, plain: float) -> None:
    with pytest.raises(InvalidInputError) as err:
        TeamTierUsage(own, plain)
    assert err.value.field.startswith("tier_usage.")


def test_only_plain_identifiers_whose_charged_weight_changed_are_reweighed() -> None:
    usage = {
        "A": TeamTierUsage(own=50.0, plain=100.0),  # x1.5: 1.0 -> 1.5
        "B": TeamTierUsage(own=1.0, plain=100.0),  # x1.01 of 2.0: 2.02 is set already
        "C": TeamTierUsage(own=0.0, plain=100.0),  # x1.0, but the live 1.2 carries an old charge
        "D": TeamTierUsage(own=5.0, plain=1.0),  # no team weight: not a team in the policy
        "E": TeamTierUsage(own=1e-9, plain=100.0),  # a change below the API's 4 decimals
    }
    moved = charged_plain_weights(
        {"A": 1.0, "B": 2.0, "C": 1.0, "E": 3.0}, {"A": 1.0, "B": 2.02, "C": 1.2, "D": 1.0, "E": 3.0}, usage
    )
    assert moved == {"A": 1.5, "C": 1.0}


@given(st.floats(0.0001, 999.9999), usages, usages)
def test_charged_weights_stay_in_the_apis_range(team_weight: float, own: float, plain: float) -> None:
    moved = charged_plain_weights({"A": team_weight}, {"A": 0.0001}, {"A": TeamTierUsage(own, plain)})
    assert all(0.0001 <= w <= 999.9999 for w in moved.values())
