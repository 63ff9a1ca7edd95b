"""The spec model: the shape of one job, per-field rules, and the wording of shape problems.

A job's shape is checked first and all at once (types, required and unknown fields, names, URI
syntax); pydantic's errors become ``Problem`` values here. The rules that need a whole job (and the
team's config) come after, in ``rules``.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from pydantic_core import PydanticCustomError

from .results import Problem, describe, render_path

NAME_PATTERN = r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$"
#: AWS Batch names a job's training job ``AWSBatch<TrainingJobName><32-hex attempt id>`` (the sample
#: in https://docs.aws.amazon.com/batch/latest/userguide/service-job-events.html) and SageMaker allows
#: 63 characters (API_CreateTrainingJob.html), so the name a spec gives can have 63 - 8 - 32.
MAX_NAME_CHARS = 63 - len("AWSBatch") - 32
#: Batch and SageMaker take 50 tags; three are ours (team, tier, submission).
MAX_SPEC_TAGS = 47
# Keys people reach for when they want to pick a role; the role always comes from config.
_ROLE_FIELDS = frozenset({"role", "rolearn", "role_arn", "execution_role", "execution_role_arn", "iam_role"})
# Likewise for the share: it is the team's, and the team is the key's folder.
_SHARE_FIELDS = frozenset(
    {"share", "shareidentifier", "share_identifier", "quotasharename", "quota_share_name"}
)


def _custom(message: str, fix: str) -> PydanticCustomError:
    return PydanticCustomError("spec_value", "{message}", {"message": message, "fix": fix})


_S3_URI = re.compile(r"^s3://([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(/.*)?$")
_IMAGE = re.compile(
    r"^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:[0-9]{1,5})?"
    r"(/[a-z0-9]+([._-][a-z0-9]+)*)+"
    r"(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[a-f0-9]{64})?$"
)


def _s3_uri(value: str) -> str:
    match = _S3_URI.match(value)
    if not match or len(value) > 1024:
        raise _custom(
            f"{value[:80]!r} is not an S3 URI",
            "write s3://<bucket>/<prefix>/ with a lowercase bucket name",
        )
    segments = (match.group(2) or "").split("/")[1:]
    if any(segment in (".", "..") for segment in segments):
        raise _custom(f"{value[:80]!r} has a '.' or '..' path segment", "write the prefix without . or ..")
    if any(unicodedata.category(ch) in ("Cc", "Cf") for ch in value):
        raise _custom("contains control or invisible characters", "remove them from the URI")
    return value


def _image(value: str) -> str:
    if len(value) > 255 or not _IMAGE.match(value):
        raise _custom(
            f"{value[:80]!r} is not a container image reference",
            f"write <registry>/<repository>:<tag>, e.g. {EXAMPLES['image']}",
        )
    return value


def _hyperparameter(value: Any) -> str:
    # The SageMaker SDK sends strings as they are and everything else as JSON; do the same, but
    # only for scalars so a nested structure is a visible mistake rather than a JSON blob.
    if isinstance(value, str):
        text = value
    elif isinstance(value, bool | int) or (isinstance(value, float) and math.isfinite(value)):
        text = json.dumps(value)
    else:
        raise _custom(
            f"must be a string, number or true/false, got {describe(value)}",
            "write a single value; quote it to pass text",
        )
    if len(text) > 2500:
        raise _custom("is longer than 2500 characters", "shorten it or pass it through an input channel")
    return text


S3Uri = Annotated[str, AfterValidator(_s3_uri)]
ImageRef = Annotated[str, AfterValidator(_image)]
HyperValue = Annotated[Any, AfterValidator(_hyperparameter)]
ChannelName = Annotated[str, Field(pattern=r"^[A-Za-z0-9._-]{1,64}$")]
EnvName = Annotated[str, Field(pattern=r"^[a-zA-Z_][a-zA-Z0-9_]{0,511}$")]
TagKey = Annotated[str, Field(pattern=r"^[A-Za-z0-9_ .:/=+@-]{1,128}$")]
TagValue = Annotated[str, Field(pattern=r"^[A-Za-z0-9_ .:/=+@-]{0,256}$")]
Arg = Annotated[str, Field(min_length=1, max_length=256)]


class JobSpec(BaseModel):
    """One training job as a team writes it; strict types, unknown fields refused."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    name: Annotated[str, Field(max_length=MAX_NAME_CHARS, pattern=NAME_PATTERN)]
    team: Annotated[str, Field(min_length=1, max_length=128)] | None = None
    priority: Literal["HIGHPRI", "MIDPRI", "LOWPRI"] = "MIDPRI"
    instance_type: Annotated[str, Field(pattern=r"^ml\.[a-z0-9]+\.[a-z0-9]+$")]
    instance_count: Annotated[int, Field(ge=1, le=10000)] = 1
    volume_size_gb: Annotated[int, Field(ge=1, le=16384)] = 100
    image: ImageRef | None = None
    framework: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$")] | None = None
    framework_version: Annotated[str, Field(pattern=r"^[0-9][0-9A-Za-z.+-]{0,31}$")] | None = None
    entry_point: Arg | None = None
    command: Annotated[list[Arg], Field(max_length=100)] | None = None
    hyperparameters: Annotated[
        dict[Annotated[str, Field(min_length=1, max_length=256)], HyperValue], Field(max_length=100)
    ] = Field(default_factory=dict)
    inputs: Annotated[dict[ChannelName, S3Uri], Field(max_length=20)] = Field(default_factory=dict)
    output_path: S3Uri
    checkpoint_path: S3Uri | None = None
    max_runtime_seconds: Annotated[int, Field(ge=60, le=2419200)] = 86400
    spot: bool = False
    max_wait_seconds: Annotated[int, Field(ge=60, le=2419200)] | None = None
    environment: Annotated[dict[EnvName, Annotated[str, Field(max_length=512)]], Field(max_length=100)] = (
        Field(default_factory=dict)
    )
    tags: Annotated[dict[TagKey, TagValue], Field(max_length=MAX_SPEC_TAGS)] = Field(default_factory=dict)
    retry_attempts: Annotated[int, Field(ge=1, le=10)] | None = None


