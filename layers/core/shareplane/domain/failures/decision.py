"""The failure path, decided purely: classify a failed job, then plan requeue, alert or nothing.

``classify`` maps a ``FailureSignal`` (Batch statusReason, SageMaker FailureReason and statuses) to a
``FailureClass`` through the ordered rules of ``FailuresConfig``. ``decide`` turns a ``FailureContext``
(the signal plus what the job record knows: tier, share, budget spent, preemptions, the share's
recent failures) into a ``FailureDecision`` that the service layer applies. Nothing here reads a
clock, a random source or AWS: ``now`` is a parameter and jitter comes from a passed-in
``random.Random`` or, by default, from a hash of the job and attempt so a redelivered event computes
the same delay.

Who retries what (reference: AWS Batch service-job retries, Armada retry policies):
- capacity errors: Batch requeues them itself without spending ``retryStrategy.attempts``, so the
  decision is ``left_to_batch`` unless Batch has ended the job (a RUNNABLE time limit);
- preemptions: Batch requeues them as RUNNABLE, so ``left_to_batch`` until
  ``preemptionRetriesBeforeTermination`` runs out; then we requeue, still without the budget;
- everything else spends the job's failure budget, and a share failing faster than the storm guard
  allows stops being requeued, with one storm alert.
"""

from __future__ import annotations

import hashlib
import math
import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from types import MappingProxyType

from ..config.failure_rules import (
    STORM_FIX,
    BackoffConfig,
    ClassPolicy,
    FailureClass,
    FailureRule,
    Severity,
    SignalField,
    StormGuardConfig,
)
from ..config.shares import SchedulingMode, SharesConfig, TeamConfig, Tier
from ..errors import InvalidInputError

__all__ = [
    "Action",
    "Classification",
    "FailureClass",
    "FailureContext",
    "FailureDecision",
    "FailureSignal",
    "Severity",
    "StormVerdict",
    "backoff_delay",
    "classify",
    "decide",
    "hash_fraction",
    "next_larger_instance_type",
    "priority_escalation",
    "escalation_ceiling",
    "repeated_preemption_alert",
    "storm_guard",
]

#: SQS DelaySeconds maximum; a longer wait goes through EventBridge Scheduler.
SQS_MAX_DELAY_SECONDS = 900
#: Batch's schedulingPriority maximum.
MAX_SCHEDULING_PRIORITY = 9999
EXCERPT_MAX_CHARS = 200
_SAGEMAKER_PREFIX = re.compile(r"^\s*Received status from SageMaker:\s*", re.IGNORECASE)
_EXIT_CODE = re.compile(r"ExitCode\s+(-?\d+)")
#: Classes that are not the job's fault: they neither spend the budget nor feed the storm guard.
_STORM_EXEMPT = frozenset(
    {
        FailureClass.CAPACITY,
        FailureClass.PREEMPTED,
        FailureClass.SPOT_INTERRUPTION,
        FailureClass.STOPPED_BY_USER,
        FailureClass.RECLAIMED,
        FailureClass.IDLE_STOPPED,
    }
)


class Action(StrEnum):
    """What the service layer does with a failed job."""

    REQUEUE = "requeue"  # resubmit after delay_seconds, with mutations applied to the payload
    ALERT = "alert"  # park the job and publish an alert
    LEFT_TO_BATCH = "left_to_batch"  # AWS Batch requeues it itself; only record it
    IGNORE = "ignore"  # record it, nothing else


@dataclass(frozen=True)
class FailureSignal:
    """What AWS said about a failed (or requeued) job; ``None`` means the event did not carry it."""

    status_reason: str | None = None
    failure_reason: str | None = None
    secondary_status: str | None = None
    training_job_status: str | None = None
    was_terminated: bool = False
    exit_code: int | None = None

    def text(self, which: SignalField) -> str:
        """One of the signal's texts, empty when absent."""
        return getattr(self, which.value) or ""

    @property
    def effective_exit_code(self) -> int | None:
        """The exit code given, else the one in an ``AlgorithmError ... ExitCode <n>`` reason."""
        if self.exit_code is not None:
            return self.exit_code
        for text in (self.failure_reason, self.status_reason):
            found = _EXIT_CODE.search(text or "")
            if found:
                return int(found.group(1))
        return None


