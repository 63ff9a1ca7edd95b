"""template.yaml deploys on an account with Lambda's default concurrency quota: reserving is opt-in."""

from __future__ import annotations

import pytest
from shareplane_cli.local.intrinsics import NO_VALUE, Intrinsics

from tests.template import raw_template, resources

#: Lambda keeps 100 concurrent executions of the account unreserved
#: (https://docs.aws.amazon.com/lambda/latest/dg/configuration-concurrency.html).
UNRESERVED_FLOOR = 100


def reserved(parameters: dict[str, str]) -> dict[str, object]:
    """Function logical id -> its ReservedConcurrentExecutions on a stack given ``parameters``."""
    template = raw_template()
    resolver = Intrinsics(template, parameters=parameters, pseudo={"AWS::Region": "us-east-1"})
    functions = resources(template, "AWS::Serverless::Function")
    return {
        name: resolver.resolve(function["Properties"].get("ReservedConcurrentExecutions", NO_VALUE))
        for name, function in functions.items()
    }


@pytest.mark.parametrize("stage", ["dev", "prod"], ids=lambda s: f"{s}: no function reserves by default")
def test_by_default_no_function_reserves_concurrency(stage: str) -> None:
    assert set(reserved({"Stage": stage}).values()) == {NO_VALUE}


@pytest.mark.parametrize(
    ("stage", "total"),
    [("dev", 25), ("prod", 40)],
    ids=["dev: ReservedConcurrency=true reserves 25", "prod: ReservedConcurrency=true reserves 40"],
)
def test_reserving_is_a_parameter_and_its_description_names_the_quota_it_needs(
    stage: str, total: int
) -> None:
    values = reserved({"Stage": stage, "ReservedConcurrency": "true"})
    assert all(isinstance(v, int) and v > 0 for v in values.values()) and sum(values.values()) == total
    description = raw_template()["Parameters"]["ReservedConcurrency"]["Description"]
    assert str(total + UNRESERVED_FLOOR) in description
