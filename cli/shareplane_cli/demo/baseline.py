"""The same workload on hard partitions: the what-if's ``static`` policy on the demo's script.

This is the world before soft quotas (the blog's 40% utilization): a team's idle instances cannot be
lent, so one team queues while the other's capacity sits idle. The script becomes a what-if scenario
(``gpusim.whatif.scenario_of``, each team one share of exactly its entitlement) and replays through
``PolicyRun`` under ``Policy.STATIC`` (quota shares with RESERVE), the very model and policy
``shareplane simulate`` runs, so the demo's baseline and the what-if's cannot disagree. It runs on
the pure model (no stack, no wall clock): a few hours of cluster time take well under a second.
"""

from __future__ import annotations

from gpusim.idle_replay import IdleRun
from gpusim.whatif.config import TIERS, Policy, TierMix, WhatIfConfig
from gpusim.whatif.run import PolicyRun
from gpusim.whatif.scenario import Scenario, ScenarioJob, scenario_of
from shareplane.domain.config.shares import SharesConfig
from shareplane.domain.jobs.lifecycle import gpus_per_instance

from .usage import UsageTracker
from .workload import INSTANCE_TYPE, DemoJob, submit_request


def partition_scenario(jobs: list[DemoJob], config: SharesConfig) -> Scenario:
    """The script as a what-if scenario: one share per team holding its entitlement, in instances.

    Each job keeps what the submit path gives it (priority, retryStrategy, its checkpoint path), its
    scripted failures and its run time; the tiers carry the config's priorities and wait SLOs.
    """
    shares = sorted(config.teams)
    index = {team: i for i, team in enumerate(shares)}
    scenario_jobs = []
    for job in sorted(jobs, key=lambda j: j.submit_minute):
        request = submit_request(job, config)
        scenario_jobs.append(
            ScenarioJob(
                name=job.name,
                submit=job.submit_minute * 60,
                duration=job.minutes * 60,
                units=job.instances,
                share=index[job.team],
                tier=TIERS.index(job.tier),
                priority=request["schedulingPriority"],
                script=job.outcomes,
                checkpoints=True,  # every demo job names a checkpoint path
                retry=request["retryStrategy"],
                idle_after=None if job.idle_after_minutes is None else job.idle_after_minutes * 60,
            )
        )
    tiers = {
        tier: TierMix(
            fraction=sum(1 for j in jobs if j.tier is tier) / len(jobs),
            scheduling_priority=config.tiers[tier].scheduling_priority,
            wait_slo_seconds=config.tiers[tier].wait_slo_seconds,
        )
        for tier in TIERS
    }
    whatif = WhatIfConfig(
        gpus_per_unit=gpus_per_instance(INSTANCE_TYPE),
        instance_type=INSTANCE_TYPE,
        tiers=tiers,
        # The idle detector with the config's own policy, as the live run's detect_idle runs it.
        idle=IdleRun(policy=config.idle),
    )
    return scenario_of(
        scenario_jobs,
        whatif,
        # A team's quota share is named by its plain identifier, which the tracker maps back to the team.
        shares=[config.teams[team].share for team in shares],
        entitlements=[config.teams[team].entitlement[INSTANCE_TYPE] for team in shares],
        team_share={team: config.teams[team].share for team in shares},
    )


def run_static_partitions(jobs: list[DemoJob], config: SharesConfig) -> UsageTracker:
    """Replay ``jobs`` on hard partitions (``Policy.STATIC``); returns the tracker of the usage timeline."""
    run = PolicyRun(partition_scenario(jobs, config), Policy.STATIC)
    tracker = UsageTracker(
        lambda: run.model.engine.now,
        {j.name: j.instances for j in jobs},
        lambda share: config.team_for_share(share) or share,
    )
    run.model.subscribe(tracker)
    run.replay()
    return tracker
