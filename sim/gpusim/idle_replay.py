"""Idle GPUs in a what-if: the detect-idle Lambda's decision replayed on the model's clock.

Every ``IdleRun.interval_minutes`` (the detect schedule's rate) each job in RUNNING is judged by
``shareplane.domain.idle.policy.decide``, the function the Lambda calls, on the samples its hosts would have
published over the Lambda's lookback (``lookback_seconds``), one per ``sample_seconds``: the same
values gpusim puts in CloudWatch on the local stack (``gpu_metrics.py``: a busy trainer dips while
loading data and in short evaluation pauses, an idle one shows 0-2% per GPU). A job the decision
says to ``stop`` is stopped as TerminateServiceJob stops it (FAILED, never retried), which frees its
capacity for the waiting work at once.

A job of ``units`` capacity units runs on ``ceil(units x gpus_per_unit / GPUs of instance_type)``
hosts of ``instance_type``; a host publishes its GPUs' utilization (0..100 x its GPUs), so the per-GPU
normalisation is the Lambda's. All hosts of a job follow one script (idle together, dip together).

Accounting, per policy (all of it over whole runs, not the metrics window):

- ``idle_gpu_hours``: what the seeded idle jobs would hold idle without detection: GPUs x (run time
  - the training seconds before they idle).
- ``reclaimed_gpu_hours``: what stopping them gave back: GPUs x the training each stopped idle job
  still had to do when it was stopped (all of it idle).
- ``busy_jobs_stopped``: jobs stopped for idleness while not in their idle phase.

Exact shortcut (``certainly_busy``): a job whose newest sample is busy on a host and that cannot be
hung is ``decide``'s BUSY with no act, so it is not judged sample by sample;
``tests/sim/test_idle_replay.py`` checks the shortcut against ``decide``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field
from shareplane.domain.config.shares import IdleAction, IdleConfig, Tier
from shareplane.domain.idle.policy import (
    Act,
    GpuSample,
    IdlePolicy,
    Notice,
    decide,
    lookback_seconds,
    policy_for,
)
from shareplane.domain.jobs.lifecycle import gpus_per_instance

from . import gpu_metrics
from .model import BatchModel, Job
from .states import RUNNING


class IdleRun(BaseModel):
    """The what-if's idle seeding and the detector's settings (``idle`` in config/whatif.yaml)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: Fraction of trace jobs (seeded) that hold their GPUs idle; ``--idle-fraction`` overrides it.
    fraction: Annotated[float, Field(ge=0, le=1)] = 0.0
    #: Of the idle jobs, the fraction idle for their whole run; the rest idle after a seeded point.
    whole_run_fraction: Annotated[float, Field(ge=0, le=1)] = 0.5
    #: The seeded point, as a fraction of the job's run time: uniform in [low, high].
    after_low: Annotated[float, Field(ge=0, le=1)] = 0.1
    after_high: Annotated[float, Field(ge=0, le=1)] = 0.9
    #: How often the detect schedule runs (the template's rate).
    interval_minutes: Annotated[float, Field(gt=0)] = 5.0
    #: One sample per host this often (SageMaker's instance metrics: every minute).
    sample_seconds: Annotated[float, Field(gt=0)] = 60.0
    #: The production detector's settings; the what-if stops idle jobs after a warning.
    policy: IdleConfig = IdleConfig(action=IdleAction.STOP_AFTER_WARNING)


@dataclass
class IdleOutcome:
    """What the detector did in one policy run."""

    idle_jobs: int = 0
    idle_gpu_hours: float = 0.0
    reclaimed_gpu_hours: float = 0.0
    idle_jobs_stopped: int = 0
    busy_jobs_stopped: int = 0
    warnings: int = 0
    decisions: int = 0

    def summary(self) -> dict[str, Any]:
        """The ``idle`` object of a policy's JSON."""
        return {
            "idle_gpu_hours": round(self.idle_gpu_hours, 3),
            "reclaimed_gpu_hours": round(self.reclaimed_gpu_hours, 3),
            "busy_jobs_stopped": self.busy_jobs_stopped,
            "idle_jobs": self.idle_jobs,
            "idle_jobs_stopped": self.idle_jobs_stopped,
            "warnings": self.warnings,
        }

    @property
    def reclaimed_fraction(self) -> float:
        """Reclaimed over idle GPU-hours (1.0 when nothing was idle)."""
        return self.reclaimed_gpu_hours / self.idle_gpu_hours if self.idle_gpu_hours > 0 else 1.0


