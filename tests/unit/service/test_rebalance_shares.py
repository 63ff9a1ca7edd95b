"""rebalance_shares with fakes: the snapshot it builds, when it applies, dry-run, audit, idempotent ticks."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shareplane.domain.config.shares import RebalanceConfig, RebalanceMode, SchedulingMode, SharesConfig, Tier
from shareplane.domain.errors import ConcurrentUpdateError, InvalidInputError
from shareplane.domain.jobs.lifecycle import JobStatus
from shareplane.domain.shares import fairshare
from shareplane.domain.shares.batch_shares import SchedulingPolicy
from shareplane.domain.shares.metrics import SKIP_REASON_VALUES
from shareplane.domain.shares.observation import tier_wait
from shareplane.domain.shares.rebalance import QuotaSettings, SharingStrategy, TierWait, team_weights
from shareplane.service.rebalance_shares import (
    RebalanceSettings,
    current_weights,
    observe,
    rebalance_shares,
    rollback,
    tier_observations,
)

from tests.fakes.metrics import FakeMetrics
from tests.fakes.rebalance_world import (
    NOW,
    POLICY_ARN,
    QUEUE_ARN,
    fairshare_policy,
    fairshare_snapshot,
    job,
    shares_config,
)
from tests.fakes.share_store import FakeShareStore
from tests.fakes.shares_batch import FakeSharesBatch
from tests.properties import examples

TICK = "2026-03-16T22:25:00Z"
SETTINGS = RebalanceSettings(job_queue="search-p4d-queue", scheduling_policy_arn=POLICY_ARN)
HOUR = 3600.0


def busy_jobs() -> list:
    """ProdExp1 holds 70 and waits for 10 (LOWPRI); ProdExp2 holds 30 and waits for 20 (HIGHPRI, 2 h)."""
    return [
        job(1, "ProdExp1", JobStatus.RUNNING, 40, priority=50, created_ago=3 * HOUR, started_ago=2 * HOUR),
        job(2, "ProdExp1", JobStatus.RUNNING, 30, priority=10, created_ago=HOUR, started_ago=0.5 * HOUR),
        job(3, "ProdExp2", JobStatus.RUNNING, 30, priority=90, created_ago=HOUR, started_ago=0.9 * HOUR),
        job(4, "ProdExp1", JobStatus.RUNNABLE, 10, priority=10, created_ago=600),
        job(5, "ProdExp2", JobStatus.RUNNABLE, 16, priority=90, created_ago=2 * HOUR),
        job(6, "ProdExp2", JobStatus.RUNNABLE, 4, priority=90, created_ago=HOUR),
        # Not ours: another queue's job and a share no team owns.
        job(7, "ProdExp2", JobStatus.RUNNABLE, 50, queue=QUEUE_ARN.replace("p4d", "cpu")),
        job(8, "Intern", JobStatus.RUNNABLE, 9),
    ]


def world(
    weights: dict[str, float], state: dict | None = None
) -> tuple[FakeSharesBatch, FakeShareStore, FakeMetrics]:
    batch = FakeSharesBatch(
        policy=fairshare_policy(weights), snapshot=fairshare_snapshot({"ProdExp1": 70, "ProdExp2": 30})
    )
    return batch, FakeShareStore(jobs=busy_jobs(), state=state), FakeMetrics()


def run(batch: FakeSharesBatch, store: FakeShareStore, metrics: FakeMetrics, tick: str = TICK, **kw):
    return rebalance_shares(
        tick,
        kw.pop("now", NOW),
        kw.pop("config", shares_config()),
        kw.pop("settings", SETTINGS),
        batch,
        store,
        metrics,
    )


# ---------------------------------------------------------------------------------------------------
# Snapshot
# ---------------------------------------------------------------------------------------------------
def test_the_snapshot_holds_batch_usage_table_demand_tier_waits_weights_and_stored_ledger() -> None:
    # GIVEN a ledger item from the last run 5 minutes ago, applied 20 minutes ago
    state = {
        "version": 3,
        "ledgerAsOf": NOW - 300,
        "usageAsOf": NOW - 300,
        "lastAppliedAt": NOW - 1200,
        "shares": {
            "ProdExp1": {"balance": -12.5, "usage": 100.0},
            "ProdExp2": {"balance": 12.5, "usage": 50.0},
        },
    }
    batch, store, _ = world({"ProdExp1": 1.0, "ProdExp2": 1.5}, state)
    # WHEN the rebalancer observes the queue
    observed = observe(shares_config(), SETTINGS, batch, store, store.load_state(), NOW)
    snap = observed.snapshot
    p1, p2 = snap.share("ProdExp1"), snap.share("ProdExp2")
    p4d = "ml.p4d.24xlarge"
    # THEN what runs comes from Batch, what waits from the table (other queues and unknown shares left out)
    assert (p1.in_use, p1.demand, p2.in_use, p2.demand) == ({p4d: 70}, {p4d: 80}, {p4d: 30}, {p4d: 50})
    assert p1.waiting_by_tier == {Tier.LOWPRI: 10} and p2.waiting_by_tier == {Tier.HIGHPRI: 20}
    assert snap.names == ["ProdExp1", "ProdExp2"] and snap.capacity == {p4d: 100}
    assert (p1.weight_factor, p2.weight_factor) == (1.0, 1.5)
    assert (p1.entitlement, p2.entitlement) == ({p4d: 60}, {p4d: 40})
    # ... the ledger and cooldown come from the stored item, usage decays and accrues from it
    assert (p1.ledger_balance, p2.ledger_balance) == (-12.5, 12.5)
    assert (snap.last_applied_at, snap.ledger_as_of) == (NOW - 1200, NOW - 300)
    assert p1.usage_history > 100.0 * 0.9 and p2.usage_history != 50.0
    assert snap.gpus_per_instance == {p4d: 8}
    # ... and HIGHPRI breaches its 15-minute SLO: a job has waited 2 hours and is still waiting
    assert snap.tiers[Tier.HIGHPRI].breached and snap.tiers[Tier.HIGHPRI].p90_seconds == pytest.approx(
        2 * HOUR
    )
    assert observed.actual == {"ProdExp1": 70.0, "ProdExp2": 30.0}
    assert observed.waiting == {"ProdExp1": 10.0, "ProdExp2": 20.0}


def test_shares_beyond_the_snapshots_top_20_are_counted_from_the_table() -> None:
    # GIVEN a snapshot cut at 20 shares that does not list ProdExp2
    held = {f"Other{i}": 1.0 for i in range(19)} | {"ProdExp1": 70.0}
    batch, store, _ = world({"ProdExp1": 1.0, "ProdExp2": 1.5})
    batch.snapshot = fairshare_snapshot(held)
    # THEN ProdExp2's running jobs in the table stand in for the missing entry
    observed = observe(shares_config(), SETTINGS, batch, store, None, NOW)
    assert observed.actual == {"ProdExp1": 70.0, "ProdExp2": 30.0}


@pytest.mark.parametrize(
    ("started", "waiting", "expected"),
    [
        ([(3000, 100)], [], 2900.0),
        ([(3000, 100), (400, 100), (500, 200), (700, 650)], [], 2900.0),
        ([(400, 300)], [5000], 5000.0),
        ([], [100, 200], 200.0),
        ([(7300, 7200)], [], None),
    ],
    ids=[
        "one job that started in the window gives its wait",
        "the p90 of four started jobs is the longest (nearest rank)",
        "a job still waiting longer than every started one sets the p90",
        "with nothing started, the waiting jobs' ages are the p90",
        "a job that started before the window does not count",
    ],
)
def test_tier_wait_p90(started: list, waiting: list, expected: float | None) -> None:
    config = shares_config()
    jobs = [
        job(i, "ProdExp1", JobStatus.RUNNING, priority=90, created_ago=c, started_ago=s)
        for i, (c, s) in enumerate(started)
    ]
    queued = [
        job(100 + i, "ProdExp1", JobStatus.RUNNABLE, priority=90, created_ago=a)
        for i, a in enumerate(waiting)
    ]
    waits = tier_waits(config, jobs, queued, NOW, 3600)
    assert (waits[Tier.HIGHPRI].p90_seconds if Tier.HIGHPRI in waits else None) == pytest.approx(expected)
    assert Tier.LOWPRI not in waits


def tier_waits(
    config: SharesConfig, started: list, waiting: list, now: float, window: int
) -> dict[Tier, TierWait]:
    """Each tier's wait p90 as the rebalancer observes it (tiers with no waits left out)."""
    observed = tier_observations(config, started, waiting, now, window)
    return {tier: wait for tier, o in observed.items() if (wait := tier_wait(o)) is not None}


