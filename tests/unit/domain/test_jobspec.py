"""Job specs: every parsing, shape, authorization and admission rule, the mapping, and a fuzz test."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shareplane.domain.config.shares import SharesConfig
from shareplane.domain.errors import ConfigError, InvalidInputError
from shareplane.domain.submit import jobspec
from shareplane.domain.submit.jobspec import (
    CHECKPOINT_LOCAL_PATH,
    JOB_RULES,
    MAX_JOBS_PER_FILE,
    MAX_SPEC_BYTES,
    JobSpec,
    SpecResult,
    canonical_json,
    client_token,
    parse_local_spec,
    parse_spec_file,
    team_from_key,
    team_in_spec,
)
from shareplane.domain.submit.jobspec.rules import JobContext

from tests.properties import examples

KEY = "submit/ProdExp1/jobs.yaml"
ACCOUNT = "111122223333"
ECR = f"{ACCOUNT}.dkr.ecr.us-east-1.amazonaws.com"
DLC = "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/ProdExp1-training"


def config_dict(**overrides: Any) -> dict[str, Any]:
    """A cluster like the blog's: 100 p4d, a CPU FIFO queue, two teams (ProdExp2 without grants)."""
    raw: dict[str, Any] = {
        "cluster": "search",
        "mode": "fairshare",
        "instance_types": {"ml.p4d.24xlarge": {"capacity": 100}, "ml.g6.12xlarge": {"capacity": 8}},
        "tiers": {
            "HIGHPRI": {"scheduling_priority": 90, "wait_slo_seconds": 900},
            "MIDPRI": {"scheduling_priority": 50, "wait_slo_seconds": 3600},
            "LOWPRI": {"scheduling_priority": 0, "wait_slo_seconds": 14400},
        },
        "teams": {
            "ProdExp1": {
                "share": "ProdExp1",
                "entitlement": {"ml.p4d.24xlarge": 60},
                "allowed_instance_types": ["ml.p4d.24xlarge", "ml.c5.xlarge", "ml.m5.xlarge"],
                "max_instance_count": 64,
                "allowed_image_prefixes": [f"{ECR}/prodexp1/"],
                "allowed_frameworks": ["pytorch"],
                "input_prefixes": ["s3://datasets/prodexp1/", "s3://shared/corpora/"],
                "output_prefixes": ["s3://training/prodexp1/"],
                "execution_role_arn": ROLE,
                "default_retry_attempts": 2,
                "max_retry_attempts": 3,
            },
            "ProdExp2": {"share": "ProdExp2", "entitlement": {"ml.p4d.24xlarge": 40}},
        },
        "queues": {
            "gpu": "search-gpu",
            "cpu_fifo": "search-cpu-fifo",
            "cpu_instance_types": {"ml.c5.xlarge": {"capacity": 4}, "ml.m5.xlarge": {"capacity": 2}},
        },
        "frameworks": {
            "pytorch": {
                "2.6.0": {"gpu": f"{DLC}:2.6.0-gpu", "cpu": f"{DLC}:2.6.0-cpu"},
                "2.5.1": {"gpu": f"{DLC}:2.5.1-gpu"},
            },
            "tensorflow": {"2.16": {"gpu": "tf:2.16-gpu"}},
        },
    }
    raw.update(overrides)
    return raw


CONFIG = SharesConfig.model_validate(config_dict())


def with_team(**fields: Any) -> SharesConfig:
    """CONFIG with ProdExp1's config fields replaced."""
    raw = config_dict()
    raw["teams"]["ProdExp1"].update(fields)
    return SharesConfig.model_validate(raw)


def good_job(**overrides: Any) -> dict[str, Any]:
    """A job ProdExp1 may submit, with every field set."""
    job: dict[str, Any] = {
        "name": "bert-ft-01",
        "team": "ProdExp1",
        "priority": "HIGHPRI",
        "instance_type": "ml.p4d.24xlarge",
        "instance_count": 4,
        "volume_size_gb": 200,
        "framework": "pytorch",
        "framework_version": "2.6.0",
        "entry_point": "torchrun",
        "command": ["--nproc_per_node", "8", "train.py"],
        "hyperparameters": {"epochs": 3, "lr": 0.0001, "bf16": True, "model": "bert-large"},
        "inputs": {"train": "s3://datasets/prodexp1/train/", "val": "s3://shared/corpora/val.jsonl"},
        "output_path": "s3://training/prodexp1/output/",
        "checkpoint_path": "s3://training/prodexp1/ckpt/bert-ft-01/",
        "max_runtime_seconds": 7200,
        "spot": True,
        "max_wait_seconds": 10800,
        "environment": {"NCCL_DEBUG": "WARN"},
        "tags": {"project": "ranker"},
        "retry_attempts": 3,
    }
    job.update(overrides)
    return {k: v for k, v in job.items() if v is not DROP}


DROP = object()


def dump(document: Any) -> bytes:
    return yaml.safe_dump(document, sort_keys=False).encode()


def parse(document: Any, config: SharesConfig = CONFIG, key: str = KEY, **kw: Any) -> SpecResult:
    return parse_spec_file(dump(document), key, config, **kw)


def answered(result: SpecResult) -> bool:
    """Every file gets problems or jobs; every job gets a request or at least one problem."""
    if result.problems:
        return not result.jobs
    return bool(result.jobs) and all((job.request is None) == bool(job.problems) for job in result.jobs)


def only_job(result: SpecResult):
    assert not result.problems, result.problems
    assert len(result.jobs) == 1
    return result.jobs[0]


def payload_of(job) -> dict[str, Any]:
    return json.loads(job.request.service_request_payload)


# --------------------------------------------------------------------------------------------------
# Reading the file