def hosts_for(units: int, gpus_per_unit: int, instance_type: str) -> int:
    """Hosts of ``instance_type`` a job of ``units`` capacity units runs on."""
    per = gpus_per_instance(instance_type) or 1
    return max(1, math.ceil(units * gpus_per_unit / per))


def certainly_busy(
    policy: IdlePolicy,
    newest_host_total: float,
    now: float,
    started_at: float,
    checkpointing: bool,
    last_checkpoint_at: float | None,
) -> bool:
    """Whether ``decide`` must answer BUSY, no act: a host's newest sample (its GPUUtilization, the sum
    over its GPUs) is busy and no hang is possible."""
    if newest_host_total < policy.threshold_percent_of_one_gpu:
        return False
    if not checkpointing:
        return True
    grace_end = started_at + policy.grace_seconds
    return now - max(last_checkpoint_at or grace_end, grace_end) < policy.hung_after_seconds


@dataclass(frozen=True)
class IdleJob:
    """What the detector needs of one scenario job."""

    tier: Tier
    #: The share it runs in, which names the team whose idle policy judges it.
    team: str
    gpus: int
    hosts: int
    checkpoints: bool


class IdleDetection:
    """The detect schedule on one policy run: judge RUNNING jobs each tick, stop what ``decide`` says.

    A job is looked at only on the ticks where its newest sample may be below the threshold: from its
    trainer's script the detector knows the next such moment (the next evaluation pause, or its idle
    point) and skips the ticks before it, where ``certainly_busy`` holds. That is exact while no job
    can be hung (checkpoints come more often than the hung window), which ``__init__`` checks; else
    every RUNNING job is looked at on every tick.
    """

    def __init__(
        self,
        model: BatchModel,
        settings: IdleRun,
        jobs: Mapping[str, IdleJob],
        instance_type: str,
        done: Callable[[], bool],
    ) -> None:
        self.model = model
        self.settings = settings
        self.jobs = jobs
        self.instance_type = instance_type
        self.gpus_per_host = gpus_per_instance(instance_type) or 1
        self.done = done
        self.interval = settings.interval_minutes * 60.0
        self.policies = {
            (team, t): policy_for(settings.policy, team, t)
            for team in {j.team for j in jobs.values()}
            for t in Tier
        }
        checkpoint = model.options.timings.checkpoint_interval
        hung_after = min((p.hung_after_seconds for p in self.policies.values()), default=0.0)
        self.skipping = 0 < checkpoint < hung_after
        self.running: dict[str, Job] = {}
        self.notices: dict[str, Notice] = {}
        #: Tick index -> jobs to look at then; ``wake_of`` holds each job's current one.
        self.wake: dict[int, list[str]] = {}
        self.wake_of: dict[str, int] = {}
        self.ticks = 0
        #: Per job: (the attempt's training start, first sample index, samples per index) already made.
        self.series: dict[str, tuple[float, int, list[list[GpuSample]]]] = {}
        self.shapes: dict[int, gpu_metrics.TrainerShape] = {}
        self.outcome = IdleOutcome()

    def seeded(self, name: str, duration: float, idle_after: float) -> None:
        """A seeded idle job joined the run: count what it would hold idle without detection."""
        self.outcome.idle_jobs += 1
        self.outcome.idle_gpu_hours += self.jobs[name].gpus * max(0.0, duration - idle_after) / 3600.0

    def start(self) -> None:
        """Start the schedule."""
        self.model.engine.schedule_at(self.interval, self._tick)

    def observe(self, kind: str, job: Job) -> None:
        """Keep the dispatched set; a new attempt starts with no notice."""
        if kind == "dispatch":
            self.running[job.name] = job
            self.notices.pop(job.name, None)
            info = self.jobs[job.name]
            grace = self.policies[info.team, info.tier].grace_seconds
            self._wake_at(job.name, self.model.engine.now + grace)
        elif kind == "release":
            self.running.pop(job.name, None)
            self.wake_of.pop(job.name, None)
            self.series.pop(job.name, None)

    def _wake_at(self, name: str, when: float) -> None:
        k = max(self.ticks + 1, math.ceil(when / self.interval - 1e-9))
        self.wake_of[name] = k
        self.wake.setdefault(k, []).append(name)

    def _tick(self, _: Any = None) -> None:
        self.ticks += 1
        now = self.model.engine.now
        if self.skipping:
            names = [n for n in self.wake.pop(self.ticks, []) if self.wake_of.get(n) == self.ticks]
        else:
            names = list(self.running)
        for name in names:
            job = self.running.get(name)
            if job is not None and job.status == RUNNING:
                self.judge(name, job, now)
            elif job is not None:
                self._wake_at(name, now + self.interval)
        if not self.done():
            self.model.engine.schedule_at((self.ticks + 1) * self.interval, self._tick)

    def _shape(self, job: Job) -> gpu_metrics.TrainerShape:
        shape = self.shapes.get(job.gpu_key)
        if shape is None:
            shape = self.shapes[job.gpu_key] = gpu_metrics.TrainerShape.of(job.gpu_key)
        return shape

    def _per_gpu(self, job: Job, host: int, at: float) -> float:
        assert job.training_since is not None
        progress = job.saved + (at - job.training_since)
        return gpu_metrics.per_gpu_percent(
            job.gpu_key, host, int(at // 60), job.gpu, self._shape(job), progress
        )

    def _samples(self, job: Job, info: IdleJob, now: float, since: float) -> list[GpuSample]:
        """The samples the job's hosts published in ``[since, now]`` (made once per job and time)."""
        step = self.settings.sample_seconds
        assert job.training_since is not None
        k0 = math.ceil(max(since, job.training_since) / step)
        k1 = math.floor(now / step)
        cached = self.series.get(job.name)
        if cached is None or cached[0] != job.training_since or cached[1] > k0:
            cached = (job.training_since, k0, [])
        _, first, rows = cached
        if k0 > first:
            del rows[: k0 - first]
            first = k0
        for k in range(first + len(rows), k1 + 1):
            at = k * step
            rows.append(
                [
                    GpuSample(f"algo-{host}", at, self._per_gpu(job, host, at) * self.gpus_per_host)
                    for host in range(1, info.hosts + 1)
                ]
            )
        self.series[job.name] = (job.training_since, first, rows)
        return [sample for row in rows[: k1 - first + 1] for sample in row]

    def _next_low(self, job: Job, now: float) -> float:
        """The first sample time after ``now`` at which the job's GPUs may be below the threshold."""
        assert job.training_since is not None
        step = self.settings.sample_seconds
        progress = job.saved + (math.floor(now / step) * step - job.training_since)
        shape = self._shape(job)
        q = progress - shape.loading
        pause = shape.loading + (q // shape.eval_every + 1) * shape.eval_every - shape.eval_length
        if q >= 0 and q % shape.eval_every >= shape.eval_every - shape.eval_length:
            pause = progress  # inside a pause now
        low = pause if job.gpu.idle_after is None else min(pause, max(progress, job.gpu.idle_after))
        return job.training_since + (low - job.saved)

    def judge(self, name: str, job: Job, now: float) -> None:
        """One job at one tick: the Lambda's decision on what its hosts published, then its act."""
        info = self.jobs[name]
        policy = self.policies[info.team, info.tier]
        started = job.started_at if job.started_at is not None else now
        checkpointing = info.checkpoints and "CheckpointConfig" in job.payload
        last_checkpoint = self.model.last_checkpoint_at(job)
        step = self.settings.sample_seconds
        newest = math.floor(now / step) * step
        assert job.training_since is not None
        if newest >= job.training_since and certainly_busy(
            policy,
            self._per_gpu(job, 1, newest) * self.gpus_per_host,
            now,
            started,
            checkpointing,
            last_checkpoint,
        ):
            self._wake_at(name, max(now + self.interval, self._next_low(job, now)))
            return
        self.outcome.decisions += 1
        decision = decide(
            policy,
            started_at=started,
            instance_type=self.instance_type,
            instance_count=info.hosts,
            samples=self._samples(job, info, now, now - lookback_seconds(policy)),
            now=now,
            checkpointing=checkpointing,
            last_checkpoint_at=last_checkpoint,
            previous=self.notices.get(name),
        )
        notice = decision.notice(now)
        if notice is not None:
            self.notices[name] = notice
        if decision.act is Act.WARN:
            self.outcome.warnings += 1
        elif decision.act is Act.STOP:
            progress = self.model.training_progress(job) or 0.0
            if job.gpu.idle_at(progress):
                self.outcome.idle_jobs_stopped += 1
                self.outcome.reclaimed_gpu_hours += info.gpus * max(0.0, job.duration - progress) / 3600.0
            else:
                self.outcome.busy_jobs_stopped += 1
            self.model.terminate(job, f"shareplane idle: {decision.reason}")
            return
        self._wake_at(name, now + self.interval)
