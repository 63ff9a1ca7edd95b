"""One decision code: the reclaim Lambda and the what-if plan the same victims from one cluster state.

The what-if builds its ``ReclaimSnapshot`` from the model's state; the Lambda builds its own from
ListServiceJobs / DescribeServiceJob answers and checkpoint times. Here the Lambda's Batch port reads
the very model the what-if runs, so both see one instant; their plans must be the same decision
(job ids are Batch's on one side and names on the other; times differ by the model's epoch).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from gpusim.api import BatchApi
from gpusim.whatif.config import Policy, SharesMapping, TierMix, WhatIfConfig
from gpusim.whatif.run import PolicyRun
from gpusim.whatif.scenario import ScenarioJob, scenario_of
from shareplane.adapters.batch_service_jobs import described_job, listed_job
from shareplane.domain.config.shares import Tier
from shareplane.domain.jobs.described_job import DescribedJob, ListedJob
from shareplane.domain.reclaim.plan import ReclaimPlan, plan_reclaim
from shareplane.service.reclaim_capacity import build_snapshot

from tests.fakes.checkpoints import FakeCheckpoints
from tests.fakes.reclaim_world import P4, ReclaimWorld, reclaim_config

HOUR = 3600.0
LOW, HIGH = 2, 0


class ModelBatch:
    """The reclaim Lambda's Batch port answered by a what-if's model (what the emulator serves)."""

    def __init__(self, api: BatchApi) -> None:
        self.api = api

    def list_jobs(self, job_queue: str, status: str) -> list[ListedJob]:
        out, token = [], None
        while True:
            page = self.api.list_service_jobs(
                jobQueue=job_queue, jobStatus=status, **({"nextToken": token} if token else {})
            )
            out += page["jobSummaryList"]
            token = page.get("nextToken")
            if not token:
                return [listed_job(summary) for summary in out]

    def describe(self, job_id: str) -> DescribedJob | None:
        answer = self.api.describe_service_job(jobId=job_id)
        return described_job(answer) if answer else None

    def terminate(self, job_id: str, reason: str) -> None:
        raise AssertionError("planning only")


def what_if(jobs: list[ScenarioJob]) -> PolicyRun:
    # The what-if's own reclaim never becomes due here: the test plans at one instant, by hand.
    tiers = {
        Tier.HIGHPRI: TierMix(
            fraction=0.1,
            scheduling_priority=90,
            wait_slo_seconds=900,
            own_share=True,
            weight_multiplier=0.01,
            reclaim_after_seconds=10**6,
        ),
        Tier.MIDPRI: TierMix(fraction=0.3, scheduling_priority=50, wait_slo_seconds=3600),
        Tier.LOWPRI: TierMix(fraction=0.6, scheduling_priority=10, wait_slo_seconds=14400),
    }
    config = WhatIfConfig(shares=SharesMapping(top_k=3), tiers=tiers, instance_type=P4)
    scenario = scenario_of(
        # In arrival order: a cluster lists each team's jobs together, not by submit time.
        sorted(jobs, key=lambda j: j.submit),
        config,
        shares=("ProdExp1", "ProdExp2"),
        entitlements=(6, 4),
        window=24 * HOUR,
    )
    run = PolicyRun(scenario, Policy.RECLAIM)
    run.start()
    return run


def job(name: str, submit: float, units: int, team: int, tier: int, checkpoints: bool = True) -> ScenarioJob:
    return ScenarioJob(name, submit, 10 * HOUR, units, team, tier, {HIGH: 90, LOW: 10}[tier], (), checkpoints)


CLUSTERS = {
    "ProdExp2 borrows two instances; a 2-instance HIGHPRI job of ProdExp1 waits": [
        *[job(f"p1-{i}", 0.0 + i, 1, 0, LOW) for i in range(4)],
        *[job(f"p2-{i}", 10.0 + 100 * i, 1, 1, LOW) for i in range(6)],
        job("hi", HOUR, 2, 0, HIGH),
    ],
    "only ProdExp1's own LOWPRI can make room, one of them never checkpoints": [
        *[job(f"p1-{i}", 0.0 + 200 * i, 1, 0, LOW, checkpoints=i != 5) for i in range(6)],
        *[job(f"p2-{i}", 5.0 + i, 1, 1, LOW) for i in range(4)],
        job("hi", 2 * HOUR, 3, 0, HIGH),
    ],
}


def comparable(plan: ReclaimPlan, name_of: dict[str, str], offset: float) -> list[tuple[Any, ...]]:
    return [
        (
            name_of.get(r.job_id, r.job_id),
            r.tier,
            round(r.waited_seconds, 3),
            r.short_instances,
            tuple(
                (
                    name_of.get(v.job_id, v.job_id),
                    v.team,
                    v.instances,
                    v.borrowed,
                    None if v.checkpoint_age_seconds is None else round(v.checkpoint_age_seconds, 3),
                    round(v.lost_instance_seconds, 3),
                )
                for v in sorted(r.victims, key=lambda v: name_of.get(v.job_id, v.job_id))
            ),
        )
        for r in plan.reclaims
    ] + [("skip", name_of.get(s.job_id, s.job_id), s.reason) for s in plan.skipped]


@pytest.mark.parametrize("cluster", list(CLUSTERS), ids=list(CLUSTERS))
@pytest.mark.parametrize("waited", [300.0, 1800.0], ids=["at the threshold", "half an hour later"])
def test_the_lambda_and_the_what_if_plan_identically(cluster: str, waited: float) -> None:
    run = what_if(CLUSTERS[cluster])
    hi = next(j for j in run.scenario.jobs if j.name == "hi")
    run.model.run(until=hi.submit + waited)
    model = run.model
    offset = model.options.epoch_ms / 1000
    # the what-if's snapshot, and the Lambda's from Batch answers and checkpoint times
    world = ReclaimWorld(config=reclaim_config())
    world.batch = ModelBatch(BatchApi(model))  # type: ignore[assignment]
    world.checkpoints = FakeCheckpoints(
        {
            job.payload["CheckpointConfig"]["S3Uri"]: offset + at
            for job in model.jobs.values()
            if "CheckpointConfig" in job.payload and (at := model.last_checkpoint_at(job)) is not None
        }
    )
    ports = replace(world.ports, settings=replace(world.ports.settings, job_queue="whatif"))
    lambda_snapshot, described = build_snapshot(ports, offset + model.engine.now)
    assert lambda_snapshot is not None, "the HIGHPRI job is due"
    config = world.config
    name_of = {job_id: job.job_name or "" for job_id, job in described.items()}
    from_lambda = plan_reclaim(lambda_snapshot, config.tiers, config.reclaim)
    from_what_if = plan_reclaim(run.reclaim.snapshot(), config.tiers, config.reclaim)
    assert from_what_if.reclaims, "the cluster is full: the HIGHPRI job needs victims"
    assert comparable(from_lambda, name_of, offset) == comparable(from_what_if, {}, 0.0)
