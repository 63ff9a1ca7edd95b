"""Workloads for the simulator: the Philly GPU trace, seeded synthetic jobs, and a fast replay.

The Philly trace gives submit time, duration, GPUs and team (virtual cluster) per job. A job needs
``ceil(num_gpus / 8)`` instances (at least one), on one instance type. The replay path submits
straight into the model (no JSON, no events unless someone listens) so a 52k-job trace replays in
seconds.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shareplane.domain.errors import InvalidInputError
from shareplane.domain.share_observation import percentile

from .api import BatchApi
from .engine import Engine
from .model import BatchModel, Job, JobQueue, ModelOptions
from .trace import load_trace

GPUS_PER_INSTANCE = 8
DEFAULT_INSTANCE_TYPE = "ml.p4d.24xlarge"


@dataclass(frozen=True)
class WorkloadJob:
    """One job to replay: when it arrives (seconds from the start), how long it trains, what it needs."""

    submit: float
    duration: float
    instances: int
    share: str
    priority: int = 0
    instance_type: str = DEFAULT_INSTANCE_TYPE
    name: str = ""


def instances_for(gpus: int, gpus_per_instance: int = GPUS_PER_INSTANCE) -> int:
    """Instances a job of ``gpus`` GPUs occupies: whole instances, at least one."""
    return max(1, math.ceil(gpus / gpus_per_instance))


def load_philly(
    path: Path | str,
    limit: int | None = None,
    gpus_per_instance: int = GPUS_PER_INSTANCE,
    instance_type: str = DEFAULT_INSTANCE_TYPE,
) -> list[WorkloadJob]:
    """The Philly trace (a path, or ``philly`` for the shipped one) as replayable jobs in whole instances."""
    trace = load_trace(path, "philly-csv")
    return [
        WorkloadJob(
            submit=job.submit,
            duration=job.duration,
            instances=instances_for(job.gpus, gpus_per_instance),
            share=job.team,
            instance_type=instance_type,
            name=f"philly{i}",
        )
        for i, job in enumerate(trace[:limit])
    ]


def synthetic(
    seed: int,
    count: int,
    shares: Mapping[str, float],
    *,
    mean_interarrival: float = 60.0,
    median_duration: float = 1200.0,
    duration_sigma: float = 1.5,
    instance_counts: Sequence[tuple[int, float]] = ((1, 0.8), (2, 0.12), (4, 0.06), (8, 0.02)),
    priorities: Sequence[tuple[int, float]] = ((0, 1.0),),
    instance_type: str = DEFAULT_INSTANCE_TYPE,
) -> list[WorkloadJob]:
    """Seeded jobs: Poisson arrivals, lognormal durations, shares picked by relative arrival rate."""
    rng = random.Random(seed)
    names, rates = list(shares), list(shares.values())
    sizes, size_weights = zip(*instance_counts, strict=True)
    prios, prio_weights = zip(*priorities, strict=True)
    t = 0.0
    jobs = []
    for i in range(count):
        t += rng.expovariate(1.0 / mean_interarrival)
        jobs.append(
            WorkloadJob(
                submit=t,
                duration=max(1.0, rng.lognormvariate(math.log(median_duration), duration_sigma)),
                instances=rng.choices(sizes, size_weights)[0],
                share=rng.choices(names, rates)[0],
                priority=rng.choices(prios, prio_weights)[0],
                instance_type=instance_type,
                name=f"syn{i}",
            )
        )
    return jobs


@dataclass(frozen=True)
class ReplaySummary:
    """What a replay measured."""

    jobs: int
    finished: int
    makespan: float
    utilization: float
    wait_p50: float
    wait_p95: float
    share_instance_hours: Mapping[str, float] = field(default_factory=dict)


class Replay:
    """A queue built through the API, fed a workload straight into the model's fast path."""

    def __init__(
        self,
        capacity: int,
        *,
        mode: str = "fairshare",
        weights: Mapping[str, float] | None = None,
        share_decay_seconds: int = 3600,
        compute_reservation: int = 0,
        options: ModelOptions | None = None,
        engine: Engine | None = None,
    ) -> None:
        self.model = BatchModel(engine, options)
        api = BatchApi(self.model)
        self.capacity = capacity
        api.create_service_environment(
            serviceEnvironmentName="replay",
            serviceEnvironmentType="SAGEMAKER_TRAINING",
            capacityLimits=[{"maxCapacity": capacity, "capacityUnit": "NUM_INSTANCES"}],
        )
        queue: dict[str, Any] = {
            "jobQueueName": "replay",
            "jobQueueType": "SAGEMAKER_TRAINING",
            "priority": 1,
            "serviceEnvironmentOrder": [{"order": 1, "serviceEnvironment": "replay"}],
        }
        if mode == "fairshare":
            policy = api.create_scheduling_policy(
                name="replay",
                fairsharePolicy={
                    "shareDecaySeconds": share_decay_seconds,
                    "computeReservation": compute_reservation,
                    "shareDistribution": [
                        {"shareIdentifier": s, "weightFactor": w} for s, w in (weights or {}).items()
                    ],
                },
            )
            queue["schedulingPolicyArn"] = policy["arn"]
        elif mode != "fifo":
            raise InvalidInputError("mode", f"{mode!r} is not a replay mode", "use 'fairshare' or 'fifo'")
        api.create_job_queue(**queue)
        self.queue: JobQueue = self.model.queues["replay"]
        self.fair = mode == "fairshare"
        self.submitted: list[Job] = []

    def feed(self, jobs: Iterable[WorkloadJob]) -> None:
        """Schedule the arrivals, one pending arrival event at a time (the heap stays small)."""
        self._pending = iter(sorted(jobs, key=lambda j: j.submit))
        self._arrive(None)

    def _arrive(self, job: WorkloadJob | None) -> None:
        if job is not None:
            payload = {
                "TrainingJobName": job.name,
                "ResourceConfig": {"InstanceType": job.instance_type, "InstanceCount": job.instances},
            }
            self.submitted.append(
                self.model.submit(
                    self.queue,
                    job.name,
                    payload,
                    share=job.share if self.fair else None,
                    priority=job.priority,
                    duration=job.duration,
                )
            )
        nxt = next(self._pending, None)
        if nxt is not None:
            self.model.engine.schedule_at(nxt.submit, self._arrive, nxt)

    def run(self, until: float | None = None) -> ReplaySummary:
        """Run to the end (or ``until``) and summarize."""
        self.model.run(until)
        return self.summary()

    def summary(self) -> ReplaySummary:
        """Utilization, queue wait and per-share instance-hours so far."""
        model = self.model
        jobs = self.submitted
        start = min((j.created for j in jobs), default=0.0)
        makespan = model.now - start
        waits = [j.first_dispatch - j.created for j in jobs if j.first_dispatch is not None]
        held = model.share_instance_seconds(self.queue) if self.fair else {}
        return ReplaySummary(
            jobs=len(jobs),
            finished=model.finished,
            makespan=makespan,
            utilization=model.held_instance_seconds / (self.capacity * makespan) if makespan > 0 else 0.0,
            wait_p50=percentile(waits, 0.5) or 0.0,
            wait_p95=percentile(waits, 0.95) or 0.0,
            share_instance_hours={s: v / 3600.0 for s, v in held.items()},
        )
