"""The what-if's long-run measures (disparity, lending and paid-back share) and the shipped policy
(fairshare+reclaim+rebalance)."""

from __future__ import annotations

import pytest
from gpusim.whatif.config import Policy, SharesMapping, WhatIfConfig
from gpusim.whatif.lending import Lending, ledger_json
from gpusim.whatif.run import PolicyRun, disparity
from gpusim.whatif.scenario import build_scenario
from shareplane.domain.config.shares import Tier
from shareplane.domain.shares.lending import loans

from tests.sim.traces import synthetic_trace


def lend(entitled: list[int], series: list[tuple[float, list[int]]]) -> Lending:
    """A ``Lending`` fed a hand-built series of (seconds, units held per team)."""
    lending = Lending(entitled)
    for seconds, held in series:
        lending.advance(held, seconds)
    return lending


def test_a_team_that_borrows_back_what_it_lent_is_paid_back_in_full() -> None:
    # GIVEN two teams entitled to 2 units each: A idle while B holds 4, then A holds 4 while B is idle
    lending = lend([2, 2], [(10.0, [0, 4]), (10.0, [4, 0])])
    # THEN each lent 20 unit-seconds and got all of them back
    assert lending.lent == [20.0, 20.0] and lending.paid_back == [20.0, 20.0]
    assert lending.paid_back_share(0) == lending.paid_back_share(1) == 1.0


def test_a_team_never_paid_back_has_share_zero_and_one_that_never_lent_none() -> None:
    lending = lend([2, 2], [(10.0, [0, 4]), (5.0, [2, 2])])
    assert lending.paid_back_share(0) == 0.0
    assert lending.paid_back_share(1) is None


def test_a_partial_payback_and_a_team_at_its_entitlement_neither_lends_nor_is_paid() -> None:
    # A lends 2 for 10 s, then holds 1 beyond its entitlement for 10 s while B is 1 short
    lending = lend([2, 2, 2], [(10.0, [0, 4, 2]), (10.0, [3, 1, 2])])
    assert lending.paid_back_share(0) == 0.5
    assert lending.lent[2] == lending.paid_back[2] == 0.0


def test_what_is_on_loan_is_split_in_proportion_so_nothing_is_lent_twice() -> None:
    # Two teams leave 2 units idle each while one holds 3 beyond its entitlement: 3 on loan, not 4
    lending = lend([2, 2, 2], [(1.0, [0, 0, 5])])
    assert lending.lent == [1.5, 1.5, 0.0] and lending.paid_back == [0.0, 0.0, 3.0]
    # One team lends 2 while two hold 2 beyond theirs: each is paid back 1
    lending = lend([2, 2, 2, 2], [(1.0, [0, 3, 3, 2])])
    assert lending.lent == [2.0, 0.0, 0.0, 0.0] and lending.paid_back == [0.0, 1.0, 1.0, 0.0]


def test_the_ledger_over_time_shows_a_loan_and_its_payback_bucket_by_bucket() -> None:
    # GIVEN two teams entitled to 2 units each and buckets of 10 s: A idle while B holds 4 for 15 s,
    # then A holds 4 while B is idle for 15 s
    lending = Lending([2, 2], buckets=3, width=10.0)
    lending.advance([0, 4], 15.0)
    lending.advance([4, 0], 15.0)
    # THEN by the end of each bucket A had lent 20, 30, 30 and been paid back 0, 10, 30 unit-seconds:
    # its balance (lent - paid back) rises to 20, then falls back to 0 once B has paid it all back
    assert lending.lent_series(0) == [20.0, 30.0, 30.0]
    assert lending.paid_back_series(0) == [0.0, 10.0, 30.0]
    # and B is A's mirror: paid back (it borrowed) first, then it lent
    assert lending.lent_series(1) == [0.0, 10.0, 30.0]
    assert lending.paid_back_series(1) == [20.0, 30.0, 30.0]
    # the totals are the series' last points
    assert lending.lent == [30.0, 30.0] and lending.paid_back == [30.0, 30.0]
    assert lending.paid_back_share(0) == 1.0


def test_the_rule_at_an_instant_is_the_ledger_s_one_definition() -> None:
    assert loans([0, 4], [2, 2]) == ([2.0, 0.0], [0.0, 2.0])
    assert loans([0, 0, 5], [2, 2, 2]) == ([1.5, 1.5, 0.0], [0.0, 0.0, 3.0])
    # nobody beyond its entitlement: nothing is on loan, however idle a team is
    assert loans([0, 2], [2, 2]) == ([0.0, 0.0], [0.0, 0.0])


