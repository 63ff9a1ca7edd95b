"""The functions' execution roles as a local stack deployed them: policy statements with every name resolved.

moto's CloudFormation creates the roles but enforces nothing, and the Batch resources they name live
in the emulator, so the statements are resolved here, from the template's roles, with the stack's
physical names (moto's resources) and the emulator's ARNs (Batch's).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .aws_calls import RolePolicy
from .emulator import Intrinsics

if TYPE_CHECKING:
    from .stack import LocalStack
    from .template import FunctionSpec

#: Fn::GetAtt <logical>.Arn of the moto resources the roles name, from the physical id.
_ARN_FORMATS = {
    "AWS::DynamoDB::Table": "arn:aws:dynamodb:{region}:{account}:table/{id}",
    "AWS::S3::Bucket": "arn:aws:s3:::{id}",
    "AWS::KMS::Key": "arn:aws:kms:{region}:{account}:key/{id}",
    "AWS::Logs::LogGroup": "arn:aws:logs:{region}:{account}:log-group:{id}:*",
    "AWS::IAM::Role": "arn:aws:iam::{account}:role/{id}",
    "AWS::Events::Rule": "arn:aws:events:{region}:{account}:rule/{id}",
}


def _resolver(stack: LocalStack) -> Intrinsics:
    from .stack import ACCOUNT, REGION

    assert stack.translated is not None, "start() first"
    resources = {**stack.translated.cloudformation["Resources"], **stack.translated.held_back}

    parameters = stack.translated.cloudformation.get("Parameters", {})

    def moto_names(node: dict[str, Any]) -> Any:
        if parameters.get(node.get("Ref"), {}).get("Type") == "CommaDelimitedList":
            return [item.strip() for item in str(stack.resolve(node)).split(",")]
        if "Fn::GetAtt" in node:
            logical, attribute = node["Fn::GetAtt"]
            physical = stack.physical_ids.get(logical, logical)
            kind = resources.get(logical, {}).get("Type", "")
            if attribute == "Arn" and kind == "AWS::SQS::Queue":
                return f"arn:aws:sqs:{REGION}:{ACCOUNT}:{physical.rsplit('/', 1)[-1]}"
            if attribute == "Arn" and kind in _ARN_FORMATS:
                return _ARN_FORMATS[kind].format(region=REGION, account=ACCOUNT, id=physical)
        return stack.resolve(node)

    created = stack.emulated.created if stack.emulated is not None else {}
    return Intrinsics(moto_names, stack.translated.cloudformation.get("Conditions", {}), created)


def function_role(stack: LocalStack, function: FunctionSpec) -> RolePolicy | None:
    """The function's role with its inline statements resolved (None: the template gives it no role)."""
    assert stack.translated is not None, "start() first"
    role = function.role
    if not (isinstance(role, dict) and "Fn::GetAtt" in role):
        return None
    logical = role["Fn::GetAtt"][0]
    properties = stack.translated.roles[logical].get("Properties", {})
    resolver = _resolver(stack)
    statements = [
        statement
        for policy in properties.get("Policies", [])
        for statement in _as_list(resolver.resolve(policy["PolicyDocument"]).get("Statement", []))
    ]
    managed = tuple(str(resolver.resolve(a)) for a in properties.get("ManagedPolicyArns", []))
    return RolePolicy(logical, tuple(statements), managed)


def log_group_name(stack: LocalStack, function: FunctionSpec) -> str | None:
    """The function's log group name (LoggingConfig.LogGroup), resolved."""
    return str(_resolver(stack).resolve(function.log_group)) if function.log_group is not None else None


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]
