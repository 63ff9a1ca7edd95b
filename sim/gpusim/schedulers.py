"""How each kind of job queue picks its next job: one scheduler class per queue kind, behind one interface.

A queue gets its scheduler once, when it is created: FIFO without a scheduling policy, fair-share or
quota-share after the kind of policy it names. Batch never changes a queue's kind (a FIFO queue
cannot get a policy later, a policy is only replaced by one of its kind), so neither does the model;
the scheduler reads the queue's current ``SchedulingPolicy`` for its parameters. The model owns the
mechanics (dispatch, release, preemption, the clock) and calls the scheduler's hooks at fixed points,
as SimPy resources call their put/get hooks: ``enqueue``, ``run_pass``, ``heads``, and the
bookkeeping hooks ``on_runnable``, ``on_dispatch``, ``on_release`` and ``on_finish``.

Choices where AWS documents nothing are the ``ModelOptions`` switches the model's docstring lists
(``head_of_line_blocking``, ``usage_by_instances``, ``fairshare_ties_by_weight``) and these:

- A fair-share share is *active* while it has a job in SUBMITTED..RUNNING and stays active until its
  decay window has passed with none (``activeShareCount`` and ``computeReservation`` count it);
  https://docs.aws.amazon.com/batch/latest/userguide/fair-share-scheduling.html ("After the period
  of time for decay expires, a share identifier is considered inactive"). The window used is the
  policy's decay window (``shareDecaySeconds``, 0 meaning 600 s); AWS adds "OrderMinutes", which
  it does not define.
- Quota shares: capacity not given to any share is lendable; a RESERVE share's idle capacity is
  not; borrowing draws on lendable idle capacity in FIFO order of the borrowing jobs; a lender whose
  own-limit job cannot start because its capacity is lent preempts borrowers, lowest priority first,
  then the most recently dispatched. In-share preemption is tried only when borrowing is impossible.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping
from typing import ClassVar, Protocol

from shareplane.domain.shares import fairshare
from shareplane.domain.shares.fairshare import standing

from . import texts
from .engine import Engine
from .resources import FairShare, Job, JobQueue, QueueEntry, QuotaShare, SchedulingPolicy, ServiceEnvironment
from .states import RUNNABLE

FIFO = "FIFO"
FAIRSHARE = "FAIRSHARE"
QUOTA = "QUOTA"


class SchedulingSwitches(Protocol):
    """The ``ModelOptions`` switches a scheduler reads."""

    @property
    def head_of_line_blocking(self) -> bool: ...

    @property
    def fairshare_ties_by_weight(self) -> bool: ...


class SchedulingHost(Protocol):
    """What a scheduler needs from the model (``BatchModel``): its clock, switches and mechanics."""

    @property
    def engine(self) -> Engine: ...

    @property
    def options(self) -> SchedulingSwitches: ...

    @property
    def now(self) -> float: ...

    def room(
        self, queue: JobQueue, job: Job, usable: Callable[[int], int] | None = None
    ) -> ServiceEnvironment | None: ...

    def dispatch(self, job: Job, env: ServiceEnvironment) -> None: ...

    def preempt(self, job: Job, reason: str) -> None: ...

    def request_pass(self) -> None: ...


def head_of(heap: list[QueueEntry]) -> Job | None:
    """The first still-queued job of a lazily pruned heap (entries end ``(..., qver, job)``)."""
    while heap:
        entry = heap[0]
        job = entry[-1]
        if job.qver == entry[-2] and job.status == RUNNABLE:
            return job
        heapq.heappop(heap)
    return None


class Scheduler:
    """What the model asks of a queue's scheduler; the bookkeeping hooks do nothing unless overridden."""

    kind: ClassVar[str]

    def __init__(self, model: SchedulingHost, queue: JobQueue) -> None:
        self.model = model
        self.queue = queue

    def enqueue(self, job: Job) -> None:
        """Queue a RUNNABLE job (its ``qver`` already bumped, so older entries are stale)."""
        raise NotImplementedError

    def run_pass(self) -> None:
        """Dispatch (and, where the kind allows, preempt) until the next job cannot start."""
        raise NotImplementedError

    def heads(self) -> list[Job]:
        """The jobs the scheduler would try next."""
        raise NotImplementedError

    def front_of_queue(self, runnable: list[Job]) -> list[Job]:
        """The queue's RUNNABLE jobs in the order it would dispatch them (GetJobQueueSnapshot)."""
        raise NotImplementedError

    def on_runnable(self, job: Job) -> None:
        """A job of this queue became RUNNABLE for the first time (before ``enqueue``)."""

    def on_dispatch(self, job: Job, now: float) -> None:
        """A job of this queue took capacity on its environment."""

    def on_release(self, job: Job, now: float, held: float) -> None:
        """A job gave its capacity back after holding ``held`` instance-seconds."""

    def on_finish(self, job: Job) -> None:
        """A job of this queue ended SUCCEEDED or FAILED."""

    def blocked_reason(self, job: Job) -> str | None:
        """Why a head job can never start under this kind's own limits (None: it can)."""
        return None

    def held_by_share(self) -> dict[str, float]:
        """Instance-seconds each share's finished holds add up to."""
        return {}

    def share_of(self, job: Job) -> str | None:
        """The share a job's hold is counted in (None: no share)."""
        return None