@dataclass(frozen=True)
class Classification:
    """The class of a failure and the evidence for it."""

    failure_class: FailureClass
    rule_id: str
    #: The matched text says the job has ended and AWS will not retry it.
    final: bool = False
    field: SignalField | None = None
    marker: str | None = None
    excerpt: str = ""


UNKNOWN_RULE_ID = "no-rule-matched"


def _clean(text: str) -> str:
    return " ".join(text.split())


def _excerpt(text: str, marker: str | None) -> str:
    """At most EXCERPT_MAX_CHARS of ``text``, showing the marker's line even when it sits past the cut."""
    text = _SAGEMAKER_PREFIX.sub("", text)
    whole = _clean(text)
    if len(whole) <= EXCERPT_MAX_CHARS:
        return whole
    at = text.casefold().find(marker.casefold()) if marker else -1
    if at < 0 or len(_clean(text[: at + len(marker or "")])) < EXCERPT_MAX_CHARS:
        return whole[: EXCERPT_MAX_CHARS - 1] + "…"
    # Start at the marker's line (a traceback's last line names the error), at most 100 chars back.
    start = max(text.rfind("\n", 0, at) + 1, at - 100)
    tail = _clean(text[start:])
    if len(tail) <= EXCERPT_MAX_CHARS - 1:
        return "…" + tail
    return "…" + tail[: EXCERPT_MAX_CHARS - 2] + "…"


def _rule_match(rule: FailureRule, signal: FailureSignal) -> tuple[SignalField | None, str | None] | None:
    """(field, marker) when every condition of ``rule`` holds for ``signal``, else None."""
    if rule.terminated is not None and signal.was_terminated is not rule.terminated:
        return None
    if rule.exit_codes and signal.effective_exit_code not in rule.exit_codes:
        return None
    if not rule.contains:
        return None, None
    for which in rule.fields:
        text = signal.text(which).casefold()
        if not text:
            continue
        if rule.within and not any(kind.casefold() in text for kind in rule.within):
            continue
        for marker in rule.contains:
            needle = marker.casefold()
            if (text.strip() == needle) if rule.exact else (needle in text):
                return which, marker
    return None


def classify(signal: FailureSignal, rules: Sequence[FailureRule]) -> Classification:
    """The class of the first rule that matches ``signal``; ``unknown`` when none does."""
    for rule in rules:
        hit = _rule_match(rule, signal)
        if hit is None:
            continue
        which, marker = hit
        source = signal.text(which) if which else _first_text(signal)
        return Classification(
            rule.failure_class, rule.id, rule.final, which, marker, _excerpt(source, marker)
        )
    return Classification(FailureClass.UNKNOWN, UNKNOWN_RULE_ID, excerpt=_excerpt(_first_text(signal), None))


def _first_text(signal: FailureSignal) -> str:
    order = (
        SignalField.FAILURE_REASON,
        SignalField.STATUS_REASON,
        SignalField.SECONDARY_STATUS,
        SignalField.TRAINING_JOB_STATUS,
    )
    return next((signal.text(w) for w in order if signal.text(w)), "")


