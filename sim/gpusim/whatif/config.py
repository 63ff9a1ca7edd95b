"""What a what-if is asked to run: ``config/whatif.yaml`` (``WhatIfConfig``, ``load_whatif_config``)
and the policies it compares (``Policy``, ``parse_policies``)."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import yaml
from pydantic import Field, ValidationError, model_validator
from shareplane.domain.config.shares import (
    RebalanceConfig,
    ReclaimConfig,
    Tier,
    TierConfig,
)
from shareplane.domain.config.strict_model import StrictModel
from shareplane.domain.errors import ConfigError, InvalidInputError

from ..idle_replay import IdleRun

TIERS: tuple[Tier, ...] = tuple(Tier)


class TierMix(StrictModel):
    """A tier in the what-if: the fraction of jobs drawn into it, its priority and its wait SLO."""

    fraction: Annotated[float, Field(ge=0, le=1)]
    scheduling_priority: Annotated[int, Field(ge=0, le=9999)]
    wait_slo_seconds: Annotated[int, Field(gt=0)]
    #: Team x tier layout (fairshare+tiers, fairshare+reclaim): whether the tier has an identifier of its
    #: own per team, and that identifier's weight multiplier.
    own_share: bool = False
    weight_multiplier: Annotated[float, Field(gt=0, le=1)] = 1.0
    #: fairshare+reclaim: a job of this tier that waited this long may reclaim; unset: never.
    reclaim_after_seconds: Annotated[int, Field(ge=0)] | None = None

    def tier_config(self) -> TierConfig:
        """The production tier settings these stand for (what the reclaim planner reads)."""
        return TierConfig(
            scheduling_priority=self.scheduling_priority,
            wait_slo_seconds=self.wait_slo_seconds,
            own_share=self.own_share,
            weight_multiplier=self.weight_multiplier,
            reclaim_after_seconds=self.reclaim_after_seconds,
        )


class SharesMapping(StrictModel):
    """How trace teams become shares and what each share is entitled to."""

    top_k: Annotated[int, Field(ge=1, le=19)] = 7
    other: Annotated[str, Field(pattern=r"^[A-Za-z0-9]{1,64}$")] = "other"
    #: Team -> share name; named teams get their own share whatever their size (top_k fills the rest).
    names: Mapping[str, Annotated[str, Field(pattern=r"^[A-Za-z0-9]{1,64}$")]] = Field(default_factory=dict)
    #: Share -> fraction of capacity; unset shares split the rest in proportion to their demand.
    entitlements: Mapping[str, Annotated[float, Field(gt=0, le=1)]] = Field(default_factory=dict)
    #: Raise each entitlement to the share's largest job, so hard partitions can run every job.
    floor_largest_job: bool = True


class FaultRates(StrictModel):
    """Probability that a job's first dispatch fails this way (retried per ``retry_attempts``)."""

    capacity: Annotated[float, Field(ge=0, le=1)] = 0.0
    internal: Annotated[float, Field(ge=0, le=1)] = 0.0
    cuda_oom: Annotated[float, Field(ge=0, le=1)] = 0.0


class TimingsConfig(StrictModel):
    """SageMaker phase durations (virtual seconds) every dispatch goes through."""

    scheduled_to_starting: Annotated[float, Field(ge=0)] = 60.0
    starting_to_running: Annotated[float, Field(ge=0)] = 120.0
    capacity_error_after: Annotated[float, Field(ge=0)] = 300.0
    failure_after: Annotated[float, Field(ge=0)] = 120.0


class RebalanceRun(StrictModel):
    """How often the rebalancer runs in the what-if, and the production rules it runs with."""

    interval_minutes: Annotated[float, Field(gt=0)] = 10.0
    #: Waits of jobs first dispatched this long before a snapshot make its per-tier p90.
    wait_window_minutes: Annotated[float, Field(gt=0)] = 60.0
    #: The production rules; their ``mode`` is the deployed rebalancer's and is not read here: the
    #: policy decides (``fairshare+rebalance`` applies every plan, ``fairshare`` none).
    rules: RebalanceConfig = RebalanceConfig()

    @model_validator(mode="after")
    def _movable(self) -> RebalanceRun:
        self.rules.check_can_step_down("rebalance.rules")
        return self