FILE_CASES = [
    ("an empty file is refused", b"", "is empty"),
    ("a file of blanks is refused as empty", b"  \n\t\n", "is empty"),
    ("a file of comments holds no jobs", b"# nothing here\n", "holds no jobs"),
    ("a file over 256 KB is refused before parsing", b"#" * (MAX_SPEC_BYTES + 1), "over the 256 KB limit"),
    ("binary content with NUL bytes is refused", b"name: a\x00b\n", "NUL bytes"),
    ("latin-1 text is refused as not UTF-8", "name: caf\u00e9\n".encode("latin-1"), "not UTF-8"),
    (
        "a python object tag is refused",
        b'!!python/object/apply:os.system ["touch /tmp/pwned"]\n',
        "tags such as",
    ),
    ("a standard explicit tag is refused too", b"name: !!str bert\n", "tags such as"),
    ("a local tag is refused", b"name: !secret bert\n", "tags such as"),
    ("an anchor is refused", b"name: &n bert\n", "anchors and aliases"),
    (
        "an alias bomb is refused",
        b'a: &a ["x","x","x","x","x","x","x","x","x"]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n'
        b"c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n",
        "anchors and aliases",
    ),
    ("a merge key is refused", b"<<: {name: a}\ninstance_type: ml.p4d.24xlarge\n", "merge keys"),
    ("a duplicate YAML key is refused", b"name: a\nname: b\n", "duplicate key 'name'"),
    ("a duplicate key in a nested mapping is refused", b"tags: {a: x, a: y}\n", "duplicate key 'a'"),
    ("a non-text key is refused", b"name: a\n1: b\n", "keys must be text"),
    ("a boolean-looking key is refused", b"name: a\non: b\n", "keys must be text"),
    ("broken YAML names the line", b"name: [a\n", "not valid YAML"),
    ("two YAML documents in one file are refused", b"name: a\n---\nname: b\n", "not valid YAML"),
    ("deep nesting is refused", b"[" * 20000 + b"]" * 20000, "nest"),
    ("a scalar document is not a job", b"42\n", "one job (a mapping) or a list of jobs"),
    ("an empty list holds no jobs", b"[]\n", "empty list"),
    (
        "more than the per-file job limit is refused",
        dump([{"name": f"j{i}"} for i in range(MAX_JOBS_PER_FILE + 1)]),
        f"limit of {MAX_JOBS_PER_FILE}",
    ),
]


@pytest.mark.parametrize(("data", "expected"), [c[1:] for c in FILE_CASES], ids=[c[0] for c in FILE_CASES])
def test_unreadable_files_get_one_file_problem(data: bytes, expected: str) -> None:
    # GIVEN bytes that are not a readable spec WHEN parsed THEN one file problem, and no job results
    result = parse_spec_file(data, KEY, CONFIG)
    assert not result.ok and not result.jobs
    assert [p.path for p in result.problems] == ["file"]
    assert expected in result.problems[0].message
    assert result.problems[0].fix


JSON_CASES = [
    ("a duplicate JSON key is refused", b'{"name": "a", "name": "b"}', "duplicate key 'name'"),
    ("NaN is refused in JSON", b'{"name": "a", "instance_count": NaN}', "not a number JSON allows"),
    ("broken JSON names the line and column", b'{"name": "a",\n', "not valid JSON"),
    ("deep nesting in JSON is refused", b"[" * 20000 + b"]" * 20000, "nested too deeply"),
    ("a huge integer literal is refused", b'{"n": ' + b"9" * 5000 + b"}", "cannot be read"),
]


@pytest.mark.parametrize(("data", "expected"), [c[1:] for c in JSON_CASES], ids=[c[0] for c in JSON_CASES])
def test_json_specs_have_the_same_file_rules(data: bytes, expected: str) -> None:
    result = parse_spec_file(data, "submit/ProdExp1/jobs.json", CONFIG)
    assert [p.path for p in result.problems] == ["file"]
    assert expected in result.problems[0].message


def test_a_json_spec_maps_to_the_same_request_as_the_yaml_spec() -> None:
    as_yaml = parse_spec_file(dump(good_job()), "submit/ProdExp1/a.yaml", CONFIG, bucket="b")
    as_json = parse_spec_file(json.dumps(good_job()).encode(), "submit/ProdExp1/a.yaml", CONFIG, bucket="b")
    assert as_yaml.jobs[0].request == as_json.jobs[0].request
    # the extension picks the parser
    assert parse_spec_file(json.dumps(good_job()).encode(), "submit/ProdExp1/a.json", CONFIG).ok


def test_a_utf8_byte_order_mark_is_accepted() -> None:
    assert parse_spec_file(b"\xef\xbb\xbf" + dump(good_job()), KEY, CONFIG).ok


def test_a_spec_of_exactly_256_kb_is_read() -> None:
    body = dump(good_job())
    data = body + b"#" * (MAX_SPEC_BYTES - len(body))
    assert len(data) == MAX_SPEC_BYTES
    assert parse_spec_file(data, KEY, CONFIG).ok


# --------------------------------------------------------------------------------------------------
# Keys


def test_the_team_comes_from_the_key() -> None:
    assert team_from_key("submit/ProdExp1/jobs.yaml") == "ProdExp1"
    assert team_from_key("submit/Prod_Exp-2/nightly run+1.YML") == "Prod_Exp-2"


KEY_CASES = [
    ("a key outside submit/ is refused", "incoming/ProdExp1/a.yaml", "outside submit/"),
    ("a key at the bucket root is refused", "a.yaml", "outside submit/"),
    ("a parent segment as team is refused", "submit/../a.yaml", "team folder '..'"),
    (
        "a parent segment inside the path is refused",
        "submit/ProdExp1/../ProdExp2/a.yaml",
        "is not submit/<team>/<file>",
    ),
    ("a nested folder is refused", "submit/ProdExp1/sub/a.yaml", "is not submit/<team>/<file>"),
    ("an empty team folder is refused", "submit//a.yaml", "team folder ''"),
    ("a folder marker names no file", "submit/ProdExp1/", "names no spec file"),
    ("a hidden file is refused", "submit/ProdExp1/.a.yaml", "names no spec file"),
    ("a file that is not yaml or json is refused", "submit/ProdExp1/a.txt", "is not .yaml, .yml or .json"),
    ("a control character is refused", "submit/ProdExp1/a\n.yaml", "control"),
    ("a bidi override is refused", "submit/ProdExp1/a\u202egnp.yaml", "invisible"),
    ("a backslash is refused", "submit/ProdExp1\\..\\a.yaml", "backslash"),
    ("an illegal team character is refused", "submit/Prod Exp1/a.yaml", "team folder"),
    ("a key over 1024 bytes is refused", "submit/ProdExp1/" + "a" * 1100 + ".yaml", "longer than 1024"),
    ("an empty key is refused", "", "is empty"),
]


