"""The one declarative shares config: teams, capacity, priority tiers. Validated here, read everywhere."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .errors import ConfigError


class SchedulingMode(StrEnum):
    """How the GPU queue shares capacity between teams."""

    FAIRSHARE = "fairshare"
    QUOTA = "quota"


class Tier(StrEnum):
    """Priority tiers, highest first."""

    HIGHPRI = "HIGHPRI"
    MIDPRI = "MIDPRI"
    LOWPRI = "LOWPRI"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TierConfig(_Strict):
    """What a tier means: the schedulingPriority its jobs get and the wait it promises."""

    scheduling_priority: Annotated[int, Field(ge=0, le=9999)]
    wait_slo_seconds: Annotated[int, Field(gt=0)]


class InstanceTypeConfig(_Strict):
    """One GPU instance family's service environment: how many instances the cluster may run."""

    capacity: Annotated[int, Field(gt=0)]


class TeamConfig(_Strict):
    """One team: its share and what it is entitled to, per instance type."""

    share: Annotated[str, Field(pattern=r"^[A-Za-z0-9]{1,255}$")]
    entitlement: Mapping[str, Annotated[int, Field(ge=0)]]


class FairshareConfig(_Strict):
    """The fair-share scheduling policy's knobs (AWS Batch FairsharePolicy)."""

    share_decay_seconds: Annotated[int, Field(ge=0, le=604800)] = 3600
    compute_reservation: Annotated[int, Field(ge=0, le=99)] = 0


class SharesConfig(_Strict):
    """Root of config/shares.yaml."""

    cluster: Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]{0,40}$")]
    mode: SchedulingMode = SchedulingMode.FAIRSHARE
    instance_types: Mapping[str, InstanceTypeConfig]
    tiers: Mapping[Tier, TierConfig]
    teams: Mapping[str, TeamConfig]
    fairshare: FairshareConfig = FairshareConfig()

    @model_validator(mode="after")
    def _consistent(self) -> SharesConfig:
        for name, team in self.teams.items():
            for instance_type in team.entitlement:
                if instance_type not in self.instance_types:
                    raise ConfigError(
                        f"teams.{name}.entitlement.{instance_type}",
                        "names an instance type the cluster does not have",
                        f"add it under instance_types or use one of {sorted(self.instance_types)}",
                    )
        for instance_type, limits in self.instance_types.items():
            total = sum(team.entitlement.get(instance_type, 0) for team in self.teams.values())
            if total > limits.capacity:
                raise ConfigError(
                    f"instance_types.{instance_type}.capacity",
                    f"teams are entitled to {total} instances but capacity is {limits.capacity}",
                    "raise the capacity or lower the entitlements",
                )
        missing = [tier.value for tier in Tier if tier not in self.tiers]
        if missing:
            raise ConfigError("tiers", f"missing {missing}", "define HIGHPRI, MIDPRI and LOWPRI")
        return self

    def tier_for_priority(self, scheduling_priority: int | None) -> Tier | None:
        """The highest tier whose schedulingPriority the job reaches; None below every tier."""
        if scheduling_priority is None:
            return None
        reached = [t for t, c in self.tiers.items() if scheduling_priority >= c.scheduling_priority]
        return max(reached, key=lambda t: self.tiers[t].scheduling_priority, default=None)

    def team_for_share(self, share: str | None) -> str | None:
        """The team that owns a share identifier or quota share name."""
        return next((name for name, team in self.teams.items() if team.share == share), None)
