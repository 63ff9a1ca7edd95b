"""Job specs dropped in S3: parse, validate, authorize, admit, and map to SubmitServiceJob requests.

A spec file lives at ``submit/<team>/<file>`` (``.yaml``, ``.yml`` or ``.json``) and holds one job
(a mapping) or a list of jobs. Everything here is a pure function of the bytes, the key and the
shares config: the result lists, per job, either the SubmitServiceJob request or its problems, plus
problems that concern the whole file. Nothing raises on bad input; every problem names the path
(``jobs[1].instance_count``), what is wrong and how to fix it. Paths always use ``jobs[i]``, also
for a file that holds a single job.

A job is checked in two passes: its shape first (types, required and unknown fields, names, URI
syntax; every shape problem at once), then, once the shape is right, the rules that need a whole
job (authorization against the team's config, admission against the cluster, cross-field rules).

The YAML dialect is deliberately small: no tags (``!!python/...`` or any other), no anchors or
aliases (alias bombs), no merge keys, no duplicate keys, string keys only.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import math
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import PydanticCustomError
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

from .config import SchedulingMode, SharesConfig, TeamConfig, Tier
from .drop_access import SUBMIT_PREFIX
from .errors import InvalidInputError
from .tags import SUBMISSION_TAG, TEAM_TAG, TIER_TAG

MAX_SPEC_BYTES = 256 * 1024
MAX_JOBS_PER_FILE = 100
MAX_KEY_BYTES = 1024
SPEC_SUFFIXES = (".yaml", ".yml", ".json")
NAME_PATTERN = r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$"
#: AWS Batch names a job's training job ``AWSBatch<TrainingJobName><32-hex attempt id>`` (the sample
#: in https://docs.aws.amazon.com/batch/latest/userguide/service-job-events.html) and SageMaker allows
#: 63 characters (API_CreateTrainingJob.html), so the name a spec gives can have 63 - 8 - 32.
MAX_NAME_CHARS = 63 - len("AWSBatch") - 32
TEAM_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$"
CHECKPOINT_LOCAL_PATH = "/opt/ml/checkpoints"
SERVICE_JOB_TYPE = "SAGEMAKER_TRAINING"
TRAINING_INPUT_MODE = "File"
# SageMaker's internal errors are worth one more try. onStatusReason globs may only END with "*"
# (the start must match exactly), and the SDK writes no space after the colon where the docs write
# one, so both prefixes are listed.
EVALUATE_ON_EXIT = (
    {"action": "RETRY", "onStatusReason": "Received status from SageMaker: InternalServerError*"},
    {"action": "RETRY", "onStatusReason": "Received status from SageMaker:InternalServerError*"},
    {"action": "EXIT", "onStatusReason": "*"},
)
RESERVED_TAG_PREFIXES = ("aws:", "shareplane:")
#: Batch and SageMaker take 50 tags; three are ours (team, tier, submission).
MAX_SPEC_TAGS = 47
# Keys people reach for when they want to pick a role; the role always comes from config.
_ROLE_FIELDS = frozenset({"role", "rolearn", "role_arn", "execution_role", "execution_role_arn", "iam_role"})
# Likewise for the share: it is the team's, and the team is the key's folder.
_SHARE_FIELDS = frozenset(
    {"share", "shareidentifier", "share_identifier", "quotasharename", "quota_share_name"}
)
_TOKEN_DOMAIN = "shareplane-submit-v1"


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a spec: where, what, and how to fix it."""

    path: str
    message: str
    fix: str

    def as_dict(self) -> dict[str, str]:
        """The problem as a JSON-ready mapping."""
        return {"path": self.path, "message": self.message, "fix": self.fix}


