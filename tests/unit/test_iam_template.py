"""The roles' IAM inputs in template.yaml agree with the shares config they serve."""

from __future__ import annotations

import yaml
from shareplane.domain.config import SharesConfig
from shareplane_cli.local.template import load_sam_template

from tests.conftest import REPO


def test_the_roles_the_control_plane_may_pass_are_the_teams_execution_roles() -> None:
    # SubmitServiceJob passes each payload's RoleArn to SageMaker (iam:PassRole): a team whose role
    # is missing from TrainingRoleArns would get AccessDenied on every submit and requeue.
    template = load_sam_template(REPO / "template.yaml")
    config = SharesConfig.model_validate(yaml.safe_load((REPO / "config" / "shares.yaml").read_text()))
    default = template["Parameters"]["TrainingRoleArns"]["Default"].split(",")
    assert sorted(default) == sorted(
        team.execution_role_arn for team in config.teams.values() if team.execution_role_arn
    )


def test_every_pass_role_statement_names_the_service_it_passes_to() -> None:
    template = load_sam_template(REPO / "template.yaml")
    passes = [
        (name, statement)
        for name, resource in template["Resources"].items()
        if resource["Type"] == "AWS::IAM::Role"
        for policy in resource["Properties"].get("Policies", [])
        for statement in policy["PolicyDocument"]["Statement"]
        if "iam:PassRole"
        in (statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]])
    ]
    assert passes
    for name, statement in passes:
        assert statement["Resource"] != "*", name
        assert statement["Condition"]["StringEquals"]["iam:PassedToService"], name