@settings(max_examples=examples(40), deadline=None)
@given(seed=st.integers(0, 2**32), copies=st.integers(1, 2))
def test_the_snapshot_does_not_depend_on_the_order_the_table_returns_jobs(seed: int, copies: int) -> None:
    batch, store, _ = world({"ProdExp1": 1.0, "ProdExp2": 1.5})
    expected = observe(shares_config(), SETTINGS, batch, store, None, NOW).snapshot
    shuffled = busy_jobs()
    random.Random(seed).shuffle(shuffled)
    store.jobs = shuffled
    assert observe(shares_config(), SETTINGS, batch, store, None, NOW).snapshot == expected


# ---------------------------------------------------------------------------------------------------
# Apply or not
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("weights", "state", "reason"),
    [
        ({"ProdExp1": 1.0, "ProdExp2": 1.5}, None, "deadband"),
        ({"ProdExp1": 1.0, "ProdExp2": 1.0}, {"version": 1, "lastAppliedAt": NOW - 60}, "cooldown"),
    ],
    ids=["weights already at target make an empty plan", "a plan inside the cooldown is empty"],
)
def test_an_empty_plan_makes_no_update_call_but_saves_the_ledger(
    weights: dict, state: dict | None, reason: str
) -> None:
    batch, store, metrics = world(weights, state)
    outcome = run(batch, store, metrics)
    assert outcome.action == "skipped" and batch.updates == [] and store.records == {}
    assert (
        store.state is not None
        and store.state["lastTick"] == TICK
        and store.state["latest"]["applied"] is False
    )
    assert store.state["ledgerAsOf"] == NOW
    assert metrics.named("PlansSkipped") == [(1, {"Queue": "search-p4d-queue", "Reason": reason})]
    assert reason in SKIP_REASON_VALUES
    assert metrics.named("PlansApplied") == []