class WhatIfConfig(StrictModel):
    """Root of config/whatif.yaml."""

    capacity_gpus: Annotated[int, Field(gt=0)] | None = None
    #: Without a capacity: GPUs = ceil(offered load / target_load); offered = GPU-time / trace span.
    target_load: Annotated[float, Field(gt=0, le=2)] = 0.95
    gpus_per_unit: Annotated[int, Field(ge=1, le=64)] = 1
    instance_type: Annotated[str, Field(min_length=1)] = "ml.p4d.24xlarge"
    #: USD per instance-hour of ``instance_type``, SageMaker training on demand (the default is
    #: ml.p4d.24xlarge in us-east-1, from the cached copy of AWS's prices in config/prices/). Each
    #: policy's cost per share is the billable time the model reports x instances x this price.
    instance_hour_usd: Annotated[float, Field(gt=0)] = 37.688
    shares: SharesMapping = SharesMapping()
    tiers: Mapping[Tier, TierMix] = Field(
        default_factory=lambda: {
            Tier.HIGHPRI: TierMix(
                fraction=0.1,
                scheduling_priority=90,
                wait_slo_seconds=900,
                own_share=True,
                weight_multiplier=0.05,
                reclaim_after_seconds=300,
            ),
            Tier.MIDPRI: TierMix(fraction=0.3, scheduling_priority=50, wait_slo_seconds=3600),
            Tier.LOWPRI: TierMix(fraction=0.6, scheduling_priority=10, wait_slo_seconds=14400),
        }
    )
    faults: FaultRates = FaultRates()
    retry_attempts: Annotated[int, Field(ge=1, le=10)] = 2
    timings: TimingsConfig = TimingsConfig()
    head_of_line_blocking: bool = True
    share_decay_seconds: Annotated[int, Field(ge=0, le=604800)] = 3600
    in_share_preemption: bool = False
    #: Trace jobs save a checkpoint this often (a preempted or reclaimed job resumes from its last).
    checkpoint_interval_seconds: Annotated[float, Field(ge=0)] = 900.0
    #: The fraction of jobs (seeded) that never checkpoint: they lose all work when stopped, so
    #: reclaim never picks them.
    never_checkpoint_fraction: Annotated[float, Field(ge=0, le=1)] = 0.1
    rebalance: RebalanceRun = RebalanceRun()
    #: Tiered policies: how often the tier charge re-weighs each team's plain identifier (the rebalance
    #: Lambda charges on every scheduled run), on its own schedule so that a rebalancer candidate's
    #: interval never changes the fixed-weights baseline it is judged against.
    tier_charge_interval_minutes: Annotated[float, Field(gt=0)] = 10.0
    #: fairshare+reclaim: the production reclaim rules, and how often the schedule re-plans (a job is
    #: also re-planned at the moment it becomes due, as the Lambda's delayed re-check does).
    reclaim: ReclaimConfig = ReclaimConfig()
    reclaim_interval_minutes: Annotated[float, Field(gt=0)] = 5.0
    report_buckets: Annotated[int, Field(ge=10, le=2000)] = 200
    #: Seeded idle jobs and the idle detector (``idle_replay.py``); off unless a fraction is set.
    idle: IdleRun = IdleRun()

    @model_validator(mode="after")
    def _check(self) -> WhatIfConfig:
        missing = [t.value for t in Tier if t not in self.tiers]
        if missing:
            raise ConfigError("tiers", f"missing {missing}", "define HIGHPRI, MIDPRI and LOWPRI")
        if sum(t.fraction for t in self.tiers.values()) <= 0:
            raise ConfigError("tiers", "fractions add up to 0", "give at least one tier a fraction > 0")
        if sum(self.shares.entitlements.values()) > 1 + 1e-9:
            raise ConfigError("shares.entitlements", "add up to more than 1", "lower the fractions")
        if sum(self.faults.model_dump().values()) > 1:
            raise ConfigError("faults", "add up to more than 1", "lower the probabilities")
        return self


