"""Idle and hung GPU jobs: the per-team policy and the decision for one job.

SageMaker publishes ``GPUUtilization`` per host of a training job (namespace
``/aws/sagemaker/TrainingJobs``, dimension ``Host`` = ``<training job name>/algo-N``), the sum over
the host's GPUs: 0 to 100 x its GPU count. One number per host cannot tell one busy GPU from eight
barely used ones, so the rule is on the host's total: everything here is a pure function of the
samples, the job's facts and the decision's time, so the Lambda (on a schedule tick's time) and the
what-if simulator (on its clock) decide the same way, and any order or duplication of the same
samples decides the same.

- **Idle**: after ``grace_seconds`` from the start, every host's total stays below
  ``threshold_percent_of_one_gpu`` (a host with one GPU at that level is busy, whatever the others
  do) for ``window_seconds``. Evidence only: a host without samples, or whose newest sample is older
  than ``max_sample_age_seconds``, leaves the job undecided; the idle period is measured between
  samples (from the first idle sample after the last busy one, or after the last gap longer than
  ``max_sample_gap_seconds``, to the newest), never extrapolated over a gap or to ``now``.
- **Hung**: a job with a CheckpointConfig whose GPUs are busy, but that wrote no checkpoint object for
  ``hung_checkpoint_intervals`` x ``hung_checkpoint_interval_seconds`` (counted from the start's
  grace when it has none yet).
- A job is never stopped for idleness while any host's total is at or above the threshold in the
  window; a hung job is stopped only where its team's hung policy says so.
- A job whose team or tier is not known is judged by the most lenient policy it could have.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from enum import StrEnum

from ..config.shares import HungAction, IdleAction, IdleConfig, IdleOverride, Tier
from ..jobs.lifecycle import gpus_per_instance

__all__ = [
    "GPU_MEMORY_METRIC",
    "GPU_METRIC",
    "HUNG_REASON_PREFIX",
    "IDLE_REASON_PREFIX",
    "METRICS_NAMESPACE",
    "Act",
    "GpuSample",
    "HungAction",
    "IdleAction",
    "IdleDecision",
    "IdlePolicy",
    "Notice",
    "Signal",
    "Verdict",
    "decide",
    "host_dimension",
    "hosts_of",
    "lenient_policy",
    "lookback_seconds",
    "policy_for",
    "stop_reason",
]

#: Where SageMaker publishes training jobs' instance metrics, and the two GPU metrics read here
#: (SageMaker developer guide, "Monitor Amazon SageMaker AI with Amazon CloudWatch").
METRICS_NAMESPACE = "/aws/sagemaker/TrainingJobs"
GPU_METRIC = "GPUUtilization"
GPU_MEMORY_METRIC = "GPUMemoryUtilization"


@dataclass(frozen=True)
class IdlePolicy:
    """The idle and hung rules one job is judged by (one team and tier's, resolved from the config)."""

    threshold_percent_of_one_gpu: float = 5.0
    window_seconds: float = 1800.0
    grace_seconds: float = 900.0
    action: IdleAction = IdleAction.ALERT
    warning_grace_seconds: float = 900.0
    hung_checkpoint_intervals: int = 3
    hung_checkpoint_interval_seconds: float = 1800.0
    hung_action: HungAction = HungAction.ALERT
    max_sample_age_seconds: float = 900.0
    max_sample_gap_seconds: float = 300.0

    @property
    def hung_after_seconds(self) -> float:
        """How long without a new checkpoint makes a busy job hung."""
        return self.hung_checkpoint_intervals * self.hung_checkpoint_interval_seconds


_OVERRIDABLE = tuple(IdleOverride.model_fields)


def policy_for(config: IdleConfig, team: str | None, tier: Tier | None) -> IdlePolicy:
    """The policy of one team and tier: defaults, then the tier's, the team's, the team's tier's.

    A team or tier that is not known (None) takes the most lenient policy of those it could be.
    """
    if team is None and config.teams:
        return lenient_policy(
            [policy_for(config, name, tier) for name in config.teams] + [_policy(config, None, tier)]
        )
    if tier is None:
        return lenient_policy([_policy(config, team, each) for each in Tier])
    return _policy(config, team, tier)


def lenient_policy(policies: list[IdlePolicy]) -> IdlePolicy:
    """The policy that acts least and latest of ``policies``: each setting at its most lenient."""
    return IdlePolicy(
        threshold_percent_of_one_gpu=min(p.threshold_percent_of_one_gpu for p in policies),
        window_seconds=max(p.window_seconds for p in policies),
        grace_seconds=max(p.grace_seconds for p in policies),
        action=IdleAction.ALERT
        if any(p.action is IdleAction.ALERT for p in policies)
        else IdleAction.STOP_AFTER_WARNING,
        warning_grace_seconds=max(p.warning_grace_seconds for p in policies),
        hung_checkpoint_intervals=max(p.hung_checkpoint_intervals for p in policies),
        hung_checkpoint_interval_seconds=max(p.hung_checkpoint_interval_seconds for p in policies),
        hung_action=HungAction.ALERT
        if any(p.hung_action is HungAction.ALERT for p in policies)
        else HungAction.STOP_AND_REQUEUE,
        max_sample_age_seconds=min(p.max_sample_age_seconds for p in policies),
        max_sample_gap_seconds=min(p.max_sample_gap_seconds for p in policies),
    )


def _policy(config: IdleConfig, team: str | None, tier: Tier | None) -> IdlePolicy:
    values: dict[str, object] = {name: getattr(config, name) for name in _OVERRIDABLE}
    values["max_sample_age_seconds"] = config.max_sample_age_seconds
    values["max_sample_gap_seconds"] = config.max_sample_gap_seconds
    team_override = config.teams.get(team or "")
    layers: list[IdleOverride | None] = [
        config.tiers.get(tier) if tier else None,
        team_override,
        team_override.tiers.get(tier) if team_override and tier else None,
    ]
    for layer in layers:
        if layer is None:
            continue
        for name in _OVERRIDABLE:
            value = getattr(layer, name)
            if value is not None:
                values[name] = value
    return IdlePolicy(**values)  # type: ignore[arg-type]


def lookback_seconds(policy: IdlePolicy) -> float:
    """How far back a decision needs samples: a whole window, the warning grace, and the sample age."""
    return policy.window_seconds + policy.warning_grace_seconds + policy.max_sample_age_seconds


def hosts_of(instance_count: int) -> tuple[str, ...]:
    """The hosts SageMaker names for a job of ``instance_count`` instances: algo-1 .. algo-N."""
    return tuple(f"algo-{n}" for n in range(1, max(1, instance_count) + 1))


def host_dimension(training_job_name: str, host: str) -> str:
    """The CloudWatch ``Host`` dimension of one host of a training job."""
    return f"{training_job_name}/{host}"


@dataclass(frozen=True)
class GpuSample:
    """One CloudWatch datapoint of one host: GPUUtilization as published (0..100 x the host's GPUs)."""

    host: str
    at: float
    gpu_utilization: float
    gpu_memory_utilization: float | None = None


class Verdict(StrEnum):
    """What the samples say about a job at the decision's time."""

    #: Not a GPU instance type (or one the GPU table does not know): never judged.
    NOT_GPU = "not_gpu"
    #: Still inside the grace period after the start.
    GRACE = "grace"
    #: A host has no recent samples: nothing is decided.
    NO_DATA = "no_data"
    #: Some host's total is at or above the threshold.
    BUSY = "busy"
    #: Every host's total below the threshold, for less than the window so far (gaps restart it).
    IDLING = "idling"
    #: Every host's total below the threshold for at least the window, with no gap in the evidence.
    IDLE = "idle"
    #: GPUs busy, checkpointing configured, no new checkpoint for the policy's intervals.
    HUNG = "hung"


class Signal(StrEnum):
    """Which detector a notice is about (also the alerts' ``kind`` attribute)."""

    IDLE = "idle"
    HUNG = "hung"


class Act(StrEnum):
    """What to do to the job now."""

    NONE = "none"
    #: Tell the team (idle under an alert policy, or hung).
    ALERT = "alert"
    #: Tell the team the job will be stopped after the warning grace unless it wakes up.
    WARN = "warn"
    #: Stop the job for idleness (after its warning).
    STOP = "stop"
    #: Stop a hung job and requeue it from its last checkpoint.
    STOP_AND_REQUEUE = "stop_and_requeue"


@dataclass(frozen=True)
class Notice:
    """The last thing the detector did about a job: which signal, which act, when, about which period."""

    signal: Signal
    act: Act
    at: float
    #: The start of the period it was about (idle since / no checkpoint since).
    since: float


@dataclass(frozen=True)
class IdleDecision:
    """The verdict on one job at ``now``, and what to do about it."""

    verdict: Verdict
    act: Act
    reason: str
    #: Idle: the first idle sample after the last busy one or gap; hung: the newest checkpoint (or
    #: grace end).
    since: float | None = None
    #: The newest sample every host has (the end of the evidence).
    until: float | None = None
    #: The highest host total any host showed in the window (percent of one GPU).
    peak_host_percent: float | None = None
    #: The highest GPUMemoryUtilization any host showed in the window (percent), when published.
    peak_memory_percent: float | None = None
    #: A warned job is stopped at this time if it is still idle then.
    stop_at: float | None = None
    #: The mean per-GPU utilisation over every host's samples in the window (percent): the job's true
    #: GPU use, against the allocation it holds.
    mean_percent_per_gpu: float | None = None

    @property
    def signal(self) -> Signal | None:
        """Which detector the act belongs to (None when there is nothing to act on)."""
        if self.verdict is Verdict.IDLE:
            return Signal.IDLE
        if self.verdict is Verdict.HUNG:
            return Signal.HUNG
        return None

    def notice(self, now: float) -> Notice | None:
        """The notice to remember when this decision acts (None when it does nothing)."""
        signal = self.signal
        if self.act is Act.NONE or signal is None or self.since is None:
            return None
        return Notice(signal, self.act, now, self.since)

    @property
    def idle_seconds(self) -> float:
        """How long the evidence shows the job idle (0 unless idle or idling)."""
        if self.verdict not in (Verdict.IDLE, Verdict.IDLING) or self.since is None or self.until is None:
            return 0.0
        return max(0.0, self.until - self.since)


@dataclass(frozen=True)
class _HostEvidence:
    #: The first idle sample after the last busy one or the last gap; None when the newest is busy.
    idle_since: float | None
    newest: float
    #: Host totals (percent of one GPU) in the window.
    peak_in_window: float
    peak_memory: float | None
    window_values: tuple[float, ...]


def _host_evidence(
    samples: Iterable[GpuSample], threshold: float, max_gap: float, window_start: float
) -> _HostEvidence | None:
    # A time is busy if any sample at that time is: duplicates and their order then cannot matter.
    busiest: dict[float, float] = {}
    memory: dict[float, float] = {}
    for sample in samples:
        total = sample.gpu_utilization
        busiest[sample.at] = max(total, busiest.get(sample.at, total))
        if sample.gpu_memory_utilization is not None:
            memory[sample.at] = max(sample.gpu_memory_utilization, memory.get(sample.at, 0.0))
    if not busiest:
        return None
    times = sorted(busiest)
    idle_since: float | None = None
    for previous, at in zip([None, *times], times, strict=False):
        if busiest[at] >= threshold:
            idle_since = None
        elif idle_since is None or (previous is not None and at - previous > max_gap):
            # Nothing is known of a gap: the idle period starts again after it.
            idle_since = at
    in_window = [busiest[t] for t in times if t >= window_start]
    memory_in_window = [memory[t] for t in memory if t >= window_start]
    return _HostEvidence(
        idle_since=idle_since,
        newest=times[-1],
        peak_in_window=max(in_window, default=busiest[times[-1]]),
        peak_memory=max(memory_in_window, default=None),
        window_values=tuple(in_window) or (busiest[times[-1]],),
    )


def decide(
    policy: IdlePolicy,
    *,
    started_at: float,
    instance_type: str | None,
    instance_count: int,
    samples: Iterable[GpuSample],
    now: float,
    checkpointing: bool = False,
    last_checkpoint_at: float | None = None,
    previous: Notice | None = None,
) -> IdleDecision:
    """Judge one running job at ``now`` from its hosts' samples, and say what to do.

    Samples after ``now`` or before the grace period ends are ignored, so a reordered tick decides on
    exactly what was visible at its own time. ``previous`` is the last notice for this attempt; an
    alert or a warning is given once per period, and a stop needs a warning given in this idle period
    at least ``warning_grace_seconds`` ago.
    """
    gpus = gpus_per_instance(instance_type)
    if gpus <= 0:
        return IdleDecision(Verdict.NOT_GPU, Act.NONE, f"{instance_type or 'no instance type'} has no GPUs")
    grace_end = started_at + policy.grace_seconds
    if now < grace_end:
        return IdleDecision(Verdict.GRACE, Act.NONE, f"in the start's grace until {grace_end:.0f}")
    window_start = now - policy.window_seconds
    per_host: dict[str, list[GpuSample]] = {host: [] for host in hosts_of(instance_count)}
    for sample in samples:
        if grace_end <= sample.at <= now and sample.host in per_host:
            per_host[sample.host].append(sample)
    evidence: dict[str, _HostEvidence] = {}
    for host, host_samples in per_host.items():
        found = _host_evidence(
            host_samples, policy.threshold_percent_of_one_gpu, policy.max_sample_gap_seconds, window_start
        )
        if found is None or found.newest < now - policy.max_sample_age_seconds:
            return IdleDecision(Verdict.NO_DATA, Act.NONE, f"no recent GPUUtilization samples for {host}")
        evidence[host] = found
    until = min(e.newest for e in evidence.values())
    peak = max(e.peak_in_window for e in evidence.values())
    memories = [e.peak_memory for e in evidence.values() if e.peak_memory is not None]
    peak_memory = max(memories) if memories else None
    # Every host weighs the same: each has the same GPUs, and the mean of its window is its use.
    mean_total = sum(sum(e.window_values) / len(e.window_values) for e in evidence.values()) / len(evidence)
    idle_starts = [e.idle_since for e in evidence.values()]
    if all(start is not None for start in idle_starts):
        since = max(start for start in idle_starts if start is not None)
        decision = _idle(policy, since, until, peak, peak_memory, previous, now)
    else:
        decision = IdleDecision(Verdict.BUSY, Act.NONE, "GPUs busy", until=until, peak_host_percent=peak)
        checkpoint_since = max(last_checkpoint_at or grace_end, grace_end)
        if checkpointing and now - checkpoint_since >= policy.hung_after_seconds:
            decision = _hung(policy, checkpoint_since, until, peak, peak_memory, previous, now)
    return replace(decision, mean_percent_per_gpu=mean_total / gpus)


def _idle(
    policy: IdlePolicy,
    since: float,
    until: float,
    peak: float,
    peak_memory: float | None,
    previous: Notice | None,
    now: float,
) -> IdleDecision:
    idle_for = until - since
    threshold = policy.threshold_percent_of_one_gpu
    window = policy.window_seconds

    def decision(verdict: Verdict, act: Act, reason: str, stop_at: float | None = None) -> IdleDecision:
        return IdleDecision(verdict, act, reason, since, until, peak, peak_memory, stop_at)

    if idle_for < window:
        return decision(
            Verdict.IDLING,
            Act.NONE,
            f"every host below {threshold:g}% of one GPU for {idle_for:.0f} s of the {window:.0f} s window",
        )
    reason = f"every host below {threshold:g}% of one GPU for {idle_for:.0f} s (window {window:.0f} s)"
    # A notice given after this idle period began is about this period: a busy sample since then
    # would have moved ``since`` past it.
    noticed = previous if previous and previous.signal is Signal.IDLE and previous.at >= since else None
    if policy.action is IdleAction.ALERT:
        return decision(Verdict.IDLE, Act.NONE if noticed else Act.ALERT, reason)
    if noticed and noticed.act is Act.STOP:
        return decision(Verdict.IDLE, Act.NONE, reason + "; already stopped")
    if noticed is None or noticed.act is not Act.WARN:
        return decision(Verdict.IDLE, Act.WARN, reason, now + policy.warning_grace_seconds)
    stop_at = noticed.at + policy.warning_grace_seconds
    # Stopping needs idle evidence from the end of the warning grace: the job had all of it to wake up.
    return decision(Verdict.IDLE, Act.STOP if until >= stop_at else Act.NONE, reason, stop_at)


def _hung(
    policy: IdlePolicy,
    since: float,
    until: float,
    peak: float,
    peak_memory: float | None,
    previous: Notice | None,
    now: float,
) -> IdleDecision:
    reason = (
        f"GPUs busy (peak {peak:.0f}% of one GPU on a host) but no new checkpoint for {now - since:.0f} s "
        f"({policy.hung_checkpoint_intervals} x {policy.hung_checkpoint_interval_seconds:.0f} s)"
    )
    noticed = previous is not None and previous.signal is Signal.HUNG and previous.since >= since
    if noticed:
        act = Act.NONE
    elif policy.hung_action is HungAction.STOP_AND_REQUEUE:
        act = Act.STOP_AND_REQUEUE
    else:
        act = Act.ALERT
    return IdleDecision(
        Verdict.HUNG,
        act,
        reason,
        since=since,
        until=until,
        peak_host_percent=peak,
        peak_memory_percent=peak_memory,
    )


#: Every TerminateServiceJob reason the idle detector gives starts with one of these; the failure path's
#: classifier matches them (``shareplane-idle``: not retried; ``shareplane-hung``: requeued).
IDLE_REASON_PREFIX = "shareplane idle:"
HUNG_REASON_PREFIX = "shareplane hung:"
#: TerminateServiceJob's reason holds at most this many characters.
REASON_MAX_CHARS = 1024


def stop_reason(decision: IdleDecision) -> str:
    """The TerminateServiceJob reason of a stop the detector decided (idle, or hung and requeued)."""
    prefix = HUNG_REASON_PREFIX if decision.verdict is Verdict.HUNG else IDLE_REASON_PREFIX
    then = "requeued from its last checkpoint" if decision.verdict is Verdict.HUNG else "not requeued"
    return f"{prefix} {decision.reason}; {then}"[:REASON_MAX_CHARS]