def test_a_plan_is_applied_once_with_an_audit_record_of_before_after_and_why() -> None:
    # GIVEN equal weights while ProdExp2 (entitled to 40 of 100) is held to 30 and waits
    batch, store, metrics = world({"ProdExp1": 1.0, "ProdExp2": 1.0})
    # WHEN the tick runs
    outcome = run(batch, store, metrics)
    # THEN ProdExp2's weight moves toward 60/40 = 1.5, step-limited to x1.25, in ONE policy update
    assert outcome.action == "applied"
    assert batch.updates == [
        (
            "UpdateSchedulingPolicy",
            {
                "arn": POLICY_ARN,
                "fairsharePolicy": {
                    "shareDecaySeconds": 3600,
                    "computeReservation": 0,
                    "shareDistribution": [
                        {"shareIdentifier": "ProdExp1", "weightFactor": 1.0},
                        {"shareIdentifier": "ProdExp2", "weightFactor": 1.25},
                    ],
                },
            },
        )
    ]
    # ... and the audit record says what moved, from what, to what, and why
    (record,) = store.records.values()
    assert record["status"] == "APPLIED" and record["appliedAt"] == NOW
    assert (record["tickId"], record["planId"], record["kind"]) == (TICK, outcome.plan_id, "plan")
    assert record["before"] == {"ProdExp2": 1.0} and record["after"] == {"ProdExp2": 1.25}
    assert "target 40 instances" in record["why"]["ProdExp2"] and "step-limited" in record["why"]["ProdExp2"]
    assert record["plan"]["targets"] == {"ProdExp1": 60.0, "ProdExp2": 40.0}
    assert record["actual"] == {"ProdExp1": 70.0, "ProdExp2": 30.0}
    assert store.state["lastAppliedAt"] == NOW and store.state["lastPlan"]["planId"] == outcome.plan_id
    # ... and the metrics show target against actual, the weight in force, and one applied plan (per team)
    assert sorted(metrics.named("TargetInstances"), key=lambda m: m[1]["Team"]) == [
        (60.0, {"Queue": "search-p4d-queue", "Team": "ProdExp1"}),
        (40.0, {"Queue": "search-p4d-queue", "Team": "ProdExp2"}),
    ]
    assert (30.0, {"Queue": "search-p4d-queue", "Team": "ProdExp2"}) in metrics.named("ActualInstances")
    assert (1.25, {"Queue": "search-p4d-queue", "Team": "ProdExp2"}) in metrics.named("WeightFactor")
    assert metrics.named("PlansApplied") == [(1, {"Queue": "search-p4d-queue"})]


def test_dry_run_applies_nothing_but_records_and_measures_the_plan() -> None:
    batch, store, metrics = world({"ProdExp1": 1.0, "ProdExp2": 1.0})
    outcome = run(
        batch, store, metrics, settings=RebalanceSettings("search-p4d-queue", POLICY_ARN, dry_run=True)
    )
    assert outcome.action == "dry_run" and batch.updates == []
    (record,) = store.records.values()
    assert record["status"] == "DRY_RUN" and record["after"] == {"ProdExp2": 1.25}
    assert "lastAppliedAt" not in store.state and store.state["latest"]["dryRun"] is True
    assert metrics.named("PlansSkipped") == [(1, {"Queue": "search-p4d-queue", "Reason": "dry_run"})]
    # The weight metric shows what is in force (nothing was applied), the target what the plan wants.
    assert (1.0, {"Queue": "search-p4d-queue", "Team": "ProdExp2"}) in metrics.named("WeightFactor")
    assert (40.0, {"Queue": "search-p4d-queue", "Team": "ProdExp2"}) in metrics.named("TargetInstances")


ADVISORY = shares_config(rebalance={"mode": "advisory"})


