"""The one declarative shares config: teams, capacity, priority tiers. Validated here, read everywhere."""

# No `from __future__ import annotations` here: pydantic would have to evaluate every field's annotation
# from a string when the models are built, at each cold start; written as objects, it reads them as they are.
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property
from typing import Annotated, Any, Literal, Self

from pydantic import Field, model_validator

from ..errors import ConfigError
from ..instance_types.capacity import Capacity
from ..instance_types.catalog import CATALOG as INSTANCE_CATALOG
from .failure_rules import FailuresConfig
from .strict_model import StrictModel


class SchedulingMode(StrEnum):
    """How the GPU queue shares capacity between teams."""

    FAIRSHARE = "fairshare"
    QUOTA = "quota"


class Tier(StrEnum):
    """Priority tiers, highest first."""

    HIGHPRI = "HIGHPRI"
    MIDPRI = "MIDPRI"
    LOWPRI = "LOWPRI"


#: AWS Batch limits on fair-share identifiers (share-identifiers.html, FairsharePolicy).
SHARE_IDENTIFIER_MAX_LENGTH = 255
MAX_SHARE_IDENTIFIERS_PER_QUEUE = 500
_SHARE_IDENTIFIER = re.compile(r"[A-Za-z0-9]{1,255}")


class ShareLayout(StrEnum):
    """Which share identifiers a fair-share GPU queue has."""

    #: One identifier per team: schedulingPriority orders jobs only inside a team, so a HIGHPRI job
    #: waits behind other teams' LOWPRI work whenever its team is over its weight.
    TEAM = "team"
    #: Per team, one identifier for each tier with ``own_share`` (weighted by the team's entitlement
    #: times the tier's ``weight_multiplier``) and one for the other tiers (the team's weight).
    #: Fair-share serves the identifier with the lowest weighted usage, so a HIGHPRI identifier, which
    #: holds little usage and weighs little, is served first across teams. Only the tiers that need
    #: cross-team priority get their own: every extra identifier a team has active adds to what the
    #: team gets against the others (measured in the what-if: docs/design/share-layout.md), so MIDPRI
    #: and LOWPRI share one.
    TEAM_TIER = "team_tier"


class TierConfig(StrictModel):
    """What a tier means: the schedulingPriority its jobs get and the wait it promises."""

    #: The Batch schedulingPriority this tier's jobs are submitted with, 0 to 9999 (higher runs first inside a
    #: share); escalation raises a waiting job up to one below the next tier's value.
    scheduling_priority: Annotated[int, Field(ge=0, le=9999)]
    #: The wait this tier promises, in seconds from submission to first start: past it a waiting job's
    #: priority rises step by step and the rebalancer boosts its share, past twice it the job raises a wait
    #: alert, and each first start counts as SloAttained or SloMissed.
    wait_slo_seconds: Annotated[int, Field(gt=0)]
    #: team_tier layout: whether the tier has a share identifier of its own per team, `<team share><TIER>`;
    #: false: its jobs go to the team's identifier, where schedulingPriority orders them.
    own_share: bool = False
    #: team_tier layout, with own_share: the tier identifier's weightFactor as a fraction of the team's (lower
    #: gets more: 0.05 serves the tier first across teams; 1 weighs it like the team's).
    weight_multiplier: Annotated[float, Field(gt=0, le=1)] = 1.0
    #: A job of this tier that has waited this many seconds may reclaim capacity lower tiers hold, by
    #: stopping jobs that resume from a checkpoint (0: as soon as it waits); unset: the tier never reclaims.
    reclaim_after_seconds: Annotated[int, Field(ge=0)] | None = None


