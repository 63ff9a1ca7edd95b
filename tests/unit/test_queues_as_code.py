"""The Batch queues as code: template.yaml's generated blocks are config/shares.yaml rendered, and are right."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from cfnlint.decode import cfn_yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from shareplane.domain.config.shares import SchedulingMode, SharesConfig
from shareplane.domain.errors import ConfigError, InvalidInputError
from shareplane_cli import queue_template
from shareplane_cli.config_file import load_config
from shareplane_cli.main import app
from typer.testing import CliRunner

from tests.conftest import REPO
from tests.properties import examples

TEMPLATE = REPO / "template.yaml"
CONFIG = REPO / "config" / "shares.yaml"
P4D = "ml.p4d.24xlarge"
BATCH = "AWS::Batch::"

runner = CliRunner()


def raw_config() -> dict[str, Any]:
    """config/shares.yaml as plain data (a copy the test may change), without its budgets and idle policy.

    Both name the file's teams, which these tests rename and multiply; they never shape the queues.
    """
    data = yaml.safe_load(CONFIG.read_text())
    data.pop("budgets", None)
    data.pop("idle", None)
    return data


def config_with(**changes: Any) -> SharesConfig:
    """The repository's config with top-level fields replaced."""
    return SharesConfig.model_validate({**raw_config(), **changes})


def quota_config(**team_quota: dict[str, Any]) -> SharesConfig:
    """The repository's config in quota mode, with per-team quota settings."""
    data = raw_config()
    data["mode"] = "quota"
    for team, settings_ in team_quota.items():
        data["teams"][team]["quota"] = settings_
    return SharesConfig.model_validate(data)


def parse(blocks: dict[str, str]) -> dict[str, Any]:
    """The rendered blocks as one template fragment, intrinsics as plain dicts ({"Ref": ...})."""
    text = blocks["Rules"] + "".join(
        f"{section}:\n{blocks[section]}"
        for section in queue_template.SECTIONS
        if section in queue_template.NESTED
    )
    return json.loads(json.dumps(cfn_yaml.loads(text)))


def rendered(config: SharesConfig) -> dict[str, Any]:
    """render(config), parsed."""
    return parse(queue_template.render(config))


def of_type(template: dict[str, Any], type_: str) -> dict[str, dict[str, Any]]:
    """Logical id -> resource, for one resource type."""
    return {k: r for k, r in template["Resources"].items() if r["Type"] == type_}


def weights(template: dict[str, Any]) -> dict[str, float]:
    """Share -> weightFactor of the rendered fair-share policy."""
    policy = template["Resources"]["GpuSchedulingPolicy"]["Properties"]["FairsharePolicy"]
    return {s["ShareIdentifier"]: s["WeightFactor"] for s in policy["ShareDistribution"]}