def test_advisory_mode_audits_and_measures_the_plan_but_moves_no_weight() -> None:
    # GIVEN the plan that applies ProdExp2 1.0 -> 1.25 in apply mode, and the shipped default mode
    assert RebalanceConfig().mode is RebalanceMode.ADVISORY
    batch, store, metrics = world({"ProdExp1": 1.0, "ProdExp2": 1.0})
    # WHEN the tick runs in advisory mode
    outcome = run(batch, store, metrics, config=ADVISORY)
    # THEN Batch is untouched, and the plan is audited whole as ADVISORY
    assert outcome.action == "advisory" and outcome.reason == "rebalanced" and batch.updates == []
    (record,) = store.records.values()
    assert record["status"] == "ADVISORY" and "appliedAt" not in record
    assert (record["tickId"], record["planId"], record["kind"]) == (TICK, outcome.plan_id, "plan")
    assert record["before"] == {"ProdExp2": 1.0} and record["after"] == {"ProdExp2": 1.25}
    assert record["plan"]["targets"] == {"ProdExp1": 60.0, "ProdExp2": 40.0}
    # ... the ledger and usage carry forward, no cooldown starts and the rebalancer holds no value in force
    assert store.state["lastTick"] == TICK and store.state["ledgerAsOf"] == NOW
    assert store.state["latest"]["applied"] is False and store.state["latest"]["dryRun"] is False
    assert "lastAppliedAt" not in store.state and "lastPlan" not in store.state
    assert store.state["overrides"] == {}
    # ... and the metrics say advisory: the weight in force, the target, no applied plan
    assert metrics.named("PlansSkipped") == [(1, {"Queue": "search-p4d-queue", "Reason": "advisory"})]
    assert "advisory" in SKIP_REASON_VALUES and metrics.named("PlansApplied") == []
    assert (1.0, {"Queue": "search-p4d-queue", "Team": "ProdExp2"}) in metrics.named("WeightFactor")
    assert (40.0, {"Queue": "search-p4d-queue", "Team": "ProdExp2"}) in metrics.named("TargetInstances")
    # AND the next tick plans again from the same weights (nothing was applied, so no cooldown holds it)
    later = run(batch, store, metrics, tick="2026-03-16T22:30:00Z", now=NOW + 300, config=ADVISORY)
    assert later.action == "advisory" and batch.updates == [] and len(store.records) == 2


def test_a_dry_run_in_advisory_mode_is_still_a_dry_run() -> None:
    batch, store, metrics = world({"ProdExp1": 1.0, "ProdExp2": 1.0})
    outcome = run(batch, store, metrics, config=ADVISORY, settings=replace(SETTINGS, dry_run=True))
    assert outcome.action == "dry_run" and batch.updates == []
    (record,) = store.records.values()
    assert record["status"] == "DRY_RUN" and store.state["latest"]["dryRun"] is True


# ---------------------------------------------------------------------------------------------------
# Idempotency
# ---------------------------------------------------------------------------------------------------
def test_a_redelivered_advisory_tick_records_once_and_never_replays_an_older_pending_plan() -> None:
    # GIVEN a plan applied in apply mode whose Batch call never happened (its record PENDING) ...
    batch, store, metrics = world({"ProdExp1": 1.0, "ProdExp2": 1.0})
    batch.fail_updates = 1
    with pytest.raises(ConnectionError):
        run(batch, store, metrics)
    # ... then, the mode switched to advisory, a later tick (outside the cooldown) recorded ADVISORY
    later_tick, later = "2026-03-16T23:25:00Z", NOW + HOUR
    assert run(batch, store, metrics, tick=later_tick, now=later, config=ADVISORY).action == "advisory"
    records = dict(store.records)
    # WHEN that later tick is redelivered
    again = run(batch, store, metrics, tick=later_tick, now=later + 30, config=ADVISORY)
    # THEN nothing is applied (the PENDING plan is not this tick's) and nothing more is recorded
    assert again.action == "duplicate_tick" and batch.updates == [] and store.records == records


@settings(max_examples=examples(60), deadline=None)
@given(deliveries=st.lists(st.integers(0, 5), min_size=1, max_size=10))
def test_in_advisory_mode_any_order_of_deliveries_records_each_tick_at_most_once_and_moves_nothing(
    deliveries: list[int],
) -> None:
    # GIVEN ticks five minutes apart delivered in any order, some of them again (SQS, EventBridge)
    batch, store, metrics = world({"ProdExp1": 1.0, "ProdExp2": 1.0})
    ticks = [(f"2026-03-16T22:{25 + 5 * n:02d}:00Z", NOW + 300 * n) for n in range(6)]
    actions = [
        run(batch, store, metrics, tick=ticks[n][0], now=ticks[n][1] + 7, config=ADVISORY).action
        for n in deliveries
    ]
    # THEN only a tick newer than every one before it runs, and each such tick is audited once, ADVISORY
    newest = [n for i, n in enumerate(deliveries) if all(n > m for m in deliveries[:i])]
    assert [a != "duplicate_tick" for a in actions] == [
        all(n > m for m in deliveries[:i]) for i, n in enumerate(deliveries)
    ]
    assert sorted(r["tickId"] for r in store.records.values()) == [ticks[n][0] for n in newest]
    assert {r["status"] for r in store.records.values()} <= {"ADVISORY"}
    # ... no weight ever moves, and the state names the newest tick
    assert batch.updates == [] and store.state["lastTick"] == ticks[max(deliveries)][0]
    # AND delivering every tick again changes nothing at all
    state, records = dict(store.state), dict(store.records)
    for n in deliveries:
        assert run(batch, store, metrics, tick=ticks[n][0], now=ticks[n][1] + 60, config=ADVISORY).action == (
            "duplicate_tick"
        )
    assert store.state == state and store.records == records and batch.updates == []