@pytest.mark.parametrize(("key", "expected"), [c[1:] for c in KEY_CASES], ids=[c[0] for c in KEY_CASES])
def test_bad_keys_are_refused(key: str, expected: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        team_from_key(key)
    assert info.value.field == "key" and expected in info.value.problem and info.value.fix
    # and the whole-file entry point reports it instead of raising
    result = parse_spec_file(dump(good_job()), key, CONFIG)
    assert [p.path for p in result.problems] == ["key"] and not result.jobs


def test_a_team_missing_from_the_config_is_refused() -> None:
    result = parse_spec_file(dump(good_job(team=DROP)), "submit/ProdExp9/a.yaml", CONFIG)
    assert [p.path for p in result.problems] == ["key"]
    assert "ProdExp9" in result.problems[0].message and "ProdExp1" in result.problems[0].fix


# --------------------------------------------------------------------------------------------------
# The shape of a job


SHAPE_CASES = [
    ("an underscore in the name is refused", {"name": "bert_ft"}, "jobs[0].name", "1-23 letters"),
    ("path traversal in the name is refused", {"name": "../../etc"}, "jobs[0].name", "1-23 letters"),
    ("a name starting with a hyphen is refused", {"name": "-bert"}, "jobs[0].name", "1-23 letters"),
    # AWSBatch + 24 + 32 hex = 64, one over SageMaker's 63-character TrainingJobName limit
    ("a name of 24 characters is refused", {"name": "a" * 24}, "jobs[0].name", "longer than 23"),
    ("a missing name is required", {"name": DROP}, "jobs[0].name", "name is required"),
    ("a missing instance type is required", {"instance_type": DROP}, "jobs[0].instance_type", "is required"),
    ("a missing output path is required", {"output_path": DROP}, "jobs[0].output_path", "is required"),
    ("an unknown field is refused", {"gpus": 8}, "jobs[0].gpus", "not a spec field"),
    (
        "a misspelt field gets a suggestion",
        {"hyperparmeters": {}},
        "jobs[0].hyperparmeters",
        "not a spec field",
    ),
    ("a role in the spec is refused", {"role": ROLE}, "jobs[0].role", "may not choose an IAM role"),
    ("a RoleArn in the spec is refused", {"RoleArn": ROLE}, "jobs[0].RoleArn", "may not choose an IAM role"),
    (
        "a share in the spec is refused",
        {"shareIdentifier": "ProdExp2"},
        "jobs[0].shareIdentifier",
        "may not choose a share",
    ),
    (
        "an instance count in quotes is refused",
        {"instance_count": "4"},
        "jobs[0].instance_count",
        "whole number",
    ),
    (
        "a fractional instance count is refused",
        {"instance_count": 1.5},
        "jobs[0].instance_count",
        "whole number",
    ),
    ("a zero instance count is refused", {"instance_count": 0}, "jobs[0].instance_count", "at least 1"),
    (
        "an unquoted version is refused",
        {"framework_version": 2.6},
        "jobs[0].framework_version",
        "must be text",
    ),
    ("an unknown tier is refused", {"priority": "URGENT"}, "jobs[0].priority", "must be one of"),
    (
        "a malformed instance type is refused",
        {"instance_type": "p4d"},
        "jobs[0].instance_type",
        "SageMaker instance",
    ),
    (
        "a nested hyperparameter is refused",
        {"hyperparameters": {"layers": [1, 2]}},
        "jobs[0].hyperparameters.layers",
        "string, number or true/false",
    ),
    (
        "a hyperparameter over 2500 characters is refused",
        {"hyperparameters": {"prompt": "x" * 2501}},
        "jobs[0].hyperparameters.prompt",
        "longer than 2500",
    ),
    (
        "a non-finite hyperparameter is refused",
        {"hyperparameters": {"lr": float("inf")}},
        "jobs[0].hyperparameters.lr",
        "string, number",
    ),
    (
        "an illegal channel name is refused",
        {"inputs": {"tr ain": "s3://datasets/prodexp1/x/"}},
        'jobs[0].inputs["tr ain"]',
        "channel names",
    ),
    (
        "an input that is not an S3 URI is refused",
        {"inputs": {"train": "/data/train"}},
        "jobs[0].inputs.train",
        "not an S3 URI",
    ),
    (
        "an input with a parent segment is refused",
        {"inputs": {"train": "s3://datasets/prodexp1/../prodexp2/"}},
        "jobs[0].inputs.train",
        "'..' path segment",
    ),
    (
        "an output path over http is refused",
        {"output_path": "https://training/prodexp1/"},
        "jobs[0].output_path",
        "not an S3 URI",
    ),
    (
        "a non-text environment value is refused",
        {"environment": {"OMP_NUM_THREADS": 4}},
        "jobs[0].environment.OMP_NUM_THREADS",
        "must be text",
    ),
    (
        "an illegal environment name is refused",
        {"environment": {"1BAD": "x"}},
        'jobs[0].environment["1BAD"]',
        "variable names",
    ),
    (
        "more than 47 tags are refused (Batch takes 50, three are ours)",
        {"tags": {f"t{i}": "v" for i in range(48)}},
        "jobs[0].tags",
        "more than 47",
    ),
    (
        "a command that is not a list is refused",
        {"command": "python train.py"},
        "jobs[0].command",
        "must be a list",
    ),
    ("a quoted boolean for spot is refused", {"spot": "yes"}, "jobs[0].spot", "true or false"),
    (
        "a runtime under a minute is refused",
        {"max_runtime_seconds": 30},
        "jobs[0].max_runtime_seconds",
        "at least 60",
    ),
    (
        "more than ten retry attempts are refused",
        {"retry_attempts": 11},
        "jobs[0].retry_attempts",
        "at most 10",
    ),
    (
        "an image that is not an image reference is refused",
        {"framework": DROP, "framework_version": DROP, "image": "prodexp1/../x"},
        "jobs[0].image",
        "not a container image reference",
    ),
]


@pytest.mark.parametrize(
    ("change", "path", "expected"), [c[1:] for c in SHAPE_CASES], ids=[c[0] for c in SHAPE_CASES]
)
def test_shape_problems_name_the_path_and_the_fix(change: dict[str, Any], path: str, expected: str) -> None:
    job = only_job(parse([good_job(**change)]))
    assert job.request is None
    matching = [p for p in job.problems if p.path == path and expected in p.message]
    assert matching, job.problems
    assert all(p.fix for p in job.problems)


def test_a_misspelt_field_suggests_the_right_one() -> None:
    job = only_job(parse([good_job(hyperparmeters={})]))
    assert "did you mean hyperparameters?" in job.problems[0].fix


def test_a_yaml_date_is_refused_where_text_is_expected() -> None:
    job = only_job(
        parse_spec_file(dump(good_job()).replace(b"name: bert-ft-01", b"name: 2024-01-01"), KEY, CONFIG)
    )
    assert job.problems[0].path == "jobs[0].name" and "must be text" in job.problems[0].message


def test_every_shape_problem_of_a_job_is_reported_at_once() -> None:
    job = only_job(parse([good_job(name="a_b", instance_count="2", priority="P0", bogus=1)]))
    assert {p.path for p in job.problems} == {
        "jobs[0].name",
        "jobs[0].instance_count",
        "jobs[0].priority",
        "jobs[0].bogus",
    }


# --------------------------------------------------------------------------------------------------
# What the team may use and what the cluster can run


POLICY_CASES = [
    (
        "a spec naming another team is refused",
        CONFIG,
        {"team": "ProdExp2"},
        "jobs[0].team",
        "submitted as team",
    ),
    (
        "an instance type the cluster lacks is refused",
        CONFIG,
        {"instance_type": "ml.p5.48xlarge"},
        "jobs[0].instance_type",
        "has no ml.p5.48xlarge",
    ),
    (
        "an instance type the team may not use is refused",
        CONFIG,
        {"instance_type": "ml.g6.12xlarge"},
        "jobs[0].instance_type",
        "may not use ml.g6.12xlarge",
    ),
    (
        "more instances than the cluster has are refused",
        with_team(max_instance_count=None),
        {"instance_count": 101},
        "jobs[0].instance_count",
        "the cluster has 100",
    ),
    (
        "more instances than the team's maximum are refused",
        CONFIG,
        {"instance_count": 65},
        "jobs[0].instance_count",
        "at most 64 per job",
    ),
    (
        "more CPU instances than the FIFO queue has are refused",
        CONFIG,
        {"instance_type": "ml.c5.xlarge", "instance_count": 5},
        "jobs[0].instance_count",
        "the cluster has 4",
    ),
    (
        "an image outside the team's prefixes is refused",
        CONFIG,
        {"framework": DROP, "framework_version": DROP, "image": f"{ECR}/prodexp2/train:1"},
        "jobs[0].image",
        "not under team ProdExp1's image prefixes",
    ),
    (
        "a look-alike image prefix is refused",
        with_team(allowed_image_prefixes=[f"{ECR}/prodexp1/"]),
        {"framework": DROP, "framework_version": DROP, "image": f"{ECR}/prodexp10/train:1"},
        "jobs[0].image",
        "not under team",
    ),
    (
        "a custom image is refused for a team without image prefixes",
        with_team(allowed_image_prefixes=[]),
        {"framework": DROP, "framework_version": DROP, "image": f"{ECR}/prodexp1/train:1"},
        "jobs[0].image",
        "may not use custom images",
    ),
    (
        "an image together with a framework is refused",
        CONFIG,
        {"image": f"{ECR}/prodexp1/train:1"},
        "jobs[0].image",
        "together with framework",
    ),
    (
        "a job without image or framework is refused",
        CONFIG,
        {"framework": DROP, "framework_version": DROP},
        "jobs[0].image",
        "required unless framework",
    ),
    (
        "a framework the team may not use is refused",
        CONFIG,
        {"framework": "tensorflow", "framework_version": "2.16"},
        "jobs[0].framework",
        "may not use framework 'tensorflow'",
    ),
    (
        "a framework the config lacks is refused",
        CONFIG,
        {"framework": "jax"},
        "jobs[0].framework",
        "may not use framework 'jax'",
    ),
    (
        "a framework version the config lacks is refused",
        CONFIG,
        {"framework_version": "1.13.1"},
        "jobs[0].framework_version",
        "is not offered",
    ),
    (
        "a framework without a version is refused",
        CONFIG,
        {"framework_version": DROP},
        "jobs[0].framework_version",
        "is required with framework",
    ),
    (
        "a version without a framework is refused",
        CONFIG,
        {"framework": DROP, "image": f"{ECR}/prodexp1/t:1"},
        "jobs[0].framework_version",
        "without framework",
    ),
    (
        "a CPU job on a framework without a CPU image is refused",
        CONFIG,
        {"instance_type": "ml.c5.xlarge", "instance_count": 1, "framework_version": "2.5.1"},
        "jobs[0].framework_version",
        "has no CPU image",
    ),
    (
        "a team without an execution role cannot submit",
        with_team(execution_role_arn=None),
        {},
        "jobs[0]",
        "no execution role",
    ),
    (
        "an input outside the team's input prefixes is refused",
        CONFIG,
        {"inputs": {"train": "s3://datasets/prodexp2/train/"}},
        "jobs[0].inputs.train",
        "outside team ProdExp1's input",
    ),
    (
        "a look-alike input prefix is refused",
        CONFIG,
        {"inputs": {"train": "s3://datasets/prodexp10/train/"}},
        "jobs[0].inputs.train",
        "outside",
    ),
    (
        "an input under the output prefix is refused",
        CONFIG,
        {"inputs": {"train": "s3://training/prodexp1/x/"}},
        "jobs[0].inputs.train",
        "outside",
    ),
    (
        "an output outside the team's output prefixes is refused",
        CONFIG,
        {"output_path": "s3://training/prodexp2/out/"},
        "jobs[0].output_path",
        "outside team ProdExp1's output",
    ),
    (
        "a checkpoint outside the team's output prefixes is refused",
        CONFIG,
        {"checkpoint_path": "s3://datasets/prodexp1/ckpt/"},
        "jobs[0].checkpoint_path",
        "outside",
    ),
    (
        "a team without output prefixes cannot write anywhere",
        with_team(output_prefixes=[]),
        {},
        "jobs[0].output_path",
        "has no output prefixes",
    ),
    (
        "a spot job without a max wait is refused",
        CONFIG,
        {"max_wait_seconds": DROP},
        "jobs[0].max_wait_seconds",
        "required for spot",
    ),
    (
        "a max wait below the max runtime is refused",
        CONFIG,
        {"max_wait_seconds": 3600},
        "jobs[0].max_wait_seconds",
        "below max_runtime_seconds 7200",
    ),
    (
        "a max wait without spot is refused",
        CONFIG,
        {"spot": False},
        "jobs[0].max_wait_seconds",
        "only applies to spot",
    ),
    (
        "retries above the team's bound are refused",
        CONFIG,
        {"retry_attempts": 4},
        "jobs[0].retry_attempts",
        "limit of 3",
    ),
    (
        "a tag with a reserved prefix is refused",
        CONFIG,
        {"tags": {"shareplane:team": "ProdExp2"}},
        'jobs[0].tags["shareplane:team"]',
        "reserved prefix",
    ),
    (
        "an aws: tag is refused",
        CONFIG,
        {"tags": {"aws:cost": "x"}},
        'jobs[0].tags["aws:cost"]',
        "reserved prefix",
    ),
    (
        "in quota mode an instance type without entitlement is refused",
        SharesConfig.model_validate(config_dict(mode="quota")),
        {"instance_type": "ml.g6.12xlarge", "instance_count": 1},
        "jobs[0].instance_type",
        "quota share has no capacity",
    ),
]


@pytest.mark.parametrize(
    ("config", "change", "path", "expected"), [c[1:] for c in POLICY_CASES], ids=[c[0] for c in POLICY_CASES]
)
def test_policy_problems_refuse_the_job_with_the_reason(
    config: SharesConfig, change: dict[str, Any], path: str, expected: str
) -> None:
    job = only_job(parse([good_job(**change)], config=config))
    assert job.request is None and not job.ok
    assert any(p.path == path and expected in p.message and p.fix for p in job.problems), job.problems


def test_a_job_breaking_many_rules_gets_every_problem_in_the_order_of_the_rules() -> None:
    # GIVEN a team without an execution role, and a job that breaks every rule a fair-share cluster has
    config = with_team(execution_role_arn=None)
    job = good_job(
        team="ProdExp2",
        instance_type="ml.g6.12xlarge",
        instance_count=65,
        image=f"{ECR}/prodexp1/train:1.0",
        inputs={"train": "s3://elsewhere/train/"},
        output_path="s3://elsewhere/out/",
        checkpoint_path="s3://elsewhere/ckpt/",
        max_wait_seconds=DROP,
        retry_attempts=4,
        tags={"aws:cost": "x"},
    )
    # WHEN the file is checked
    result = only_job(parse([job], config=config))
    # THEN each rule reports, one after the other in JOB_RULES order, under the job's path
    assert [p.path for p in result.problems] == [
        "jobs[0].team",
        "jobs[0].instance_type",
        "jobs[0].instance_count",
        "jobs[0].instance_count",
        "jobs[0].image",
        "jobs[0]",
        "jobs[0].inputs.train",
        "jobs[0].output_path",
        "jobs[0].checkpoint_path",
        "jobs[0].max_wait_seconds",
        "jobs[0].retry_attempts",
        'jobs[0].tags["aws:cost"]',
    ]
    spec = JobSpec.model_validate(job)
    ctx = JobContext(config, "ProdExp1", config.teams["ProdExp1"], "", KEY, None)
    found = [(rule.__name__, problem) for rule in JOB_RULES for problem in rule(spec, ctx)]
    assert [name for name, _ in found] == [
        "team_field_matches_folder",
        "team_may_use_instance_type",
        "cluster_has_enough_instances",
        "within_team_instance_count",
        "image_is_allowed",
        "team_has_execution_role",
        "inputs_under_team_prefixes",
        "outputs_under_team_prefixes",
        "outputs_under_team_prefixes",
        "spot_wait_covers_runtime",
        "within_team_retry_limit",
        "tags_avoid_reserved_prefixes",
    ]
    assert [(p.message, p.fix) for p in result.problems] == [(f.problem, f.fix) for _, f in found]


def test_an_input_exactly_at_the_prefix_is_allowed() -> None:
    assert parse([good_job(inputs={"train": "s3://datasets/prodexp1/"})]).ok


@pytest.mark.parametrize(
    "field", ["inputs", "output_path", "checkpoint_path"], ids=["input", "output", "checkpoint"]
)
def test_a_uri_that_stops_at_an_allowed_prefix_without_its_slash_is_refused_with_the_fix(field: str) -> None:
    # GIVEN a URI naming an allowed prefix without its slash: SageMaker would read "prodexp1-x/..." too
    bare = "s3://datasets/prodexp1" if field == "inputs" else "s3://training/prodexp1"
    change: dict[str, Any] = {"inputs": {"train": bare}} if field == "inputs" else {field: bare}
    job = only_job(parse([good_job(**change)]))
    # THEN it is refused, and the fix is the prefix with its slash
    assert job.request is None
    path = "jobs[0].inputs.train" if field == "inputs" else f"jobs[0].{field}"
    problem = next(p for p in job.problems if p.path == path)
    assert "no trailing slash" in problem.message and problem.fix == f"end it with /: {bare}/"


def test_a_uri_extending_the_last_segment_of_an_allowed_prefix_is_refused() -> None:
    job = only_job(parse([good_job(inputs={"train": "s3://shared/corpora-restricted/x/"})]))
    assert job.request is None
    assert any(p.path == "jobs[0].inputs.train" and "outside" in p.message for p in job.problems)


def test_a_job_without_team_takes_the_team_of_the_key() -> None:
    assert parse([good_job(team=DROP)]).ok


def test_good_and_bad_jobs_in_one_file_each_get_their_own_result() -> None:
    # GIVEN a list with a good job, a job with a shape problem, a non-mapping and a refused job
    result = parse(
        [good_job(name="a"), good_job(name="b_"), "not a job", good_job(name="d", instance_count=999)]
    )
    assert not result.problems
    assert [job.ok for job in result.jobs] == [True, False, False, False]
    assert [job.index for job in result.jobs] == [0, 1, 2, 3]
    assert result.jobs[1].problems[0].path == "jobs[1].name"
    assert (
        result.jobs[2].problems[0].path == "jobs[2]" and "must be a job" in result.jobs[2].problems[0].message
    )
    assert {p.path for p in result.jobs[3].problems} == {"jobs[3].instance_count"}
    assert len(result.requests) == 1 and not result.ok


def test_a_name_used_twice_in_one_file_is_refused_the_second_time() -> None:
    result = parse([good_job(), good_job()])
    assert result.jobs[0].ok
    assert result.jobs[1].problems[0].path == "jobs[1].name"
    assert "also the name of jobs[0]" in result.jobs[1].problems[0].message


def test_a_single_job_file_reports_paths_as_jobs_0() -> None:
    job = only_job(parse(good_job(instance_count=0)))
    assert job.problems[0].path == "jobs[0].instance_count"


# --------------------------------------------------------------------------------------------------
# The mapping


def test_a_valid_job_maps_to_every_submit_service_job_and_create_training_job_field() -> None:
    job = only_job(parse([good_job()], bucket="drop", version_id="v1"))
    request = job.request
    assert request.job_name == "bert-ft-01"
    assert request.job_queue == "search-gpu"
    assert request.service_job_type == "SAGEMAKER_TRAINING"
    assert request.share_identifier == "ProdExp1" and request.quota_share_name is None
    assert request.scheduling_priority == 90
    assert request.retry_strategy == {
        "attempts": 3,
        "evaluateOnExit": [
            {"action": "RETRY", "onStatusReason": "Received status from SageMaker: InternalServerError*"},
            {"action": "RETRY", "onStatusReason": "Received status from SageMaker:InternalServerError*"},
            {"action": "EXIT", "onStatusReason": "*"},
        ],
    }
    # spot: the attempt may wait for capacity up to MaxWaitTimeInSeconds
    assert request.timeout_config == {"attemptDurationSeconds": 10800}
    # the token rides along as a tag: DescribeServiceJob does not return it, a retried submit needs it
    assert request.tags == {
        "project": "ranker",
        "shareplane:team": "ProdExp1",
        "shareplane:tier": "HIGHPRI",
        "shareplane:submission": client_token("drop", KEY, "v1", 0),
    }
    assert request.client_token == client_token("drop", KEY, "v1", 0)
    assert payload_of(job) == {
        "TrainingJobName": "bert-ft-01",
        "AlgorithmSpecification": {
            "TrainingImage": f"{DLC}:2.6.0-gpu",
            "TrainingInputMode": "File",
            "ContainerEntrypoint": ["torchrun"],
            "ContainerArguments": ["--nproc_per_node", "8", "train.py"],
        },
        "RoleArn": ROLE,
        "InputDataConfig": [
            {
                "ChannelName": "train",
                "DataSource": {
                    "S3DataSource": {
                        "S3DataType": "S3Prefix",
                        "S3Uri": "s3://datasets/prodexp1/train/",
                        "S3DataDistributionType": "FullyReplicated",
                    }
                },
            },
            {
                "ChannelName": "val",
                "DataSource": {
                    "S3DataSource": {
                        "S3DataType": "S3Prefix",
                        "S3Uri": "s3://shared/corpora/val.jsonl",
                        "S3DataDistributionType": "FullyReplicated",
                    }
                },
            },
        ],
        "OutputDataConfig": {"S3OutputPath": "s3://training/prodexp1/output/"},
        "ResourceConfig": {"InstanceType": "ml.p4d.24xlarge", "InstanceCount": 4, "VolumeSizeInGB": 200},
        "StoppingCondition": {"MaxRuntimeInSeconds": 7200, "MaxWaitTimeInSeconds": 10800},
        "EnableManagedSpotTraining": True,
        "CheckpointConfig": {
            "S3Uri": "s3://training/prodexp1/ckpt/bert-ft-01/",
            "LocalPath": CHECKPOINT_LOCAL_PATH,
        },
        # numbers and booleans become text the way the SageMaker SDK writes them
        "HyperParameters": {"epochs": "3", "lr": "0.0001", "bf16": "true", "model": "bert-large"},
        "Environment": {"NCCL_DEBUG": "WARN"},
        "Tags": [
            {"Key": "project", "Value": "ranker"},
            {"Key": "shareplane:team", "Value": "ProdExp1"},
            {"Key": "shareplane:tier", "Value": "HIGHPRI"},
        ],
    }


def test_a_minimal_job_gets_defaults_and_leaves_out_optional_payload_parts() -> None:
    minimal = {
        "name": "m",
        "instance_type": "ml.p4d.24xlarge",
        "framework": "pytorch",
        "framework_version": "2.6.0",
        "output_path": "s3://training/prodexp1/o/",
    }
    job = only_job(parse(minimal))
    payload = payload_of(job)
    assert "InputDataConfig" not in payload and "CheckpointConfig" not in payload
    assert "ContainerEntrypoint" not in payload["AlgorithmSpecification"]
    assert payload["StoppingCondition"] == {"MaxRuntimeInSeconds": 86400}
    assert payload["EnableManagedSpotTraining"] is False
    assert payload["ResourceConfig"] == {
        "InstanceType": "ml.p4d.24xlarge",
        "InstanceCount": 1,
        "VolumeSizeInGB": 100,
    }
    assert job.request.timeout_config == {"attemptDurationSeconds": 86400}
    assert job.request.retry_strategy["attempts"] == 2  # the team's default
    assert job.request.scheduling_priority == 50  # MIDPRI when no tier is given


@pytest.mark.parametrize(
    ("mode", "present", "absent"),
    [("fairshare", "shareIdentifier", "quotaShareName"), ("quota", "quotaShareName", "shareIdentifier")],
    ids=["a fair-share cluster sets shareIdentifier only", "a quota cluster sets quotaShareName only"],
)
def test_the_share_field_follows_the_scheduling_mode(mode: str, present: str, absent: str) -> None:
    config = SharesConfig.model_validate(config_dict(mode=mode))
    request = only_job(parse([good_job()], config=config)).request.aws_fields()
    assert request[present] == "ProdExp1" and absent not in request


@pytest.mark.parametrize(
    ("tier", "priority"),
    [("HIGHPRI", 90), ("MIDPRI", 50), ("LOWPRI", 0)],
    ids=[
        "HIGHPRI gets its tier's priority",
        "MIDPRI gets its tier's priority",
        "a priority of 0 is kept, not dropped",
    ],
)
def test_scheduling_priority_comes_from_the_tier(tier: str, priority: int) -> None:
    request = only_job(parse([good_job(priority=tier)])).request
    assert request.scheduling_priority == priority


def test_a_cpu_job_goes_to_the_fifo_queue_without_share_or_priority() -> None:
    job = only_job(parse([good_job(instance_type="ml.c5.xlarge", instance_count=2)]))
    assert job.request.job_queue == "search-cpu-fifo"
    assert not {"shareIdentifier", "quotaShareName", "schedulingPriority"} & set(job.request.aws_fields())
    assert payload_of(job)["AlgorithmSpecification"]["TrainingImage"] == f"{DLC}:2.6.0-cpu"


def test_a_custom_image_is_used_as_given() -> None:
    image = f"{ECR}/prodexp1/train@sha256:{'a' * 64}"
    job = only_job(parse([good_job(framework=DROP, framework_version=DROP, image=image)]))
    assert payload_of(job)["AlgorithmSpecification"]["TrainingImage"] == image


def test_the_gpu_queue_defaults_to_the_cluster_name() -> None:
    raw = config_dict()
    del raw["queues"]["gpu"]
    request = only_job(parse([good_job()], config=SharesConfig.model_validate(raw))).request
    assert request.job_queue == "search-gpu"
    raw["cluster"] = "other"
    request = only_job(parse([good_job()], config=SharesConfig.model_validate(raw))).request
    assert request.job_queue == "other-gpu"


def test_the_payload_is_canonical_json_and_its_digest_is_its_sha256() -> None:
    job = only_job(parse([good_job()]))
    text = job.request.service_request_payload
    assert canonical_json(json.loads(text)) == text
    assert job.payload_digest == hashlib.sha256(text.encode()).hexdigest()


def test_the_same_object_version_maps_to_the_same_requests() -> None:
    first = parse([good_job(name="a"), good_job(name="b")], bucket="drop", version_id="v1")
    again = parse([good_job(name="a"), good_job(name="b")], bucket="drop", version_id="v1")
    assert first.requests == again.requests
    assert [j.payload_digest for j in first.jobs] == [j.payload_digest for j in again.jobs]


def test_a_tier_the_team_is_not_allowed_is_refused_naming_the_allowance() -> None:
    # GIVEN ProdExp1 allowed MIDPRI and LOWPRI only
    config = with_team(allowed_tiers=["MIDPRI", "LOWPRI"])
    # THEN its HIGHPRI job is refused, naming the field and the fix; MIDPRI passes
    (job,) = parse([good_job(priority="HIGHPRI")], config).jobs
    (problem,) = [p for p in job.problems if p.path == "jobs[0].priority"]
    assert "HIGHPRI is not allowed for team ProdExp1" in problem.message
    assert "teams.ProdExp1.allowed_tiers" in problem.fix
    assert only_job(parse([good_job(priority="MIDPRI")], config)).request is not None
    # AND without an allowance every tier is allowed
    assert only_job(parse([good_job(priority="HIGHPRI")])).request is not None
    # AND a CPU job (FIFO: no tier) is not checked
    assert only_job(parse([good_job(priority="HIGHPRI", instance_type="ml.c5.xlarge")], config)).request


def test_a_checkpoint_path_is_a_folder_so_no_other_run_shares_its_keys() -> None:
    folder = good_job()["checkpoint_path"]
    assert folder.endswith("/")
    (job,) = parse([good_job(checkpoint_path=folder.rstrip("/"))]).jobs
    (problem,) = [p for p in job.problems if p.path == "jobs[0].checkpoint_path"]
    assert "does not end in '/'" in problem.message and problem.fix == f"end it with a slash: {folder!r}"


def test_client_tokens_are_distinct_across_versions_indices_keys_and_buckets() -> None:
    tokens = {
        client_token(bucket, key, version, index)
        for bucket in ("drop", "drop2")
        for key in (KEY, "submit/ProdExp1/other.yaml")
        for version in (None, "v1", "v2")
        for index in range(3)
    }
    assert len(tokens) == 2 * 2 * 3 * 3
    assert all(1 <= len(t) <= 64 for t in tokens)
    result = parse([good_job(name="a"), good_job(name="b")], bucket="drop", version_id="v1")
    assert result.jobs[0].request.client_token != result.jobs[1].request.client_token


@given(
    bucket=st.text(max_size=64),
    key=st.text(max_size=300),
    version=st.none() | st.text(max_size=64),
    index=st.integers(0, MAX_JOBS_PER_FILE),
)
def test_client_tokens_always_fit_batch_limits(
    bucket: str, key: str, version: str | None, index: int
) -> None:
    token = client_token(bucket, key, version, index)
    assert len(token) == 64 and token == client_token(bucket, key, version, index)


def test_a_version_id_does_not_change_the_payload() -> None:
    v1 = parse([good_job()], bucket="drop", version_id="v1").jobs[0]
    v2 = parse([good_job()], bucket="drop", version_id="v2").jobs[0]
    assert v1.payload_digest == v2.payload_digest
    assert v1.request.client_token != v2.request.client_token


def test_results_serialize_to_json_with_errors_and_requests() -> None:
    result = parse([good_job(), good_job(name="x_y")])
    out = json.loads(json.dumps(result.as_dict()))
    assert out["valid"] is False and out["team"] == "ProdExp1"
    assert out["jobs"][0]["valid"] is True and out["jobs"][0]["request"]["jobName"] == "bert-ft-01"
    assert out["jobs"][1]["errors"][0].keys() == {"path", "message", "fix"}
    assert "request" not in out["jobs"][1]


def test_parsing_does_not_modify_the_config() -> None:
    config = SharesConfig.model_validate(config_dict())
    before = config.model_dump()
    parse([good_job(), good_job(name="b", instance_count=999)], config=config)
    assert config.model_dump() == before


# --------------------------------------------------------------------------------------------------
# Local files (the CLI path)


def test_a_local_spec_takes_its_team_from_the_spec() -> None:
    result = parse_local_spec(dump(good_job()), "jobs.yaml", CONFIG)
    assert result.ok and result.key == "submit/ProdExp1/jobs.yaml"


def test_a_local_spec_without_a_team_asks_for_one() -> None:
    result = parse_local_spec(dump(good_job(team=DROP)), "jobs.yaml", CONFIG)
    assert [p.path for p in result.problems] == ["team"] and "--team" in result.problems[0].fix
    assert parse_local_spec(dump(good_job(team=DROP)), "jobs.yaml", CONFIG, team="ProdExp1").ok


def test_a_local_spec_checked_as_another_team_is_refused() -> None:
    result = parse_local_spec(dump(good_job()), "jobs.yaml", CONFIG, team="ProdExp2")
    assert any(p.path == "jobs[0].team" for p in result.jobs[0].problems)


def test_a_local_spec_with_an_illegal_file_name_is_refused_as_its_key_would_be() -> None:
    result = parse_local_spec(dump(good_job()), "jobs.txt", CONFIG)
    assert [p.path for p in result.problems] == ["key"]


def test_team_in_spec_reads_the_first_job_that_names_a_team() -> None:
    assert team_in_spec(dump([good_job(team=DROP), good_job(team="ProdExp2")])) == "ProdExp2"
    assert team_in_spec(b"\x00") is None


# --------------------------------------------------------------------------------------------------
# Config rules for the job-spec fields


CONFIG_CASES = [
    (
        "a default retry above the team maximum is refused",
        lambda raw: raw["teams"]["ProdExp1"].update(default_retry_attempts=4),
        "default_retry_attempts",
    ),
    (
        "an allowed instance type the cluster lacks is refused",
        lambda raw: raw["teams"]["ProdExp1"].update(allowed_instance_types=["ml.p5.48xlarge"]),
        "allowed_instance_types",
    ),
    (
        "an allowed framework the config lacks is refused",
        lambda raw: raw["teams"]["ProdExp1"].update(allowed_frameworks=["jax"]),
        "allowed_frameworks",
    ),
    (
        "CPU instance types without a FIFO queue are refused",
        lambda raw: raw["queues"].pop("cpu_fifo"),
        "cpu_fifo",
    ),
    (
        "an instance type in both queues is refused",
        lambda raw: raw["queues"]["cpu_instance_types"].update({"ml.g6.12xlarge": {"capacity": 1}}),
        "cpu_instance_types",
    ),
]


@pytest.mark.parametrize(("edit", "field"), [c[1:] for c in CONFIG_CASES], ids=[c[0] for c in CONFIG_CASES])
def test_inconsistent_job_spec_config_is_refused(edit: Any, field: str) -> None:
    raw = config_dict()
    edit(raw)
    with pytest.raises(ConfigError) as info:
        SharesConfig.model_validate(raw)
    assert field in info.value.field


@pytest.mark.parametrize(
    "field_value",
    [
        {"input_prefixes": ["s3://datasets/prodexp1"]},
        {"output_prefixes": ["/local/"]},
        {"execution_role_arn": "arn:aws:iam::1:role/x"},
    ],
    ids=[
        "a prefix without a trailing slash is refused",
        "a prefix that is not S3 is refused",
        "a malformed role ARN is refused",
    ],
)
def test_malformed_team_grants_are_refused(field_value: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        with_team(**field_value)


def test_a_team_without_grants_defaults_to_deny() -> None:
    result = parse(
        [good_job(output_path="s3://training/prodexp2/o/", checkpoint_path=DROP, inputs={})],
        key="submit/ProdExp2/a.yaml",
    )
    messages = " ".join(p.message for p in result.jobs[0].problems)
    assert "no execution role" in messages and "no output prefixes" in messages


# --------------------------------------------------------------------------------------------------
# Fuzz: no input makes the parser raise, and every file and job gets an answer


scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20)
documents = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)
FIELDS = list(good_job())