def hash_fraction(seed: str) -> float:
    """A uniform-looking number in [0, 1) that depends only on ``seed``."""
    digest = hashlib.sha256(seed.encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def backoff_delay(
    attempt: int,
    backoff: BackoffConfig,
    *,
    rng: random.Random | None = None,
    seed: str | None = None,
) -> int:
    """Seconds to wait before retry ``attempt`` (1-based): capped exponential, +/- jitter.

    Jitter comes from ``rng`` if given, else from ``seed`` (deterministic), else is zero.
    """
    if attempt < 1:
        raise InvalidInputError("attempt", f"is {attempt}", "count attempts from 1")
    raw = _capped_exponential(attempt, backoff)
    if rng is not None:
        u = rng.random()
    elif seed is not None:
        u = hash_fraction(seed)
    else:
        u = 0.5
    # floor keeps the promise delay <= cap * (1 + jitter) exactly
    return max(0, math.floor(raw * (1 + backoff.jitter * (2 * u - 1))))


def _capped_exponential(attempt: int, backoff: BackoffConfig) -> float:
    if backoff.factor == 1:
        return min(backoff.cap_seconds, backoff.base_seconds)
    # compare exponents, not powers: factor**attempt overflows a float for large attempts
    steps_to_cap = math.log(backoff.cap_seconds / backoff.base_seconds) / math.log(backoff.factor)
    if attempt - 1 >= steps_to_cap:
        return backoff.cap_seconds
    return min(backoff.cap_seconds, backoff.base_seconds * backoff.factor ** (attempt - 1))


@dataclass(frozen=True)
class StormVerdict:
    """The storm guard's view of one share at one failure."""

    tripped: bool
    alert: bool
    failures_in_window: int


def storm_guard(
    recent_failures: Sequence[float],
    now: float,
    config: StormGuardConfig,
    last_alert_at: float | None = None,
) -> StormVerdict:
    """Whether this failure (at ``now``) makes the share's failures a storm, and whether to alert.

    ``recent_failures`` are the share's earlier failure times (epoch seconds, any order), without
    this one. The guard alerts once per window: not again while ``last_alert_at`` is inside it.
    """
    window_start = now - config.window_seconds
    count = 1 + sum(1 for t in recent_failures if window_start < t <= now)
    tripped = count > config.max_failures
    recently_alerted = last_alert_at is not None and last_alert_at > window_start
    return StormVerdict(tripped, tripped and not recently_alerted, count)


def next_larger_instance_type(
    instance_type: str | None,
    ladders: Mapping[str, Sequence[str]],
    allowed: Sequence[str] | None = None,
) -> str | None:
    """The next size up in ``instance_type``'s ladder that is ``allowed``; None when there is none."""
    if not instance_type:
        return None
    for sizes in ladders.values():
        if instance_type in sizes:
            larger = sizes[list(sizes).index(instance_type) + 1 :]
            return next((s for s in larger if allowed is None or s in allowed), None)
    return None


@dataclass(frozen=True)
class FailureContext:
    """A failed job as the failure path sees it: the signal plus what the job record knows."""

    signal: FailureSignal
    job_id: str
    share: str
    tier: Tier
    now: float
    instance_type: str | None = None
    #: Earlier failures of this job that spent the budget.
    budget_used: int = 0
    #: Times this job has been preempted, this one included.
    preemption_count: int = 0
    #: The job's preemptionConfiguration.preemptionRetriesBeforeTermination; None = Batch's unlimited.
    preemption_retries_before_termination: int | None = None
    #: Spot interruptions of this job, this one included.
    spot_interruptions: int = 0
    #: Times (epoch seconds) of the share's earlier failures that fed the storm guard.
    share_recent_failures: tuple[float, ...] = ()
    share_storm_alerted_at: float | None = None
    #: Classes this job has already alerted on: each alerts once per job.
    alerted_classes: frozenset[FailureClass] = frozenset()
    #: The team the job belongs to (config's mapping of its share, or its team tag); None: not known.
    team: str | None = None

    def __post_init__(self) -> None:
        for name in ("budget_used", "preemption_count", "spot_interruptions"):
            if getattr(self, name) < 0:
                raise InvalidInputError(name, f"is {getattr(self, name)}", "pass a count of 0 or more")
        if not self.job_id:
            raise InvalidInputError("job_id", "is empty", "pass the job's id")


@dataclass(frozen=True)
class FailureDecision:
    """The plan for one failed job; the service layer applies it and nothing else."""

    action: Action
    failure_class: FailureClass
    rule_id: str
    reason_excerpt: str
    severity: Severity
    fix: str
    #: Which budget-spending failure of the job this is (0 when this class spends none).
    attempt: int
    budget_left: int
    delay_seconds: int = 0
    #: Payload changes for the resubmission: dotted CreateTrainingJob paths; None removes the key.
    mutations: Mapping[str, object] = field(default_factory=dict)
    storm: bool = False
    #: Why this action, in a few words (budget exhausted, no larger instance type, ...).
    why: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "mutations", MappingProxyType(dict(self.mutations)))
        if len(self.reason_excerpt) > EXCERPT_MAX_CHARS:
            raise InvalidInputError(
                "reason_excerpt", "is too long", f"cut it to {EXCERPT_MAX_CHARS} characters"
            )

    @property
    def needs_scheduler(self) -> bool:
        """The wait is longer than SQS can delay a message: schedule it with EventBridge Scheduler."""
        return self.action is Action.REQUEUE and self.delay_seconds > SQS_MAX_DELAY_SECONDS

    @property
    def counts_toward_storm(self) -> bool:
        """Whether the service layer adds this failure to the share's storm-guard history."""
        return self.failure_class not in _STORM_EXEMPT and self.action is not Action.LEFT_TO_BATCH

    def summary(self) -> str:
        """One short line: ``requeue after 60s (budget left 2)``, ``alert: critical``, ..."""
        if self.action is Action.REQUEUE:
            extras = [f"budget left {self.budget_left}"]
            extras += [f"{k}={'(removed)' if v is None else v}" for k, v in self.mutations.items()]
            return f"requeue after {self.delay_seconds}s ({'; '.join(extras)})"
        if self.action is Action.ALERT:
            return f"alert: {self.severity}" + (" (storm)" if self.storm else "")
        return "left to batch" if self.action is Action.LEFT_TO_BATCH else "ignore"