def test_a_redelivered_tick_applies_once() -> None:
    batch, store, metrics = world({"ProdExp1": 1.0, "ProdExp2": 1.0})
    first = run(batch, store, metrics)
    # WHEN the same tick arrives again later (EventBridge or SQS redelivery), after the plan applied
    batch.policy = fairshare_policy({"ProdExp1": 1.0, "ProdExp2": 1.0})  # even if Batch drifted back
    again = run(batch, store, metrics, now=NOW + 40)
    assert first.action == "applied" and again.action == "duplicate_tick"
    assert len(batch.updates) == 1 and len(store.records) == 1
    assert metrics.named("PlansSkipped") == [(1, {"Queue": "search-p4d-queue", "Reason": "duplicate_tick"})]


def test_an_older_tick_arriving_after_a_newer_one_does_nothing() -> None:
    batch, store, metrics = world({"ProdExp1": 1.0, "ProdExp2": 1.5})
    run(batch, store, metrics, tick="2026-03-16T22:30:00Z")
    late = run(batch, store, metrics, tick="2026-03-16T22:25:00Z", now=NOW + 10)
    assert late.action == "duplicate_tick" and store.state["lastTick"] == "2026-03-16T22:30:00Z"


def test_a_run_that_dies_before_the_batch_call_is_finished_by_the_redelivery() -> None:
    # GIVEN Batch unreachable for the first update
    batch, store, metrics = world({"ProdExp1": 1.0, "ProdExp2": 1.0})
    batch.fail_updates = 1
    with pytest.raises(ConnectionError):
        run(batch, store, metrics)
    (record,) = store.records.values()
    assert record["status"] == "PENDING" and batch.updates == []
    # WHEN SQS redelivers the tick
    outcome = run(batch, store, metrics, now=NOW + 30)
    # THEN the recorded plan is applied, exactly once, and marked
    assert outcome.action == "replayed" and len(batch.updates) == 1
    assert batch.policy["fairsharePolicy"]["shareDistribution"][1] == {
        "shareIdentifier": "ProdExp2",
        "weightFactor": 1.25,
    }
    assert store.records[(record["createdAt"], record["planId"])]["status"] == "APPLIED"
    assert run(batch, store, metrics, now=NOW + 60).action == "duplicate_tick" and len(batch.updates) == 1


def test_a_racing_writer_makes_the_run_re_read_and_decide_again() -> None:
    batch, store, metrics = world({"ProdExp1": 1.0, "ProdExp2": 1.0})
    store.conflicts = 1
    assert run(batch, store, metrics).action == "applied" and len(batch.updates) == 1


def test_a_state_that_keeps_moving_fails_the_record_for_a_retry() -> None:
    batch, store, metrics = world({"ProdExp1": 1.0, "ProdExp2": 1.0})
    store.conflicts = 10
    with pytest.raises(ConcurrentUpdateError):
        run(batch, store, metrics)
    assert batch.updates == []


# ---------------------------------------------------------------------------------------------------
# Quota mode, rollback
# ---------------------------------------------------------------------------------------------------
def quota_world() -> tuple[FakeSharesBatch, FakeShareStore, FakeMetrics]:
    queue = QUEUE_ARN
    shares = [
        {
            "quotaShareName": name,
            "quotaShareArn": f"{queue}/quota-share/{name}",
            "capacityLimits": [{"maxCapacity": limit, "capacityUnit": "ml.p4d.24xlarge"}],
            "resourceSharingConfiguration": {"strategy": "LEND_AND_BORROW", "borrowLimit": -1},
        }
        for name, limit in (("ProdExp1", 60), ("ProdExp2", 40))
    ]
    snapshot = {
        "queueUtilization": {
            "quotaShareUtilization": {
                "topCapacityUtilization": [
                    {
                        "quotaShareName": "ProdExp1",
                        "capacityUsage": [{"capacityUnit": "ml.p4d.24xlarge", "quantity": 30.0}],
                    },
                    {
                        "quotaShareName": "ProdExp2",
                        "capacityUsage": [{"capacityUnit": "ml.p4d.24xlarge", "quantity": 20.0}],
                    },
                ]
            }
        }
    }
    jobs = [
        job(1, "ProdExp1", JobStatus.RUNNABLE, 50, quota=True, unit="ml.p4d.24xlarge"),
        job(2, "ProdExp2", JobStatus.RUNNABLE, 5, quota=True, unit="ml.p4d.24xlarge"),
    ]
    return FakeSharesBatch(quota_shares=shares, snapshot=snapshot), FakeShareStore(jobs=jobs), FakeMetrics()


