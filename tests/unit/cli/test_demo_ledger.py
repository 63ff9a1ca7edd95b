"""The demo's lend/payback ledger: the what-if's rule over the instances each team held, per five minutes."""

from __future__ import annotations

import pytest
from shareplane_cli.demo.usage import ledger


def test_a_team_lends_its_idle_entitlement_then_is_paid_back() -> None:
    # GIVEN two teams entitled to 2 instances each: nothing held for 10 minutes, then A idle while B
    # holds 4 for an hour, then A holds 4 while B is idle for an hour
    timeline = [(600.0, {"B": 4}), (4200.0, {"A": 4}), (7800.0, {})]
    data = ledger(timeline, {"A": 2, "B": 2}, 7800.0)
    # THEN the ledger is read every five minutes, to the end
    hours = data["hours"]
    assert len(hours) == 26 and hours[-1] == 2.167
    lent, paid = data["lent_instance_hours"], data["paid_back_instance_hours"]
    at = {h: k for k, h in enumerate(hours)}
    # nothing on loan before B took more than its entitlement
    assert lent["A"][at[0.167]] == paid["B"][at[0.167]] == 0.0
    # by 1h10: A had lent 2 instances for an hour, B borrowed them, and nobody had paid A back yet
    assert lent["A"][at[1.167]] == paid["B"][at[1.167]] == 2.0
    assert paid["A"][at[1.167]] == lent["B"][at[1.167]] == 0.0
    # halfway through the payback: A's balance (lent - paid back) is half of what it lent
    assert lent["A"][at[1.667]] - paid["A"][at[1.667]] == pytest.approx(1.0)
    # by the end A was paid back all it lent, and B lent back all it borrowed: both balances are 0
    assert (lent["A"][-1], paid["A"][-1]) == (2.0, 2.0) and (lent["B"][-1], paid["B"][-1]) == (2.0, 2.0)


def test_a_team_outside_the_entitlements_is_not_counted_and_nobody_lends_without_a_borrower() -> None:
    data = ledger([(0.0, {"A": 1, "none": 5}), (3600.0, {})], {"A": 2, "B": 2}, 3600.0)
    assert set(data["lent_instance_hours"]) == {"A", "B"}
    assert all(v == 0.0 for s in data["lent_instance_hours"].values() for v in s)
    assert all(v == 0.0 for s in data["paid_back_instance_hours"].values() for v in s)