def check_answer(result: SpecResult) -> None:
    assert answered(result), result
    json.dumps(result.as_dict(), allow_nan=False)
    for problem in (*result.problems, *(p for job in result.jobs for p in job.problems)):
        assert problem.path and problem.message and problem.fix


FUZZ = settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(data=st.binary(max_size=2048), key=st.sampled_from([KEY, "submit/ProdExp1/a.json", "x/y"]))
def test_random_bytes_never_raise(data: bytes, key: str) -> None:
    check_answer(parse_spec_file(data, key, CONFIG))


@FUZZ
@given(document=documents)
def test_random_yaml_never_raises(document: Any) -> None:
    check_answer(parse_spec_file(yaml.safe_dump(document).encode(), KEY, CONFIG))
    check_answer(parse_spec_file(json.dumps(document).encode(), "submit/ProdExp1/a.json", CONFIG))


@FUZZ
@given(
    jobs=st.lists(
        st.tuples(
            st.dictionaries(st.sampled_from([*FIELDS, "role", "extra"]), documents, max_size=3),
            st.lists(st.sampled_from(FIELDS), max_size=3),
        ),
        min_size=1,
        max_size=4,
    ),
    as_json=st.booleans(),
)
def test_mutated_valid_specs_never_raise(jobs: list[tuple[dict[str, Any], list[str]]], as_json: bool) -> None:
    # GIVEN valid jobs with some fields replaced by random values and some removed
    document = []
    for index, (replaced, removed) in enumerate(jobs):
        job = good_job(name=f"job-{index}")
        job.update(replaced)
        for name in removed:
            job.pop(name, None)
        document.append(job)
    data = json.dumps(document).encode() if as_json else yaml.safe_dump(document).encode()
    result = parse_spec_file(data, "submit/ProdExp1/a.json" if as_json else KEY, CONFIG, bucket="b")
    check_answer(result)
    if result.problems:
        # only JSON with NaN/Infinity (json.dumps writes them) is unreadable as a whole
        assert as_json and "not a number JSON allows" in result.problems[0].message
        return
    # a job left untouched is still accepted
    names = [job.get("name") for job in document]
    for (replaced, removed), job_result in zip(jobs, result.jobs, strict=True):
        if not replaced and not removed and names.count(job_result.name) == 1:
            assert job_result.ok