def test_quota_mode_sets_borrow_limits_with_update_quota_share() -> None:
    # GIVEN unlimited borrowing; ProdExp1 wants 80 (entitled 60), ProdExp2 wants 25 (entitled 40)
    batch, store, metrics = quota_world()
    managed = shares_config(mode="quota", rebalance={"manage_borrow_limit": True})
    outcome = run(batch, store, metrics, config=managed)
    # THEN each share's borrowLimit is bounded to what its target needs, one UpdateQuotaShare per share
    assert outcome.action == "applied"
    assert [(op, r["quotaShareArn"].rsplit("/", 1)[-1]) for op, r in batch.updates] == [
        ("UpdateQuotaShare", "ProdExp1"),
        ("UpdateQuotaShare", "ProdExp2"),
    ]
    limits = {
        r["quotaShareArn"].rsplit("/", 1)[-1]: r["resourceSharingConfiguration"]["borrowLimit"]
        for _, r in batch.updates
    }
    assert limits == {"ProdExp1": 25, "ProdExp2": 0}
    (record,) = store.records.values()
    assert QuotaSettings.from_dict(record["before"]["ProdExp1"]).borrow_limit == -1
    assert QuotaSettings.from_dict(record["after"]["ProdExp1"]).strategy is SharingStrategy.LEND_AND_BORROW
    assert sorted(v for v, _ in metrics.named("BorrowLimit")) == [0.0, 25.0]


def test_rollback_restores_the_before_values_and_writes_its_own_audit_record() -> None:
    batch, store, metrics = world({"ProdExp1": 1.0, "ProdExp2": 1.0})
    applied = run(batch, store, metrics)
    outcome = rollback(applied.plan_id, NOW + 100, SETTINGS, batch, store)
    assert outcome.action == "applied"
    assert batch.policy["fairsharePolicy"]["shareDistribution"][1]["weightFactor"] == 1.0
    records = sorted(store.records.values(), key=lambda r: r["createdAt"])
    assert [r["kind"] for r in records] == ["plan", "rollback"]
    assert records[1]["rollbackOf"] == applied.plan_id and records[1]["status"] == "APPLIED"
    assert records[1]["before"] == {"ProdExp2": 1.25} and records[1]["after"] == {"ProdExp2": 1.0}
    assert store.state["lastAppliedAt"] == NOW + 100  # the cooldown protects the restore


def test_rollback_of_an_unknown_plan_names_the_option_and_the_fix() -> None:
    batch, store, _ = world({"ProdExp1": 1.0})
    with pytest.raises(InvalidInputError) as err:
        rollback("nope", NOW, SETTINGS, batch, store)
    assert err.value.field == "--rollback" and "--history" in err.value.fix


def test_the_mode_in_the_config_decides_which_api_the_plan_uses() -> None:
    assert shares_config(mode="quota").mode is SchedulingMode.QUOTA


# ---------------------------------------------------------------------------------------------------
# The team x tier layout: the plan stays per team, each identifier gets the team's weight x multiplier
# ---------------------------------------------------------------------------------------------------
MULTIPLIER = {"HIGHPRI": 0.05, "MIDPRI": 0.5, "LOWPRI": 1.0}
TIER_OF_PRIORITY = {90: Tier.HIGHPRI, 50: Tier.MIDPRI, 10: Tier.LOWPRI}
#: The layouts the rebalancer must plan per team in: the repository's (HIGHPRI's own identifier, the
#: other tiers on the team's) and one where every tier has its own identifier.
LAYOUTS = ["own HIGHPRI identifier", "every tier its own identifier"]


def tiered_config(layout: str) -> SharesConfig:
    """config/shares.yaml in the team_tier layout; the second layout marks every tier own_share."""
    config = shares_config(share_layout="team_tier")
    if layout == LAYOUTS[0]:
        return config
    tiers = {
        tier.value: {**c.model_dump(), "own_share": True, "weight_multiplier": MULTIPLIER[tier.value]}
        for tier, c in config.tiers.items()
    }
    return shares_config(share_layout="team_tier", tiers=tiers)


def tiered_world(
    config: SharesConfig, team_weights: dict[str, float]
) -> tuple[FakeSharesBatch, FakeShareStore, FakeMetrics]:
    """busy_jobs() submitted under the layout's identifiers, and a policy rendered from team weights."""
    jobs = [
        replace(
            j,
            share_identifier=config.share_for(
                j.share_identifier, TIER_OF_PRIORITY.get(j.scheduling_priority, Tier.LOWPRI)
            ),
        )
        if j.share_identifier in team_weights
        else j
        for j in busy_jobs()
    ]
    policy = {
        identifier: round(
            team_weights[key.team] * (config.tiers[key.tier].weight_multiplier if key.tier else 1.0), 4
        )
        for identifier, key in sorted(config.share_keys.items())
    }
    # What busy_jobs() run holds: ProdExp1's MIDPRI 40 and LOWPRI 30, ProdExp2's HIGHPRI 30.
    held: dict[str, float] = {}
    for team, tier, instances in (
        ("ProdExp1", Tier.MIDPRI, 40),
        ("ProdExp1", Tier.LOWPRI, 30),
        ("ProdExp2", Tier.HIGHPRI, 30),
    ):
        share = config.share_for(team, tier)
        held[share] = held.get(share, 0) + instances
    batch = FakeSharesBatch(policy=fairshare_policy(policy), snapshot=fairshare_snapshot(held))
    return batch, FakeShareStore(jobs=jobs), FakeMetrics()