class FifoScheduler(Scheduler):
    """A queue without a scheduling policy: jobs start in submission order."""

    kind = FIFO

    def __init__(self, model: SchedulingHost, queue: JobQueue) -> None:
        super().__init__(model, queue)
        #: Submission order alone: the first member, a priority elsewhere, is 0 for every job.
        self.heap: list[QueueEntry] = []

    def enqueue(self, job: Job) -> None:
        heapq.heappush(self.heap, (0, job.seq, job.qver, job))

    def heads(self) -> list[Job]:
        job = head_of(self.heap)
        return [job] if job else []

    def front_of_queue(self, runnable: list[Job]) -> list[Job]:
        return sorted(runnable, key=lambda j: j.seq)

    def run_pass(self) -> None:
        queue, model, heap = self.queue, self.model, self.heap
        if model.options.head_of_line_blocking:
            while True:
                job = head_of(heap)
                if job is None:
                    return
                env = model.room(queue, job)
                if env is None:
                    return
                heapq.heappop(heap)
                model.dispatch(job, env)
        else:
            for entry in sorted(heap):
                job = entry[-1]
                if job.qver != entry[-2] or job.status != RUNNABLE:
                    continue
                env = model.room(queue, job)
                if env is not None:
                    job.qver += 1  # its heap entry is now stale
                    model.dispatch(job, env)


