"""fairshare+reclaim: the production reclaim planner run on the replay's model."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from shareplane.domain.config.shares import resume_priority
from shareplane.domain.instance_types.capacity import Capacity
from shareplane.domain.reclaim.plan import ReclaimSnapshot, RunningJob, WaitingJob, plan_reclaim

from ..model import Job
from .config import TIERS
from .scenario import ScenarioJob

if TYPE_CHECKING:  # the run builds its ReclaimRun: importing it at run time would be a loop
    from .run import PolicyRun


class ReclaimRun:
    """fairshare+reclaim: the production reclaim planner on the model's state, with its bookkeeping.

    As the Lambda does, it plans when a waiting job becomes due (its submission plus its tier's
    ``reclaim_after_seconds``) and on a schedule, and stops each victim the way the requeue path
    does (``BatchModel.requeue_from_checkpoint``). Stops are instant in the model, so no victim is
    ever "being stopped" in a snapshot.
    """

    def __init__(self, run: PolicyRun) -> None:
        self.run = run
        cfg = run.scenario.config
        self.tiers = {t: mix.tier_config() for t, mix in cfg.tiers.items()}
        self.rules = cfg.reclaim
        self.interval = cfg.reclaim_interval_minutes * 60.0
        self.jobs = {j.name: j for j in run.scenario.jobs}
        self.waiting: dict[str, ScenarioJob] = {}  # due-able jobs never dispatched yet
        self.running: dict[str, Job] = {}
        self.victims_for: dict[str, int] = {}
        self.displaced: dict[str, frozenset[str]] = {}
        self.last_stopped: dict[str, float] = {}
        self.day, self.today = -1, 0
        # The rate window the plans of the current one counted, and its victims so far (the Lambda's
        # RECLAIM#WINDOW counter).
        self.window, self.in_window = -1, 0
        self.reclaims = 0
        self.victims = 0
        unit = cfg.instance_type
        sc = run.scenario
        self.entitlements = {s: Capacity({unit: e}) for s, e in zip(sc.shares, sc.entitlements, strict=True)}

    def start(self) -> None:
        """Start the schedule."""
        self.run.model.engine.schedule(self.interval, self._tick)

    def arrive(self, job: ScenarioJob) -> None:
        """A job of a reclaiming tier was submitted: plan again when it becomes due."""
        after = self.tiers[TIERS[job.tier]].reclaim_after_seconds
        if after is None:
            return
        self.waiting[job.name] = job
        self.run.model.engine.schedule_at(job.submit + after, self._due)

    def observe(self, kind: str, job: Job) -> None:
        """Keep the running set and the never-dispatched waiters current."""
        if kind == "dispatch":
            self.running[job.name] = job
            self.waiting.pop(job.name, None)
        elif kind == "release":
            self.running.pop(job.name, None)
        elif kind == "preempt":
            self.last_stopped[job.name] = self.run.model.engine.now

    def _tick(self, _: Any = None) -> None:
        self.plan()
        if not self.run.done:
            self.run.model.engine.schedule(self.interval, self._tick)

    def _due(self, _: Any = None) -> None:
        self.plan()

    def snapshot(self) -> ReclaimSnapshot:
        """The reclaim planner's view of the model now: what the Lambda reads from Batch and S3."""
        model, sc = self.run.model, self.run.scenario
        now = model.engine.now
        unit = sc.config.instance_type
        none: frozenset[str] = frozenset()
        return ReclaimSnapshot(
            now=now,
            capacity=Capacity({unit: sc.capacity_units}),
            entitlements=self.entitlements,
            waiting=tuple(
                WaitingJob(
                    j.name,
                    sc.shares[j.share],
                    TIERS[j.tier],
                    unit,
                    j.units,
                    j.submit,
                    displaced_by=self.displaced.get(j.name, none),
                    victims_so_far=self.victims_for.get(j.name, 0),
                )
                for j in self.waiting.values()
            ),
            running=tuple(
                RunningJob(
                    name,
                    sc.shares[self.jobs[name].share],
                    TIERS[self.jobs[name].tier],
                    unit,
                    job.count,
                    job.scheduled_at if job.scheduled_at is not None else now,
                    checkpoints=self.jobs[name].checkpoints,
                    last_checkpoint_at=model.last_checkpoint_at(job),
                    last_stopped_at=self.last_stopped.get(name),
                    displaced_by=self.displaced.get(name, none),
                )
                for name, job in self.running.items()
            ),
            victims_today=self.today,
            victims_in_window=self.in_window,
        )

    def plan(self) -> None:
        """Snapshot, decide with ``plan_reclaim``, stop the victims."""
        if not self.waiting:
            return
        model = self.run.model
        now = model.engine.now
        if not any(
            now - j.submit >= (self.tiers[TIERS[j.tier]].reclaim_after_seconds or 0)
            for j in self.waiting.values()
        ):
            return
        day = int(now // 86400)
        if day != self.day:
            self.day, self.today = day, 0
        window = int(now // self.rules.rate_window_seconds)
        if window != self.window:
            self.window, self.in_window = window, 0
        plan = plan_reclaim(self.snapshot(), self.tiers, self.rules)
        for reclaim in plan.reclaims:
            self.reclaims += 1
            self.victims_for[reclaim.job_id] = self.victims_for.get(reclaim.job_id, 0) + len(reclaim.victims)
            for victim in reclaim.victims:
                self.victims += 1
                self.today += 1
                self.in_window += 1
                self.last_stopped[victim.job_id] = now
                self.displaced[victim.job_id] = self.displaced.get(victim.job_id, frozenset()) | {
                    reclaim.job_id
                }
                job = self.running[victim.job_id]
                model.requeue_from_checkpoint(
                    job,
                    f"shareplane reclaim: stopped for {reclaim.job_id}",
                    resume_priority(self.tiers, job.priority),
                )