@pytest.mark.parametrize("layout", LAYOUTS)
def test_in_the_team_tier_layout_the_snapshot_is_per_team(layout: str) -> None:
    # GIVEN ProdExp1 holding 70 (over two identifiers when every tier has its own) and waiting 10;
    # ProdExp2 holding 30 and waiting 20 under its HIGHPRI identifier
    config = tiered_config(layout)
    batch, store, _ = tiered_world(config, {"ProdExp1": 1.0, "ProdExp2": 1.5})
    snap = observe(config, SETTINGS, batch, store, None, NOW).snapshot
    p4d = "ml.p4d.24xlarge"
    # THEN the rebalancer sees two teams, with the same numbers as under one share per team
    assert snap.names == ["ProdExp1", "ProdExp2"]
    p1, p2 = snap.share("ProdExp1"), snap.share("ProdExp2")
    assert (p1.in_use, p1.demand, p2.in_use, p2.demand) == ({p4d: 70}, {p4d: 80}, {p4d: 30}, {p4d: 50})
    assert p1.waiting_by_tier == {Tier.LOWPRI: 10} and p2.waiting_by_tier == {Tier.HIGHPRI: 20}
    # ... and each team's weight is its identifiers' folded back (the team share's, multiplier 1.0)
    assert (p1.weight_factor, p2.weight_factor) == (1.0, 1.5)
    batch_team, store_team, _ = world({"ProdExp1": 1.0, "ProdExp2": 1.5})
    team_snap = observe(shares_config(), SETTINGS, batch_team, store_team, None, NOW).snapshot
    assert [replace(s, usage_history=0.0) for s in snap.shares] == [
        replace(s, usage_history=0.0) for s in team_snap.shares
    ]


@pytest.mark.parametrize(
    ("layout", "tier_weights"),
    [
        (LAYOUTS[0], {"": 1.0, "HIGHPRI": 0.05}),
        (LAYOUTS[1], {"": 1.0, "HIGHPRI": 0.05, "LOWPRI": 1.0, "MIDPRI": 0.5}),
    ],
    ids=LAYOUTS,
)
def test_in_the_team_tier_layout_a_teams_new_weight_goes_to_each_identifier_times_its_multiplier(
    layout: str, tier_weights: dict[str, float]
) -> None:
    # GIVEN equal team weights while ProdExp2 (entitled to 40) is held to 30 and waits
    config = tiered_config(layout)
    batch, store, metrics = tiered_world(config, {"ProdExp1": 1.0, "ProdExp2": 1.0})
    # WHEN the tick runs
    outcome = run(batch, store, metrics, config=config)
    # THEN the plan and its audit are per team (1.0 -> 1.25, as with one share per team) ...
    assert outcome.action == "applied"
    (record,) = store.records.values()
    assert record["before"] == {"ProdExp2": 1.0} and record["after"] == {"ProdExp2": 1.25}
    # ... and ONE policy update writes each of ProdExp2's identifiers (its team share at the team's
    # weight, its tiers' own at the weight x the multiplier), ProdExp1's left as they were
    ((call, request),) = batch.updates
    assert call == "UpdateSchedulingPolicy"
    written = {
        e["shareIdentifier"]: e["weightFactor"] for e in request["fairsharePolicy"]["shareDistribution"]
    }
    assert written == {
        **{f"ProdExp1{tier}": weight for tier, weight in tier_weights.items()},
        **{f"ProdExp2{tier}": round(1.25 * weight, 4) for tier, weight in tier_weights.items()},
    }
    assert written["ProdExp2"] == 1.25 and written["ProdExp2HIGHPRI"] == 0.0625
    # ... the metrics name the team
    assert (1.25, {"Queue": "search-p4d-queue", "Team": "ProdExp2"}) in metrics.named("WeightFactor")
    # AND a rollback restores each identifier, through the same expansion
    rollback(outcome.plan_id, NOW + 100, SETTINGS, batch, store, config)
    restored = batch.updates[-1][1]["fairsharePolicy"]["shareDistribution"]
    assert {e["shareIdentifier"]: e["weightFactor"] for e in restored} == {
        f"{team}{tier}": weight for team in ("ProdExp1", "ProdExp2") for tier, weight in tier_weights.items()
    }