class ReclaimConfig(StrictModel):
    """Guard rails of checkpoint-aware reclaim (domain/reclaim/plan.py), turned on by the template."""

    #: A job that has run fewer seconds than this (in its current attempt) is never a victim.
    min_runtime_seconds: Annotated[int, Field(ge=0)] = 900
    #: A job stopped or preempted within this many seconds is never a victim again.
    cooldown_seconds: Annotated[int, Field(ge=0)] = 3600
    #: Most victims stopped for one waiting job over its life.
    max_victims_per_job: Annotated[int, Field(ge=1, le=100)] = 4
    #: Most victims per day (UTC, by decision time) for the whole queue.
    max_victims_per_day: Annotated[int, Field(ge=1)] = 100
    #: The rate limit: most victims per ``rate_window_seconds`` window (by decision time) for the whole
    #: queue, however many runs decide in it, counted in the same transaction as the day's.
    max_victims_per_window: Annotated[int, Field(ge=1)] = 8
    #: The window max_victims_per_window counts in, in seconds (60 to 86400).
    rate_window_seconds: Annotated[int, Field(ge=60, le=86400)] = 300
    #: Jobs that cannot resume (no CheckpointConfig, or one under which nothing was written) lose all
    #: their work when stopped: never victims unless allowed.
    allow_no_checkpoint_victims: bool = False

    @model_validator(mode="before")
    @classmethod
    def _renamed_rate_limit(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and "max_victims_per_run" in data:
            raise ValueError(
                "max_victims_per_run is now max_victims_per_window: the rate limit holds per"
                " rate_window_seconds (300 unless set) across runs, not per run (rename the key)"
            )
        return data


class IdleAction(StrEnum):
    """What the idle detector does to a job whose GPUs stay below the threshold for the window."""

    #: An SNS alert (kind=idle) to the team, once per idle period; the job keeps running.
    ALERT = "alert"
    #: A warning alert first; still idle ``warning_grace_seconds`` later, the job is stopped.
    STOP_AFTER_WARNING = "stop_after_warning"


class HungAction(StrEnum):
    """What the idle detector does to a hung job: GPUs busy but no new checkpoint for N intervals."""

    #: An SNS alert (kind=hung), once per hung period; the job keeps running.
    ALERT = "alert"
    #: Stopped and requeued from its last checkpoint through the reclaim path (counted apart).
    STOP_AND_REQUEUE = "stop_and_requeue"


def _renamed_threshold(data: Any) -> Any:
    if isinstance(data, Mapping) and "threshold_percent_per_gpu" in data:
        raise ValueError(
            "threshold_percent_per_gpu is now threshold_percent_of_one_gpu: SageMaker's GPUUtilization"
            " is a host's sum over its GPUs, and a host is idle while that sum stays below this percent"
            " of one GPU (rename the key; 5 keeps the old default)"
        )
    return data


def _kill_switch_in_the_template(data: Any) -> Any:
    if isinstance(data, Mapping) and "enabled" in data:
        raise ValueError(
            "idle.enabled is not a config setting: turning the detector off is a deployment switch, the"
            " template's IdleEnabled parameter (remove the key; deploy with IdleEnabled=false to turn it off)"
        )
    return data


class IdleOverride(StrictModel):
    """Per tier or per team settings of the idle detector; an unset field keeps the broader one."""

    #: Overrides idle.threshold_percent_of_one_gpu (percent of one GPU); unset: the broader setting.
    threshold_percent_of_one_gpu: Annotated[float, Field(ge=0, le=100)] | None = None
    #: Overrides idle.window_seconds (seconds); unset: the broader setting.
    window_seconds: Annotated[int, Field(ge=60, le=7 * 86400)] | None = None
    #: Overrides idle.grace_seconds (seconds); unset: the broader setting.
    grace_seconds: Annotated[int, Field(ge=0, le=7 * 86400)] | None = None
    #: Overrides idle.action (alert or stop_after_warning); unset: the broader setting.
    action: IdleAction | None = None
    #: Overrides idle.warning_grace_seconds (seconds); unset: the broader setting.
    warning_grace_seconds: Annotated[int, Field(ge=0, le=86400)] | None = None
    #: Overrides idle.hung_checkpoint_intervals; unset: the broader setting.
    hung_checkpoint_intervals: Annotated[int, Field(ge=1, le=100)] | None = None
    #: Overrides idle.hung_checkpoint_interval_seconds (seconds); unset: the broader setting.
    hung_checkpoint_interval_seconds: Annotated[int, Field(ge=60, le=7 * 86400)] | None = None
    #: Overrides idle.hung_action (alert or stop_and_requeue); unset: the broader setting.
    hung_action: HungAction | None = None

    _renamed = model_validator(mode="before")(_renamed_threshold)


class IdleTeamOverride(IdleOverride):
    """One team's idle settings, and per tier of that team (team-and-tier beats team beats tier)."""

    #: Overrides for one tier of this team, the narrowest level (team-and-tier beats team beats tier).
    tiers: Mapping[Tier, IdleOverride] = Field(default_factory=dict)


class IdleConfig(StrictModel):
    """The idle-GPU detector (domain/idle/policy.py): defaults, then per tier, team and team-tier overrides.

    The defaults need no YAML text: a config only spells what differs. The detector's kill switch is
    no setting here: it is a deployment switch, the template's IdleEnabled, as reclaim's is ReclaimEnabled.
    """

    #: A host whose GPUUtilization (the sum over its GPUs, 0..100 x GPUs) stays below this percent of
    #: one GPU is idle: one GPU at this level keeps the host busy, whatever its other GPUs do.
    threshold_percent_of_one_gpu: Annotated[float, Field(ge=0, le=100)] = 5.0
    #: How long, in seconds, every host of the job must stay below the threshold before it is flagged.
    window_seconds: Annotated[int, Field(ge=60, le=7 * 86400)] = 1800
    #: Seconds after the job starts during which samples are ignored (image pull, data loading).
    grace_seconds: Annotated[int, Field(ge=0, le=7 * 86400)] = 900
    #: What an idle job gets: alert (an SNS alert, kind=idle; the job runs on) or stop_after_warning (a
    #: warning, then a stop if still idle warning_grace_seconds later; not requeued).
    action: IdleAction = IdleAction.ALERT
    #: stop_after_warning: seconds after the warning the job may still wake up before it is stopped (0:
    #: stopped at the next run that finds it still idle).
    warning_grace_seconds: Annotated[int, Field(ge=0, le=86400)] = 900
    #: Hung: a job with a CheckpointConfig, GPUs busy, and no new checkpoint object for this many
    #: intervals of ``hung_checkpoint_interval_seconds``.
    hung_checkpoint_intervals: Annotated[int, Field(ge=1, le=100)] = 3
    #: The interval hung_checkpoint_intervals counts, in seconds: 3 x 1800 flags a busy job that wrote no
    #: checkpoint for 90 minutes.
    hung_checkpoint_interval_seconds: Annotated[int, Field(ge=60, le=7 * 86400)] = 1800
    #: What a hung job gets: alert (an SNS alert, kind=hung) or stop_and_requeue (stopped and requeued from
    #: its last checkpoint, spending one attempt of its failure budget).
    hung_action: HungAction = HungAction.ALERT
    #: A host whose newest sample is older than this many seconds has no evidence now: nothing is decided
    #: on it.
    max_sample_age_seconds: Annotated[int, Field(ge=60, le=86400)] = 900
    #: A gap between a host's samples longer than this (seconds) restarts its idle period: what a gap held is
    #: not known (SageMaker publishes one sample a minute; five missing ones are an allowance).
    max_sample_gap_seconds: Annotated[int, Field(ge=60, le=86400)] = 300
    #: Overrides per tier (HIGHPRI, MIDPRI, LOWPRI); a field left out keeps the default above.
    tiers: Mapping[Tier, IdleOverride] = Field(default_factory=dict)
    #: Overrides per team, and per tier of that team; team-and-tier beats team beats tier.
    teams: Mapping[str, IdleTeamOverride] = Field(default_factory=dict)

    _renamed = model_validator(mode="before")(_renamed_threshold)
    _kill_switch = model_validator(mode="before")(_kill_switch_in_the_template)


def resume_priority(tiers: Mapping[Tier, TierConfig], scheduling_priority: int) -> int:
    """A reclaimed job's schedulingPriority when requeued: one above its own, inside its tier's band.

    It ranks first among its tier's queued work (it had already waited its turn) and never reaches
    the next tier's priority, so it stays in its tier.
    """
    higher = [c.scheduling_priority for c in tiers.values() if c.scheduling_priority > scheduling_priority]
    ceiling = min(higher) - 1 if higher else 9999
    return max(scheduling_priority, min(scheduling_priority + 1, ceiling))


@dataclass(frozen=True)
class ShareKey:
    """Who a share identifier (or quota share name) belongs to: a team, and a tier in the team_tier layout."""

    team: str
    tier: Tier | None = None


class InstanceTypeConfig(StrictModel):
    """One GPU instance family's service environment: how many instances the cluster may run."""

    #: Most instances of this type the cluster runs at once: its service environment's capacity limit (in
    #: fair-share mode a GPU family's types share one limit, their sum). The teams' entitlements to a GPU
    #: type add up to at most this.
    capacity: Annotated[int, Field(gt=0)]


class TeamQuotaConfig(StrictModel):
    """Quota mode: how a team's quota share lends and borrows, and whether priority preempts inside it."""

    #: The quota share's sharing strategy: RESERVE keeps its idle capacity to itself, LEND lends it to other
    #: shares, LEND_AND_BORROW lends it and borrows theirs.
    strategy: Literal["RESERVE", "LEND", "LEND_AND_BORROW"] = "LEND_AND_BORROW"
    #: Percent of the share's own limits it may borrow on top (LEND_AND_BORROW only); -1: unlimited.
    borrow_limit: Annotated[int, Field(ge=-1)] = -1
    #: A higher-priority RUNNABLE job preempts a lower-priority one of the same team: quota mode keeps
    #: one share per team, so this is what lets HIGHPRI overtake the team's own LOWPRI work at once.
    in_share_preemption: bool = True
    #: Submitted as the job's preemptionConfiguration.preemptionRetriesBeforeTermination: Batch requeues
    #: a preempted job this many times, then fails it and handle_failure requeues it with backoff (no
    #: budget spent), so a job that keeps losing its instances slows down and is alerted on. None: unlimited.
    preemption_retries_before_termination: Annotated[int, Field(ge=0, le=100)] | None = 5

    @model_validator(mode="after")
    def _borrow_needs_borrowing(self) -> Self:
        if self.borrow_limit != -1 and self.strategy != "LEND_AND_BORROW":
            raise ConfigError(
                "quota.borrow_limit",
                f"is {self.borrow_limit} but strategy {self.strategy} never borrows",
                "drop borrow_limit or use strategy LEND_AND_BORROW",
            )
        return self


S3_PREFIX_PATTERN = r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]/([^/]+/)*$"
ROLE_ARN_PATTERN = r"^arn:aws[a-z-]*:iam::[0-9]{12}:role/[A-Za-z0-9+=,.@_/-]{1,512}$"
#: An IAM role or user, as S3 sees it in aws:PrincipalArn (a role session is its role's ARN).
PRINCIPAL_ARN_PATTERN = r"^arn:aws[a-z-]*:iam::[0-9]{12}:(role|user)/[A-Za-z0-9+=,.@_/-]{1,512}$"