SPEC_FIELDS = tuple(JobSpec.model_fields)

# An example per field, for fixes that say what a good value looks like.
EXAMPLES = {
    "name": "bert-large-finetune-01",
    "team": "ProdExp1",
    "priority": "MIDPRI",
    "instance_type": "ml.p4d.24xlarge",
    "instance_count": "2",
    "volume_size_gb": "200",
    "image": "111122223333.dkr.ecr.us-east-1.amazonaws.com/prodexp1/train:1.0",
    "framework": "pytorch",
    "framework_version": '"2.6.0"',
    "entry_point": "torchrun",
    "command": '["--nproc_per_node", "8", "train.py"]',
    "hyperparameters": "{epochs: 3, lr: 0.0001}",
    "inputs": "{train: s3://bucket/team/data/train/}",
    "output_path": "s3://bucket/team/output/",
    "checkpoint_path": "s3://bucket/team/checkpoints/run-01/",
    "max_runtime_seconds": "86400",
    "spot": "true",
    "max_wait_seconds": "172800",
    "environment": '{NCCL_DEBUG: "INFO"}',
    "tags": '{project: "ranking"}',
    "retry_attempts": "2",
}
_PATTERN_RULES = {
    "name": (
        f"must be 1-{MAX_NAME_CHARS} letters, digits or hyphens, starting and ending with a letter or "
        "digit (AWS Batch adds 40 characters to make the 63-character SageMaker training job name)"
    ),
    "instance_type": "must be a SageMaker instance type such as ml.p4d.24xlarge",
    "framework": "must be a lowercase framework name such as pytorch",
    "framework_version": "must be a version such as 2.6.0",
    "inputs": "channel names must be 1-64 letters, digits, '.', '_' or '-'",
    "environment": "variable names must be letters, digits and '_', not starting with a digit",
    "tags": "tags may hold letters, digits, spaces and _ . : / = + - @ (keys 1-128, values up to 256)",
}