class FairShareScheduler(Scheduler):
    """A fair-share queue: the share furthest below its weighted entitlement goes next.

    Fair-share math comes from ``shareplane.domain.shares.fairshare`` (the production code), never a copy.
    """

    kind = FAIRSHARE

    @property
    def policy(self) -> SchedulingPolicy:
        """The queue's current policy: ``scheduler_for`` gives this scheduler only to a fair-share queue."""
        policy = self.queue.policy
        if policy is None:
            raise RuntimeError(f"fair-share queue {self.queue.name} has no scheduling policy")
        return policy

    @property
    def window(self) -> float:
        """The decay window of the queue's current policy."""
        return self.policy.decay_window

    def share(self, name: str) -> FairShare:
        """The queue's share ``name``, created at its policy's weight on first use."""
        queue = self.queue
        sh = queue.shares.get(name)
        if sh is None:
            weights = queue.policy.weights if queue.policy else ()
            sh = FairShare(name, fairshare.weight_for(name, weights))
            sh.t0 = self.model.engine.now
            queue.shares[name] = sh
        return sh

    def on_runnable(self, job: Job) -> None:
        sh = self.share(job.share or "")
        job.fshare = sh
        if not sh.counted:
            sh.counted = True
            self.queue.active_shares += 1
        sh.active += 1

    def enqueue(self, job: Job) -> None:
        sh = job.fshare
        if sh is None:
            raise RuntimeError(f"service job {job.id} is queued before on_runnable gave it its share")
        heapq.heappush(sh.heap, (-job.priority, job.seq, job.qver, job))

    def _tie_break(self, sh: FairShare) -> float:
        return sh.weight if self.model.options.fairshare_ties_by_weight else 0.0

    def heads(self) -> list[Job]:
        now = self.model.engine.now
        window = self.window
        tie = self._tie_break
        best = None
        for sh in self.queue.shares.values():
            job = head_of(sh.heap)
            if job is not None:
                key = (standing(sh.usage_at(now, window), sh.rate, window), tie(sh), job.seq)
                if best is None or key < best[0]:
                    best = (key, job)
        return [best[1]] if best else []

    def front_of_queue(self, runnable: list[Job]) -> list[Job]:
        # Dispatch order across shares: round robin over shares by current usage, priority within.
        now, window = self.model.now, self.window
        shares = self.queue.shares
        by_share: dict[str, list[Job]] = {}
        for j in sorted(runnable, key=lambda j: (-j.priority, j.seq)):
            by_share.setdefault(j.share or "", []).append(j)
        order = sorted(
            by_share, key=lambda s: standing(shares[s].usage_at(now, window), shares[s].rate, window)
        )
        out: list[Job] = []
        while any(by_share.values()):
            for s in order:
                if by_share[s]:
                    out.append(by_share[s].pop(0))
        return out

    def run_pass(self) -> None:
        queue, model = self.queue, self.model
        policy = self.policy
        window = policy.decay_window
        cr = policy.compute_reservation
        now = model.engine.now
        hol = model.options.head_of_line_blocking
        tie = self._tie_break
        skipped: set[str] = set()
        head = head_of
        while True:
            best: FairShare | None = None
            best_key: tuple[float, float, int] | None = None
            for sh in queue.shares.values():
                if not sh.heap or sh.name in skipped:
                    continue
                job = head(sh.heap)
                if job is None:
                    continue
                key = (standing(sh.usage_at(now, window), sh.rate, window), tie(sh), job.seq)
                if best_key is None or key < best_key:
                    best, best_key = sh, key
            if best is None:
                return
            job = best.heap[0][-1]
            usable: Callable[[int], int] | None = None
            if cr:
                active = queue.active_shares

                def usable(cap: int, active: int = active) -> int:
                    return fairshare.usable_capacity(cap, cr, active)

            env = model.room(queue, job, usable)
            if env is None:
                if hol:
                    return
                skipped.add(best.name)
                continue
            heapq.heappop(best.heap)
            model.dispatch(job, env)

    def on_dispatch(self, job: Job, now: float) -> None:
        sh = job.fshare
        if sh is not None:
            sh.usage_at(now, self.window)
            sh.rate += job.units * sh.weight

    def on_release(self, job: Job, now: float, held: float) -> None:
        sh = job.fshare
        if sh is not None:
            sh.usage_at(now, self.window)
            sh.rate -= job.units * sh.weight
            if sh.rate < 1e-9:
                sh.rate = 0.0
            sh.held_seconds += held

    def on_finish(self, job: Job) -> None:
        sh = job.fshare
        if sh is not None:
            sh.active -= 1
            if sh.active == 0:
                sh.idle_epoch += 1
                window = self.queue.policy.decay_window if self.queue.policy else 0.0
                self.model.engine.schedule(window, self._share_decayed, (sh, sh.idle_epoch))

    def _share_decayed(self, arg: tuple[FairShare, int]) -> None:
        """A share without jobs for a whole decay window stops counting as active.

        https://docs.aws.amazon.com/batch/latest/userguide/fair-share-scheduling.html ("After the
        period of time for decay expires, a share identifier is considered inactive")
        """
        sh, epoch = arg
        if sh.idle_epoch == epoch and sh.active == 0 and sh.counted:
            sh.counted = False
            self.queue.active_shares -= 1
            self.model.request_pass()

    def reweigh(self, weights: Mapping[str, float]) -> None:
        """Set weightFactors mid-run in O(shares); see ``BatchModel.reweigh``."""
        policy = self.policy
        now = self.model.engine.now
        changed = {**{w.share_identifier: w.weight_factor for w in policy.weights}, **weights}
        for sh in self.queue.shares.values():
            sh.usage_at(now, policy.decay_window)
        distribution = [{"shareIdentifier": s, "weightFactor": w} for s, w in changed.items()]
        policy.set_fairshare({**(policy.fairshare or {}), "shareDistribution": distribution})
        for sh in self.queue.shares.values():
            weight = fairshare.weight_for(sh.name, policy.weights)
            sh.rate = sh.rate / sh.weight * weight if sh.weight > 0 else 0.0
            sh.weight = weight

    def held_by_share(self) -> dict[str, float]:
        return {name: sh.held_seconds for name, sh in self.queue.shares.items()}

    def share_of(self, job: Job) -> str | None:
        return job.share