class TeamConfig(StrictModel):
    """One team: its share, what it is entitled to per instance type, and what its job specs may use.

    The job-spec fields default to deny: no execution role, no S3 prefixes and no custom images
    means the team can submit nothing until the platform team grants them.
    """

    #: The team's share identifier on a fair-share queue, or its quota share name in quota mode: letters and
    #: digits (the team_tier layout appends a tier name, within Batch's 255).
    share: Annotated[str, Field(pattern=r"^[A-Za-z0-9]{1,255}$")]
    #: Instances per instance type the team is entitled to (a type left out: 0): its share's weight (the
    #: best-entitled team weighs 1.0, lower gets more), its quota share's limits, and the line past which its
    #: jobs hold borrowed capacity.
    entitlement: Mapping[str, Annotated[int, Field(ge=0)]]
    #: Instance types the team's jobs may use; empty: any type the cluster has (admission still checks
    #: capacity).
    allowed_instance_types: tuple[str, ...] = ()
    #: Most instances one of the team's jobs may ask for; unset: bounded by the instance type's capacity only.
    max_instance_count: Annotated[int, Field(gt=0)] | None = None
    #: Prefixes a custom image URI must start with; empty: no custom images, only the images under
    #: `frameworks`.
    allowed_image_prefixes: tuple[Annotated[str, Field(min_length=1)], ...] = ()
    #: Frameworks under `frameworks` the team's jobs may name; empty: every one.
    allowed_frameworks: tuple[str, ...] = ()
    #: The tiers the team's jobs may ask for (a HIGHPRI job takes back other teams' borrowed capacity,
    #: so it is an allowance); empty: every tier. CPU FIFO jobs have no tier and are not checked.
    allowed_tiers: tuple[Tier, ...] = ()
    #: S3 prefixes (ending in /) every input channel of the team's jobs must lie under; empty: the team's jobs
    #: may read no inputs.
    input_prefixes: tuple[Annotated[str, Field(pattern=S3_PREFIX_PATTERN)], ...] = ()
    #: S3 prefixes (ending in /) the team's output and checkpoint URIs must lie under; empty: the team
    #: can submit nothing (every job names an output).
    output_prefixes: tuple[Annotated[str, Field(pattern=S3_PREFIX_PATTERN)], ...] = ()
    #: The IAM role SageMaker assumes to run the team's jobs; unset: the team can submit nothing.
    execution_role_arn: Annotated[str, Field(pattern=ROLE_ARN_PATTERN)] | None = None
    #: Who may drop specs under submit/<team>/: the drop bucket's policy denies everyone else, and the
    #: submit path refuses a drop from an account none of them is in. Empty: the folder is open to
    #: whoever the bucket's IAM lets write (no per-team isolation).
    submitters: tuple[Annotated[str, Field(pattern=PRINCIPAL_ARN_PATTERN)], ...] = ()
    #: Batch retryStrategy attempts a job gets when its spec sets no retry_attempts (1: Batch does not retry
    #: it).
    default_retry_attempts: Annotated[int, Field(ge=1, le=10)] = 2
    #: Most retry_attempts a job spec may ask for; a spec above it is refused at submission.
    max_retry_attempts: Annotated[int, Field(ge=1, le=10)] = 3
    #: Quota mode: how the team's quota share lends, borrows and preempts (unused in fair-share mode).
    quota: TeamQuotaConfig = TeamQuotaConfig()

    @property
    def entitled(self) -> Capacity:
        """The team's entitlement as a capacity (a type it is not entitled to counts 0)."""
        return Capacity(self.entitlement)

    @model_validator(mode="after")
    def _retry_bounds(self) -> Self:
        if self.default_retry_attempts > self.max_retry_attempts:
            raise ConfigError(
                "default_retry_attempts",
                f"is {self.default_retry_attempts}, above max_retry_attempts {self.max_retry_attempts}",
                "lower default_retry_attempts or raise max_retry_attempts",
            )
        return self