def decide(ctx: FailureContext, config: SharesConfig, *, rng: random.Random | None = None) -> FailureDecision:
    """Classify the failure in ``ctx`` and plan what to do with the job.

    Jitter comes from ``rng`` when given; otherwise from a hash of the job id, class and attempt, so
    the same failure delivered twice gets the same delay.
    """
    failures = config.failures
    found = classify(ctx.signal, failures.ordered_rules)
    policy = failures.policy_for(found.failure_class, ctx.tier)
    plan = _plan(ctx, config, found, policy, rng)
    if plan.action in (Action.REQUEUE, Action.ALERT) and plan.counts_toward_storm:
        verdict = storm_guard(ctx.share_recent_failures, ctx.now, failures.storm, ctx.share_storm_alerted_at)
        if verdict.tripped:
            return _storm(plan, ctx, verdict, failures.storm)
    if plan.action is Action.ALERT and found.failure_class in ctx.alerted_classes:
        return replace(
            plan, action=Action.IGNORE, why=f"already alerted on {found.failure_class} for this job"
        )
    return plan


def _storm(
    plan: FailureDecision, ctx: FailureContext, verdict: StormVerdict, guard: StormGuardConfig
) -> FailureDecision:
    window = (
        f"{verdict.failures_in_window} failures in {guard.window_seconds:g}s (limit {guard.max_failures})"
    )
    if verdict.alert:
        return replace(
            plan,
            action=Action.ALERT,
            severity=Severity.CRITICAL,
            delay_seconds=0,
            mutations={},
            storm=True,
            why=f"failure storm in share {ctx.share}: {window}; requeueing paused",
            fix=STORM_FIX.format(share=ctx.share),
        )
    return replace(
        plan,
        action=Action.IGNORE,
        delay_seconds=0,
        mutations={},
        storm=True,
        why=f"storm, already alerted: {window}",
    )


@dataclass(frozen=True)
class _Planner:
    """What planning one failure reads (its context, the config, the classification and the class's
    policy), and the decisions it can make from them."""

    ctx: FailureContext
    config: SharesConfig
    found: Classification
    policy: ClassPolicy
    rng: random.Random | None

    @property
    def cls(self) -> FailureClass:
        return self.found.failure_class

    @property
    def limit(self) -> int:
        """The failure budget of the job's tier."""
        return self.config.failures.budget_for(self.ctx.tier)

    def make(
        self,
        action: Action,
        *,
        attempt: int = 0,
        why: str = "",
        delay_seconds: int = 0,
        mutations: Mapping[str, object] | None = None,
    ) -> FailureDecision:
        severity = self.policy.severity if action is Action.ALERT else Severity.INFO
        return FailureDecision(
            action=action,
            failure_class=self.cls,
            rule_id=self.found.rule_id,
            reason_excerpt=self.found.excerpt,
            severity=severity,
            fix=self.policy.fix,
            attempt=attempt,
            budget_left=max(0, self.limit - self.ctx.budget_used - (1 if attempt else 0)),
            why=why,
            delay_seconds=delay_seconds,
            mutations={} if mutations is None else mutations,
        )

    def delay(self, n: int) -> int:
        """The backoff before the ``n``-th retry (jittered, seeded by the job, class and ``n``)."""
        backoff = self.config.failures.backoff_for(self.ctx.tier)
        return backoff_delay(n, backoff, rng=self.rng, seed=f"{self.ctx.job_id}:{self.cls}:{n}")

    def not_retried(self, why: str) -> FailureDecision:
        return self.make(Action.ALERT if self.policy.alert else Action.IGNORE, why=why)