@dataclass(frozen=True)
class JobResult:
    """The outcome for one job of a file: a SubmitServiceJob request, or the problems that stop it."""

    index: int
    name: str | None
    problems: tuple[Problem, ...] = ()
    #: keyword arguments for ``batch.submit_service_job``; None when the job is rejected
    request: Mapping[str, Any] | None = None
    #: sha256 hex of ``serviceRequestPayload`` (the canonical CreateTrainingJob JSON), for receipts
    payload_digest: str | None = None

    @property
    def ok(self) -> bool:
        """True when the job maps to a request."""
        return self.request is not None and not self.problems

    def as_dict(self) -> dict[str, Any]:
        """The result as a JSON-ready mapping."""
        out: dict[str, Any] = {
            "index": self.index,
            "name": self.name,
            "valid": self.ok,
            "errors": [p.as_dict() for p in self.problems],
        }
        if self.request is not None:
            out["request"] = dict(self.request)
            out["payload_digest"] = self.payload_digest
        return out


@dataclass(frozen=True)
class SpecResult:
    """The outcome for one spec file: file-level problems, or one result per job."""

    key: str
    team: str | None
    problems: tuple[Problem, ...] = ()
    jobs: tuple[JobResult, ...] = field(default=())

    @property
    def ok(self) -> bool:
        """True when the file is readable and every job in it maps to a request."""
        return not self.problems and bool(self.jobs) and all(job.ok for job in self.jobs)

    @property
    def requests(self) -> tuple[Mapping[str, Any], ...]:
        """The requests of the accepted jobs, in file order."""
        return tuple(job.request for job in self.jobs if job.request is not None)

    def as_dict(self) -> dict[str, Any]:
        """The result as a JSON-ready mapping."""
        return {
            "key": self.key,
            "team": self.team,
            "valid": self.ok,
            "problems": [p.as_dict() for p in self.problems],
            "jobs": [job.as_dict() for job in self.jobs],
        }


# --------------------------------------------------------------------------------------------------
# The spec model: shapes and per-field rules. Cross-field rules and authorization come after it.


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
            f"write <registry>/<repository>:<tag>, e.g. {_EXAMPLES['image']}",
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
            f"must be a string, number or true/false, got {_describe(value)}",
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
_EXAMPLES = {
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


def _describe(value: Any) -> str:
    kind = {
        bool: "true/false",
        int: "a number",
        float: "a number",
        str: "text",
        list: "a list",
        dict: "a mapping",
        type(None): "null",
    }.get(type(value), type(value).__name__)
    shown = repr(value)
    return (
        f"{kind} ({shown[:40]}{'...' if len(shown) > 40 else ''})"
        if kind not in ("a list", "a mapping")
        else kind
    )


def _render_path(prefix: str, loc: Sequence[int | str]) -> str:
    out = prefix
    for part in loc:
        if part == "[key]":
            continue
        if isinstance(part, int):
            out += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", part):
            out += f".{part}"
        else:
            out += f"[{json.dumps(part)}]"
    return out


def _problem_from_error(prefix: str, error: Mapping[str, Any]) -> Problem:
    loc = tuple(error["loc"])
    top = str(loc[0]) if loc else ""
    kind = error["type"]
    ctx = error.get("ctx") or {}
    value = error.get("input")
    example = _EXAMPLES.get(top, "")
    path = _render_path(prefix, loc)
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
        return Problem(
            path, f"must be one of {ctx.get('expected')}, got {_describe(value)}", f"use {example}"
        )
    what = "key" if is_key else top
    messages = {
        "string_type": (f"must be text, got {_describe(value)}", f'quote the value, e.g. {what}: "{value}"'),
        "int_type": (
            f"must be a whole number, got {_describe(value)}",
            f"write a number without quotes, e.g. {example}",
        ),
        "bool_type": (f"must be true or false, got {_describe(value)}", "write true or false without quotes"),
        "dict_type": (
            f"must be a mapping of name: value, got {_describe(value)}",
            f"write it like {example}",
        ),
        "list_type": (f"must be a list, got {_describe(value)}", f"write it like {example}"),
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


# --------------------------------------------------------------------------------------------------
# Reading the bytes: size, encoding, and a YAML dialect without tags, anchors or duplicate keys.


class _Refused(Exception):
    """A YAML construct the spec dialect refuses, with where it was found."""

    def __init__(self, message: str, fix: str, mark: Any) -> None:
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        super().__init__(f"{message}{where}")
        self.fix = fix


class _Guards:
    """Loader hooks that refuse tags, anchors, aliases, merge keys, duplicate and non-string keys."""

    def compose_node(self, parent: Any, index: Any) -> Any:  # noqa: D102 - PyYAML hook
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise _Refused(
                "YAML anchors and aliases (&name, *name) are not allowed",
                "write the value out in full each time",
                event.start_mark,
            )
        if getattr(event, "tag", None) is not None:
            raise _Refused(
                f"YAML tags such as {event.tag!r} are not allowed",
                "remove the tag (the text starting with !)",
                event.start_mark,
            )
        return Composer.compose_node(self, parent, index)  # type: ignore[arg-type]

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:  # noqa: D102 - PyYAML hook
        seen: set[str] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise _Refused(
                    "YAML merge keys (<<) are not allowed", "write the fields out", key_node.start_mark
                )
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, str):
                raise _Refused(
                    f"keys must be text, found {_describe(key)}", "quote the key", key_node.start_mark
                )
            if key in seen:
                raise _Refused(f"duplicate key {key!r}", "keep one of them", key_node.start_mark)
            seen.add(key)
        return SafeConstructor.construct_mapping(self, node, deep=deep)  # type: ignore[arg-type]


class _SpecLoader(_Guards, yaml.SafeLoader):
    """The pure-Python spec loader."""


_Loader: type = _SpecLoader
if yaml.__with_libyaml__:
    from yaml.cyaml import CParser

    class _FastSpecLoader(_Guards, CParser, SafeConstructor, Resolver):
        """libyaml scans and parses (4x faster); the Python composer keeps the guards on every node."""

        get_single_node = Composer.get_single_node
        compose_document = Composer.compose_document
        compose_scalar_node = Composer.compose_scalar_node
        compose_sequence_node = Composer.compose_sequence_node
        compose_mapping_node = Composer.compose_mapping_node

        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)
            self.anchors: dict[str, Any] = {}

    _Loader = _FastSpecLoader


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Refused(f"duplicate key {key!r}", "keep one of them", None)
        out[key] = value
    return out