class PriceConfig(StrictModel):
    """What one instance of a type costs per hour, in USD (SageMaker training; config/prices/)."""

    #: On-demand price of one instance-hour of SageMaker training, in USD: every finished attempt is costed at
    #: its billable time x instances x this.
    on_demand_usd_per_hour: Annotated[float, Field(gt=0, le=10000)]
    #: Only estimates a running managed spot job: a finished one's saving is already in its
    #: BillableTimeInSeconds, so its cost is billable time x the on-demand price. None: estimate
    #: running spot jobs at the on-demand price (an upper bound).
    spot_usd_per_hour: Annotated[float, Field(gt=0, le=10000)] | None = None

    @model_validator(mode="after")
    def _spot_below_on_demand(self) -> Self:
        if self.spot_usd_per_hour is not None and self.spot_usd_per_hour > self.on_demand_usd_per_hour:
            raise ConfigError(
                "prices.spot_usd_per_hour",
                f"is {self.spot_usd_per_hour}, above on_demand_usd_per_hour {self.on_demand_usd_per_hour}",
                "use the spot price you see (below on-demand), or drop spot_usd_per_hour",
            )
        return self


class BudgetEnforcement(StrEnum):
    """What submission does to a team over its month's budget (queued and running work is never touched)."""

    #: Alerts only.
    NONE = "none"
    #: The team's new LOWPRI jobs are refused, each with an error saying why and how to proceed;
    #: HIGHPRI and MIDPRI jobs still go in.
    REFUSE_LOWPRI = "refuse_lowpri"
    #: The team's new HIGHPRI and MIDPRI jobs go in at LOWPRI (the answer says so); LOWPRI as asked.
    DEMOTE_TO_LOWPRI = "demote_to_lowpri"


class BudgetConfig(StrictModel):
    """A team's monthly budget (UTC calendar months), its alert thresholds and its enforcement."""

    #: What the team may spend per UTC calendar month, in USD, on its training jobs' costs.
    monthly_usd: Annotated[float, Field(gt=0)]
    #: Fractions of the budget whose crossing alerts once a month (1.0: the budget is spent).
    alert_thresholds: tuple[Annotated[float, Field(gt=0, le=10)], ...] = (0.8, 1.0)
    #: What submission does once the month's spend reaches the budget: none (alerts only), refuse_lowpri (new
    #: LOWPRI jobs refused) or demote_to_lowpri (new HIGHPRI and MIDPRI jobs go in at LOWPRI).
    enforcement: BudgetEnforcement = BudgetEnforcement.NONE

    @model_validator(mode="after")
    def _thresholds_ordered(self) -> Self:
        if list(self.alert_thresholds) != sorted(set(self.alert_thresholds)):
            raise ConfigError(
                "budgets.alert_thresholds",
                f"{list(self.alert_thresholds)} is not increasing without repeats",
                "list each fraction once, smallest first, such as [0.8, 1.0]",
            )
        return self


class FrameworkImage(StrictModel):
    """The training image URIs of one framework version, per device kind."""

    #: Training image URI for this framework version's jobs on GPU instance types.
    gpu: Annotated[str, Field(min_length=1)]
    #: Training image URI for jobs on CPU instance types; unset: this version cannot run on CPU.
    cpu: Annotated[str, Field(min_length=1)] | None = None