def _plan(
    ctx: FailureContext,
    config: SharesConfig,
    found: Classification,
    policy: ClassPolicy,
    rng: random.Random | None,
) -> FailureDecision:
    """The class's own rule first (``_CLASS_RULES``), then the class policy: not retried, or retried."""
    planner = _Planner(ctx, config, found, policy, rng)
    rule = _CLASS_RULES.get(planner.cls)
    decided = rule(planner) if rule is not None else None
    if decided is not None:
        return decided
    if not policy.retry:
        return planner.not_retried(f"{planner.cls} is not retried")
    return _retried(planner)


def _capacity(p: _Planner) -> FailureDecision:
    if p.found.final or p.ctx.signal.was_terminated:
        return p.not_retried("AWS Batch ended the job while it waited for capacity")
    return p.make(Action.LEFT_TO_BATCH, why="AWS Batch requeues capacity errors without spending attempts")


def _preempted(p: _Planner) -> FailureDecision:
    ctx = p.ctx
    cap = ctx.preemption_retries_before_termination
    if cap is None or ctx.preemption_count <= cap:
        return p.make(Action.LEFT_TO_BATCH, why="AWS Batch requeues preempted jobs as RUNNABLE")
    if not p.policy.retry:
        past = "past preemptionRetriesBeforeTermination"
        return p.not_retried(f"preempted {ctx.preemption_count} times, {past}")
    return p.make(
        Action.REQUEUE,
        delay_seconds=p.delay(ctx.preemption_count - cap),
        why=f"preemptionRetriesBeforeTermination ({cap}) ran out; requeued without spending the budget",
    )


def _reclaimed(p: _Planner) -> FailureDecision:
    # Stopped on purpose for a higher tier's job: not the job's fault, and waiting helps no one.
    return p.make(
        Action.REQUEUE,
        why="stopped by reclaim; requeued at once without spending the budget, resumes from its "
        "last checkpoint",
    )


def _spot_resuming(p: _Planner) -> FailureDecision | None:
    if (p.ctx.signal.training_job_status or "").casefold() == "inprogress":
        return p.make(Action.IGNORE, why="SageMaker resumes an interrupted spot job itself")
    return None  # ended: the class policy decides


#: Classes with a rule of their own, applied before the class policy (None: the policy decides).
_CLASS_RULES: Mapping[FailureClass, Callable[[_Planner], FailureDecision | None]] = MappingProxyType(
    {
        FailureClass.CAPACITY: _capacity,
        FailureClass.PREEMPTED: _preempted,
        FailureClass.RECLAIMED: _reclaimed,
        FailureClass.SPOT_INTERRUPTION: _spot_resuming,
    }
)


def _retried(p: _Planner) -> FailureDecision:
    """A retryable failure: requeued with what its policy changes, unless the budget is spent."""
    ctx, cls = p.ctx, p.cls
    attempt = ctx.budget_used + 1 if p.policy.uses_budget else 0
    if p.policy.uses_budget and attempt > p.limit:
        return p.make(Action.ALERT, attempt=attempt, why=f"failure budget of {p.limit} used up")
    changes = _requeue_changes(p)
    if isinstance(changes, str):
        return p.make(Action.ALERT, attempt=attempt, why=changes)
    mutations, whys = changes
    n = attempt or max(
        1, ctx.spot_interruptions if cls is FailureClass.SPOT_INTERRUPTION else ctx.budget_used + 1
    )
    return p.make(
        Action.REQUEUE,
        attempt=attempt,
        delay_seconds=p.delay(n),
        mutations=mutations,
        why="; ".join(whys) or f"{cls} is retried",
    )