def _no_constants(name: str) -> Any:
    raise _Refused(f"{name} is not a number JSON allows", "write a finite number", None)


def _file_problem(message: str, fix: str) -> tuple[None, tuple[Problem, ...]]:
    return None, (Problem("file", message, fix),)


def _load(data: bytes, filename: str) -> tuple[list[Any] | None, tuple[Problem, ...]]:
    """The raw jobs of a spec file, or the file-level problems that stop reading it."""
    if not isinstance(data, bytes | bytearray):
        return _file_problem("is not bytes", "pass the object's body")
    if len(data) > MAX_SPEC_BYTES:
        return _file_problem(
            f"is {len(data)} bytes, over the {MAX_SPEC_BYTES // 1024} KB limit",
            "split the jobs across several files",
        )
    if b"\x00" in data:
        return _file_problem(
            "contains NUL bytes: it is binary, not a YAML or JSON spec", "upload the text spec"
        )
    try:
        text = bytes(data).decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return _file_problem(
            f"is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})",
            "save the file as UTF-8",
        )
    if not text.strip():
        return _file_problem("is empty", "write one job (a mapping) or a list of jobs")
    is_json = filename.lower().endswith(".json")
    try:
        if is_json:
            document = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constants)
        else:
            document = yaml.load(text, Loader=_Loader)  # noqa: S506 - safe: SafeConstructor only
    except _Refused as exc:
        return _file_problem(str(exc), exc.fix)
    except json.JSONDecodeError as exc:
        return _file_problem(
            f"is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}", "fix the JSON syntax"
        )
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        return _file_problem(f"is not valid YAML: {exc.problem or exc.context}{where}", "fix the YAML syntax")
    except yaml.YAMLError as exc:
        return _file_problem(f"is not valid YAML: {str(exc).splitlines()[0][:200]}", "fix the YAML syntax")
    except RecursionError:
        return _file_problem("is nested too deeply", "a spec needs at most a few levels of nesting")
    except (ValueError, TypeError, OverflowError) as exc:
        # int() refuses numbers over 4300 digits; PyYAML lets a few constructor errors through raw
        return _file_problem(f"holds a value that cannot be read: {str(exc)[:200]}", "fix the value")
    if document is None:
        return _file_problem("holds no jobs", "write one job (a mapping) or a list of jobs")
    if isinstance(document, dict):
        return [document], ()
    if isinstance(document, list):
        if not document:
            return _file_problem("holds an empty list of jobs", "add at least one job")
        if len(document) > MAX_JOBS_PER_FILE:
            return _file_problem(
                f"holds {len(document)} jobs, over the limit of {MAX_JOBS_PER_FILE} per file",
                "split the jobs across several files",
            )
        return document, ()
    return _file_problem(
        f"must hold one job (a mapping) or a list of jobs, found {_describe(document)}",
        "start the job with name: ...",
    )