#: The largest what-if config read (a real one is a few KB).
MAX_WHATIF_CONFIG_BYTES = 1024 * 1024


def load_whatif_config(path: Path | str | None) -> WhatIfConfig:
    """Read and validate a what-if config (None: the defaults); errors name the file and the field."""
    if path is None:
        return WhatIfConfig()
    path = Path(path)
    try:
        # Read with a bound: --config may name an endless stream (/dev/zero, a pipe).
        with path.open("rb") as handle:
            data = handle.read(MAX_WHATIF_CONFIG_BYTES + 1)
        if len(data) > MAX_WHATIF_CONFIG_BYTES:
            raise ConfigError(
                str(path),
                f"is larger than {MAX_WHATIF_CONFIG_BYTES} bytes (or an endless stream)",
                "pass --config with the what-if config file",
            )
        raw = yaml.safe_load(data.decode("utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(
            str(path), f"cannot be read ({exc})", "pass --config with a readable YAML file"
        ) from exc
    try:
        return WhatIfConfig.model_validate(raw or {})
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc.field}", exc.problem, exc.fix) from exc
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"]) or "(root)"
        raise ConfigError(f"{path}: {loc}", first["msg"], "correct the value in the config file") from exc


class Policy(StrEnum):
    """The share policies a what-if compares."""

    STATIC = "static"
    FAIRSHARE = "fairshare"
    QUOTA = "quota"
    REBALANCE = "fairshare+rebalance"
    #: Fair-share with one identifier per team and tier (``ShareLayout.TEAM_TIER``), fixed weights.
    TIERS = "fairshare+tiers"
    #: The team x tier layout plus the control plane's checkpoint-aware reclaim (domain/reclaim/plan.py).
    RECLAIM = "fairshare+reclaim"
    #: The shipped layout (config/shares.yaml: team x tier, the tier charge, reclaim) with the
    #: rebalancer applying its plans, moving the team weights as ``fairshare+rebalance`` does (the
    #: shipped rebalancer is advisory, which replays as ``fairshare+reclaim``).
    RECLAIM_REBALANCE = "fairshare+reclaim+rebalance"

    @property
    def fair(self) -> bool:
        """Whether the policy runs a fair-share queue (else quota shares)."""
        return self not in (Policy.STATIC, Policy.QUOTA)

    @property
    def tiered(self) -> bool:
        """Whether share identifiers are per team and tier."""
        return self in (Policy.TIERS, Policy.RECLAIM, Policy.RECLAIM_REBALANCE)

    @property
    def rebalances(self) -> bool:
        """Whether the production rebalancer moves the team weights on its schedule."""
        return self in (Policy.REBALANCE, Policy.RECLAIM_REBALANCE)

    @property
    def reclaims(self) -> bool:
        """Whether the production reclaim planner stops lower-tier jobs for waiting HIGHPRI ones."""
        return self in (Policy.RECLAIM, Policy.RECLAIM_REBALANCE)


def parse_policies(text: str) -> list[Policy]:
    """A comma-separated list of policy names, in order, without duplicates."""
    out: list[Policy] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        try:
            policy = Policy(part)
        except ValueError as exc:
            raise InvalidInputError(
                "--policy", f"{part!r} is not a policy", f"use some of {', '.join(p.value for p in Policy)}"
            ) from exc
        if policy not in out:
            out.append(policy)
    if not out:
        raise InvalidInputError("--policy", "names no policy", "pass e.g. static,fairshare")
    return out
