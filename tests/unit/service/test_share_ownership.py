"""The template owns the baseline, the rebalancer the value in force: a stack update's reset is undone.

A "stack update" here is what CloudFormation sends: the scheduling policy's or quota shares'
properties exactly as ``shareplane config render`` writes them into template.yaml.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shareplane.domain.config.shares import SchedulingMode, SharesConfig
from shareplane.domain.shares.ownership import baseline_settings, reconcile, same_setting
from shareplane.domain.shares.rebalance import QuotaSettings
from shareplane.service.rebalance_shares import rebalance_shares
from shareplane_cli import queue_template

from tests.fakes.metrics import FakeMetrics
from tests.fakes.rebalance_world import NOW, shares_config
from tests.fakes.share_store import FakeShareStore
from tests.properties import examples
from tests.unit.service.test_rebalance_shares import SETTINGS, TICK, quota_world, tiered_world, world

LATER = NOW + 300
LATER_TICK = "2026-03-16T22:30:00Z"
LAST_TICK = "2026-03-16T22:35:00Z"


def stack_update_fairshare(batch: Any, config: SharesConfig) -> None:
    """CloudFormation updating GpuSchedulingPolicy: the whole FairsharePolicy as the template renders it."""
    rendered = queue_template.fairshare_policy(config)
    batch.policy["fairsharePolicy"] = {
        "shareDecaySeconds": rendered["ShareDecaySeconds"],
        "computeReservation": rendered["ComputeReservation"],
        "shareDistribution": [
            {"shareIdentifier": e["ShareIdentifier"], "weightFactor": e["WeightFactor"]}
            for e in rendered["ShareDistribution"]
        ],
    }


def stack_update_quota(batch: Any, config: SharesConfig) -> None:
    """CloudFormation updating each AWS::Batch::QuotaShare to its rendered limits and sharing settings."""
    for share in batch.quota_shares:
        props = queue_template.quota_share(config, share["quotaShareName"])["Properties"]
        sharing = {"strategy": props["ResourceSharingConfiguration"]["Strategy"]}
        if "BorrowLimit" in props["ResourceSharingConfiguration"]:
            sharing["borrowLimit"] = props["ResourceSharingConfiguration"]["BorrowLimit"]
        share["capacityLimits"] = [
            {"capacityUnit": lim["CapacityUnit"], "maxCapacity": lim["MaxCapacity"]}
            for lim in props["CapacityLimits"]
        ]
        share["resourceSharingConfiguration"] = sharing


def live_weights(batch: Any) -> dict[str, float]:
    return {
        e["shareIdentifier"]: e["weightFactor"] for e in batch.policy["fairsharePolicy"]["shareDistribution"]
    }


def run(batch: Any, store: FakeShareStore, config: SharesConfig, tick: str, now: float, **kw: Any):
    return rebalance_shares(tick, now, config, kw.get("settings", SETTINGS), batch, store, FakeMetrics())


@pytest.mark.parametrize("layout", ["team", "team_tier"])
def test_a_stack_update_that_resets_the_weights_is_undone_by_the_next_run(layout: str) -> None:
    # GIVEN the rebalancer moved ProdExp2's weight 1.0 -> 1.25 (in team_tier: on each of its identifiers)
    config = shares_config(share_layout=layout)
    if layout == "team":
        batch, store, _ = world({"ProdExp1": 1.0, "ProdExp2": 1.0})
    else:
        batch, store, _ = tiered_world(config, {"ProdExp1": 1.0, "ProdExp2": 1.0})
    assert run(batch, store, config, TICK, NOW).action == "applied"
    in_force = live_weights(batch)
    assert in_force["ProdExp2"] == 1.25
    # WHEN a stack update writes the template's baseline back (ProdExp2: 60/40 = 1.5)
    stack_update_fairshare(batch, config)
    assert live_weights(batch)["ProdExp2"] == 1.5
    # THEN the next run restores the rebalancer's values, every identifier, before it plans anything
    outcome = run(batch, store, config, LATER_TICK, LATER)
    assert outcome.action == "restored"
    assert live_weights(batch) == in_force
    if layout == "team_tier":
        assert (in_force["ProdExp2HIGHPRI"], in_force["ProdExp1HIGHPRI"]) == (0.0625, 0.05)
    # ... with an audit record of its own: what the update put there, what came back, and why
    record = next(r for r in store.records.values() if r["kind"] == "restore")
    assert record["status"] == "APPLIED" and record["before"] == {"ProdExp2": 1.5}
    assert record["after"] == {"ProdExp2": 1.25}
    assert "stack update reset it to the template's baseline 1.5" in record["why"]["ProdExp2"]
    assert store.state["latest"]["targets"] == {"ProdExp1": 60.0, "ProdExp2": 40.0}  # the last plan's
    # AND a later run finds nothing to restore (the values are in force)
    assert run(batch, store, config, LAST_TICK, LATER + 300).action != "restored"


def test_switched_to_advisory_the_rebalancer_restores_nothing_and_lets_its_values_go() -> None:
    # GIVEN the rebalancer moved ProdExp2 1.0 -> 1.25 in apply mode
    batch, store, _ = world({"ProdExp1": 1.0, "ProdExp2": 1.0})
    assert run(batch, store, shares_config(), TICK, NOW).action == "applied"
    # WHEN the mode is switched to advisory and a stack update writes the baseline back (ProdExp2 1.5)
    advisory = shares_config(rebalance={"mode": "advisory"})
    stack_update_fairshare(batch, advisory)
    outcome = run(batch, store, advisory, LATER_TICK, LATER + 3600)
    # THEN the baseline stands: no restore, not even an advisory one, and no value is held in force
    assert outcome.action != "restored" and live_weights(batch)["ProdExp2"] == 1.5
    assert not any(r["kind"] == "restore" for r in store.records.values())
    assert store.state["overrides"] == {}


def test_a_changed_baseline_wins_over_the_rebalancers_memory() -> None:
    # GIVEN the rebalancer moved ProdExp2 to 1.25 over a 60/40 baseline
    config = shares_config()
    batch, store, _ = world({"ProdExp1": 1.0, "ProdExp2": 1.0})
    run(batch, store, config, TICK, NOW)
    # WHEN an operator changes the entitlements to 50/50 and deploys (ProdExp2's baseline 1.5 -> 1.0)
    data = config.model_dump(mode="json")
    data["teams"]["ProdExp1"]["entitlement"] = {"ml.p4d.24xlarge": 50}
    data["teams"]["ProdExp2"]["entitlement"] = {"ml.p4d.24xlarge": 50}
    changed = SharesConfig.model_validate(data)
    stack_update_fairshare(batch, changed)
    # THEN the new baseline stands: nothing is restored and the override is let go
    outcome = run(batch, store, changed, LATER_TICK, LATER)
    assert outcome.action != "restored"
    assert not any(r["kind"] == "restore" for r in store.records.values())
    assert "ProdExp2" not in store.state.get("overrides", {})


def test_a_value_set_by_hand_is_planned_from_not_restored() -> None:
    config = shares_config()
    batch, store, _ = world({"ProdExp1": 1.0, "ProdExp2": 1.0})
    run(batch, store, config, TICK, NOW)
    # WHEN someone sets ProdExp2 to 2.0 with UpdateSchedulingPolicy (neither the override nor the baseline)
    batch.policy["fairsharePolicy"]["shareDistribution"][1]["weightFactor"] = 2.0
    outcome = run(batch, store, config, LATER_TICK, LATER)
    assert outcome.action != "restored"
    assert "ProdExp2" not in store.state.get("overrides", {})


def test_quota_limits_reset_by_a_stack_update_are_restored() -> None:
    # GIVEN the rebalancer bounded the borrow limits (ProdExp1 25, ProdExp2 0) of unlimited quota shares
    config = shares_config(mode="quota", rebalance={"manage_borrow_limit": True})
    batch, store, _ = quota_world()
    assert run(batch, store, config, TICK, NOW).action == "applied"
    in_force = {
        s["quotaShareName"]: s["resourceSharingConfiguration"]["borrowLimit"] for s in batch.quota_shares
    }
    assert in_force == {"ProdExp1": 25, "ProdExp2": 0}
    # WHEN a stack update writes each quota share's rendered settings back (borrowLimit -1)
    stack_update_quota(batch, config)
    # THEN the next run restores both, one UpdateQuotaShare each
    batch.updates.clear()
    outcome = run(batch, store, config, LATER_TICK, LATER)
    assert outcome.action == "restored"
    assert [op for op, _ in batch.updates] == ["UpdateQuotaShare", "UpdateQuotaShare"]
    assert {
        s["quotaShareName"]: s["resourceSharingConfiguration"]["borrowLimit"] for s in batch.quota_shares
    } == in_force


def test_in_dry_run_a_restore_is_recorded_not_applied() -> None:
    config = shares_config()
    batch, store, _ = world({"ProdExp1": 1.0, "ProdExp2": 1.0})
    run(batch, store, config, TICK, NOW)
    stack_update_fairshare(batch, config)
    batch.updates.clear()
    dry = SETTINGS.__class__(**{**SETTINGS.__dict__, "dry_run": True})
    outcome = run(batch, store, config, LATER_TICK, LATER, settings=dry)
    assert outcome.action == "dry_run" and batch.updates == []
    assert any(r["kind"] == "restore" and r["status"] == "DRY_RUN" for r in store.records.values())


def test_the_repository_configs_baseline_is_what_a_reset_policy_reads_back_as() -> None:
    # The repository's config: team_tier, HIGHPRI identifiers ProdExp1HIGHPRI / ProdExp2HIGHPRI.
    config = shares_config(share_layout="team_tier")
    assert set(config.share_keys) == {"ProdExp1", "ProdExp2", "ProdExp1HIGHPRI", "ProdExp2HIGHPRI"}
    assert baseline_settings(config) == {"ProdExp1": 1.0, "ProdExp2": 1.5}
    quota = baseline_settings(shares_config(mode="quota"))
    assert quota["ProdExp1"] == QuotaSettings(capacity_limits={"ml.p4d.24xlarge": 60})


weights = st.floats(min_value=0.0001, max_value=999.9999).map(lambda w: round(w, 4))


@settings(max_examples=examples(200), deadline=None)
@given(applied=st.dictionaries(st.sampled_from(["A", "B", "C"]), st.tuples(weights, weights), min_size=1))
def test_after_a_reset_one_reconcile_brings_back_every_override_and_a_second_finds_nothing(
    applied: dict[str, tuple[float, float]],
) -> None:
    overrides = {s: {"setting": a, "baseline": b} for s, (a, b) in applied.items()}
    baseline = {s: b for s, (_, b) in applied.items()}
    # A reset puts every share at its baseline.
    first = reconcile(
        now=NOW, mode=SchedulingMode.FAIRSHARE, overrides=overrides, live=baseline, baseline=baseline
    )
    after = {**baseline, **{c.share: c.after for c in first.restore.moved}}
    assert all(same_setting(after[s], a) for s, (a, _) in applied.items())
    assert first.overrides == overrides and first.dropped == {}
    second = reconcile(
        now=NOW, mode=SchedulingMode.FAIRSHARE, overrides=first.overrides, live=after, baseline=baseline
    )
    assert second.restore.is_empty and second.overrides == overrides


def test_overrides_recorded_in_the_other_mode_are_not_restored() -> None:
    # GIVEN fair-share overrides in the state, then the config moved to quota mode on a new queue
    config = shares_config()
    batch, store, _ = world({"ProdExp1": 1.0, "ProdExp2": 1.0})
    run(batch, store, config, TICK, NOW)
    assert store.state["overrides"]
    quota_batch, _, _ = quota_world()
    stack_update_quota(quota_batch, shares_config(mode="quota"))
    # THEN the quota run restores nothing from them, and records none of them again
    outcome = run(quota_batch, store, shares_config(mode="quota"), LATER_TICK, LATER)
    assert outcome.action != "restored"
    assert store.state["overrides"] == {} or all(
        isinstance(v["setting"], dict) for v in store.state["overrides"].values()
    )


def test_a_team_weight_read_back_through_a_small_multiplier_is_still_the_rebalancers() -> None:
    # Every identifier of the team below multiplier 1: 1.3333 x 0.05 is held as 0.0667, read back 1.334.
    overrides = {"A": {"setting": 1.3333, "baseline": 1.5}}
    verdict = reconcile(
        now=NOW, mode=SchedulingMode.FAIRSHARE, overrides=overrides, live={"A": 1.334}, baseline={"A": 1.5}
    )
    assert verdict.restore.is_empty and verdict.overrides == overrides and verdict.dropped == {}
