"""The same workload on hard partitions: each team its own environment of exactly its entitlement.

This is the world before soft quotas (the blog's 40% utilization): a team's idle instances cannot be
lent, so one team queues while the other's capacity sits idle. It runs on the pure model (no
stack, no wall clock): a few hours of cluster time take well under a second.
"""

from __future__ import annotations

from gpusim import BatchApi, BatchModel, Faults, ModelOptions
from shareplane.domain.config import SharesConfig

from .usage import UsageTracker
from .workload import INSTANCE_TYPE, DemoJob, scripted_outcomes, submit_request


def run_static_partitions(jobs: list[DemoJob], config: SharesConfig) -> UsageTracker:
    """Replay ``jobs`` with hard 60/40 partitions; returns the tracker holding the usage timeline."""
    model = BatchModel(options=ModelOptions(faults=Faults(scripted=scripted_outcomes(jobs))))
    api = BatchApi(model)
    queues: dict[str, str] = {}
    for name, team in config.teams.items():
        env = f"{name}-partition"
        api.create_service_environment(
            serviceEnvironmentName=env,
            serviceEnvironmentType="SAGEMAKER_TRAINING",
            capacityLimits=[
                {"maxCapacity": team.entitlement[INSTANCE_TYPE], "capacityUnit": "NUM_INSTANCES"}
            ],
        )
        # One share per partition keeps schedulingPriority ordering inside the team (the blog's advice).
        policy = api.create_scheduling_policy(
            name=f"{name}-partition-sp",
            fairsharePolicy={
                "shareDecaySeconds": 3600,
                "shareDistribution": [{"shareIdentifier": team.share}],
            },
        )
        queues[name] = api.create_job_queue(
            jobQueueName=f"{name}-partition-queue",
            jobQueueType="SAGEMAKER_TRAINING",
            priority=1,
            serviceEnvironmentOrder=[{"order": 1, "serviceEnvironment": env}],
            schedulingPolicyArn=policy["arn"],
        )["jobQueueName"]
    tracker = UsageTracker(
        lambda: model.engine.now,
        {j.name: j.instances for j in jobs},
        lambda share: config.team_for_share(share) or share,
    )
    model.subscribe(tracker)
    for job in jobs:
        # The team's one share, whatever the layout: the baseline is the world before soft quotas.
        share = config.teams[job.team].share
        request = {**submit_request(job, config), "jobQueue": queues[job.team], "shareIdentifier": share}
        model.engine.schedule_at(job.submit_minute * 60, lambda _, r=request: api.submit_service_job(**r))
    model.run()
    return tracker
