"""One decision code: the Lambda's snapshot path and the what-if's snapshot path plan the same thing.

GIVEN a what-if replay stopped mid-run, WHEN the jobs table, Batch's queue snapshot, the policy and
the stored ledger are filled in from the very same instant (the fakes the Lambda's tests use) and
the service function plans from them, THEN its plan equals the simulator's plan from its meter, up
to the clock's origin (the simulator counts from 0, the Lambda from the epoch).
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from gpusim.trace import TraceJob
from gpusim.whatif.config import TIERS, Policy, RebalanceRun, SharesMapping, WhatIfConfig
from gpusim.whatif.run import PolicyRun
from gpusim.whatif.scenario import build_scenario
from shareplane.domain.config.shares import Tier
from shareplane.domain.jobs.lifecycle import CapacityUsage, JobState, JobStatus
from shareplane.domain.shares.observation import snapshot_from_observation
from shareplane.domain.shares.rebalance import RebalancePlan, plan_rebalance
from shareplane.service.rebalance_shares import RebalanceSettings, rebalance_shares

from tests.fakes.metrics import FakeMetrics
from tests.fakes.rebalance_world import (
    POLICY_ARN,
    QUEUE_ARN,
    fairshare_policy,
    fairshare_snapshot,
    shares_config,
)
from tests.fakes.share_store import FakeShareStore
from tests.fakes.shares_batch import FakeSharesBatch

EPOCH = 1_773_600_000  # where the Lambda's clock has the simulator's 0
STOP = 3300.0  # between two rebalance ticks (every 600 s)
RULES = {"cooldown_seconds": 0, "slo_boost_factor": 2.0}


def trace() -> list[TraceJob]:
    """The blog's story on 100 p4d instances: ProdExp1 takes 80, then ProdExp2 queues HIGHPRI work (30, below its 40)."""
    jobs = [TraceJob(float(10 * i), 86400.0, 80, "ProdExp1", 10) for i in range(8)]
    jobs += [TraceJob(100.0, 1200.0, 40, "ProdExp2", 50), TraceJob(120.0, 900.0, 40, "ProdExp2", 50)]
    jobs += [TraceJob(600.0 + 60 * i, 86400.0, 80, "ProdExp2", 90) for i in range(3)]
    jobs += [TraceJob(2000.0, 3600.0, 8, "ProdExp1", 50), TraceJob(9000.0, 60.0, 8, "ProdExp2", 10)]
    return sorted(jobs, key=lambda j: j.submit)


def stopped_run(stop: float = STOP, interval_minutes: float = 10) -> PolicyRun:
    config = shares_config(rebalance=RULES)
    whatif = WhatIfConfig(
        capacity_gpus=800,
        gpus_per_unit=8,
        shares=SharesMapping(
            top_k=2, entitlements={"ProdExp1": 0.6, "ProdExp2": 0.4}, floor_largest_job=False
        ),
        rebalance=RebalanceRun(
            interval_minutes=interval_minutes, wait_window_minutes=60, rules=config.rebalance
        ),
    )
    run = PolicyRun(build_scenario(trace(), whatif, seed=0), Policy.REBALANCE, seed=0)
    run.start()
    run.model.run(until=stop)
    return run


def table_of(run: PolicyRun) -> list[JobState]:
    """The jobs table the recorder would hold at the stop: statuses and times from the model."""
    rows = []
    for n, job in enumerate(run.model.jobs.values()):
        rows.append(
            JobState(
                job_arn=f"arn:aws:batch:us-east-1:123456789012:service-job/{job.name}",
                status=JobStatus(job.status),
                seq=str(n),
                job_queue=QUEUE_ARN,
                share_identifier=job.share,
                scheduling_priority=job.priority,
                created_at=int((EPOCH + job.created) * 1000),
                # The simulator's wait ends at dispatch; it stands for the table's first start here.
                first_started_at=None
                if job.first_dispatch is None
                else int((EPOCH + job.first_dispatch) * 1000),
                capacity_usage=(CapacityUsage("NUM_INSTANCES", float(job.count)),),
            )
        )
    return rows


def lambda_plan(run: PolicyRun, stop: float = STOP) -> RebalancePlan:
    m = run.meter
    held = {s: float(m.held[i]) for i, s in enumerate(run.scenario.shares)}
    batch = FakeSharesBatch(policy=fairshare_policy(run.weights), snapshot=fairshare_snapshot(held))
    state = {
        "version": 7,
        "lastTick": "2026-03-15T00:00:00Z",
        "ledgerAsOf": None if run.ledger_as_of is None else EPOCH + run.ledger_as_of,
        "lastAppliedAt": None if run.last_applied is None else EPOCH + run.last_applied,
        "shares": {s: {"balance": e.balance} for s, e in run.ledger.items()},
    }
    store = FakeShareStore(jobs=table_of(run), state=state)
    settings = RebalanceSettings(
        job_queue="search-p4d-queue", scheduling_policy_arn=POLICY_ARN, dry_run=True, wait_window_seconds=3600
    )
    outcome = rebalance_shares(
        "2026-03-16T22:25:00Z",
        EPOCH + stop,
        shares_config(rebalance=RULES),
        settings,
        batch,
        store,
        FakeMetrics(),
    )
    assert outcome.plan is not None
    return outcome.plan


def test_the_lambda_and_the_whatif_make_the_same_plan_from_the_same_instant() -> None:
    # GIVEN the first rebalance is still due (hourly), so the weights are the entitlement-fixed ones
    run = stopped_run(interval_minutes=60)
    sim_snapshot = run.snapshot()
    sim_plan = plan_rebalance(sim_snapshot, run.scenario.config.rebalance.rules)
    # The instant is one worth deciding on: HIGHPRI breaches its SLO, weights move.
    assert sim_snapshot.tiers[Tier.HIGHPRI].breached
    assert sim_plan.moved
    assert lambda_plan(run) == shifted(sim_plan)


def test_the_simulators_tiers_carry_every_waiter_not_only_the_oldest() -> None:
    run = stopped_run()
    observation = run.observation()
    for k, tier in enumerate(TIERS):
        never_dispatched = [
            job
            for job in run.model.jobs.values()
            if job.first_dispatch is None and run.meter.jobs[job.name].tier == k
        ]
        assert len(observation.tiers[tier].waiting_ages) == len(never_dispatched)
    assert snapshot_from_observation(observation) == run.snapshot()


def shifted(plan: RebalancePlan) -> RebalancePlan:
    """The simulator's plan on the Lambda's clock."""
    as_of = None if plan.ledger_as_of is None else EPOCH + plan.ledger_as_of
    return replace(plan, created_at=EPOCH + plan.created_at, ledger_as_of=as_of)


@pytest.mark.parametrize(
    "stop",
    [650.0, 1900.0, 5000.0],
    ids=["just after the first plan", "while ProdExp2 still queues", "after short jobs finished"],
)
def test_the_plans_agree_at_other_instants_too(stop: float) -> None:
    run = stopped_run(stop)
    assert run.ledger_as_of is not None and run.last_applied is not None
    sim_plan = plan_rebalance(run.snapshot(), run.scenario.config.rebalance.rules)
    assert lambda_plan(run, stop) == shifted(sim_plan)