class QueuesConfig(StrictModel):
    """Names of the cluster's Batch job queues, and the CPU instance types served by the FIFO queue."""

    #: The GPU job queue's name (fair-share or quota-share); unset: `<cluster>-gpu`. A new name creates a new
    #: queue.
    gpu: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$")] | None = None
    #: The FIFO job queue for CPU jobs; unset: no CPU queue, and CPU jobs are refused.
    cpu_fifo: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$")] | None = None
    #: CPU instance types the FIFO queue runs, each with its capacity; none may also be a GPU instance type.
    cpu_instance_types: Mapping[str, InstanceTypeConfig] = Field(default_factory=dict)
    #: How long the job at the head of a queue may sit RUNNABLE for want of SageMaker capacity before
    #: Batch terminates it so the jobs behind it can run (jobStateTimeLimitActions; capacity errors
    #: are requeued forever otherwise).
    capacity_wait_limit_seconds: Annotated[int, Field(ge=600, le=86400)] = 14400
    #: The same for a head job that can never run: more instances than its service environment or
    #: quota share allows.
    misconfiguration_wait_limit_seconds: Annotated[int, Field(ge=600, le=86400)] = 600


class FairshareConfig(StrictModel):
    """The fair-share scheduling policy's knobs (AWS Batch FairsharePolicy)."""

    #: shareDecaySeconds: how long past usage counts against a share, in seconds (0: Batch's minimum of 600;
    #: at most 604800, a week); longer remembers more.
    share_decay_seconds: Annotated[int, Field(ge=0, le=604800)] = 3600
    #: computeReservation: keeps (value/100) ^ active shares of the capacity free for shares not yet active; 0
    #: reserves nothing.
    compute_reservation: Annotated[int, Field(ge=0, le=99)] = 0


class RebalanceMode(StrEnum):
    """Whether the share rebalancer's plans change Batch, or are only recorded and shown."""

    #: Each plan is audited (status ADVISORY) and shown by ``shareplane shares --plan``; weights and
    #: quota limits stay as they are. The tier charge (the team_tier layout's rule) is still applied.
    ADVISORY = "advisory"
    #: Each plan sets the weights or quota limits it plans (guard rails, audit and rollback as always).
    APPLY = "apply"


class ShareBoundsConfig(StrictModel):
    """Per-share override of the rebalancer's weightFactor bounds (unset fields use the global ones)."""

    #: This share's lowest weightFactor; unset: rebalance.weight_factor_min.
    weight_factor_min: Annotated[float, Field(ge=0.0001, le=999.9999)] | None = None
    #: This share's highest weightFactor; unset: rebalance.weight_factor_max.
    weight_factor_max: Annotated[float, Field(ge=0.0001, le=999.9999)] | None = None


class RebalanceDesign(StrEnum):
    """How the rebalancer turns what it observes into weights (domain/shares/rebalance.py)."""

    #: Weights follow each share's max-min fair target over the demand seen now; a ledger that
    #: credits lending only while the lender waits, decayed by ``ledger_half_life_seconds``, nudges
    #: the share of the surplus.
    DEMAND_TARGETS = "demand_targets"
    #: Karma's credits (Vuppalapati et al., OSDI 2023) mapped onto weights: a share earns credits
    #: while others use entitlement it leaves idle, spends them while it holds more than its own, and
    #: its weight follows its entitlement scaled by its credits, whatever the demand is now.
    CREDITS = "credits"
    #: The credits design's weights, with credits earned only for entitlement others held while the
    #: share had work waiting for it (the ``demand_targets`` ledger's rule): a team is paid back what it
    #: was owed, not what it left idle.
    OWED_CREDITS = "owed_credits"

    @property
    def weighs_credits(self) -> bool:
        """Whether weights follow entitlement x credit favour (else the demand targets)."""
        return self is not RebalanceDesign.DEMAND_TARGETS