def time_limit_actions(template: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(queue, action) for every jobStateTimeLimitAction of every rendered queue."""
    return [
        (queue_id, action)
        for queue_id, queue in of_type(template, "AWS::Batch::JobQueue").items()
        for action in queue["Properties"]["JobStateTimeLimitActions"]
    ]


# ---------------------------------------------------------------------------------------------------
# The config is the one source.
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "section", queue_template.SECTIONS, ids=lambda s: f"the {s} block of template.yaml is the rendered config"
)
def test_template_block_equals_the_rendered_config(section: str) -> None:
    expected = queue_template.render(load_config(CONFIG))[section]
    assert queue_template.read_blocks(TEMPLATE.read_text())[section] == expected, (
        f"template.yaml's generated {section} block drifted from config/shares.yaml; "
        "run `shareplane config render`"
    )


def test_config_render_check_passes_on_the_repository() -> None:
    result = runner.invoke(
        app, ["config", "render", "--check", "--config", str(CONFIG), "--template", str(TEMPLATE)]
    )
    assert result.exit_code == 0, result.output


def test_the_blog_cluster_renders_one_p4d_environment_of_100_instances_and_a_4_instance_cpu_one() -> None:
    template = rendered(load_config(CONFIG))
    envs = of_type(template, "AWS::Batch::ServiceEnvironment")
    assert envs["GpuServiceEnvironmentP4d"]["Properties"]["CapacityLimits"] == [
        {"CapacityUnit": "NUM_INSTANCES", "MaxCapacity": 100}
    ]
    assert envs["CpuServiceEnvironment"]["Properties"]["CapacityLimits"] == [
        {"CapacityUnit": "NUM_INSTANCES", "MaxCapacity": 4}
    ]
    assert {e["Properties"]["ServiceEnvironmentType"] for e in envs.values()} == {"SAGEMAKER_TRAINING"}


def test_queue_names_are_the_ones_the_submit_path_uses() -> None:
    # GIVEN the config's queue names (the submit path sends jobs to exactly these)
    config = load_config(CONFIG)
    queues = of_type(rendered(config), "AWS::Batch::JobQueue")
    assert (
        queues["GpuJobQueue"]["Properties"]["JobQueueName"] == config.gpu_queue_name() == "search-p4d-queue"
    )
    assert queues["CpuJobQueue"]["Properties"]["JobQueueName"] == config.queues.cpu_fifo
    assert {q["Properties"]["JobQueueType"] for q in queues.values()} == {"SAGEMAKER_TRAINING"}


def test_without_a_queue_name_the_gpu_queue_takes_the_cluster_default() -> None:
    data = raw_config()
    del data["queues"]["gpu"]
    queue = rendered(SharesConfig.model_validate(data))["Resources"]["GpuJobQueue"]
    assert queue["Properties"]["JobQueueName"] == "search-gpu"


# ---------------------------------------------------------------------------------------------------
# Fair share: weights from entitlements.
# ---------------------------------------------------------------------------------------------------
def test_prodexp1_entitled_to_60_gets_a_lower_weight_than_prodexp2_at_40_in_the_ratio_40_to_60() -> None:
    w = weights(rendered(config_with(share_layout="team")))
    assert w["ProdExp1"] < w["ProdExp2"]
    assert w["ProdExp1"] / w["ProdExp2"] == pytest.approx(40 / 60)
    assert w == {"ProdExp1": 1.0, "ProdExp2": 1.5}


def test_the_team_tier_layout_renders_one_exact_entry_per_team_and_tier_weighted_by_the_multiplier() -> None:
    # GIVEN the repository's config: team_tier, HIGHPRI its own identifier x0.05, MIDPRI and LOWPRI on
    # the team's
    config = load_config(CONFIG)
    w = weights(rendered(config))
    # THEN every identifier has its own entry (no * prefix): the team's share at the team's weight, the
    # HIGHPRI identifier at the team weight x its multiplier
    assert w == {
        "ProdExp1": 1.0,
        "ProdExp1HIGHPRI": 0.05,
        "ProdExp2": 1.5,
        "ProdExp2HIGHPRI": 0.075,
    }
    assert w == {share: config.share_weight_factor(share) for share in config.share_keys}
    # AND inside a tier the teams still split 60:40
    assert w["ProdExp1HIGHPRI"] / w["ProdExp2HIGHPRI"] == pytest.approx(40 / 60)


def test_with_every_tier_marked_own_share_each_tier_renders_its_own_entry() -> None:
    # GIVEN the repository's config with every tier its own identifier, HIGHPRI x0.05, MIDPRI x0.5, LOWPRI x1.0
    data = raw_config()
    for tier, multiplier in {"HIGHPRI": 0.05, "MIDPRI": 0.5, "LOWPRI": 1.0}.items():
        data["tiers"][tier].update(own_share=True, weight_multiplier=multiplier)
    config = SharesConfig.model_validate(data)
    w = weights(rendered(config))
    # THEN each team has its share's entry and one per tier, weight = team weight x tier multiplier
    assert w == {
        "ProdExp1": 1.0,
        "ProdExp1HIGHPRI": 0.05,
        "ProdExp1MIDPRI": 0.5,
        "ProdExp1LOWPRI": 1.0,
        "ProdExp2": 1.5,
        "ProdExp2HIGHPRI": 0.075,
        "ProdExp2MIDPRI": 0.75,
        "ProdExp2LOWPRI": 1.5,
    }
    assert w == {share: config.share_weight_factor(share) for share in config.share_keys}
    assert w["ProdExp1MIDPRI"] / w["ProdExp2MIDPRI"] == pytest.approx(40 / 60)


def test_quota_mode_keeps_one_quota_share_per_team_whatever_the_layout() -> None:
    template = rendered(quota_config())
    names = {s["Properties"]["QuotaShareName"] for s in of_type(template, "AWS::Batch::QuotaShare").values()}
    assert names == {"ProdExp1", "ProdExp2"}


def test_fair_share_policy_takes_decay_and_reservation_from_the_config() -> None:
    config = config_with(fairshare={"share_decay_seconds": 7200, "compute_reservation": 25})
    policy = rendered(config)["Resources"]["GpuSchedulingPolicy"]["Properties"]
    assert policy["FairsharePolicy"]["ShareDecaySeconds"] == 7200
    assert policy["FairsharePolicy"]["ComputeReservation"] == 25
    assert "QuotaSharePolicy" not in policy


def test_a_team_entitled_to_nothing_gets_the_largest_weight_the_api_allows() -> None:
    data = raw_config()
    data["teams"]["ProdExp2"]["entitlement"] = {P4D: 0}
    data["share_layout"] = "team"
    assert weights(rendered(SharesConfig.model_validate(data))) == {"ProdExp1": 1.0, "ProdExp2": 999.9999}


def test_two_teams_on_one_share_are_refused_naming_the_team() -> None:
    # (the config refuses it now, so no rendering ever sees one share counted twice)
    data = raw_config()
    data["teams"]["ProdExp2"]["share"] = "ProdExp1"
    with pytest.raises(ConfigError) as err:
        queue_template.render(SharesConfig.model_validate(data))
    assert err.value.field == "teams.ProdExp2.share"


# ---------------------------------------------------------------------------------------------------
# Quota mode.
# ---------------------------------------------------------------------------------------------------
def test_quota_mode_renders_one_quota_share_per_team_limited_to_its_entitlement() -> None:
    template = rendered(quota_config())
    shares = of_type(template, "AWS::Batch::QuotaShare")
    assert {
        s["Properties"]["QuotaShareName"]: s["Properties"]["CapacityLimits"] for s in shares.values()
    } == {
        "ProdExp1": [{"CapacityUnit": P4D, "MaxCapacity": 60}],
        "ProdExp2": [{"CapacityUnit": P4D, "MaxCapacity": 40}],
    }
    assert all(
        s["Properties"]["JobQueue"] == {"Fn::GetAtt": ["GpuJobQueue", "JobQueueArn"]} for s in shares.values()
    )


def test_quota_mode_uses_a_fifo_quota_share_policy_and_per_instance_type_environment_limits() -> None:
    template = rendered(quota_config())
    policy = template["Resources"]["GpuSchedulingPolicy"]["Properties"]
    assert policy["QuotaSharePolicy"] == {"IdleResourceAssignmentStrategy": "FIFO"}
    assert "FairsharePolicy" not in policy
    env = template["Resources"]["GpuServiceEnvironmentP4d"]["Properties"]
    assert env["CapacityLimits"] == [{"CapacityUnit": P4D, "MaxCapacity": 100}]


@pytest.mark.parametrize(
    ("team_quota", "sharing", "preemption"),
    [
        ({}, {"Strategy": "LEND_AND_BORROW", "BorrowLimit": -1}, "ENABLED"),
        (
            {"borrow_limit": 50, "in_share_preemption": False},
            {"Strategy": "LEND_AND_BORROW", "BorrowLimit": 50},
            "DISABLED",
        ),
        ({"strategy": "LEND"}, {"Strategy": "LEND"}, "ENABLED"),
        ({"strategy": "RESERVE"}, {"Strategy": "RESERVE"}, "ENABLED"),
    ],
    ids=[
        "by default a share lends and borrows without limit and a higher tier preempts inside it",
        "a borrow limit and in-share preemption are taken from the config",
        "a lending share has no borrow limit",
        "a reserving share has no borrow limit",
    ],
)
def test_quota_share_strategy_borrow_limit_and_preemption_come_from_the_config(
    team_quota: dict[str, Any], sharing: dict[str, Any], preemption: str
) -> None:
    share = rendered(quota_config(ProdExp1=team_quota))["Resources"]["GpuQuotaShareProdExp1"]["Properties"]
    assert share["ResourceSharingConfiguration"] == sharing
    assert share["PreemptionConfiguration"] == {"InSharePreemption": preemption}


def test_a_borrow_limit_on_a_share_that_never_borrows_is_refused() -> None:
    with pytest.raises(ConfigError) as err:
        quota_config(ProdExp1={"strategy": "RESERVE", "borrow_limit": 10})
    assert "borrow_limit" in str(err.value)


def _many_teams(n: int) -> dict[str, Any]:
    data = raw_config()
    data["mode"] = "quota"
    template_team = data["teams"]["ProdExp2"]
    data["teams"] = {
        f"Team{i}": {**template_team, "share": f"Team{i}", "entitlement": {P4D: 1}} for i in range(n)
    }
    return data


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda d: d["teams"]["ProdExp2"].update(entitlement={P4D: 0}), "teams.ProdExp2.entitlement"),
        (lambda d: d.update(_many_teams(21)), "teams"),
    ],
    ids=[
        "a quota-mode team entitled to nothing is refused, since a quota share needs a limit",
        "more than 20 teams are refused in quota mode, the most one queue takes",
    ],
)
def test_quota_mode_refuses_what_batch_would_refuse(change: Any, field: str) -> None:
    data = raw_config()
    data["mode"] = "quota"
    change(data)
    with pytest.raises(ConfigError) as err:
        queue_template.render(SharesConfig.model_validate(data))
    assert err.value.field == field


def test_the_quota_mode_preview_is_written_beside_and_the_template_is_left_alone(tmp_path: Path) -> None:
    # (`make template` lints this preview with template.yaml in one cfn-lint run.)
    # GIVEN the repository's fair-share config WHEN it is rendered in quota mode to another file
    preview = tmp_path / "quota.template.yaml"
    before = TEMPLATE.read_text()
    result = runner.invoke(
        app,
        ["config", "render", "--mode", "quota", "--output", str(preview)]
        + ["--config", str(CONFIG), "--template", str(TEMPLATE)],
    )
    assert result.exit_code == 0, result.output
    # THEN the preview holds the quota-share blocks, with the mode in its stored shares config
    quota = cfn_yaml.loads(preview.read_text())
    (policy,) = of_type(quota, "AWS::Batch::SchedulingPolicy").values()
    assert of_type(quota, "AWS::Batch::QuotaShare") and set(policy["Properties"]) == {
        "Name",
        "QuotaSharePolicy",
    }
    stored = quota["Resources"]["SharesConfigParameter"]["Properties"]["Value"]
    assert json.loads(stored)["mode"] == "quota"
    assert TEMPLATE.read_text() == before
    # AND without --output a mode switch is refused, naming the option
    refused = runner.invoke(
        app, ["config", "render", "--mode", "quota", "--config", str(CONFIG), "--template", str(TEMPLATE)]
    )
    assert refused.exit_code == 2 and "--output" in refused.output


# ---------------------------------------------------------------------------------------------------
# Queues: FIFO for CPU, time limits everywhere.
# ---------------------------------------------------------------------------------------------------
def test_the_cpu_queue_is_fifo_with_no_scheduling_policy_and_the_gpu_queue_has_one() -> None:
    queues = of_type(rendered(load_config(CONFIG)), "AWS::Batch::JobQueue")
    assert "SchedulingPolicyArn" not in queues["CpuJobQueue"]["Properties"]
    assert queues["GpuJobQueue"]["Properties"]["SchedulingPolicyArn"] == {
        "Fn::GetAtt": ["GpuSchedulingPolicy", "Arn"]
    }


def test_each_queue_has_its_own_service_environment() -> None:
    queues = of_type(rendered(load_config(CONFIG)), "AWS::Batch::JobQueue")
    used = {
        q_id: [o["ServiceEnvironment"]["Fn::GetAtt"][0] for o in q["Properties"]["ServiceEnvironmentOrder"]]
        for q_id, q in queues.items()
    }
    assert used == {"GpuJobQueue": ["GpuServiceEnvironmentP4d"], "CpuJobQueue": ["CpuServiceEnvironment"]}


def test_without_a_cpu_queue_no_cpu_resources_parameters_or_outputs_are_rendered() -> None:
    data = raw_config()
    data["queues"] = {"gpu": "search-p4d-queue"}
    for team in data["teams"].values():
        team["allowed_instance_types"] = [P4D]
    template = rendered(SharesConfig.model_validate(data))
    assert not [
        k for k in [*template["Resources"], *template["Parameters"], *template["Outputs"]] if "Cpu" in k
    ]


@pytest.mark.parametrize(
    "config",
    [load_config(CONFIG), quota_config()],
    ids=["in fair-share mode", "in quota mode"],
)
def test_every_queue_terminates_a_head_job_stuck_runnable_within_600_to_86400_seconds(
    config: SharesConfig,
) -> None:
    actions = time_limit_actions(rendered(config))
    assert {queue for queue, _ in actions} == {"GpuJobQueue", "CpuJobQueue"}
    for queue, action in actions:
        assert action["Action"] == "TERMINATE", queue  # the only action SAGEMAKER_TRAINING queues take
        assert action["State"] == "RUNNABLE", queue
        assert 600 <= action["MaxTimeSeconds"] <= 86400, queue
    capacity = [a for q, a in actions if a["Reason"] == queue_template.REASON_CAPACITY]
    assert len(capacity) == 2 and {a["MaxTimeSeconds"] for a in capacity} == {
        config.queues.capacity_wait_limit_seconds
    }


def test_only_the_quota_share_queue_times_out_jobs_over_their_share_limit() -> None:
    reasons = {(q, a["Reason"]) for q, a in time_limit_actions(rendered(quota_config()))}
    assert ("GpuJobQueue", queue_template.REASON_QUOTA_LIMIT) in reasons
    assert ("CpuJobQueue", queue_template.REASON_QUOTA_LIMIT) not in reasons
    assert queue_template.REASON_QUOTA_LIMIT not in {
        a["Reason"] for _, a in time_limit_actions(rendered(load_config(CONFIG)))
    }


def test_the_wait_limits_come_from_the_config() -> None:
    data = raw_config()
    data["queues"].update(capacity_wait_limit_seconds=3600, misconfiguration_wait_limit_seconds=900)
    seconds = {
        a["Reason"]: a["MaxTimeSeconds"]
        for _, a in time_limit_actions(rendered(SharesConfig.model_validate(data)))
    }
    assert seconds == {queue_template.REASON_CAPACITY: 3600, queue_template.REASON_SE_MAX: 900}


@pytest.mark.parametrize("seconds", [599, 86401], ids=["under 600 s is refused", "over a day is refused"])
def test_wait_limits_outside_what_batch_accepts_are_refused(seconds: int) -> None:
    data = raw_config()
    data["queues"]["capacity_wait_limit_seconds"] = seconds
    with pytest.raises(ValueError, match="capacity_wait_limit_seconds"):
        SharesConfig.model_validate(data)


# ---------------------------------------------------------------------------------------------------
# Several GPU families.
# ---------------------------------------------------------------------------------------------------
def _two_families(mode: str, share_layout: str = "team_tier") -> SharesConfig:
    data = raw_config()
    data["mode"] = mode
    data["share_layout"] = share_layout
    data["instance_types"] = {
        "ml.p5.48xlarge": {"capacity": 8},
        P4D: {"capacity": 100},
        "ml.p4de.24xlarge": {"capacity": 4},
    }
    data["teams"]["ProdExp2"]["entitlement"] = {P4D: 40, "ml.p5.48xlarge": 8}
    return SharesConfig.model_validate(data)


def test_fair_share_mode_makes_one_num_instances_environment_per_family_in_the_queue() -> None:
    template = rendered(_two_families("fairshare", share_layout="team"))
    envs = of_type(template, "AWS::Batch::ServiceEnvironment")
    assert {k: e["Properties"]["CapacityLimits"] for k, e in envs.items() if k.startswith("Gpu")} == {
        "GpuServiceEnvironmentP4d": [{"CapacityUnit": "NUM_INSTANCES", "MaxCapacity": 100}],
        "GpuServiceEnvironmentP4de": [{"CapacityUnit": "NUM_INSTANCES", "MaxCapacity": 4}],
        "GpuServiceEnvironmentP5": [{"CapacityUnit": "NUM_INSTANCES", "MaxCapacity": 8}],
    }
    order = template["Resources"]["GpuJobQueue"]["Properties"]["ServiceEnvironmentOrder"]
    assert [(o["Order"], o["ServiceEnvironment"]["Fn::GetAtt"][0]) for o in order] == [
        (1, "GpuServiceEnvironmentP4d"),
        (2, "GpuServiceEnvironmentP4de"),
        (3, "GpuServiceEnvironmentP5"),
    ]
    # Entitlements are summed over instance types: 60 against 48 instances.
    assert weights(template) == {"ProdExp1": 1.0, "ProdExp2": 1.25}


def test_quota_mode_limits_each_share_per_instance_type_it_is_entitled_to() -> None:
    template = rendered(_two_families("quota"))
    limits = template["Resources"]["GpuQuotaShareProdExp2"]["Properties"]["CapacityLimits"]
    assert limits == [
        {"CapacityUnit": P4D, "MaxCapacity": 40},
        {"CapacityUnit": "ml.p5.48xlarge", "MaxCapacity": 8},
    ]


def test_an_instance_type_not_named_like_a_sagemaker_type_is_refused() -> None:
    data = raw_config()
    data["instance_types"]["p4d"] = {"capacity": 1}
    with pytest.raises(ConfigError) as err:
        queue_template.render(SharesConfig.model_validate(data))
    assert err.value.field == "instance_types.p4d"


# ---------------------------------------------------------------------------------------------------
# Existing queues instead of new ones.
# ---------------------------------------------------------------------------------------------------
def test_every_batch_resource_in_the_template_is_guarded_by_the_create_queues_condition() -> None:
    template = json.loads(json.dumps(cfn_yaml.load(str(TEMPLATE))))
    batch = {k: r for k, r in template["Resources"].items() if r["Type"].startswith(BATCH)}
    assert batch, "template.yaml has no Batch resources"
    assert {k: r.get("Condition") for k, r in batch.items()} == dict.fromkeys(batch, queue_template.CONDITION)
    first, *arn_terms = template["Conditions"][queue_template.CONDITION]["Fn::Or"]
    assert first == {"Fn::Equals": [{"Ref": "UseExistingQueues"}, "false"]}
    assert template["Parameters"]["UseExistingQueues"]["Default"] == "false"
    # The other terms are "this ARN parameter is empty", for each ARN the Rules block requires.
    assert all(term["Fn::Equals"][1] == "" for term in arn_terms)
    required = template["Rules"]["ExistingQueuesNamed"]["Assertions"]
    assert {t["Fn::Equals"][0]["Ref"] for t in arn_terms} == {
        a["Assert"]["Fn::Not"][0]["Fn::Equals"][0]["Ref"] for a in required
    }


@pytest.mark.parametrize(
    "config", [load_config(CONFIG), quota_config()], ids=["fair-share mode", "quota mode"]
)
def test_every_rendered_batch_resource_is_conditional(config: SharesConfig) -> None:
    resources = rendered(config)["Resources"]
    assert resources and all(
        r["Type"].startswith(BATCH) and r["Condition"] == queue_template.CONDITION for r in resources.values()
    )


def _references(node: Any) -> set[str]:
    if isinstance(node, dict):
        if "Ref" in node:
            return {node["Ref"]}
        if "Fn::GetAtt" in node:
            return {node["Fn::GetAtt"][0]}
        return set().union(*map(_references, node.values()))
    if isinstance(node, list):
        return set().union(*map(_references, node))
    return set()


def test_outputs_fall_back_to_the_existing_queue_parameters() -> None:
    template = rendered(load_config(CONFIG))
    batch = set(template["Resources"])
    expected_fallback = {
        "GpuJobQueueName": "ExistingGpuQueueArn",
        "GpuJobQueueArn": "ExistingGpuQueueArn",
        "GpuSchedulingPolicyArn": "ExistingSchedulingPolicyArn",
        "CpuJobQueueName": "ExistingCpuQueueArn",
        "CpuJobQueueArn": "ExistingCpuQueueArn",
    }
    assert set(template["Outputs"]) == set(expected_fallback)
    for name, output in template["Outputs"].items():
        condition, when_new, when_existing = output["Value"]["Fn::If"]
        assert condition == queue_template.CONDITION, name
        # A Batch resource may be referenced only on the branch where it exists.
        assert not _references(when_existing) & batch, name
        assert _references(when_existing) == {expected_fallback[name]}, name


def test_a_stack_on_existing_queues_must_name_them() -> None:
    rule = rendered(load_config(CONFIG))["Rules"]["ExistingQueuesNamed"]
    assert rule["RuleCondition"] == {"Fn::Equals": [{"Ref": "UseExistingQueues"}, "true"]}
    required = {a["Assert"]["Fn::Not"][0]["Fn::Equals"][0]["Ref"] for a in rule["Assertions"]}
    assert required == {"ExistingGpuQueueArn", "ExistingSchedulingPolicyArn", "ExistingCpuQueueArn"}


# ---------------------------------------------------------------------------------------------------
# Determinism (property tests).
# ---------------------------------------------------------------------------------------------------
GPU_TYPES = ["ml.p4d.24xlarge", "ml.p4de.24xlarge", "ml.p5.48xlarge", "ml.g5.12xlarge", "ml.g6e.48xlarge"]


@st.composite
def configs(draw: st.DrawFn) -> dict[str, Any]:
    """Valid shares configs (as data) with 1-3 GPU types and 1-6 teams, in either mode."""
    types = draw(st.lists(st.sampled_from(GPU_TYPES), min_size=1, max_size=3, unique=True))
    n_teams = draw(st.integers(1, 6))
    capacity = {t: draw(st.integers(n_teams, 200)) for t in types}
    teams = {}
    for i in range(n_teams):
        entitlement = {t: draw(st.integers(0, capacity[t] // n_teams)) for t in types}
        entitlement[types[0]] = max(1, entitlement[types[0]])  # quota shares need one limit >= 1
        teams[f"Team{i}"] = {"share": f"Share{i}", "entitlement": entitlement}
    data = raw_config()
    data.update(
        mode=draw(st.sampled_from(["fairshare", "quota"])),
        instance_types={t: {"capacity": capacity[t]} for t in types},
        teams=teams,
    )
    return data


def _reordered(data: dict[str, Any], teams: list[str], types: list[str]) -> dict[str, Any]:
    out = copy.deepcopy(data)
    out["teams"] = {
        t: {
            **data["teams"][t],
            "entitlement": {k: data["teams"][t]["entitlement"][k] for k in reversed(types)},
        }
        for t in teams
    }
    out["instance_types"] = {t: data["instance_types"][t] for t in types}
    return out


@settings(max_examples=examples(60), deadline=None)
@given(data=configs(), seed=st.randoms(use_true_random=False))
def test_render_does_not_depend_on_the_order_of_teams_or_instance_types(
    data: dict[str, Any], seed: Any
) -> None:
    teams, types = list(data["teams"]), list(data["instance_types"])
    seed.shuffle(teams)
    seed.shuffle(types)
    first = queue_template.render(SharesConfig.model_validate(data))
    assert queue_template.render(SharesConfig.model_validate(_reordered(data, teams, types))) == first
    assert queue_template.render(SharesConfig.model_validate(data)) == first


@settings(max_examples=examples(60), deadline=None)
@given(data=configs(), layout=st.sampled_from(["team", "team_tier"]))
def test_weights_are_inverse_to_entitlements(data: dict[str, Any], layout: str) -> None:
    data.update(mode="fairshare", share_layout=layout)
    config = SharesConfig.model_validate(data)
    w = weights(rendered(config))
    assert set(w) == set(config.share_keys)
    totals = {name: sum(t.entitlement.values()) for name, t in config.teams.items()}
    top = max(totals.values())
    for share, key in config.share_keys.items():
        multiplier = config.tiers[key.tier].weight_multiplier if key.tier else 1.0
        total = totals[key.team]
        # weight x entitlement is the top entitlement x the tier multiplier, up to the 4-decimal rounding
        assert w[share] * total == pytest.approx(top * multiplier, abs=0.00005 * total + 1e-9)
    for a, ka in config.share_keys.items():
        for b, kb in config.share_keys.items():
            if ka.tier == kb.tier and totals[ka.team] > totals[kb.team]:
                assert w[a] <= w[b]


@settings(max_examples=examples(30), deadline=None)
@given(data=configs())
def test_applying_the_blocks_twice_changes_nothing_more(data: dict[str, Any]) -> None:
    blocks = queue_template.render(SharesConfig.model_validate(data))
    shares_json = queue_template.shares_config_json(data)
    once = queue_template.apply(TEMPLATE.read_text(), blocks, shares_json)
    assert queue_template.apply(once, blocks, shares_json) == once
    assert queue_template.read_blocks(once) == blocks


# ---------------------------------------------------------------------------------------------------
# `shareplane config render [--check]`.
# ---------------------------------------------------------------------------------------------------
@pytest.fixture
def workdir(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of template.yaml and config/shares.yaml the test may change."""
    shutil.copy(TEMPLATE, tmp_path / "template.yaml")
    shutil.copy(CONFIG, tmp_path / "shares.yaml")
    return tmp_path / "template.yaml", tmp_path / "shares.yaml"


def run_render(template: Path, config: Path, *extra: str):
    return runner.invoke(
        app, ["config", "render", "--config", str(config), "--template", str(template), *extra]
    )


def test_check_exits_1_with_a_diff_on_a_stale_template_and_0_after_rendering(
    workdir: tuple[Path, Path],
) -> None:
    template, config = workdir
    # GIVEN ProdExp2's entitlement lowered in the config but not yet rendered
    config.write_text(
        CONFIG.read_text().replace("entitlement: {ml.p4d.24xlarge: 40}", "entitlement: {ml.p4d.24xlarge: 30}")
    )
    before = template.read_text()

    stale = run_render(template, config, "--check")
    assert stale.exit_code == 1
    changed = {line.replace(" ", "") for line in stale.stdout.splitlines()}
    # (ProdExp2's share, where its MIDPRI and LOWPRI jobs go: team weight 1.5 -> 2.0)
    assert {"-WeightFactor:1.5", "+WeightFactor:2.0"} <= changed, stale.stdout
    assert template.read_text() == before, "--check must not write"

    assert run_render(template, config).exit_code == 0
    fresh = run_render(template, config, "--check")
    assert fresh.exit_code == 0, fresh.output
    # THEN the stored shares config follows the config too
    resources = json.loads(json.dumps(cfn_yaml.load(str(template))))["Resources"]
    stored = resources["SharesConfigParameter"]["Properties"]["Value"]
    assert stored == queue_template.shares_config_json(yaml.safe_load(config.read_text()))
    rendered_weights = weights(parse(queue_template.read_blocks(template.read_text())))
    assert (rendered_weights["ProdExp1"], rendered_weights["ProdExp2"]) == (1.0, 2.0)
    assert (rendered_weights["ProdExp1HIGHPRI"], rendered_weights["ProdExp2HIGHPRI"]) == (0.05, 0.1)


def switched_to_quota(text: str, *, new_queue: bool) -> str:
    """The config in quota mode, on a new GPU queue or (``new_queue=False``) on the one it has."""
    text = text.replace("mode: fairshare", "mode: quota")
    return text.replace("gpu: search-p4d-queue", "gpu: search-p4d-quota-queue") if new_queue else text


def test_render_leaves_everything_outside_the_blocks_as_it_was(workdir: tuple[Path, Path]) -> None:
    template, config = workdir
    config.write_text(switched_to_quota(CONFIG.read_text(), new_queue=True))
    before = template.read_text()
    assert run_render(template, config).exit_code == 0
    after = template.read_text()

    def outside(text: str) -> str:
        for section in queue_template.SECTIONS:
            start, end, _ = queue_template._block_span(text, section)
            text = text[:start] + text[end:]
        return queue_template._VALUE_LINE.sub("", text)

    assert outside(after) == outside(before)
    assert "AWS::Batch::QuotaShare" in after


@pytest.mark.parametrize(
    ("break_it", "message"),
    [
        (
            lambda t, c: t.write_text(t.read_text().replace("# END generated: batch queues Outputs\n", "")),
            "END generated",
        ),
        (lambda t, c: c.write_text("cluster: [not, a, name]\n"), "cluster"),
        (lambda t, c: t.unlink(), "cannot read"),
    ],
    ids=[
        "a template missing a marker exits 2 and names the marker",
        "an invalid config exits 2 and names the field",
        "a missing template exits 2",
    ],
)
def test_render_refuses_with_exit_2(workdir: tuple[Path, Path], break_it: Any, message: str) -> None:
    template, config = workdir
    break_it(template, config)
    result = run_render(template, config)
    assert result.exit_code == 2
    assert message in result.stderr


def test_marker_errors_are_input_errors_naming_the_fix() -> None:
    with pytest.raises(InvalidInputError) as err:
        queue_template.read_blocks("Resources: {}\n")
    assert "shareplane config render" in err.value.fix


@pytest.mark.parametrize("check", [False, True], ids=["render", "render --check"])
def test_a_mode_switch_on_the_queue_the_template_creates_is_refused_with_the_migration(
    workdir: tuple[Path, Path], check: bool
) -> None:
    template, config = workdir
    before = template.read_text()
    # GIVEN the config switched to quota mode while the template creates the fair-share queue
    config.write_text(switched_to_quota(CONFIG.read_text(), new_queue=False))
    result = run_render(template, config, *(["--check"] if check else []))
    # THEN render refuses, naming the field, why (a policy's type is fixed) and the migration
    assert result.exit_code == 2
    message = " ".join(result.output.split())
    assert "mode" in message and "search-p4d-queue" in message and "fixed once created" in message
    assert (
        "set queues.gpu to a new name" in message and "Switching between fair-share and quota mode" in message
    )
    assert template.read_text() == before, "a refused render writes nothing"
    # AND the way back is refused the same way once the quota queue exists
    config.write_text(switched_to_quota(CONFIG.read_text(), new_queue=True))
    assert run_render(template, config).exit_code == 0
    config.write_text(CONFIG.read_text().replace("gpu: search-p4d-queue", "gpu: search-p4d-quota-queue"))
    back = run_render(template, config)
    assert back.exit_code == 2 and "quota scheduling policy" in " ".join(back.output.split())


def test_the_deployed_queue_is_read_back_from_the_generated_block() -> None:
    assert queue_template.deployed_gpu_queue(TEMPLATE.read_text()) == (
        SchedulingMode.FAIRSHARE,
        "search-p4d-queue",
    )
