"""template.yaml as written, and the lookups tests make in it (resources of a type, what a !Ref names)."""

from __future__ import annotations

import copy
import json
from functools import cache
from typing import Any

from cfnlint.decode import cfn_yaml

from tests.conftest import REPO

TEMPLATE = REPO / "template.yaml"


@cache
def _raw_template() -> dict[str, Any]:
    # cfn-lint's decoder understands !Ref/!Sub/!GetAtt; the JSON round trip leaves plain dicts.
    return json.loads(json.dumps(cfn_yaml.load(str(TEMPLATE))))


def raw_template() -> dict[str, Any]:
    """template.yaml as written (a copy the test may change)."""
    return copy.deepcopy(_raw_template())


def resources(template: dict[str, Any], type_: str) -> dict[str, dict[str, Any]]:
    """Logical id -> resource, for one resource type."""
    return {k: r for k, r in template["Resources"].items() if r["Type"] == type_}


def ref_target(value: Any) -> str | None:
    """The logical id a !Ref / !GetAtt points at, or None."""
    if isinstance(value, dict) and "Ref" in value:
        return value["Ref"]
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        target = value["Fn::GetAtt"]
        return target[0] if isinstance(target, list) else target.split(".")[0]
    return None


def function_ids() -> set[str]:
    """The logical ids of template.yaml's functions (every one the local stack runs)."""
    return set(resources(raw_template(), "AWS::Serverless::Function"))