class QuotaShareScheduler(Scheduler):
    """A quota-share queue: shares' heads compete in FIFO order; lending, borrowing and preemption.

    The scheduler decides whom to preempt; ``BatchModel.preempt`` carries it out.
    """

    kind = QUOTA

    def enqueue(self, job: Job) -> None:
        heapq.heappush(self._quota_share(job).heap, (-job.priority, job.seq, job.qver, job))

    @staticmethod
    def _quota_share(job: Job) -> QuotaShare:
        """The quota share a job of this queue was submitted to (SubmitServiceJob requires one)."""
        if job.qshare is None:
            raise RuntimeError(f"service job {job.id} on a quota-share queue has no quota share")
        return job.qshare

    def heads(self) -> list[Job]:
        return [j for s in self.queue.quota_shares.values() if (j := head_of(s.heap)) is not None]

    def front_of_queue(self, runnable: list[Job]) -> list[Job]:
        return sorted(runnable, key=lambda j: (-j.priority, j.seq))

    def blocked_reason(self, job: Job) -> str | None:
        """More instances than its quota share's limit plus what the share may borrow.

        https://docs.aws.amazon.com/batch/latest/userguide/sm_job_stuck_in_runnable_misconfiguration.html
        """
        share = job.qshare
        if share is None:
            return None
        unit = job.instance_type
        if job.count > share.limits.get(unit, 0) + share.borrow_cap(unit):
            return texts.QUOTA_LIMIT
        return None

    def _ledger(self, env: ServiceEnvironment, unit: str) -> tuple[float, float]:
        """(lendable, borrowed) instances of ``unit`` across the queue's quota shares."""
        shares = self.queue.quota_shares
        # Capacity no share owns is lendable; shares may also overcommit the environment (never negative).
        lendable = max(0, env.limits.get(unit, 0) - sum(s.limits.get(unit, 0) for s in shares.values()))
        borrowed = 0
        for s in shares.values():
            lim = s.limits.get(unit, 0)
            used = s.in_use.get(unit, 0)
            if s.lends and used < lim:
                lendable += lim - used
            if used > lim:
                borrowed += used - lim
        return lendable, borrowed

    def _admissible(self, env: ServiceEnvironment, share: QuotaShare, job: Job) -> bool:
        unit = job.instance_type
        cap = env.limits.get(unit)
        if cap is None or env.in_use.get(unit, 0) + job.count > cap:
            return False
        lim = share.limits.get(unit, 0)
        used = share.in_use.get(unit, 0)
        after = used + job.count
        if after > lim and after - lim > share.borrow_cap(unit):
            return False
        share.in_use[unit] = after
        lendable, borrowed = self._ledger(env, unit)
        share.in_use[unit] = used
        return borrowed <= lendable

    def _try_with_victims(
        self, env: ServiceEnvironment, share: QuotaShare, job: Job, victims: list[Job]
    ) -> list[Job] | None:
        """The fewest victims (in the given order) whose removal admits ``job``, or None."""
        removed: list[Job] = []
        for victim in victims:
            self._hold(victim, -1)
            removed.append(victim)
            if self._admissible(env, share, job):
                break
        else:
            for victim in removed:
                self._hold(victim, +1)
            return None
        for victim in removed:
            self._hold(victim, +1)
        return removed

    @staticmethod
    def _hold(job: Job, sign: int) -> None:
        n = sign * job.count
        if job.env is None:
            raise RuntimeError(f"service job {job.id} holds no capacity to count")
        job.env.in_use[job.unit] += n
        if job.qshare is not None:
            job.qshare.in_use[job.instance_type] = job.qshare.in_use.get(job.instance_type, 0) + n

    def run_pass(self) -> None:
        queue = self.queue
        env = queue.environments[0]
        if env.state != "ENABLED":
            return
        hol = self.model.options.head_of_line_blocking
        while True:
            candidates: list[Job] = []
            for share in queue.quota_shares.values():
                if share.state != "ENABLED":
                    continue
                if hol:
                    job = head_of(share.heap)
                    if job is not None:
                        candidates.append(job)
                else:
                    candidates.extend(
                        e[-1] for e in sorted(share.heap) if e[-1].qver == e[-2] and e[-1].status == RUNNABLE
                    )
            if hol:
                # Each share's head competes with the others in FIFO order (idleResourceAssignmentStrategy).
                candidates.sort(key=lambda j: j.seq)
            for job in candidates:
                if self._place(env, job):
                    break
            else:
                return

    def _place(self, env: ServiceEnvironment, job: Job) -> bool:
        share = self._quota_share(job)
        unit = job.instance_type
        if self._admissible(env, share, job):
            self._start(job, env)
            return True
        lim = share.limits.get(unit, 0)
        if share.in_use.get(unit, 0) + job.count <= lim:
            # Its own capacity is lent out: reclaim it from borrowers (cross-share preemption).
            borrowers = [
                j
                for s in self.queue.quota_shares.values()
                if s is not share and s.in_use.get(unit, 0) > s.limits.get(unit, 0)
                for j in s.running
                if j.instance_type == unit
            ]
            return self._preempt_for(env, share, job, borrowers, texts.CROSS_SHARE)
        if share.preemption.get("inSharePreemption") == "ENABLED":
            lower = [j for j in share.running if j.instance_type == unit and j.priority < job.priority]
            return self._preempt_for(env, share, job, lower, texts.IN_SHARE)
        return False

    def _preempt_for(
        self, env: ServiceEnvironment, share: QuotaShare, job: Job, victims: list[Job], reason: str
    ) -> bool:
        """Start ``job`` by preempting the fewest of ``victims``; False (nothing stopped) when none suffice.

        Victims go lowest priority first, then the most recently started (the least work lost).
        """
        victims.sort(key=lambda j: (j.priority, -(j.scheduled_at or 0.0), -j.seq))
        chosen = self._try_with_victims(env, share, job, victims)
        if not chosen:
            return False
        for victim in chosen:
            self.model.preempt(victim, reason)
        self._start(job, env)
        return True

    def _start(self, job: Job, env: ServiceEnvironment) -> None:
        job.qver += 1  # drop its heap entry lazily
        self.model.dispatch(job, env)

    def on_dispatch(self, job: Job, now: float) -> None:
        q = job.qshare
        if q is not None:
            q.in_use[job.instance_type] = q.in_use.get(job.instance_type, 0) + job.count
            q.running.add(job)

    def on_release(self, job: Job, now: float, held: float) -> None:
        q = job.qshare
        if q is not None:
            q.in_use[job.instance_type] -= job.count
            q.running.discard(job)
            q.held_seconds += held

    def held_by_share(self) -> dict[str, float]:
        return {name: sh.held_seconds for name, sh in self.queue.quota_shares.items()}

    def share_of(self, job: Job) -> str | None:
        return job.qshare.name if job.qshare else None


def scheduler_for(model: SchedulingHost, queue: JobQueue) -> Scheduler:
    """The scheduler a new queue gets from the kind of its scheduling policy (none: FIFO)."""
    policy = queue.policy
    if policy is None:
        return FifoScheduler(model, queue)
    if policy.quota is not None:
        return QuotaShareScheduler(model, queue)
    return FairShareScheduler(model, queue)