# ---------------------------------------------------------------------------------------------------
# The tier charge: a team's plain identifier pays for its own-tier (HIGHPRI) usage
# ---------------------------------------------------------------------------------------------------
def test_the_tier_charge_weighs_a_teams_plain_identifier_by_all_its_usage_over_its_plain_usage() -> None:
    # GIVEN ProdExp2 whose decayed usage so far is as much HIGHPRI as plain, at a balanced plan (1.0, 1.0
    # would move; 1.0 and 1.5 are held by the deadband), one hour after the last run
    config = tiered_config(LAYOUTS[0])
    batch, store, metrics = tiered_world(config, {"ProdExp1": 1.0, "ProdExp2": 1.0})
    store.state = {
        "version": 1,
        "usageAsOf": NOW - HOUR,
        "shares": {"ProdExp2": {"ownTierUsage": 36000.0, "plainUsage": 36000.0}},
    }
    # WHEN the tick runs
    run(batch, store, metrics, config=config)
    # THEN the state carries both usages forward, accrued over the hour by Batch's decay (ProdExp2
    # held 30 instances on its HIGHPRI identifier, none on its plain one) ...
    window = config.fairshare.share_decay_seconds
    usage = store.state["shares"]["ProdExp2"]
    assert usage["ownTierUsage"] == pytest.approx(fairshare.accrue(36000.0, 30, HOUR, window))
    assert usage["plainUsage"] == pytest.approx(fairshare.accrue(36000.0, 0, HOUR, window))
    charge = (usage["ownTierUsage"] + usage["plainUsage"]) / usage["plainUsage"]
    # ... and the last policy update sets ProdExp2's plain identifier to its team weight x the charge,
    # leaving its HIGHPRI identifier (the team weight's source) and ProdExp1 alone
    written = {
        e["shareIdentifier"]: e["weightFactor"]
        for e in batch.updates[-1][1]["fairsharePolicy"]["shareDistribution"]
    }
    team_weight = round(written["ProdExp2HIGHPRI"] / 0.05, 4)
    assert written["ProdExp2"] == round(team_weight * charge, 4) and charge > 2
    assert (written["ProdExp1"], written["ProdExp1HIGHPRI"]) == (1.0, 0.05)
    # AND the team's weight read back from the policy is not inflated by the charge
    weights = current_weights(SchedulingPolicy.from_dict(batch.policy))
    assert {w.share_identifier: w.weight_factor for w in team_weights(config, weights)}["ProdExp2"] == (
        team_weight
    )


def test_advisory_mode_still_applies_the_tier_charge_and_only_it() -> None:
    # GIVEN ProdExp2 whose HIGHPRI usage so far equals its plain usage, at weights a plan would move
    config = shares_config(share_layout="team_tier", rebalance={"mode": "advisory"})
    batch, store, metrics = tiered_world(config, {"ProdExp1": 1.0, "ProdExp2": 1.0})
    store.state = {
        "version": 1,
        "usageAsOf": NOW - HOUR,
        "shares": {"ProdExp2": {"ownTierUsage": 36000.0, "plainUsage": 36000.0}},
    }
    # WHEN the tick runs in advisory mode
    outcome = run(batch, store, metrics, config=config)
    # THEN the plan is recorded, not applied: the team weight (its HIGHPRI identifier's) stays 1.0 ...
    assert outcome.action == "advisory"
    (record,) = store.records.values()
    assert record["status"] == "ADVISORY" and record["after"] == {"ProdExp2": 1.25}
    ((call, request),) = batch.updates
    written = {
        e["shareIdentifier"]: e["weightFactor"] for e in request["fairsharePolicy"]["shareDistribution"]
    }
    assert call == "UpdateSchedulingPolicy" and written["ProdExp2HIGHPRI"] == 0.05
    # ... and the one update is the tier charge: the plain identifier at team weight x the charge
    usage = store.state["shares"]["ProdExp2"]
    charge = (usage["ownTierUsage"] + usage["plainUsage"]) / usage["plainUsage"]
    assert written["ProdExp2"] == round(1.0 * charge, 4) and charge > 2
    assert (written["ProdExp1"], written["ProdExp1HIGHPRI"]) == (1.0, 0.05)


def test_the_tier_charge_writes_nothing_in_a_dry_run_or_outside_the_team_tier_layout() -> None:
    state = {
        "version": 1,
        "usageAsOf": NOW - HOUR,
        "shares": {"ProdExp2": {"ownTierUsage": 1e5, "plainUsage": 1e4}},
    }
    config = tiered_config(LAYOUTS[0])
    batch, store, metrics = tiered_world(config, {"ProdExp1": 1.0, "ProdExp2": 1.5})
    store.state = dict(state)
    run(batch, store, metrics, config=config, settings=replace(SETTINGS, dry_run=True))
    assert batch.updates == []
    batch, store, metrics = world({"ProdExp1": 1.0, "ProdExp2": 1.5}, state=dict(state))
    run(batch, store, metrics)
    assert (
        all("ProdExp2HIGHPRI" not in str(request) for _, request in batch.updates)
        and "ownTierUsage" not in store.state["shares"]["ProdExp2"]
    )