class RebalanceConfig(StrictModel):
    """Guard rails and knobs of the share rebalancer (see domain/shares/rebalance.py for what each does)."""

    #: advisory: the rebalancer plans, audits and shows each plan (`shareplane shares --plan`) but
    #: changes no weight or quota limit (the tier charge still applies); apply: it applies its plans.
    #: Advisory by default: in the what-if measurements (docs/design/rebalancer-default.md) no
    #: rebalancer design was clearly fairer than fixed weights on weeks it was not tuned on.
    mode: RebalanceMode = RebalanceMode.ADVISORY
    #: Lowest weightFactor a plan sets (lower gets more, so this bounds how far a share is favoured); Batch's
    #: range is 0.0001 to 999.9999.
    weight_factor_min: Annotated[float, Field(ge=0.0001, le=999.9999)] = 0.01
    #: Highest weightFactor a plan sets (bounds how far a share is held back).
    weight_factor_max: Annotated[float, Field(ge=0.0001, le=999.9999)] = 100.0
    #: Per share identifier (or quota share name) overrides of the weightFactor bounds.
    shares: Mapping[str, ShareBoundsConfig] = {}
    #: The most a value may move in one plan, relative: 0.25 allows x1.25 up or /1.25 down.
    max_step: Annotated[float, Field(gt=0, le=10)] = 0.25
    #: Relative changes smaller than this are dropped, so noise never reaches the API.
    deadband: Annotated[float, Field(ge=0, lt=1)] = 0.05
    #: No plan is applied within this many seconds of the last applied one (0: every run may apply).
    cooldown_seconds: Annotated[int, Field(ge=0)] = 900
    #: Half-life of the lend/borrow ledger's balances, in seconds (a week by default): older favours fade.
    ledger_half_life_seconds: Annotated[int, Field(gt=0)] = 7 * 24 * 3600
    #: Longest interval one ledger update credits, in seconds; a longer gap is not extrapolated from one
    #: sample.
    ledger_max_interval_seconds: Annotated[int, Field(gt=0)] = 3600
    #: Most the lend/borrow ledger can raise or lower a share's water-filling weight (relative).
    ledger_nudge: Annotated[float, Field(ge=0, lt=1)] = 0.2
    #: Which design turns the observation into weights (fair-share mode; quota mode plans from targets).
    design: RebalanceDesign = RebalanceDesign.DEMAND_TARGETS
    #: ``credits`` and ``owed_credits`` designs: the balance at which a share's favour is about 3/4 of
    #: ``ledger_nudge``, in hours of the share's own entitlement lent (so small and large teams earn
    #: favour alike).
    credit_scale_hours: Annotated[float, Field(gt=0)] = 24.0
    #: Water-filling weight multiplier for shares waiting in a tier whose wait p90 breaks its SLO.
    slo_boost_factor: Annotated[float, Field(ge=1, le=100)] = 1.5
    #: Quota mode: whether plans set LEND_AND_BORROW shares' borrowLimit to what their target needs.
    #: On, it trades GPUs left idle under a cap for fewer cross-share preemptions. Off, a borrowLimit an
    #: earlier plan set stays as it is: roll that plan back (``shareplane shares --rollback``) to return
    #: to the configured value.
    # Off by default: a lender takes its capacity back by preemption whatever the limit, so a cap only
    # bites while the lender leaves capacity idle, and a plan made minutes ago caps a share below what
    # is idle now (docs/design/share-layout.md gives the idle GPUs it cost in the quota demo).
    manage_borrow_limit: bool = False
    #: Quota mode, with manage_borrow_limit: lowest borrowLimit a plan sets, in percent of the share's own
    #: limits.
    borrow_limit_min: Annotated[int, Field(ge=0)] = 0
    #: Quota mode, with manage_borrow_limit: highest borrowLimit a plan sets, in percent of the share's own
    #: limits.
    borrow_limit_max: Annotated[int, Field(ge=0)] = 100
    #: Quota mode: lowest maxCapacity a plan sets, as a fraction of the entitlement (1.0 with a maximum of 1.0
    #: pins the limits).
    capacity_limit_min_fraction: Annotated[float, Field(gt=0, le=1)] = 1.0
    #: Quota mode: highest maxCapacity a plan sets, as a multiple of the entitlement.
    capacity_limit_max_fraction: Annotated[float, Field(ge=1, le=100)] = 1.0

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        pairs = [("weight_factor", self.weight_factor_min, self.weight_factor_max)]
        pairs += [
            (
                f"shares.{name}.weight_factor",
                b.weight_factor_min or self.weight_factor_min,
                b.weight_factor_max or self.weight_factor_max,
            )
            for name, b in self.shares.items()
        ]
        pairs.append(("borrow_limit", self.borrow_limit_min, self.borrow_limit_max))
        for field, low, high in pairs:
            if low > high:
                raise ConfigError(
                    f"rebalance.{field}_min",
                    f"{low} is above the maximum {high}",
                    "make the minimum at most the maximum",
                )
        return self

    @property
    def can_step_down(self) -> bool:
        """Whether a step-limited decrease survives the deadband.

        The step is symmetric in log space (x or / ``1 + max_step``) but the deadband is relative to
        the current value, so the largest decrease one plan makes is ``max_step / (1 + max_step)``
        (0.2 for 0.25), and weights round toward their current value. A deadband at least that wide
        drops every step-limited decrease, so weights could only ratchet up.
        """
        return self.deadband < self.max_step / (1 + self.max_step) - 1e-4

    def check_can_step_down(self, where: str) -> None:
        """Refuse settings under which a weight can never step down (see ``can_step_down``)."""
        if not self.can_step_down:
            raise ConfigError(
                f"{where}.deadband",
                f"{self.deadband} drops every decrease a max_step of {self.max_step} allows",
                f"use a deadband below {self.max_step / (1 + self.max_step):.4g} or a larger max_step",
            )


