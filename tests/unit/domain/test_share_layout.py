"""The team x tier share layout: which identifiers a config makes, who owns them, and their weights."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shareplane.domain.alerts.alert import AlertKind, job_alert, owned_by
from shareplane.domain.config.shares import SchedulingMode, ShareKey, SharesConfig, Tier
from shareplane.domain.errors import ConfigError
from shareplane.domain.shares.fairshare import ShareWeight
from shareplane.domain.shares.rebalance import RebalancePlan, ShareChange, identifier_plan, team_weights
from shareplane.domain.submit.jobspec import parse_spec_file

from tests.properties import examples
from tests.unit.domain.test_jobspec import config_dict, good_job

MULTIPLIERS = {"HIGHPRI": 0.05, "MIDPRI": 0.5, "LOWPRI": 1.0}


def tiered(own: tuple[str, ...] = ("HIGHPRI",), **overrides: Any) -> dict[str, Any]:
    """The blog-like cluster in the team_tier layout, ``own`` tiers with identifiers of their own.

    The default is the repository's: HIGHPRI its own identifier, MIDPRI and LOWPRI on the team's.
    """
    raw = config_dict(share_layout="team_tier", **overrides)
    for tier, multiplier in MULTIPLIERS.items():
        raw["tiers"][tier]["weight_multiplier"] = multiplier
        raw["tiers"][tier]["own_share"] = tier in own
    return raw


CONFIG = SharesConfig.model_validate(tiered())
#: Every tier with an identifier of its own: the layout's mechanism for more than one tier.
ALL_OWN = SharesConfig.model_validate(tiered(own=tuple(MULTIPLIERS)))


def _teams(n: int, share: str = "Team{i}") -> dict[str, Any]:
    return {f"T{i}": {"share": share.format(i=i), "entitlement": {"ml.p4d.24xlarge": 0}} for i in range(n)}


# ---------------------------------------------------------------------------------------------------
# Validation: what AWS Batch would refuse is refused in the config, naming field and fix.
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("change", "field", "problem"),
    [
        (
            lambda r: r["teams"].update(
                A={"share": "A", "entitlement": {}}, B={"share": "AHIGHPRI", "entitlement": {}}
            ),
            "teams.B.share",
            "team A's HIGHPRI identifier",
        ),
        (
            lambda r: r["teams"]["ProdExp2"].update(share="ProdExp1"),
            "teams.ProdExp2.share",
            "team ProdExp1's share",
        ),
        (
            lambda r: (
                r["teams"].update(
                    A={"share": "A", "entitlement": {}}, B={"share": "ALOWPRI", "entitlement": {}}
                ),
                r["tiers"]["LOWPRI"].update(own_share=True),
            ),
            "teams.B.share",
            "team A's LOWPRI identifier",
        ),
        (
            lambda r: r["teams"]["ProdExp2"].update(share="P" * 250),
            "teams.ProdExp2.share",
            "at most 255 letters and digits",
        ),
        (lambda r: r.update(teams=_teams(251)), "share_layout", "251 teams x 2 = 502 share identifiers"),
        (
            lambda r: (r.update(teams=_teams(126)), [t.update(own_share=True) for t in r["tiers"].values()]),
            "share_layout",
            "126 teams x 4 = 504 share identifiers",
        ),
        (
            lambda r: r.update(share_layout="team", teams=_teams(2, "Same")),
            "teams.T1.share",
            "team T0's share",
        ),
    ],
    ids=[
        "a team share that spells another team's share plus a tier collides with that identifier",
        "two teams on one share collide",
        "a tier marked own_share has identifiers a team share may not spell",
        "an identifier over 255 characters once the tier is appended is refused",
        "more than 500 identifiers on one queue is refused, naming the layout",
        "with every tier its own identifier, 4 per team count against the 500",
        "in the team layout two teams on one share are refused too",
    ],
)
def test_identifiers_batch_would_refuse_are_config_errors(change: Any, field: str, problem: str) -> None:
    raw = tiered()
    change(raw)
    with pytest.raises(ConfigError) as err:
        SharesConfig.model_validate(raw)
    assert err.value.field == field and problem in err.value.problem and err.value.fix


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(
            tiered(teams=_teams(250)), id="250 teams x (share + HIGHPRI) = 500 identifiers fit a queue"
        ),
        pytest.param(
            tiered(own=tuple(MULTIPLIERS), teams=_teams(125)),
            id="125 teams x (share + 3 tiers) = 500 identifiers fit a queue",
        ),
        pytest.param(tiered(own=(), teams=_teams(500)), id="no tier with own_share: one identifier per team"),
        pytest.param(config_dict(teams=_teams(500)), id="500 teams fit in the team layout"),
        pytest.param(tiered(mode="quota", teams=_teams(2)), id="quota mode makes one share per team"),
    ],
)
def test_layouts_within_the_limits_are_accepted(raw: dict[str, Any]) -> None:
    config = SharesConfig.model_validate(raw)
    own = sum(1 for t in config.tiers.values() if t.own_share) if config.tiered_shares else 0
    per_team = 1 + own
    assert len(config.share_keys) == per_team * len(config.teams)


# ---------------------------------------------------------------------------------------------------
# Who owns an identifier: the config's mapping, never the name.
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("config", "share", "priority", "key", "tier"),
    [
        (CONFIG, "ProdExp1HIGHPRI", 0, ShareKey("ProdExp1", Tier.HIGHPRI), Tier.HIGHPRI),
        (CONFIG, "ProdExp1", 50, ShareKey("ProdExp1"), Tier.MIDPRI),
        (CONFIG, "ProdExp2", 10, ShareKey("ProdExp2"), Tier.LOWPRI),
        (CONFIG, "ProdExp2LOWPRI", 10, None, Tier.LOWPRI),
        (ALL_OWN, "ProdExp2LOWPRI", 90, ShareKey("ProdExp2", Tier.LOWPRI), Tier.LOWPRI),
        (ALL_OWN, "ProdExp1", 50, ShareKey("ProdExp1"), Tier.MIDPRI),
        (CONFIG, "ProdExp3HIGHPRI", 90, None, Tier.HIGHPRI),
        (CONFIG, None, None, None, None),
    ],
    ids=[
        "an identifier names its team and tier, whatever the job's priority",
        "a team's plain share names the team; the job's priority gives the tier",
        "a LOWPRI job on the team's plain share is LOWPRI by its priority",
        "a tier without own_share has no identifier: its name belongs to no team",
        "with every tier its own identifier, an escalated LOWPRI job stays LOWPRI",
        "with every tier its own identifier, the plain share (a job queued before) still names the team",
        "a name that looks like a team's identifier but is not in the config belongs to no team",
        "no share, no team",
    ],
)
def test_team_and_tier_come_from_the_configs_mapping(
    config: SharesConfig, share: str | None, priority: int | None, key: ShareKey | None, tier: Tier | None
) -> None:
    assert config.share_key(share) == key
    assert config.team_for_share(share) == (key.team if key else None)
    assert config.tier_for_share(share) == (key.tier if key else None)
    assert config.job_tier(share, priority) == tier


def test_share_keys_are_each_teams_share_and_its_own_share_tiers_identifiers() -> None:
    assert dict(CONFIG.share_keys) == {
        "ProdExp1": ShareKey("ProdExp1"),
        "ProdExp1HIGHPRI": ShareKey("ProdExp1", Tier.HIGHPRI),
        "ProdExp2": ShareKey("ProdExp2"),
        "ProdExp2HIGHPRI": ShareKey("ProdExp2", Tier.HIGHPRI),
    }
    assert set(ALL_OWN.share_keys) == {f"ProdExp{n}{t}" for n in (1, 2) for t in ("", *MULTIPLIERS)}
    # weightFactor: the best-entitled team 1.0 (ProdExp2 60/40), times the tier's multiplier
    assert [CONFIG.share_weight_factor(s) for s in sorted(CONFIG.share_keys)] == [1.0, 0.05, 1.5, 0.075]
    assert ALL_OWN.share_weight_factor("ProdExp2MIDPRI") == 0.75


@pytest.mark.parametrize(
    ("config", "identifiers"),
    [
        (CONFIG, ["ProdExp1HIGHPRI", "ProdExp1", "ProdExp1"]),
        (ALL_OWN, ["ProdExp1HIGHPRI", "ProdExp1MIDPRI", "ProdExp1LOWPRI"]),
    ],
    ids=[
        "HIGHPRI goes to its own identifier, MIDPRI and LOWPRI to the team's",
        "with every tier its own identifier, each tier goes to its own",
    ],
)
def test_submissions_go_to_the_teams_identifier_of_the_jobs_tier(
    config: SharesConfig, identifiers: list[str]
) -> None:
    jobs = [good_job(name=f"j-{t.value.lower()}", priority=t.value) for t in Tier]
    result = parse_spec_file(json.dumps(jobs).encode(), "submit/ProdExp1/x.json", config)
    assert [j.request and j.request.share_identifier for j in result.jobs] == identifiers
    assert all(j.request and j.request.preemption_configuration is None for j in result.jobs)


@pytest.mark.parametrize(
    ("quota", "expected"),
    [
        ({}, {"preemptionRetriesBeforeTermination": 5}),
        ({"preemption_retries_before_termination": 0}, {"preemptionRetriesBeforeTermination": 0}),
        ({"preemption_retries_before_termination": None}, None),
    ],
    ids=[
        "a quota submission caps Batch's requeues after preemption at 5 by default",
        "0 fails a job at its first preemption, as Batch defines it",
        "None leaves Batch's unlimited requeues",
    ],
)
def test_quota_submissions_carry_the_teams_preemption_retries(
    quota: dict[str, Any], expected: dict[str, int] | None
) -> None:
    raw = tiered(mode="quota")
    raw["teams"]["ProdExp1"]["quota"] = quota
    config = SharesConfig.model_validate(raw)
    (job,) = parse_spec_file(json.dumps([good_job()]).encode(), "submit/ProdExp1/x.json", config).jobs
    request = job.request
    # quota mode keeps one share per team: in-share preemption orders the tiers inside it
    assert request is not None
    assert request.quota_share_name == "ProdExp1" and request.share_identifier is None
    assert request.preemption_configuration == expected


# ---------------------------------------------------------------------------------------------------
# Weights: identifiers are the team's weight times the tier multiplier, and fold back to it.
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("config", "tiers"),
    [
        (CONFIG, {"HIGHPRI": (0.075, 0.06)}),
        (ALL_OWN, {"HIGHPRI": (0.075, 0.06), "LOWPRI": (1.5, 1.2), "MIDPRI": (0.75, 0.6)}),
    ],
    ids=["the team's share and its HIGHPRI identifier", "the team's share and every tier's identifier"],
)
def test_a_team_plan_is_written_to_each_identifier_times_its_tier_multiplier(
    config: SharesConfig, tiers: dict[str, tuple[float, float]]
) -> None:
    plan = RebalancePlan(
        created_at=0.0,
        mode=SchedulingMode.FAIRSHARE,
        changes=(ShareChange("ProdExp2", 1.5, 1.2, "target 45"), ShareChange("Stray", 1.0, 2.0, "x")),
        reason="rebalanced",
    )
    expanded = identifier_plan(plan, config)
    assert {c.share: (c.before, c.after) for c in expanded.changes} == {
        "ProdExp2": (1.5, 1.2),  # the team's share: its jobs of the tiers without their own
        **{f"ProdExp2{tier}": weights for tier, weights in tiers.items()},
        "Stray": (1.0, 2.0),  # names no team: left as it is
    }
    assert {c.why for c in expanded.changes if c.share.startswith("ProdExp2")} == {"target 45"}
    assert plan.changes[0].share == "ProdExp2", "the plan is not modified"


def test_in_the_team_layout_the_plan_and_weights_pass_through() -> None:
    config = SharesConfig.model_validate(config_dict())
    plan = RebalancePlan(
        0.0, SchedulingMode.FAIRSHARE, (ShareChange("ProdExp2", 1.5, 1.2, "w"),), "rebalanced"
    )
    weights = [ShareWeight("ProdExp1", 1.0), ShareWeight("ProdExp2", 1.5)]
    assert identifier_plan(plan, config) == plan
    assert team_weights(config, weights) == weights


def test_a_queue_not_yet_migrated_reads_the_teams_plain_entry() -> None:
    weights = [ShareWeight("ProdExp1", 1.0), ShareWeight("ProdExp2", 1.5)]
    assert team_weights(CONFIG, weights) == weights


@settings(max_examples=examples(80), deadline=None)
@given(
    team_weight=st.floats(0.0001, 999.9999),
    multipliers=st.tuples(*[st.floats(0.01, 1.0) for _ in Tier]),
)
def test_expanded_team_weights_fold_back_to_the_team_weight(team_weight: float, multipliers: tuple) -> None:
    raw = tiered(own=tuple(MULTIPLIERS))
    for tier, multiplier in zip(Tier, multipliers, strict=True):
        raw["tiers"][tier.value]["weight_multiplier"] = multiplier
    config = SharesConfig.model_validate(raw)
    plan = RebalancePlan(
        0.0, SchedulingMode.FAIRSHARE, (ShareChange("ProdExp1", 1.0, team_weight, "w"),), "r"
    )
    written = [ShareWeight(c.share, float(c.after)) for c in identifier_plan(plan, config).changes]
    # every identifier is in the API's range, and ordered by its tier's multiplier
    assert all(0.0001 <= w.weight_factor <= 999.9999 for w in written)
    (folded,) = [w for w in team_weights(config, written) if w.share_identifier == "ProdExp1"]
    # read back from the tier with the largest multiplier: only the 4-decimal rounding and the API's
    # range lose anything
    largest = max(multipliers)
    if 0.0001 <= team_weight * largest <= 999.9999:
        assert folded.weight_factor == pytest.approx(team_weight, abs=0.00005 / largest + 0.00005 + 1e-9)


# ---------------------------------------------------------------------------------------------------
# Alerts route by team.
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("share", "attributes"),
    [
        ("ProdExp1HIGHPRI", {"team": "ProdExp1", "tier": "HIGHPRI", "share": "ProdExp1HIGHPRI"}),
        ("ProdExp1", {"team": "ProdExp1", "tier": "none", "share": "ProdExp1"}),
        ("Intern", {"team": "none", "tier": "none", "share": "Intern"}),
    ],
    ids=[
        "an identifier's alert carries its team and tier beside the identifier",
        "a team's plain share still routes to the team",
        "a share no team owns routes to no team",
    ],
)
def test_alerts_carry_the_team_and_tier_of_their_share(share: str, attributes: dict[str, str]) -> None:
    alert = job_alert(
        AlertKind.QUEUE_BLOCKED, share=share, queue="q", job_arn="arn:job", job_name="j", reason="r"
    )
    owned = owned_by(alert, CONFIG)
    assert {k: owned.attributes[k] for k in attributes} == attributes
    assert owned.body["team"] == (None if attributes["team"] == "none" else attributes["team"])
    assert owned.dedupe_key == alert.dedupe_key


@pytest.mark.parametrize(
    ("priority", "expected"),
    [(10, 11), (11, 12), (49, 49), (50, 51), (89, 89), (90, 91), (9999, 9999)],
    ids=[
        "a LOWPRI victim resumes one above its tier's queued work",
        "a victim stopped twice climbs once more",
        "it never reaches the next tier's priority",
        "a MIDPRI victim climbs inside MIDPRI",
        "the top of MIDPRI's band stays put",
        "HIGHPRI climbs inside its open band",
        "the API's largest priority stays put",
    ],
)
def test_a_reclaimed_job_resumes_ahead_of_its_tier_but_inside_it(priority: int, expected: int) -> None:
    config = SharesConfig.model_validate(config_dict())
    assert config.resume_priority(priority) == expected
    assert config.tier_for_priority(expected) == config.tier_for_priority(priority)
