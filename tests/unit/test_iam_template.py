"""The roles' IAM inputs in template.yaml agree with the shares config they serve."""

from __future__ import annotations

from typing import Any

import yaml
from shareplane.domain.config.shares import SharesConfig
from shareplane_cli.local.aws_calls import Location, authorizations
from shareplane_cli.local.intrinsics import Intrinsics
from shareplane_cli.local.template import load_sam_template

from tests.conftest import REPO
from tests.iam_policy import evaluate


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


def test_every_role_that_reads_training_jobs_may_read_them_in_either_casing() -> None:
    # SageMaker returns some training-job ARNs lower-cased while Batch names them AWSBatch...; IAM
    # matching is case-sensitive, so a grant on one casing alone refuses the other's DescribeTrainingJob.
    template = load_sam_template(REPO / "template.yaml")
    resolver = Intrinsics(
        template,
        pseudo={"AWS::Partition": "aws", "AWS::Region": "us-east-1", "AWS::AccountId": "123456789012"},
    )
    readers = {
        name: [
            resolver.resolve(statement)
            for policy in resource["Properties"].get("Policies", [])
            for statement in policy["PolicyDocument"]["Statement"]
            if "sagemaker:DescribeTrainingJob" in str(statement["Action"])
        ]
        for name, resource in template["Resources"].items()
        if resource["Type"] == "AWS::IAM::Role"
    }
    readers = {name: statements for name, statements in readers.items() if statements}
    here = Location("us-east-1", "123456789012")
    assert readers
    for name in readers:
        for training_job in ("AWSBatchbert-ft0123abcd", "awsbatchbert-ft0123abcd"):
            (request,) = authorizations(
                here, "sagemaker", "DescribeTrainingJob", {"TrainingJobName": training_job}, {}
            )
            assert evaluate(request, readers[name]).allowed, (name, training_job)


def test_every_function_may_read_its_stacks_shares_config_and_no_other_parameter() -> None:
    # GIVEN the function roles resolved for a stack whose config parameter is /shareplane-local/shares-config
    template = load_sam_template(REPO / "template.yaml")
    name = "/shareplane-local/shares-config"
    resolver = Intrinsics(
        template,
        pseudo={"AWS::Partition": "aws", "AWS::Region": "us-east-1", "AWS::AccountId": "123456789012"},
        physical_ids={"SharesConfigParameter": name},
    )
    roles = {
        function["Properties"]["Role"]["Fn::GetAtt"][0]
        for function in template["Resources"].values()
        if function["Type"] == "AWS::Serverless::Function"
    }
    here = Location("us-east-1", "123456789012")
    # WHEN each asks for the parameter as bootstrap does (GetParameter by name), and for another one
    (own,) = authorizations(here, "ssm", "GetParameter", {"Name": name}, {})
    (other,) = authorizations(here, "ssm", "GetParameter", {"Name": "/other-stack/shares-config"}, {})
    # THEN its own is allowed and the other refused, for every function's role
    assert len(roles) == 8
    for role in roles:
        statements = [
            resolver.resolve(statement)
            for policy in template["Resources"][role]["Properties"]["Policies"]
            for statement in policy["PolicyDocument"]["Statement"]
            if any(a == "*" or a.startswith("ssm:") for a in _actions(statement))
        ]
        assert evaluate(own, statements).allowed, role
        assert not evaluate(other, statements).allowed, role


def _actions(statement: dict[str, Any]) -> list[str]:
    action = statement["Action"]
    return [action] if isinstance(action, str) else list(action)