def test_the_ledger_json_is_compact_and_ends_at_the_totals() -> None:
    lent = {"A": [float(k) for k in range(1, 201)]}
    paid = {"A": [0.5 * k for k in range(1, 201)]}
    data = ledger_json(0.25, lent, paid, "gpu_hours", points=50)
    # every 4th bucket's end, the last one included
    assert len(data["hours"]) == 50 and data["hours"][0] == 1.0 and data["hours"][-1] == 50.0
    assert data["lent_gpu_hours"]["A"][-1] == 200.0 and data["paid_back_gpu_hours"]["A"][-1] == 100.0
    # a length that does not divide still ends at the last bucket
    data = ledger_json(1.0, {"A": [1.0, 2.0, 3.0]}, {"A": [0.0, 0.0, 1.0]}, "instance_hours", points=2)
    assert data == {
        "hours": [2.0, 3.0],
        "lent_instance_hours": {"A": [2.0, 3.0]},
        "paid_back_instance_hours": {"A": [0.0, 1.0]},
    }


def test_disparity_is_the_largest_ratio_over_the_smallest() -> None:
    assert disparity([1.2, 1.0, 0.8]) == pytest.approx(1.5)
    assert disparity([1.0, 1.0]) == 1.0
    assert disparity([]) == 1.0
    # A team with work that received nothing: no finite disparity
    assert disparity([1.3, 0.0]) is None


SMALL_CONFIG = WhatIfConfig(shares=SharesMapping(top_k=3))


@pytest.fixture(scope="module")
def shipped_run() -> PolicyRun:
    """fairshare+reclaim+rebalance on the synthetic trace, seed 3, replayed to the end."""
    run = PolicyRun(build_scenario(synthetic_trace(), SMALL_CONFIG, seed=3), Policy.RECLAIM_REBALANCE, seed=3)
    run.replay()
    return run


def test_the_shipped_policy_rebalances_team_weights_on_the_team_tier_layout(shipped_run) -> None:
    # THEN the rebalancer moved the team weights, and every own-tier identifier follows its team's
    # weight x the tier multiplier while the plain identifier carries the tier charge
    run = shipped_run
    assert run.applied > 0 and run.reclaim is not None
    live = {w.share_identifier: w.weight_factor for w in run.queue.policy.weights}
    multiplier = SMALL_CONFIG.tiers[Tier.HIGHPRI].weight_multiplier
    for team, weight in run.weights.items():
        assert live[team + Tier.HIGHPRI.value] == pytest.approx(round(weight * multiplier, 4))
        assert live[team] == run.plain_weights[team]
        assert live[team] == pytest.approx(round(weight * run.tier_usage[team].charge, 4))


def test_the_shipped_policy_reports_every_measure_per_team(shipped_run) -> None:
    run = shipped_run
    result = run.result()
    teams = set(run.scenario.shares)
    # The ratios and lending are per team: a team's tier identifiers count together.
    assert set(result.team_entitlement_ratio) == set(result.lent_gpu_hours) == teams
    assert set(result.paid_back_share) == teams
    ratios = [
        result.team_entitlement_ratio[s] for i, s in enumerate(run.scenario.shares) if run.meter.owed[i]
    ]
    assert result.disparity == pytest.approx(max(ratios) / min(ratios))
    assert all(v >= 0 for v in result.lent_gpu_hours.values()) and sum(result.lent_gpu_hours.values()) > 0
    for team, lent in result.lent_gpu_hours.items():
        assert (result.paid_back_share[team] is None) == (lent == 0)
    # What was lent over the window is what was borrowed.
    lending = run.meter.lending
    assert sum(lending.lent) == pytest.approx(sum(lending.paid_back))
    summary = result.summary()
    assert {"disparity", "lent_gpu_hours", "paid_back_share", "ledger"} <= set(summary)


def test_the_ledger_series_end_at_the_totals_bucket_by_bucket(shipped_run) -> None:
    run = shipped_run
    result = run.result()
    buckets = run.scenario.config.report_buckets
    for team, lent in result.lent_gpu_hours.items():
        series, paid = result.lent_series[team], result.paid_back_series[team]
        assert len(series) == len(paid) == buckets
        # cumulative: never falls, and its last point is the total (one definition)
        assert series == sorted(series) and paid == sorted(paid)
        assert series[-1] == lent
        share = result.paid_back_share[team]
        assert share is None or paid[-1] / series[-1] == share
    assert result.bucket_hours * buckets == pytest.approx(run.scenario.window / 3600)
    # the JSON carries the series, compact, ending at the totals as the JSON rounds them
    ledger = result.summary()["ledger"]
    assert len(ledger["hours"]) <= 50 and ledger["hours"][-1] == pytest.approx(
        run.scenario.window / 3600, abs=1e-3
    )
    for team, lent in result.summary()["lent_gpu_hours"].items():
        assert ledger["lent_gpu_hours"][team][-1] == lent
        assert ledger["paid_back_gpu_hours"][team][-1] == round(result.paid_back_series[team][-1], 3)