# --------------------------------------------------------------------------------------------------
# Keys.


def _key_error(problem: str, fix: str) -> InvalidInputError:
    return InvalidInputError("key", problem, fix)


def team_from_key(key: str) -> str:
    """The team of a decoded drop-bucket key ``submit/<team>/<file>``; InvalidInputError otherwise."""
    if not isinstance(key, str) or not key:
        raise _key_error("is empty", "drop the spec at submit/<team>/<file>.yaml")
    if len(key.encode("utf-8", "surrogatepass")) > MAX_KEY_BYTES:
        raise _key_error(f"is longer than {MAX_KEY_BYTES} bytes", "use a shorter file name")
    if any(unicodedata.category(ch) in ("Cc", "Cf", "Cs") for ch in key) or "\\" in key:
        raise _key_error(
            f"{key[:80]!r} contains control, invisible or backslash characters", "rename the file"
        )
    if not key.startswith(SUBMIT_PREFIX):
        raise _key_error(
            f"{key[:80]!r} is outside {SUBMIT_PREFIX}", "drop the spec at submit/<team>/<file>.yaml"
        )
    parts = key.split("/")
    if len(parts) != 3:
        raise _key_error(
            f"{key[:80]!r} is not submit/<team>/<file>",
            "put the file directly under submit/<team>/, with no further folders",
        )
    _, team, filename = parts
    if not re.fullmatch(TEAM_PATTERN, team):
        raise _key_error(
            f"team folder {team[:80]!r} must be letters, digits, '_' or '-'",
            "drop the spec under submit/<your team>/",
        )
    if not filename or filename in (".", "..") or filename.startswith("."):
        raise _key_error(f"{key[:80]!r} names no spec file", "drop a file such as submit/<team>/jobs.yaml")
    if not filename.lower().endswith(SPEC_SUFFIXES):
        raise _key_error(
            f"file {filename[:80]!r} is not .yaml, .yml or .json", "rename it to end in .yaml, .yml or .json"
        )
    return team


# --------------------------------------------------------------------------------------------------
# Tokens and digests.


