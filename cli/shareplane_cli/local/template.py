"""Read template.yaml the way CloudFormation would see it after the SAM transform, offline."""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Placeholder bucket for local code paths: the translator insists on S3 URIs, nothing is uploaded.
LOCAL_CODE_BUCKET = "shareplane-local-code"
#: Resource types moto cannot run here: Lambda needs Docker (the runner invokes handlers in-process
#: instead) and moto has no Batch service environments, service-job queues or quota shares (the
#: emulator serves those).
NOT_IN_MOTO = (
    "AWS::Lambda::Function",
    "AWS::Lambda::LayerVersion",
    "AWS::Lambda::EventSourceMapping",
    "AWS::Lambda::Permission",
    "AWS::Batch::",
    "AWS::Scheduler::",
    # moto's CloudFormation has no QueuePolicy; its EventBridge delivers to SQS without one.
    "AWS::SQS::QueuePolicy",
)


@dataclass(frozen=True)
class FunctionSpec:
    """One Lambda function as the local runner needs it."""

    logical_id: str
    code_dir: Path
    handler: str
    environment: Mapping[str, Any]
    queue_logical_id: str | None
    batch_size: int = 10
    #: The Role and LoggingConfig.LogGroup properties as the template writes them (intrinsics unresolved).
    role: Any = None
    log_group: Any = None


@dataclass
class TranslatedTemplate:
    """The CloudFormation template to create in moto, and what was held back from it."""

    cloudformation: dict[str, Any]
    functions: list[FunctionSpec] = field(default_factory=list)
    held_back: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: The IAM roles before references to held-back resources were replaced (their real policies).
    roles: dict[str, dict[str, Any]] = field(default_factory=dict)


class _NoManagedPolicies:
    """The translator looks up AWS managed policy ARNs by name; offline we have none to resolve."""

    def load(self) -> dict[str, str]:
        return {}


def load_sam_template(path: Path) -> dict[str, Any]:
    """template.yaml decoded with its intrinsic functions as plain dicts."""
    from cfnlint.decode import decode  # type: ignore[import-untyped]  # cfn-lint ships no type hints

    parsed, errors = decode(str(path))
    if errors:
        raise ValueError(f"{path}: {errors[0]}")
    template: dict[str, Any] = json.loads(json.dumps(parsed))
    return template


def translate(path: Path, parameters: Mapping[str, str] | None = None) -> TranslatedTemplate:
    """SAM -> CloudFormation with aws-sam-translator, then split what moto can create from the rest."""
    from samtranslator.translator.transform import transform  # type: ignore[import-untyped]  # no hints

    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    sam = load_sam_template(path)
    code_dirs: dict[str, Path] = {}
    for logical_id, resource in sam.get("Resources", {}).items():
        props = resource.get("Properties", {})
        for key in ("CodeUri", "ContentUri"):
            if isinstance(props.get(key), str) and not props[key].startswith("s3://"):
                code_dirs[logical_id] = (path.parent / props[key]).resolve()
                props[key] = f"s3://{LOCAL_CODE_BUCKET}/{props[key].strip('/')}"
    cfn = transform(sam, dict(parameters or {}), _NoManagedPolicies())

    resources = cfn["Resources"]
    roles = {k: copy.deepcopy(v) for k, v in resources.items() if v["Type"] == "AWS::IAM::Role"}
    held_back = {k: v for k, v in resources.items() if v["Type"].startswith(NOT_IN_MOTO)}
    cfn["Resources"] = {k: v for k, v in resources.items() if k not in held_back}
    cfn["Resources"] = _replace_refs(cfn["Resources"], set(held_back))
    cfn["Outputs"] = {k: v for k, v in cfn.get("Outputs", {}).items() if not _mentions(v, set(held_back))}
    functions = [
        _function_spec(logical_id, resource, code_dirs, held_back)
        for logical_id, resource in held_back.items()
        if resource["Type"] == "AWS::Lambda::Function"
    ]
    return TranslatedTemplate(cloudformation=cfn, functions=functions, held_back=held_back, roles=roles)


def _function_spec(
    logical_id: str, resource: dict[str, Any], code_dirs: Mapping[str, Path], held_back: Mapping[str, Any]
) -> FunctionSpec:
    props = resource["Properties"]
    key = props["Code"]["S3Key"]
    code_dir = next((d for d in code_dirs.values() if str(d).endswith(key.rstrip("/"))), None)
    if code_dir is None:
        raise ValueError(f"{logical_id}: cannot find the local code for {key}")
    queue = None
    batch_size = 10
    for mapping in held_back.values():
        mprops = mapping.get("Properties", {})
        if mapping["Type"] == "AWS::Lambda::EventSourceMapping" and mprops.get("FunctionName") == {
            "Ref": logical_id
        }:
            source = mprops.get("EventSourceArn")
            if isinstance(source, dict) and "Fn::GetAtt" in source:
                queue = source["Fn::GetAtt"][0]
            batch_size = int(mprops.get("BatchSize", 10))
    return FunctionSpec(
        logical_id=logical_id,
        code_dir=code_dir,
        handler=props["Handler"],
        environment=copy.deepcopy(props.get("Environment", {}).get("Variables", {})),
        queue_logical_id=queue,
        batch_size=batch_size,
        role=props.get("Role"),
        log_group=(props.get("LoggingConfig") or {}).get("LogGroup"),
    )


def _mentions(node: Any, names: set[str]) -> bool:
    text = json.dumps(node)
    return any(f'"Ref": "{n}"' in text or f'["{n}",' in text or "${" + n in text for n in names)


def _replace_refs(node: Any, held_back: set[str]) -> Any:
    """Point references to held-back resources at stable local names, so the rest still creates."""
    if isinstance(node, dict):
        if set(node) == {"Ref"} and node["Ref"] in held_back:
            return f"local-{node['Ref']}"
        if set(node) == {"Fn::GetAtt"} and node["Fn::GetAtt"][0] in held_back:
            return f"arn:aws:lambda:us-east-1:123456789012:function:local-{node['Fn::GetAtt'][0]}"
        if set(node) == {"Fn::Sub"} and isinstance(node["Fn::Sub"], str):
            text = node["Fn::Sub"]
            for name in held_back:
                text = text.replace("${" + name + "}", f"local-{name}")
            return {"Fn::Sub": text}
        return {k: _replace_refs(v, held_back) for k, v in node.items()}
    if isinstance(node, list):
        return [_replace_refs(v, held_back) for v in node]
    return node
