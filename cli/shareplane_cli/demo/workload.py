"""The demo's workload: the Amazon Search story on 100 ml.p4d.24xlarge instances.

ProdExp1 (entitled to 60) submits more LOWPRI and MIDPRI work than it is entitled to (four MIDPRI
fine-tunes of 10 instances, then a hyperparameter sweep of 24 LOWPRI trials of 5) and borrows
ProdExp2's idle instances; ProdExp2 (entitled to 40) submits 20 minutes later and gets its
entitlement back; a HIGHPRI job ProdExp1 submits last starts before its team's earlier queued
LOWPRI and MIDPRI work; three jobs fail (a capacity error, an internal error, a CUDA OOM); one
LOWPRI job of ProdExp1 holds its GPUs idle (stuck loading data) until the idle detector stops it,
and every other trainer is busy, so the detector must flag that job and no other.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

from gpusim.gpu_metrics import IDLE_AFTER_TAG
from shareplane.domain.config.shares import SharesConfig, Tier
from shareplane.domain.submit.jobspec import parse_spec_file

INSTANCE_TYPE = "ml.p4d.24xlarge"
DURATION_TAG = "gpusim:duration-seconds"  # how long the emulated training runs


@dataclass(frozen=True)
class DemoJob:
    """One submission of the script: who, when (virtual minutes), how big, how long, how it fails."""

    name: str
    team: str
    tier: Tier
    submit_minute: float
    instances: int
    minutes: float
    outcomes: tuple[str, ...] = ()  # gpusim scripted outcome per dispatch ("capacity", "internal", ...)
    #: Its GPUs idle after this many minutes of training (0: the whole run); None: busy throughout.
    idle_after_minutes: float | None = None
    #: A CPU type (the config's ``queues.cpu_instance_types``) sends the job to the CPU FIFO queue.
    instance_type: str = INSTANCE_TYPE


def blog_workload() -> list[DemoJob]:
    """The script, in submission order."""
    low, mid, high = Tier.LOWPRI, Tier.MIDPRI, Tier.HIGHPRI
    jobs = [
        DemoJob("p1-midpri-ft-01", "ProdExp1", mid, 0, 10, 80),
        DemoJob("p1-midpri-ft-02", "ProdExp1", mid, 0, 10, 95, ("internal", "ok")),
        DemoJob("p1-midpri-ft-03", "ProdExp1", mid, 0, 10, 70),
        DemoJob("p1-midpri-ft-04", "ProdExp1", mid, 0, 10, 105),
        # Stuck loading data from its first minute, scripted to hold 5 instances for 3 hours. Submitted
        # before the sweep, it starts at once, so the detector flags it (15-minute grace, 30-minute
        # window) and stops it (15 minutes after the warning) while the sweep still waits: its
        # instances go to waiting trials, not to an idle cluster at the end of the run.
        DemoJob("p1-lowpri-stuck-01", "ProdExp1", low, 0, 5, 180, idle_after_minutes=0),
    ]
    # A hyperparameter sweep: many trials of 50-75 minutes, more than the idle instances run at once.
    # Trials short against the run keep the makespan (the demo's utilization is makespan-based) from
    # being one stopped or preempted long job resuming last, alone. None ends before the HIGHPRI job
    # has waited its reclaim threshold, so the demo shows a reclaim.
    jobs += [
        DemoJob(f"p1-lowpri-sweep-{i:02d}", "ProdExp1", low, 0, 5, m)
        for i, m in enumerate((75, 60, 70, 55, 50, 65) * 4, start=1)
    ]
    jobs += [
        DemoJob("p2-midpri-eval-01", "ProdExp2", mid, 20, 10, 60, ("capacity", "ok")),
        DemoJob("p2-midpri-eval-02", "ProdExp2", mid, 20, 10, 75),
        DemoJob("p2-midpri-eval-03", "ProdExp2", mid, 20, 10, 50),
        DemoJob("p2-midpri-eval-04", "ProdExp2", mid, 20, 10, 90),
    ]
    jobs += [
        DemoJob("p1-lowpri-late-01", "ProdExp1", low, 30, 10, 60),
        DemoJob("p1-lowpri-late-02", "ProdExp1", low, 30, 10, 60, ("cuda_oom",)),
        DemoJob("p1-midpri-late-01", "ProdExp1", mid, 30, 10, 60),
        DemoJob("p1-highpri-launch-01", "ProdExp1", high, 40, 10, 45),
    ]
    return jobs


def scripted_outcomes(jobs: list[DemoJob]) -> dict[str, tuple[str, ...]]:
    """The emulator's scripted failures, by job name."""
    return {job.name: job.outcomes for job in jobs if job.outcomes}


def submit_request(job: DemoJob, config: SharesConfig) -> dict[str, Any]:
    """The SubmitServiceJob request for a demo job, built by the same job-spec code the submit path uses."""
    team = config.teams[job.team]
    image_prefix = team.allowed_image_prefixes[0]
    spec = {
        "name": job.name,
        "team": job.team,
        "priority": job.tier.value,
        "instance_type": job.instance_type,
        "instance_count": job.instances,
        "image": f"{image_prefix}trainer:2026.11",
        "inputs": {"train": f"{team.input_prefixes[0]}demo/{job.name}/"},
        "output_path": f"{team.output_prefixes[0]}demo/",
        "checkpoint_path": f"{team.output_prefixes[0]}checkpoints/{job.name}/",
        "max_runtime_seconds": 86400,
    }
    result = parse_spec_file(
        json.dumps(spec).encode(),
        f"submit/{job.team}/{job.name}.json",
        config,
        bucket="demo",
        version_id="v1",
    )
    built = result.jobs[0].request if result.ok else None
    if built is None:
        problems = [p for j in result.jobs for p in j.problems] + list(result.problems)
        raise ValueError(f"demo job {job.name} is not a valid spec for this config: {problems}")
    tags = {**(built.tags or {}), DURATION_TAG: str(job.minutes * 60)}
    if job.idle_after_minutes is not None:
        tags[IDLE_AFTER_TAG] = str(job.idle_after_minutes * 60)
    return replace(built, tags=tags).aws_fields()