@FUZZ
@given(st.data())
def test_corrupted_spec_text_never_raises(data: st.DataObject) -> None:
    text = bytearray(dump([good_job(), good_job(name="b", spot=False, max_wait_seconds=DROP)]))
    for _ in range(data.draw(st.integers(1, 5))):
        position = data.draw(st.integers(0, len(text) - 1))
        action = data.draw(st.sampled_from(["flip", "insert", "delete"]))
        byte = data.draw(st.integers(0, 255))
        if action == "flip":
            text[position] = byte
        elif action == "insert":
            text.insert(position, byte)
        else:
            del text[position]
    check_answer(parse_spec_file(bytes(text), KEY, CONFIG))


@FUZZ
@given(
    key=st.text(max_size=80)
    | st.builds(lambda team, name: f"submit/{team}/{name}", st.text(max_size=12), st.text(max_size=12))
)
def test_any_key_either_names_a_team_or_raises_invalid_input(key: str) -> None:
    try:
        team = team_from_key(key)
    except InvalidInputError as exc:
        assert exc.field == "key"
    else:
        assert key == f"submit/{team}/{key.split('/')[2]}"
    check_answer(parse_spec_file(dump(good_job()), key, CONFIG))


@FUZZ
@given(document=documents)
def test_parsing_is_deterministic(document: Any) -> None:
    data = yaml.safe_dump([good_job(), document]).encode()
    assert parse_spec_file(data, KEY, CONFIG) == parse_spec_file(data, KEY, CONFIG)


