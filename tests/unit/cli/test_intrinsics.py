"""The local stack's one CloudFormation resolver: Conditions from parameter values, both Fn::If branches."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from shareplane_cli.local.intrinsics import NO_VALUE, Intrinsics, TemplateResourceError

TEMPLATE: dict[str, Any] = {
    "Parameters": {
        "Stage": {"Type": "String", "Default": "dev"},
        "Trail": {"Type": "String", "Default": "true"},
        "AlertEmail": {"Type": "String", "Default": ""},
        "Subnets": {"Type": "CommaDelimitedList", "Default": "a, b,c"},
    },
    "Conditions": {
        "IsProd": {"Fn::Equals": [{"Ref": "Stage"}, "prod"]},
        "TrailOn": {"Fn::Equals": [{"Ref": "Trail"}, "true"]},
        "HasEmail": {"Fn::Not": [{"Fn::Equals": [{"Ref": "AlertEmail"}, ""]}]},
        "ProdWithTrail": {"Fn::And": [{"Condition": "IsProd"}, {"Condition": "TrailOn"}]},
        "ProdOrEmail": {"Fn::Or": [{"Condition": "IsProd"}, {"Condition": "HasEmail"}]},
    },
    "Mappings": {"StageSettings": {"dev": {"LogLevel": "DEBUG"}, "prod": {"LogLevel": "INFO"}}},
    "Resources": {
        "Bucket": {"Type": "AWS::S3::Bucket"},
        "AuditTrail": {"Type": "AWS::CloudTrail::Trail", "Condition": "ProdWithTrail"},
    },
}
PSEUDO = {"AWS::Region": "us-east-1", "AWS::AccountId": "123456789012", "AWS::StackName": "s"}


def resolver(**parameters: str) -> Intrinsics:
    return Intrinsics(
        TEMPLATE,
        parameters=parameters,
        pseudo=PSEUDO,
        physical_ids={"Bucket": "s-bucket-1"},
        attributes={("Bucket", "Arn"): "arn:aws:s3:::s-bucket-1"},
    )


def test_conditions_come_from_the_parameters_defaults() -> None:
    intrinsics = resolver()
    assert {name: intrinsics.condition(name) for name in TEMPLATE["Conditions"]} == {
        "IsProd": False,
        "TrailOn": True,
        "HasEmail": False,
        "ProdWithTrail": False,
        "ProdOrEmail": False,
    }


def test_conditions_follow_the_values_the_stack_was_given() -> None:
    intrinsics = resolver(Stage="prod", AlertEmail="ops@example.com", Trail="false")
    assert {name: intrinsics.condition(name) for name in TEMPLATE["Conditions"]} == {
        "IsProd": True,
        "TrailOn": False,
        "HasEmail": True,
        "ProdWithTrail": False,
        "ProdOrEmail": True,
    }
    assert resolver(Stage="prod").condition("ProdWithTrail") is True


@pytest.mark.parametrize(("stage", "expected"), [("prod", "Retain"), ("dev", "Delete")])
def test_fn_if_takes_the_branch_its_condition_picks(stage: str, expected: str) -> None:
    assert resolver(Stage=stage).resolve({"Fn::If": ["IsProd", "Retain", "Delete"]}) == expected


@given(stage=st.sampled_from(["prod", "dev", "test"]), email=st.sampled_from(["", "a@b.c"]))
def test_fn_if_agrees_with_its_condition_whatever_the_parameters(stage: str, email: str) -> None:
    intrinsics = resolver(Stage=stage, AlertEmail=email)
    for name in TEMPLATE["Conditions"]:
        chosen = intrinsics.resolve({"Fn::If": [name, {"Ref": "Stage"}, {"Ref": "AlertEmail"}]})
        assert chosen == (stage if intrinsics.condition(name) else email)


def test_aws_novalue_removes_the_property_or_list_item_it_stands_for() -> None:
    intrinsics = resolver()
    properties = {
        "Name": "x",
        "Policy": {"Fn::If": ["IsProd", "keep", {"Ref": "AWS::NoValue"}]},
        "Items": ["a", {"Fn::If": ["IsProd", "b", {"Ref": "AWS::NoValue"}]}, "c"],
    }
    assert intrinsics.resolve(properties) == {"Name": "x", "Items": ["a", "c"]}
    assert intrinsics.resolve({"Ref": "AWS::NoValue"}) is NO_VALUE
    assert resolver(Stage="prod").resolve(properties) == {
        "Name": "x",
        "Policy": "keep",
        "Items": ["a", "b", "c"],
    }


def test_ref_getatt_sub_join_select_split_and_findinmap() -> None:
    intrinsics = resolver(Stage="prod")
    assert intrinsics.resolve({"Ref": "Bucket"}) == "s-bucket-1"
    assert intrinsics.resolve({"Fn::GetAtt": ["Bucket", "Arn"]}) == "arn:aws:s3:::s-bucket-1"
    assert intrinsics.resolve({"Fn::GetAtt": "Bucket.Arn"}) == "arn:aws:s3:::s-bucket-1"
    sub = {"Fn::Sub": "${Bucket.Arn}/${AWS::StackName}/${Stage}/${!Literal}/${Extra}"}
    sub_with_variables = {"Fn::Sub": [sub["Fn::Sub"], {"Extra": {"Ref": "AWS::Region"}}]}
    assert intrinsics.resolve(sub_with_variables) == "arn:aws:s3:::s-bucket-1/s/prod/${Literal}/us-east-1"
    assert intrinsics.resolve({"Fn::Join": [",", [{"Ref": "Stage"}, "x"]]}) == "prod,x"
    assert intrinsics.resolve({"Fn::Select": [1, {"Fn::Split": ["/", "job-queue/gpu"]}]}) == "gpu"
    assert intrinsics.resolve({"Fn::FindInMap": ["StageSettings", {"Ref": "Stage"}, "LogLevel"]}) == "INFO"
    assert intrinsics.resolve({"Ref": "Subnets"}) == ["a", "b", "c"], "a CommaDelimitedList is a list"


def test_more_resources_join_without_changing_the_rest() -> None:
    before = resolver()
    after = before.with_resources({"Queue": "arn:q"}, {("Queue", "JobQueueArn"): "arn:q"})
    assert (
        after.resolve({"Ref": "Queue"}) == after.resolve({"Fn::GetAtt": ["Queue", "JobQueueArn"]}) == "arn:q"
    )
    assert after.resolve({"Ref": "Bucket"}) == "s-bucket-1"
    with pytest.raises(TemplateResourceError):
        before.resolve({"Ref": "Queue"})


@pytest.mark.parametrize(
    ("node", "field", "needle"),
    [
        ({"Ref": "Nope"}, "Ref Nope", "is not a parameter, pseudo parameter or created resource"),
        ({"Ref": "AuditTrail"}, "Ref AuditTrail", "condition ProdWithTrail is false"),
        ({"Fn::GetAtt": ["Bucket", "DomainName"]}, "Bucket.DomainName", "is not an attribute"),
        ({"Fn::If": ["Missing", 1, 2]}, "Conditions.Missing", "is not defined"),
        (
            {"Fn::FindInMap": ["StageSettings", "qa", "LogLevel"]},
            "Mappings.StageSettings.qa.LogLevel",
            "not defined",
        ),
        ({"Fn::Base64": "x"}, "Fn::Base64", "is not an intrinsic the local stack resolves"),
    ],
    ids=[
        "an unknown name",
        "a resource whose condition is false",
        "an attribute nobody reported",
        "an undefined condition",
        "a missing mapping entry",
        "an intrinsic not resolved locally",
    ],
)
def test_what_cannot_be_resolved_is_named_with_the_fix(node: Any, field: str, needle: str) -> None:
    with pytest.raises(TemplateResourceError) as info:
        resolver().resolve(node)
    assert info.value.field == field
    assert needle in info.value.problem
    assert info.value.fix