def _requeue_changes(p: _Planner) -> tuple[dict[str, object], list[str]] | str:
    """The payload changes of a requeue and why each, or why the job cannot be requeued (no larger type)."""
    ctx, failures = p.ctx, p.config.failures
    mutations: dict[str, object] = {}
    whys: list[str] = []
    if p.policy.upsize:
        gpu = p.cls is FailureClass.GPU_OOM
        ladders = failures.gpu_memory_ladders if gpu else failures.host_memory_ladders
        allowed, whose = _upsize_choices(p.config, ctx.team)
        larger = next_larger_instance_type(ctx.instance_type, ladders, allowed)
        if larger is None:
            current = ctx.instance_type or "the unknown current one"
            return f"not requeued: no larger instance type {whose} than {current}"
        mutations["ResourceConfig.InstanceType"] = larger
        whys.append(f"upsized {ctx.instance_type} -> {larger}")
    if p.cls is FailureClass.SPOT_INTERRUPTION:
        # CheckpointConfig is never touched, so the retry resumes from the last checkpoint.
        after = failures.spot_on_demand_after
        if after is not None and ctx.spot_interruptions >= after:
            mutations["EnableManagedSpotTraining"] = False
            # MaxWaitTimeInSeconds is only valid for spot training
            mutations["StoppingCondition.MaxWaitTimeInSeconds"] = None
            whys.append(f"on-demand after {ctx.spot_interruptions} spot interruptions")
    return mutations, whys


def _upsize_choices(config: SharesConfig, team: str | None) -> tuple[list[str], str]:
    """The instance types an upsize may pick, and who allows them (for the alert's why).

    A team's allowed_instance_types (and, on a quota-share queue, its entitlement) bound a requeue as
    they bound its specs: an upsize never moves a job onto a type its team could not have submitted.
    A job whose team is not known may only use what every team may, so it can never escape a team's
    allowlist either.
    """
    cluster = [*config.instance_types, *config.queues.cpu_instance_types]

    def may_use(settings: TeamConfig, instance_type: str) -> bool:
        if settings.allowed_instance_types and instance_type not in settings.allowed_instance_types:
            return False
        # As admission does: a quota share with no capacity for a GPU type would never run the job.
        quota = config.mode is SchedulingMode.QUOTA and instance_type in config.instance_types
        return not quota or bool(settings.entitlement.get(instance_type))

    settings = config.teams.get(team) if team else None
    if settings is not None:
        return [t for t in cluster if may_use(settings, t)], f"team {team} is allowed"
    everyone = [t for t in cluster if all(may_use(s, t) for s in config.teams.values())]
    return everyone, "every team is allowed (the job's team is not known)"


def priority_escalation(
    current_priority: int, tier: Tier, waited_seconds: float, config: SharesConfig
) -> int:
    """The schedulingPriority a job should have after waiting ``waited_seconds`` in ``tier``.

    Past the tier's wait SLO the priority rises by ``failures.escalation.step`` per interval, counted
    from the tier's own priority (so re-evaluating never compounds), never reaching the next tier's
    priority (HIGHPRI stops at 9999) and never lowering what the job already has.
    """
    if not 0 <= current_priority <= MAX_SCHEDULING_PRIORITY:
        raise InvalidInputError(
            "current_priority",
            f"is {current_priority}",
            f"use a schedulingPriority in 0..{MAX_SCHEDULING_PRIORITY}",
        )
    tier_config = config.tiers[tier]
    slo = tier_config.wait_slo_seconds
    if waited_seconds <= slo:
        return current_priority
    escalation = config.failures.escalation
    every = escalation.every_seconds or slo
    steps = 1 + math.floor((waited_seconds - slo) / every)
    target = min(escalation_ceiling(tier, config), tier_config.scheduling_priority + steps * escalation.step)
    return max(current_priority, target)


def escalation_ceiling(tier: Tier, config: SharesConfig) -> int:
    """The highest schedulingPriority escalation gives a job of ``tier``: just below the next tier's."""
    own = config.tiers[tier].scheduling_priority
    above = [c.scheduling_priority for c in config.tiers.values() if c.scheduling_priority > own]
    return min(above) - 1 if above else MAX_SCHEDULING_PRIORITY


def repeated_preemption_alert(
    preemption_count: int, config: SharesConfig, *, already_alerted: bool = False
) -> str | None:
    """An alert text once a job has been preempted ``preemption_alert_after`` times; else None."""
    threshold = config.failures.preemption_alert_after
    if already_alerted or preemption_count < threshold:
        return None
    return (
        f"preempted {preemption_count} times (alert threshold {threshold}): the job loses progress to "
        "preemption; checkpoint more often, cap preemptionRetriesBeforeTermination, or run it in a share "
        "with reserved capacity"
    )