@FUZZ
@given(
    document=documents,
    extra=st.sampled_from(["", "x: &a 1\n", "x: !!str 1\n", "x: 1\nx: 2\n", "<<: {a: 1}\n"]),
)
def test_the_libyaml_and_pure_python_loaders_agree(document: Any, extra: str) -> None:
    # The fast loader must keep every guard of the pure-Python one: same data, same refusals.
    text = yaml.safe_dump({"doc": document}) + extra
    outcomes = []
    for loader in (jobspec.reading._SpecLoader, jobspec.reading._Loader):
        try:
            outcomes.append(("data", yaml.load(text, Loader=loader)))  # noqa: S506
        except jobspec.reading._Refused as exc:
            outcomes.append(("refused", str(exc)))
    assert outcomes[0] == outcomes[1]


_SEGMENT = st.text(alphabet="abcdefgh-_.0", min_size=1, max_size=6).filter(lambda s: s not in (".", ".."))


@FUZZ
@given(
    head=st.sampled_from(
        ["s3://datasets/prodexp1", "s3://shared/corpora", "s3://shared/corpor", "s3://datasets"]
    ),
    tail=st.lists(_SEGMENT, max_size=3).map("/".join),
    sep=st.sampled_from(["", "/", "-"]),
    slash=st.booleans(),
)
def test_an_accepted_input_uri_only_reads_keys_under_an_allowed_prefix(
    head: str, tail: str, sep: str, slash: bool
) -> None:
    # GIVEN an input URI near the team's prefixes (at one, inside it, extending its last segment)
    uri = head + sep + tail + ("/" if slash and tail else "")
    job = only_job(parse([good_job(inputs={"train": uri})]))
    reads_only_allowed = any(uri.startswith(p) for p in ("s3://datasets/prodexp1/", "s3://shared/corpora/"))
    # THEN it is accepted exactly when every key SageMaker reads under it (keys starting with the URI)
    # lies under an allowed prefix; a refusal names the input and a fix
    on_input = [p for p in job.problems if p.path == "jobs[0].inputs.train"]
    assert (not on_input) is reads_only_allowed, (uri, on_input)
    assert all(p.fix for p in on_input)