class SharesConfig(StrictModel):
    """Root of config/shares.yaml."""

    #: The cluster's name, lowercase: its AWS resources are named after it (the GPU queue defaults to
    #: `<cluster>-gpu`).
    cluster: Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]{0,40}$")]
    #: How the GPU queue shares capacity: fairshare (one queue, teams weighted by weightFactor) or quota (a
    #: quota share per team with capacity limits, lending and preemption); fixed for a queue once created.
    mode: SchedulingMode = SchedulingMode.FAIRSHARE
    #: The GPU instance types the cluster runs (SageMaker names such as ml.p4d.24xlarge), each with its
    #: capacity.
    instance_types: Mapping[str, InstanceTypeConfig]
    #: The three priority tiers, HIGHPRI, MIDPRI and LOWPRI (all required): priority, wait SLO, share and
    #: reclaim settings.
    tiers: Mapping[Tier, TierConfig]
    #: Each team by name: its share, entitlement, and what its job specs may use.
    teams: Mapping[str, TeamConfig]
    #: Which share identifiers the GPU queue has: team (one per team) or team_tier (also one per team for
    #: each tier with own_share). Fair-share mode only: quota mode always has one quota share per team (at
    #: most 20 per queue), and in-share preemption orders tiers inside a team.
    share_layout: ShareLayout = ShareLayout.TEAM
    #: The fair-share scheduling policy's settings (fair-share mode).
    fairshare: FairshareConfig = FairshareConfig()
    #: Guard rails of checkpoint-aware reclaim; a tier opts in with reclaim_after_seconds, and the template's
    #: ReclaimEnabled is the kill switch.
    reclaim: ReclaimConfig = ReclaimConfig()
    #: The idle-GPU detector: defaults, then overrides per tier, team and team tier.
    idle: IdleConfig = IdleConfig()
    #: The failure path: classifier rules, retry policy per class and tier, backoff, budgets and guards.
    failures: FailuresConfig = FailuresConfig()
    #: Guard rails and knobs of the share rebalancer, which re-plans weights or quota limits every 5 minutes
    #: (and applies its plans in apply mode).
    rebalance: RebalanceConfig = RebalanceConfig()
    #: The Batch job queues' names, and the CPU instance types of the FIFO queue.
    queues: QueuesConfig = QueuesConfig()
    #: Training images by framework and version (pytorch, "2.6.0", gpu and cpu URIs): a job spec names a
    #: framework and version instead of an image.
    frameworks: Mapping[str, Mapping[str, FrameworkImage]] = Field(default_factory=dict)
    #: Instance type -> price per instance-hour; a type without one is counted in hours, not dollars.
    prices: Mapping[str, PriceConfig] = Field(default_factory=dict)
    #: Team -> its monthly budget; a team without one is never alerted or limited on cost.
    budgets: Mapping[str, BudgetConfig] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _jobspec_refs(self) -> Self:
        gpu_and_cpu = set(self.instance_types) | set(self.queues.cpu_instance_types)
        if set(self.instance_types) & set(self.queues.cpu_instance_types):
            raise ConfigError(
                "queues.cpu_instance_types",
                "lists an instance type that is also a GPU instance type",
                "keep each instance type in one of instance_types or queues.cpu_instance_types",
            )
        if self.queues.cpu_instance_types and not self.queues.cpu_fifo:
            raise ConfigError(
                "queues.cpu_fifo", "is missing but CPU instance types are listed", "name the FIFO CPU queue"
            )
        for name in self.idle.teams:
            if name not in self.teams:
                raise ConfigError(
                    f"idle.teams.{name}", "names no team of the config", f"use one of {sorted(self.teams)}"
                )
        for name in self.budgets:
            if name not in self.teams:
                raise ConfigError(
                    f"budgets.{name}", "names no team of the config", f"use one of {sorted(self.teams)}"
                )
        for name, team in self.teams.items():
            for instance_type in team.allowed_instance_types:
                if instance_type not in gpu_and_cpu:
                    raise ConfigError(
                        f"teams.{name}.allowed_instance_types",
                        f"names {instance_type}, which the cluster does not have",
                        f"use some of {sorted(gpu_and_cpu)}",
                    )
            for framework in team.allowed_frameworks:
                if framework not in self.frameworks:
                    raise ConfigError(
                        f"teams.{name}.allowed_frameworks",
                        f"names {framework}, which is not under frameworks",
                        f"add it under frameworks or use some of {sorted(self.frameworks)}",
                    )
        return self

    @model_validator(mode="after")
    def _budgeted_types_priced(self) -> Self:
        # A type without a price costs nothing in the budgets: a team could escape its budget by it.
        for name in sorted(self.budgets):
            team = self.teams.get(name)
            if team is None:
                continue  # refused by _jobspec_refs, naming the budget
            for instance_type in self.usable_instance_types(name):
                if instance_type not in self.prices:
                    where = (
                        f"remove it from teams.{name}.allowed_instance_types"
                        if team.allowed_instance_types
                        else f"list the types {name} may use under teams.{name}.allowed_instance_types"
                    )
                    raise ConfigError(
                        f"prices.{instance_type}",
                        f"is missing, but {name} has a budget and may use {instance_type}: what it spends "
                        "on that type would never count against the budget",
                        f"add prices.{instance_type}.on_demand_usd_per_hour (SageMaker training, on demand; "
                        f"config/prices/ keeps AWS's list prices), or {where}",
                    )
        return self

    def usable_instance_types(self, team: str) -> tuple[str, ...]:
        """The instance types a team's jobs may use: its allowlist, else every type the cluster has."""
        allowed = self.teams[team].allowed_instance_types
        return allowed or tuple(sorted({*self.instance_types, *self.queues.cpu_instance_types}))

    def on_demand_price(self, instance_type: str | None) -> float | None:
        """USD per instance-hour on demand, or None when the config prices no such type."""
        price = self.prices.get(instance_type or "")
        return price.on_demand_usd_per_hour if price else None

    def gpu_queue_name(self) -> str:
        """The GPU job queue (fair-share or quota-share) that team jobs go to."""
        return self.queues.gpu or f"{self.cluster}-gpu"

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        self.rebalance.check_can_step_down("rebalance")
        for name, team in self.teams.items():
            for instance_type in team.entitlement:
                if instance_type not in self.instance_types:
                    raise ConfigError(
                        f"teams.{name}.entitlement.{instance_type}",
                        "names an instance type the cluster does not have",
                        f"add it under instance_types or use one of {sorted(self.instance_types)}",
                    )
        for instance_type, limits in self.instance_types.items():
            if instance_type not in INSTANCE_CATALOG:
                # An unknown type would count as 1 GPU in the rebalancer and 0 in idle detection and
                # reclaim's GPU-hours lost: refuse it rather than guess.
                raise ConfigError(
                    f"instance_types.{instance_type}",
                    "is not a GPU training instance type shareplane knows",
                    "use a type of the catalog (domain/instance_types/catalog.py, e.g. ml.p4d.24xlarge), "
                    "or add its row there (GPUs, GPU memory, vCPUs) with its source",
                )
            total = sum(team.entitled.of(instance_type) for team in self.teams.values())
            if total > limits.capacity:
                raise ConfigError(
                    f"instance_types.{instance_type}.capacity",
                    f"teams are entitled to {total} instances but capacity is {limits.capacity}",
                    "raise the capacity or lower the entitlements",
                )
        shares = {team.share for team in self.teams.values()}
        # Bounds are per team (the rebalancer plans per team), so they name the team's share.
        for share in self.rebalance.shares:
            if share not in shares:
                raise ConfigError(
                    f"rebalance.shares.{share}", "names no team's share", f"use one of {sorted(shares)}"
                )
        missing = [tier.value for tier in Tier if tier not in self.tiers]
        if missing:
            raise ConfigError("tiers", f"missing {missing}", "define HIGHPRI, MIDPRI and LOWPRI")
        return self

    @model_validator(mode="after")
    def _share_identifiers(self) -> Self:
        # Every identifier the queue can see: each team's share (jobs of the tiers without one of their
        # own, and jobs queued before a stack moved to the layout), plus its tiers' own identifiers.
        own_tiers = tuple(t for t, c in self.tiers.items() if c.own_share) if self.tiered_shares else ()
        owners: dict[str, tuple[str, Tier | None]] = {}
        for name in sorted(self.teams):
            share = self.teams[name].share
            for tier in (None, *own_tiers):
                identifier = share + (tier.value if tier else "")
                if len(identifier) > SHARE_IDENTIFIER_MAX_LENGTH or not _SHARE_IDENTIFIER.fullmatch(
                    identifier
                ):
                    longest = SHARE_IDENTIFIER_MAX_LENGTH - max(len(t.value) for t in Tier)
                    raise ConfigError(
                        f"teams.{name}.share",
                        f"makes the share identifier {identifier[:40]}... ({len(identifier)} characters); "
                        f"AWS Batch takes at most {SHARE_IDENTIFIER_MAX_LENGTH} letters and digits",
                        f"shorten the share to at most {longest} characters (the tier name is appended)",
                    )
                if identifier in owners:
                    other, other_tier = owners[identifier]
                    whose = (
                        f"team {other}'s {other_tier.value} identifier"
                        if other_tier
                        else f"team {other}'s share"
                    )
                    raise ConfigError(
                        f"teams.{name}.share",
                        f"makes the share identifier {identifier}, which is also {whose}",
                        "give every team its own share, one no other team's share plus a tier name spells",
                    )
                owners[identifier] = (name, tier)
        if len(owners) > MAX_SHARE_IDENTIFIERS_PER_QUEUE:
            per_team = 1 + len(own_tiers)
            raise ConfigError(
                "share_layout" if own_tiers else "teams",
                f"gives {len(self.teams)} teams x {per_team} = {len(owners)} share identifiers; a fair-share "
                f"queue takes at most {MAX_SHARE_IDENTIFIERS_PER_QUEUE} active ones",
                f"use at most {MAX_SHARE_IDENTIFIERS_PER_QUEUE // per_team} teams"
                + (", or fewer tiers with own_share" if own_tiers else ""),
            )
        return self

    def tier_for_priority(self, scheduling_priority: int | None) -> Tier | None:
        """The highest tier whose schedulingPriority the job reaches; None below every tier."""
        if scheduling_priority is None:
            return None
        reached = [t for t, c in self.tiers.items() if scheduling_priority >= c.scheduling_priority]
        return max(reached, key=lambda t: self.tiers[t].scheduling_priority, default=None)

    @property
    def tiered_shares(self) -> bool:
        """Whether tiers with ``own_share`` get identifiers of their own (fair-share team_tier layout)."""
        return self.mode is SchedulingMode.FAIRSHARE and self.share_layout is ShareLayout.TEAM_TIER

    def share_for(self, team: str, tier: Tier | None) -> str:
        """The share identifier (or quota share name) a team's job of ``tier`` is submitted with."""
        base = self.teams[team].share
        if self.tiered_shares and tier is not None and self.tiers[Tier(tier)].own_share:
            return base + Tier(tier).value
        return base

    @cached_property
    def share_keys(self) -> Mapping[str, ShareKey]:
        """Every share identifier (or quota share name) of the GPU queue -> its team and tier."""
        keys: dict[str, ShareKey] = {}
        for name, team in self.teams.items():
            keys[team.share] = ShareKey(name)
            if self.tiered_shares:
                for tier, tier_config in self.tiers.items():
                    if tier_config.own_share:
                        keys[team.share + tier.value] = ShareKey(name, tier)
        return keys

    def share_key(self, share: str | None) -> ShareKey | None:
        """The team (and tier) of a share identifier, or of a team's own ``share`` in any layout.

        A team's plain share still names the team in the team_tier layout: jobs queued before a stack
        moved to the layout keep that identifier, and the rebalancer plans under it.
        """
        return self.share_keys.get(share or "")

    def resume_priority(self, scheduling_priority: int) -> int:
        """A reclaimed job's schedulingPriority when requeued (see ``resume_priority``)."""
        return resume_priority(self.tiers, scheduling_priority)

    def team_for_share(self, share: str | None) -> str | None:
        """The team that owns a share identifier or quota share name (from the config, never the name)."""
        key = self.share_key(share)
        return key.team if key else None

    def tier_for_share(self, share: str | None) -> Tier | None:
        """The tier a share identifier serves alone (a tier's own identifier), else None."""
        key = self.share_key(share)
        return key.tier if key else None

    def job_tier(self, share: str | None, scheduling_priority: int | None) -> Tier | None:
        """A job's tier: its identifier's in the team_tier layout, else the one its priority reaches.

        The identifier is the tier the job was submitted in, which a priority escalation never changes.
        """
        return self.tier_for_share(share) or self.tier_for_priority(scheduling_priority)

    def share_weight_factor(self, share: str) -> float:
        """A share identifier's fixed weightFactor: best-entitled team 1.0, times the tier's multiplier."""
        key = self.share_keys[share]
        entitled = {name: sum(team.entitlement.values()) for name, team in self.teams.items()}
        top = max(entitled.values(), default=0)
        own = entitled[key.team]
        base = top / own if own > 0 else 999.9999
        multiplier = self.tiers[key.tier].weight_multiplier if key.tier else 1.0
        return min(999.9999, max(0.0001, round(base * multiplier, 4)))
