"""The functions' execution roles as a local stack deployed them: policy statements with every name resolved.

moto's CloudFormation creates the roles but enforces nothing, and the Batch resources they name live
in the emulator, so the statements are resolved here, from the template's roles, with the stack's
resolver (moto's resources by their physical names, Batch's by the ARNs the emulator returned).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .aws_calls import RolePolicy

if TYPE_CHECKING:
    from .intrinsics import Intrinsics
    from .stack import LocalStack
    from .template import FunctionSpec


def _resolver(stack: LocalStack) -> Intrinsics:
    assert stack.intrinsics is not None, "start() first"
    return stack.intrinsics


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