def canonical_json(value: Any) -> str:
    """The one JSON text of a value: sorted keys, no spaces, ASCII only."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def client_token(bucket: str, key: str, version_id: str | None, index: int) -> str:
    """The SubmitServiceJob idempotency token of job ``index`` of one object version (64 hex chars).

    Without a version id (an unversioned bucket), re-uploading the same key yields the same token;
    Batch then treats the new upload as a repeat, so the drop bucket should keep versioning on.
    """
    material = canonical_json([_TOKEN_DOMAIN, bucket, key, version_id or "", index])
    return hashlib.sha256(material.encode("utf-8")).hexdigest()


def payload_digest(payload_json: str) -> str:
    """sha256 hex of a canonical serviceRequestPayload, for the submission receipt."""
    return hashlib.sha256(payload_json.encode("utf-8")).hexdigest()


# --------------------------------------------------------------------------------------------------
# Authorization and admission: what the team may use and what the cluster can run.


def _under(uri: str, prefixes: Sequence[str]) -> bool:
    """Whether ``uri`` lies under one of ``prefixes``, compared as paths.

    SageMaker reads an S3Prefix URI as a key prefix: "s3://b/corpora" reads "corpora-restricted/..."
    too. So a URI is allowed only when it starts with a whole allowed prefix, slash included (config
    prefixes always end in "/"); "s3://b/corpora" is refused even when "s3://b/corpora/" is allowed.
    """
    return any(uri.startswith(prefix) for prefix in prefixes)


def _stops_at_prefix(uri: str, prefixes: Sequence[str]) -> str | None:
    """The allowed prefix ``uri`` names without its trailing slash, if it does."""
    return next((prefix for prefix in prefixes if uri + "/" == prefix), None)


@dataclass(frozen=True)
class _Context:
    config: SharesConfig
    team_name: str
    team: TeamConfig
    bucket: str
    key: str
    version_id: str | None


def _check(spec: JobSpec, at: str, ctx: _Context) -> tuple[list[Problem], str | None, bool]:
    """Cross-field rules, authorization and admission; returns problems, the image URI and is_cpu."""
    problems: list[Problem] = []
    config, team, team_name = ctx.config, ctx.team, ctx.team_name

    def add(path: str, message: str, fix: str) -> None:
        problems.append(Problem(f"{at}.{path}" if path else at, message, fix))

    if spec.team is not None and spec.team != team_name:
        add(
            "team",
            f"names team {spec.team!r} but the file is submitted as team {team_name!r}",
            f"drop the file under submit/{spec.team}/ or set team: {team_name}",
        )

    # Instance type and count: what the cluster has, then what the team may use.
    gpu_types, cpu_types = config.instance_types, config.queues.cpu_instance_types
    is_cpu = spec.instance_type in cpu_types
    limits = gpu_types.get(spec.instance_type) or cpu_types.get(spec.instance_type)
    if limits is None:
        add(
            "instance_type",
            f"cluster {config.cluster} has no {spec.instance_type}",
            f"use one of {sorted([*gpu_types, *cpu_types])}",
        )
    else:
        if team.allowed_instance_types and spec.instance_type not in team.allowed_instance_types:
            add(
                "instance_type",
                f"team {team_name} may not use {spec.instance_type}",
                f"use one of {list(team.allowed_instance_types)}",
            )
        if (
            config.mode is SchedulingMode.QUOTA
            and not is_cpu
            and not team.entitlement.get(spec.instance_type)
        ):
            add(
                "instance_type",
                f"team {team_name}'s quota share has no capacity for {spec.instance_type}, so the job would "
                "wait forever",
                f"use one of {sorted(t for t, n in team.entitlement.items() if n)}",
            )
        if spec.instance_count > limits.capacity:
            add(
                "instance_count",
                f"asks for {spec.instance_count} instances but the cluster has {limits.capacity} "
                f"{spec.instance_type}",
                f"use at most {limits.capacity} instances",
            )
    if team.max_instance_count is not None and spec.instance_count > team.max_instance_count:
        add(
            "instance_count",
            f"asks for {spec.instance_count} instances but team {team_name} may use at most "
            f"{team.max_instance_count} per job",
            f"use at most {team.max_instance_count} instances",
        )

    # Image: a custom image under the team's registry paths, or a framework version from config.
    image: str | None = None
    if spec.image is not None and spec.framework is not None:
        add("image", "is set together with framework", "set either image or framework and framework_version")
    elif spec.image is not None:
        if spec.framework_version is not None:
            add(
                "framework_version", "is set without framework", "remove it or set framework instead of image"
            )
        if not team.allowed_image_prefixes:
            add(
                "image",
                f"team {team_name} may not use custom images",
                f"use framework: one of {_allowed_frameworks(config, team)}",
            )
        elif not any(spec.image.startswith(prefix) for prefix in team.allowed_image_prefixes):
            add(
                "image",
                f"{spec.image[:120]} is not under team {team_name}'s image prefixes",
                f"push the image under one of {list(team.allowed_image_prefixes)}",
            )
        else:
            image = spec.image
    elif spec.framework is not None:
        image = _framework_image(spec, team_name, config, team, is_cpu, add)
    else:
        add(
            "image",
            "is required unless framework is set",
            f"add image: {_EXAMPLES['image']} or framework: pytorch",
        )

    if team.execution_role_arn is None:
        add(
            "",
            f"team {team_name} has no execution role in the shares config",
            f"ask the platform team to set teams.{team_name}.execution_role_arn",
        )

    # Data: inputs under the team's input prefixes, output and checkpoints under its output prefixes.
    for channel, uri in spec.inputs.items():
        if not _under(uri, team.input_prefixes):
            add(_render_path("inputs", [channel]), *_outside(uri, team_name, "input", team.input_prefixes))
    for name, uri in (("output_path", spec.output_path), ("checkpoint_path", spec.checkpoint_path)):
        if uri is not None and not _under(uri, team.output_prefixes):
            add(name, *_outside(uri, team_name, "output", team.output_prefixes))

    if spec.spot:
        if spec.max_wait_seconds is None:
            add(
                "max_wait_seconds",
                "is required for spot jobs",
                f"add max_wait_seconds: >= {spec.max_runtime_seconds}",
            )
        elif spec.max_wait_seconds < spec.max_runtime_seconds:
            add(
                "max_wait_seconds",
                f"is {spec.max_wait_seconds}, below max_runtime_seconds {spec.max_runtime_seconds}",
                f"use max_wait_seconds >= {spec.max_runtime_seconds}",
            )
    elif spec.max_wait_seconds is not None:
        add("max_wait_seconds", "only applies to spot jobs", "remove it or set spot: true")

    if spec.retry_attempts is not None and spec.retry_attempts > team.max_retry_attempts:
        add(
            "retry_attempts",
            f"is {spec.retry_attempts}, above team {team_name}'s limit of {team.max_retry_attempts}",
            f"use at most {team.max_retry_attempts}",
        )
    for tag in spec.tags:
        if tag.lower().startswith(RESERVED_TAG_PREFIXES):
            add(_render_path("tags", [tag]), f"tag {tag!r} uses a reserved prefix", "rename the tag")
    return problems, image, is_cpu


def _allowed_frameworks(config: SharesConfig, team: TeamConfig) -> list[str]:
    return list(team.allowed_frameworks) or sorted(config.frameworks)


def _outside(uri: str, team_name: str, kind: str, prefixes: Sequence[str]) -> tuple[str, str]:
    if not prefixes:
        return (
            f"team {team_name} has no {kind} prefixes in the shares config",
            f"ask the platform team to set teams.{team_name}.{kind}_prefixes",
        )
    stopped = _stops_at_prefix(uri, prefixes)
    if stopped is not None:
        return (
            f"{uri[:160]} has no trailing slash, so it also names every key that starts with it "
            f"(e.g. {uri[:160]}-other/), outside team {team_name}'s {kind} prefix {stopped}",
            f"end it with /: {stopped}",
        )
    return (
        f"{uri[:160]} is outside team {team_name}'s {kind} prefixes",
        f"use a URI under one of {list(prefixes)}",
    )


def _framework_image(
    spec: JobSpec,
    team_name: str,
    config: SharesConfig,
    team: TeamConfig,
    is_cpu: bool,
    add: Callable[[str, str, str], None],
) -> str | None:
    framework = spec.framework or ""
    allowed = _allowed_frameworks(config, team)
    if framework not in config.frameworks or framework not in allowed:
        add("framework", f"team {team_name} may not use framework {framework!r}", f"use one of {allowed}")
        return None
    versions = config.frameworks[framework]
    if spec.framework_version is None:
        add(
            "framework_version",
            "is required with framework",
            f"add framework_version: one of {sorted(versions)}",
        )
        return None
    images = versions.get(spec.framework_version)
    if images is None:
        add(
            "framework_version",
            f"{framework} {spec.framework_version} is not offered",
            f"use one of {sorted(versions)}",
        )
        return None
    if is_cpu and images.cpu is None:
        add(
            "framework_version",
            f"{framework} {spec.framework_version} has no CPU image",
            "use a GPU instance type or another version",
        )
        return None
    return images.cpu if is_cpu else images.gpu


# --------------------------------------------------------------------------------------------------
# The mapping to SubmitServiceJob.


def _to_request(
    spec: JobSpec, index: int, image: str, is_cpu: bool, ctx: _Context
) -> tuple[dict[str, Any], str]:
    """The SubmitServiceJob request and payload digest of an accepted job."""
    config, team = ctx.config, ctx.team
    token = client_token(ctx.bucket, ctx.key, ctx.version_id, index)
    tags = {**spec.tags, TEAM_TAG: ctx.team_name, TIER_TAG: spec.priority}
    algorithm: dict[str, Any] = {"TrainingImage": image, "TrainingInputMode": TRAINING_INPUT_MODE}
    if spec.entry_point is not None:
        algorithm["ContainerEntrypoint"] = [spec.entry_point]
    if spec.command is not None:
        algorithm["ContainerArguments"] = list(spec.command)
    stopping: dict[str, int] = {"MaxRuntimeInSeconds": spec.max_runtime_seconds}
    if spec.spot and spec.max_wait_seconds is not None:
        stopping["MaxWaitTimeInSeconds"] = spec.max_wait_seconds
    payload: dict[str, Any] = {
        "TrainingJobName": spec.name,
        "AlgorithmSpecification": algorithm,
        "RoleArn": team.execution_role_arn,
        "OutputDataConfig": {"S3OutputPath": spec.output_path},
        "ResourceConfig": {
            "InstanceType": spec.instance_type,
            "InstanceCount": spec.instance_count,
            "VolumeSizeInGB": spec.volume_size_gb,
        },
        "StoppingCondition": stopping,
        "EnableManagedSpotTraining": spec.spot,
        "HyperParameters": dict(spec.hyperparameters),
        "Environment": dict(spec.environment),
        "Tags": [{"Key": k, "Value": v} for k, v in sorted(tags.items())],
    }
    if spec.inputs:
        # CreateTrainingJob refuses an empty InputDataConfig, so it is left out when there are no channels.
        payload["InputDataConfig"] = [
            {
                "ChannelName": channel,
                "DataSource": {
                    "S3DataSource": {
                        "S3DataType": "S3Prefix",
                        "S3Uri": uri,
                        "S3DataDistributionType": "FullyReplicated",
                    }
                },
            }
            for channel, uri in spec.inputs.items()
        ]
    if spec.checkpoint_path is not None:
        payload["CheckpointConfig"] = {"S3Uri": spec.checkpoint_path, "LocalPath": CHECKPOINT_LOCAL_PATH}
    payload_json = canonical_json(payload)
    # Batch's tags only: the payload (and so its digest) stays the same for every upload of a spec.
    tags = {**tags, SUBMISSION_TAG: token}
    attempts = spec.retry_attempts if spec.retry_attempts is not None else team.default_retry_attempts
    request: dict[str, Any] = {
        "jobName": spec.name,
        "jobQueue": config.queues.cpu_fifo if is_cpu else config.gpu_queue_name(),
        "serviceJobType": SERVICE_JOB_TYPE,
        "serviceRequestPayload": payload_json,
        "retryStrategy": {"attempts": attempts, "evaluateOnExit": [dict(rule) for rule in EVALUATE_ON_EXIT]},
        # A spot job may wait for capacity up to max_wait; a timeout of max_runtime would cut it short.
        "timeoutConfig": {
            "attemptDurationSeconds": stopping.get("MaxWaitTimeInSeconds", spec.max_runtime_seconds)
        },
        "tags": tags,
        "clientToken": token,
    }
    if not is_cpu:
        tier = Tier(spec.priority)
        # The share fields are required on fair-share / quota-share queues and refused on a FIFO queue;
        # priority 0 is kept (the SageMaker SDK drops it by testing truthiness).
        quota = config.mode is SchedulingMode.QUOTA
        request["quotaShareName" if quota else "shareIdentifier"] = config.share_for(ctx.team_name, tier)
        request["schedulingPriority"] = config.tiers[tier].scheduling_priority
        retries = team.quota.preemption_retries_before_termination
        if quota and retries is not None:
            # Only quota shares preempt; unset, Batch would requeue a preempted job forever.
            request["preemptionConfiguration"] = {"preemptionRetriesBeforeTermination": retries}
    return request, payload_digest(payload_json)


# --------------------------------------------------------------------------------------------------
# The whole file.


def _evaluate(raw_jobs: list[Any], ctx: _Context) -> tuple[JobResult, ...]:
    results: list[JobResult] = []
    names_seen: dict[str, int] = {}
    for index, raw in enumerate(raw_jobs):
        at = f"jobs[{index}]"
        raw_name = raw.get("name") if isinstance(raw, dict) else None
        name = raw_name if isinstance(raw_name, str) else None
        if not isinstance(raw, dict):
            results.append(
                JobResult(
                    index,
                    None,
                    (
                        Problem(
                            at,
                            f"must be a job (a mapping), found {_describe(raw)}",
                            "write the job as name: ..., instance_type: ..., ...",
                        ),
                    ),
                )
            )
            continue
        try:
            spec = JobSpec.model_validate(raw)
        except ValidationError as exc:
            problems = tuple(_problem_from_error(at, error) for error in exc.errors(include_url=False))
            results.append(JobResult(index, name, problems))
            continue
        problems, image, is_cpu = _check(spec, at, ctx)
        if spec.name in names_seen:
            problems.append(
                Problem(
                    f"{at}.name",
                    f"{spec.name} is also the name of jobs[{names_seen[spec.name]}] in this file",
                    "give every job in the file its own name",
                )
            )
        names_seen.setdefault(spec.name, index)
        if problems or image is None:
            results.append(JobResult(index, spec.name, tuple(problems)))
            continue
        request, digest = _to_request(spec, index, image, is_cpu, ctx)
        results.append(JobResult(index, spec.name, (), request, digest))
    return tuple(results)


def _finish(
    raw_jobs: list[Any], key: str, team_name: str, config: SharesConfig, bucket: str, version_id: str | None
) -> SpecResult:
    team = config.teams.get(team_name)
    if team is None:
        return SpecResult(
            key,
            team_name,
            (
                Problem(
                    "key",
                    f"team {team_name!r} is not in the shares config",
                    f"use one of {sorted(config.teams)}",
                ),
            ),
        )
    ctx = _Context(config, team_name, team, bucket, key, version_id)
    return SpecResult(key, team_name, (), _evaluate(raw_jobs, ctx))


def parse_spec_file(
    data: bytes, key: str, config: SharesConfig, *, bucket: str = "", version_id: str | None = None
) -> SpecResult:
    """Parse, validate, authorize and admit a dropped spec; never raises on bad input.

    ``key`` is the decoded object key; ``bucket`` and ``version_id`` only feed the client tokens.
    """
    try:
        team_name = team_from_key(key)
    except InvalidInputError as exc:
        return SpecResult(str(key)[:MAX_KEY_BYTES], None, (Problem(exc.field, exc.problem, exc.fix),))
    raw_jobs, problems = _load(data, key.rsplit("/", 1)[-1])
    if raw_jobs is None:
        return SpecResult(key, team_name, problems)
    return _finish(raw_jobs, key, team_name, config, bucket, version_id)


def _team_of(raw_jobs: Sequence[Any]) -> str | None:
    for raw in raw_jobs:
        if isinstance(raw, dict) and isinstance(raw.get("team"), str):
            return raw["team"]
    return None


def team_in_spec(data: bytes, filename: str = "spec.yaml") -> str | None:
    """The team the first job of a spec names, if the file is readable and any job names one."""
    raw_jobs, _ = _load(data, filename)
    return _team_of(raw_jobs or ())


def parse_local_spec(
    data: bytes, filename: str, config: SharesConfig, team: str | None = None, *, bucket: str = "local"
) -> SpecResult:
    """Check a local spec file exactly as if it were dropped at ``submit/<team>/<filename>``.

    Without ``team``, the team comes from the spec's own ``team`` field (the first job naming one).
    The check itself is ``parse_spec_file``, the submit path's, so `shareplane validate` and the
    Lambda agree on everything that needs no live state (only the uploader check needs the event).
    """
    if team is None:
        raw_jobs, problems = _load(data, filename)
        if raw_jobs is None:
            return SpecResult(filename, None, problems)
        team = _team_of(raw_jobs)
        if team is None:
            fix = "pass --team TEAM or add team: <your team> to the job"
            return SpecResult(filename, None, (Problem("team", "the spec names no team", fix),))
    return parse_spec_file(data, f"{SUBMIT_PREFIX}{team}/{filename}", config, bucket=bucket)