def shape_problem(prefix: str, error: Mapping[str, Any]) -> Problem:
    """One pydantic validation error of a job under ``prefix``, as a problem with its fix."""
    loc = tuple(error["loc"])
    top = str(loc[0]) if loc else ""
    kind = error["type"]
    ctx = error.get("ctx") or {}
    value = error.get("input")
    example = EXAMPLES.get(top, "")
    path = render_path(prefix, loc)
    is_key = "[key]" in loc
    if kind == "extra_forbidden":
        if top.lower() in _ROLE_FIELDS:
            return Problem(
                path,
                "a spec may not choose an IAM role; the team's execution role comes from the shares config",
                f"remove {top}",
            )
        if top.lower() in _SHARE_FIELDS:
            return Problem(
                path,
                "a spec may not choose a share; jobs run on the share of the team they are submitted as",
                f"remove {top}; to use another team's share, that team submits under submit/<team>/",
            )
        # Only a misspelt field needs difflib, so a spec without one does not pay for its import.
        import difflib

        close = difflib.get_close_matches(top, SPEC_FIELDS, n=1)
        hint = f"did you mean {close[0]}?" if close else f"known fields: {', '.join(SPEC_FIELDS)}"
        return Problem(path, f"{top} is not a spec field", f"remove it or fix the spelling; {hint}")
    if kind == "missing":
        return Problem(path, f"{top} is required", f"add {top}: {example}")
    if kind == "spec_value":
        return Problem(path, ctx["message"], ctx["fix"])
    if kind == "string_pattern_mismatch":
        rule = _PATTERN_RULES.get(top, f"does not match {ctx.get('pattern')}")
        if is_key:
            return Problem(path, f"{str(value)[:80]!r}: {rule}", "rename the key")
        return Problem(
            path, f"{str(value)[:80]!r}: {rule}", f"use a value like {example}" if example else "fix it"
        )
    if kind == "literal_error":
        return Problem(path, f"must be one of {ctx.get('expected')}, got {describe(value)}", f"use {example}")
    what = "key" if is_key else top
    messages = {
        "string_type": (f"must be text, got {describe(value)}", f'quote the value, e.g. {what}: "{value}"'),
        "int_type": (
            f"must be a whole number, got {describe(value)}",
            f"write a number without quotes, e.g. {example}",
        ),
        "bool_type": (f"must be true or false, got {describe(value)}", "write true or false without quotes"),
        "dict_type": (
            f"must be a mapping of name: value, got {describe(value)}",
            f"write it like {example}",
        ),
        "list_type": (f"must be a list, got {describe(value)}", f"write it like {example}"),
        "greater_than_equal": (
            f"must be at least {ctx.get('ge')}, got {value!r}",
            f"use a value >= {ctx.get('ge')}",
        ),
        "less_than_equal": (
            f"must be at most {ctx.get('le')}, got {value!r}",
            f"use a value <= {ctx.get('le')}",
        ),
        "string_too_short": (
            "must not be empty",
            f"write a value like {example}" if example else "write a value",
        ),
        "string_too_long": (
            f"is longer than {ctx.get('max_length')} characters",
            f"shorten it to {ctx.get('max_length')} characters",
        ),
        "too_long": (
            f"has more than {ctx.get('max_length')} entries",
            f"keep at most {ctx.get('max_length')}",
        ),
    }
    message, fix = messages.get(kind, (str(error.get("msg", "is invalid")), "correct the value"))
    if is_key:
        message = f"key {str(value)[:80]!r} {message}"
    return Problem(path, message, fix)
