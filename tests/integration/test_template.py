"""template.yaml's wiring: handler paths, rule patterns against events/*.json, DLQs, IAM, config, env."""

from __future__ import annotations

import ast
import copy
import importlib.metadata
import importlib.util
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from moto.events.models import EventPattern
from shareplane.domain.config.shares import SharesConfig

from tests.conftest import REPO
from tests.template import raw_template, ref_target, resources

EVENTS = REPO / "events"
CORE = REPO / "layers" / "core"

#: Which rule each kind of event must reach. Written out here, independently of the template, so a
#: pattern that is too wide (or too narrow) fails instead of agreeing with itself.
RULE_FOR_DETAIL_TYPE = {
    ("aws.batch", "Batch Service Job State Change"): "BatchServiceJobStateChangeRule",
    ("aws.batch", "Batch Service Job Preemption Started"): "BatchServiceJobPreemptionRule",
    ("aws.batch", "Batch Service Job Preemption Completed"): "BatchServiceJobPreemptionRule",
    ("aws.batch", "Batch Service Job Queue Blocked"): "BatchJobQueueBlockedRule",
    ("aws.sagemaker", "SageMaker Training Job State Change"): "SageMakerTrainingJobStateChangeRule",
    ("aws.s3", "Object Created"): "SubmitSpecObjectCreatedRule",
    ("aws.s3", "AWS API Call via CloudTrail"): "UploaderCloudTrailRule",
}

#: Schedule rules each take only their own Scheduled Event (its resources name the rule), by sample.
SCHEDULE_RULE_FOR_SAMPLE = {
    "scheduled_event_rebalance_shares.json": "RebalanceSharesSchedule",
    "scheduled_event_watch_jobs.json": "WatchJobsSchedule",
    "scheduled_event_reclaim_capacity.json": "ReclaimCapacitySchedule",
    "scheduled_event_detect_idle.json": "DetectIdleSchedule",
}

#: The failure path takes some events a second time (FAILED service jobs, training jobs that Failed
#: or Stopped, preemptions, blocked queues): which of its rules each event must reach, by content.
FAILURE_RULES = {"HandleFailureJobFailedRule", "HandleFailureTrainingJobRule", "HandleFailureTroubleRule"}
#: Reclaim takes every service job becoming RUNNABLE (it checks the queue and tier itself).
RECLAIM_RULES = {"ReclaimCapacityRunnableRule"}


def failure_rules_for(event: dict[str, Any]) -> set[str]:
    """The failure-path rule an event must also reach (empty for most)."""
    detail, kind = event.get("detail") or {}, event.get("detail-type")
    if kind == "Batch Service Job State Change" and detail.get("status") == "FAILED":
        return {"HandleFailureJobFailedRule"}
    if kind == "SageMaker Training Job State Change" and detail.get("TrainingJobStatus") in (
        "Failed",
        "Stopped",
    ):
        return {"HandleFailureTrainingJobRule"}
    if kind in ("Batch Service Job Preemption Completed", "Batch Service Job Queue Blocked"):
        return {"HandleFailureTroubleRule"}
    if kind == "Batch Service Job State Change" and detail.get("status") == "RUNNABLE":
        return RECLAIM_RULES
    return set()


#: Physical names the samples in events/ use for resources a rule pattern references with !Ref.
PATTERN_REF_STANDINS = {"DropBucket": "shareplane-dev-dropbucket-1a2b3c4d5e6f"}

#: Managed policies a function role may carry: X-Ray has no resource-level permissions, so its AWS
#: managed write-only policy is the narrowest grant there is.
ALLOWED_MANAGED_POLICIES = {"AWSXRayDaemonWriteAccess"}

#: IAM verbs that only read; every other verb counts as a write.
READ_VERBS = ("Get", "List", "Describe", "Query", "Scan", "BatchGet", "Receive", "Head")

#: Packages a Lambda already has from the Powertools layer. boto3 and botocore are not counted: the
#: runtime's own copy may predate the APIs the code calls, so CoreLayer ships the tested version.
PROVIDED_PACKAGES = {
    "jmespath",
    "aws-lambda-powertools",
    "pydantic",
    "pydantic-core",
    "typing-extensions",
    "aws-xray-sdk",
}

#: Lambda's limit on the total size of a function's environment variables (keys plus values).
LAMBDA_ENV_LIMIT_BYTES = 4096

#: Stand-in values for what CloudFormation resolves at deploy time, about as long as the real ones.
DEPLOY_TIME_STANDINS = {
    "Ref": "shareplane-prod-JobsTable-1A2B3C4D5E6F7",
    "Fn::FindInMap": "DEBUG",
    "Fn::GetAtt": "arn:aws:iam::123456789012:role/shareplane-prod-FailurePathSchedulerRole-1A2B3C4D5E6F",
}


# ---------------------------------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------------------------------
@cache
def _translated_template() -> dict[str, Any]:
    from samtranslator.translator.transform import transform

    template = raw_template()
    # The translator wants S3 locations; `sam build`/`sam deploy` put the code there.
    for resource in template["Resources"].values():
        if resource["Type"] == "AWS::Serverless::Function":
            resource["Properties"]["CodeUri"] = "s3://bucket/code.zip"
        elif resource["Type"] == "AWS::Serverless::LayerVersion":
            resource["Properties"]["ContentUri"] = "s3://bucket/layer.zip"

    class NoManagedPolicies:
        def load(self) -> dict[str, str]:
            return {}

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AWS_DEFAULT_REGION", "us-east-1")
        return transform(template, {}, NoManagedPolicies())


def translated_template() -> dict[str, Any]:
    """The plain CloudFormation SAM makes of the template: Globals merged, generated resources added."""
    return copy.deepcopy(_translated_template())


def sample_events() -> list[Path]:
    """Every EventBridge sample in events/."""
    return sorted(EVENTS.glob("*.json"))


def _standin_refs(node: Any) -> Any:
    if isinstance(node, dict):
        if set(node) == {"Ref"} and node["Ref"] in PATTERN_REF_STANDINS:
            return PATTERN_REF_STANDINS[node["Ref"]]
        return {k: _standin_refs(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_standin_refs(v) for v in node]
    return node


def schedule_pattern(logical_id: str) -> dict[str, Any]:
    """What a schedule rule takes: its own Scheduled Event, whose resources name the rule's ARN.

    CloudFormation names an unnamed rule ``<stack>-<LogicalId>-<suffix>``, so the ARN holds the id.
    """
    return {
        "source": ["aws.events"],
        "detail-type": ["Scheduled Event"],
        "resources": [{"wildcard": f"*:rule/*-{logical_id}-*"}],
    }


def rule_patterns() -> dict[str, dict[str, Any]]:
    """Rule logical id -> its EventPattern (a !Ref to a resource of the stack stood in by its sample name)."""
    return {
        k: _standin_refs(r["Properties"]["EventPattern"])
        if "EventPattern" in r["Properties"]
        else schedule_pattern(k)
        for k, r in resources(raw_template(), "AWS::Events::Rule").items()
    }


def matching_rules(event: dict[str, Any]) -> set[str]:
    """The rules whose pattern matches an event, by EventBridge's matching rules (moto's engine)."""
    return {
        rule
        for rule, pattern in rule_patterns().items()
        if EventPattern.load(json.dumps(pattern)).matches_event(event)
    }


def functions() -> dict[str, dict[str, Any]]:
    """Lambda functions after translation (Globals merged in)."""
    return resources(translated_template(), "AWS::Lambda::Function")


def serverless_functions() -> dict[str, dict[str, Any]]:
    """AWS::Serverless::Function resources as written."""
    return resources(raw_template(), "AWS::Serverless::Function")


def deployed_environment(function_id: str) -> dict[str, str]:
    """A function's environment with deploy-time values stood in for by realistic strings."""
    variables = functions()[function_id]["Properties"]["Environment"]["Variables"]
    defaults = {k: p.get("Default") for k, p in raw_template()["Parameters"].items()}
    resolved: dict[str, str] = {}
    for key, value in variables.items():
        if isinstance(value, str):
            resolved[key] = value
        elif "Ref" in value and defaults.get(value["Ref"]) is not None:
            resolved[key] = str(defaults[value["Ref"]])
        else:
            (intrinsic,) = value
            resolved[key] = DEPLOY_TIME_STANDINS[intrinsic]
    return resolved


def iam_statements(template: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(owner logical id, statement) for every identity-policy statement in a template."""
    for logical_id, resource in template["Resources"].items():
        props = resource.get("Properties", {})
        documents = []
        if resource["Type"] == "AWS::IAM::Role":
            documents = [p["PolicyDocument"] for p in props.get("Policies", [])]
        elif resource["Type"] in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
            documents = [props["PolicyDocument"]]
        for document in documents:
            statements = document["Statement"]
            yield from (
                (logical_id, s) for s in (statements if isinstance(statements, list) else [statements])
            )


def as_list(value: Any) -> list[Any]:
    """A scalar or a list, as a list."""
    return value if isinstance(value, list) else [value]


def is_write(action: str) -> bool:
    """True unless the IAM action only reads."""
    verb = action.split(":", 1)[-1]
    return not verb.startswith(READ_VERBS)


def resource_text(resource: Any) -> str:
    """An IAM Resource as text: !GetAtt X.Arn -> ${X.Arn}, !Sub kept as written."""
    if isinstance(resource, str):
        return resource
    if "Fn::GetAtt" in resource:
        target = resource["Fn::GetAtt"]
        return "${" + (".".join(target) if isinstance(target, list) else target) + "}"
    if "Fn::Sub" in resource:
        sub = resource["Fn::Sub"]
        return sub if isinstance(sub, str) else sub[0]
    if "Ref" in resource:
        return "${" + resource["Ref"] + "}"
    return json.dumps(resource)


def is_unscoped(resource: Any) -> bool:
    """True for '*' and for ARNs with a wildcard before the resource name (service, region, account)."""
    text = resource_text(resource)
    if text.startswith("${"):
        return False  # a resource of this stack
    return text == "*" or "*" in ":".join(text.split(":")[:5])


#: Where the Lambda code reads its environment: the process's, and the composition root's mapping of it.
ENVIRONMENTS = ("os.environ", "self.environ")


def env_keys_read_by(path: Path) -> set[str]:
    """Environment variable names a module reads (os.environ[...], os.environ.get(...), os.getenv(...),
    and the same through the composition root's ``self.environ``)."""
    keys: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        key: ast.expr | None = None
        if isinstance(node, ast.Subscript) and ast.unparse(node.value) in ENVIRONMENTS:
            key = node.slice
        elif (
            isinstance(node, ast.Call)
            and ast.unparse(node.func) in (*(f"{e}.get" for e in ENVIRONMENTS), "os.getenv")
            and node.args
        ):
            key = node.args[0]
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            keys.add(key.value)
    return keys


def lambda_code_files() -> list[Path]:
    """Every Python file that ships in a Lambda artifact: the core layer and the function directories."""
    files = sorted((CORE / "shareplane").rglob("*.py"))
    for function in serverless_functions().values():
        files += sorted((REPO / function["Properties"]["CodeUri"]).rglob("*.py"))
    return files


def handler_location(function: dict[str, Any]) -> tuple[Path, str]:
    """(module file, function name) a Serverless::Function's CodeUri + Handler point at."""
    props = function["Properties"]
    handler = props.get("Handler") or raw_template()["Globals"]["Function"]["Handler"]
    module, _, name = handler.rpartition(".")
    return REPO / props["CodeUri"] / (module.replace(".", "/") + ".py"), name


def shares_yaml_as_json() -> str:
    """config/shares.yaml in the one form the template's SharesConfigParameter value must take."""
    data = yaml.safe_load((REPO / "config" / "shares.yaml").read_text())
    return json.dumps(data, separators=(",", ":"), sort_keys=True)


# ---------------------------------------------------------------------------------------------------
# Handlers
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "function_id", sorted(serverless_functions()), ids=lambda f: f"{f} points at a real handler"
)
def test_code_uri_and_handler_name_an_existing_function(
    function_id: str, monkeypatch: pytest.MonkeyPatch, aws_credentials: None
) -> None:
    # GIVEN the environment the template gives the function
    path, name = handler_location(serverless_functions()[function_id])
    assert path.is_file(), (
        f"{function_id}: CodeUri + Handler point at {path.relative_to(REPO)}, which does not exist"
    )
    for key, value in deployed_environment(function_id).items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "1")
    # WHEN the file is imported by path (every handler is app.py, so never as module `app`)
    module_name = f"shareplane_template_check_{function_id}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, module_name, module)
    spec.loader.exec_module(module)
    # THEN it defines the handler the template names
    assert callable(getattr(module, name, None)), f"{path.relative_to(REPO)} defines no function {name!r}"


@pytest.mark.parametrize(
    "function_id", sorted(serverless_functions()), ids=lambda f: f"{f} imports no SageMaker SDK"
)
def test_handler_import_loads_no_sagemaker_sdk(function_id: str) -> None:
    # A fresh interpreter, because this test process has imported yaml itself.
    path, _ = handler_location(serverless_functions()[function_id])
    probe = (
        "import importlib.util, json, sys\n"
        f"spec = importlib.util.spec_from_file_location('handler_probe', {str(path)!r})\n"
        "module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} & {'sagemaker'})))\n"
    )
    env = {
        **os.environ,
        **deployed_environment(function_id),
        "POWERTOOLS_TRACE_DISABLED": "1",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=False
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.splitlines()[-1]) == [], (
        "the SageMaker SDK costs seconds of cold start; Lambda code never imports it"
    )


# ---------------------------------------------------------------------------------------------------
# EventBridge rules against the samples
# ---------------------------------------------------------------------------------------------------
def test_events_directory_has_samples() -> None:
    assert len(sample_events()) >= len(
        set(RULE_FOR_DETAIL_TYPE.values()) | set(SCHEDULE_RULE_FOR_SAMPLE.values())
    )


@pytest.mark.parametrize("path", sample_events(), ids=lambda p: f"{p.name} reaches exactly its one rule")
def test_each_sample_is_matched_by_exactly_its_rule(path: Path) -> None:
    event = json.loads(path.read_text())
    key = (event.get("source"), event.get("detail-type"))
    expected = SCHEDULE_RULE_FOR_SAMPLE.get(path.name) or RULE_FOR_DETAIL_TYPE.get(key)
    assert expected, f"{path.name}: no rule is meant to take {key}; add one and list it here"
    assert matching_rules(event) == {expected} | failure_rules_for(event)


@pytest.mark.parametrize("rule", sorted(rule_patterns()), ids=lambda r: f"{r} has a sample it matches")
def test_every_rule_matches_at_least_one_sample(rule: str) -> None:
    matched = [p.name for p in sample_events() if rule in matching_rules(json.loads(p.read_text()))]
    assert matched, f"{rule} matches no file in events/; add a realistic sample for it"


def test_rules_named_in_this_test_exist_in_the_template() -> None:
    named = (
        set(RULE_FOR_DETAIL_TYPE.values())
        | set(SCHEDULE_RULE_FOR_SAMPLE.values())
        | FAILURE_RULES
        | RECLAIM_RULES
    )
    assert named == set(rule_patterns())


@pytest.mark.parametrize(
    "path", sample_events(), ids=lambda p: f"{p.name} from a custom source matches nothing"
)
def test_rules_only_take_aws_sources(path: Path) -> None:
    # GIVEN a sample re-published by someone else (custom producers cannot use aws.* sources)
    event = {**json.loads(path.read_text()), "source": "shareplane.test"}
    # THEN no rule takes it: every pattern pins its source
    assert matching_rules(event) == set()


def test_sagemaker_rule_ignores_training_jobs_not_started_by_batch() -> None:
    # GIVEN a training job someone created directly in SageMaker, outside the Batch queues
    path = next(p for p in sample_events() if json.loads(p.read_text())["source"] == "aws.sagemaker")
    event = json.loads(path.read_text())
    event["detail"]["TrainingJobName"] = "notebook-experiment-7"
    # THEN it is not recorded
    assert matching_rules(event) == set()


# ---------------------------------------------------------------------------------------------------
# Queues, DLQs, targets
# ---------------------------------------------------------------------------------------------------
def dead_letter_queues() -> set[str]:
    """Queues some other queue redrives into."""
    return {
        ref_target(q["Properties"]["RedrivePolicy"]["deadLetterTargetArn"])
        for q in resources(raw_template(), "AWS::SQS::Queue").values()
        if "RedrivePolicy" in q["Properties"]
    }


def source_queues() -> list[str]:
    """Queues that feed a consumer (everything that is not a DLQ)."""
    return sorted(set(resources(raw_template(), "AWS::SQS::Queue")) - dead_letter_queues())


def test_template_has_queues() -> None:
    assert source_queues() and dead_letter_queues()


@pytest.mark.parametrize("queue", source_queues(), ids=lambda q: f"{q} redrives into a DLQ that outlives it")
def test_every_queue_has_a_dlq_with_redrive(queue: str) -> None:
    queues = resources(raw_template(), "AWS::SQS::Queue")
    props = queues[queue]["Properties"]
    redrive = props.get("RedrivePolicy")
    assert redrive, f"{queue} has no RedrivePolicy: a poison message would retry until it expires"
    dlq = ref_target(redrive["deadLetterTargetArn"])
    assert dlq in queues and dlq != queue
    assert 2 <= redrive["maxReceiveCount"] <= 10
    # A message keeps its original enqueue time when moved, so the DLQ must keep messages longer.
    assert queues[dlq]["Properties"]["MessageRetentionPeriod"] == 14 * 24 * 3600
    assert queues[dlq]["Properties"]["MessageRetentionPeriod"] > props.get("MessageRetentionPeriod", 345600)


@pytest.mark.parametrize(
    "queue", sorted(resources(raw_template(), "AWS::SQS::Queue")), ids=lambda q: f"{q} is encrypted at rest"
)
def test_every_queue_is_encrypted(queue: str) -> None:
    props = resources(raw_template(), "AWS::SQS::Queue")[queue]["Properties"]
    assert props.get("SqsManagedSseEnabled") is True or "KmsMasterKeyId" in props


def sqs_event_sources() -> list[tuple[str, str, dict[str, Any]]]:
    """(function, event name, SQS event properties) for every SQS trigger."""
    return [
        (fid, name, event["Properties"])
        for fid, function in serverless_functions().items()
        for name, event in function["Properties"].get("Events", {}).items()
        if event["Type"] == "SQS"
    ]


@pytest.mark.parametrize(
    ("function_id", "event_name", "event"),
    sqs_event_sources(),
    ids=[f"{f}.{e} reports partial failures and outlasts retries" for f, e, _ in sqs_event_sources()],
)
def test_sqs_triggers_report_partial_failures_and_fit_the_visibility_timeout(
    function_id: str, event_name: str, event: dict[str, Any]
) -> None:
    assert event["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert event["BatchSize"] == 10 and event["MaximumBatchingWindowInSeconds"] == 1
    queue = resources(raw_template(), "AWS::SQS::Queue")[ref_target(event["Queue"])]
    assert ref_target(event["Queue"]) in source_queues(), "a function must not consume a DLQ"
    timeout = functions()[function_id]["Properties"]["Timeout"]
    # Lambda's guidance: visibility timeout >= 6x the function timeout plus the batching window.
    assert queue["Properties"]["VisibilityTimeout"] >= 6 * timeout + event["MaximumBatchingWindowInSeconds"]


def rule_targets() -> list[tuple[str, dict[str, Any]]]:
    """(rule, target) for every rule target."""
    return [
        (rule, target)
        for rule, resource in resources(raw_template(), "AWS::Events::Rule").items()
        for target in resource["Properties"]["Targets"]
    ]


@pytest.mark.parametrize(
    ("rule", "target"),
    rule_targets(),
    ids=[f"{r} -> {t['Id']} retries, dead-letters, is allowed in" for r, t in rule_targets()],
)
def test_rule_targets_retry_dead_letter_and_are_allowed_by_the_queue_policy(
    rule: str, target: dict[str, Any]
) -> None:
    queue, dlq = ref_target(target["Arn"]), ref_target(target["DeadLetterConfig"]["Arn"])
    assert queue in source_queues() and dlq in dead_letter_queues()
    assert target["RetryPolicy"]["MaximumRetryAttempts"] > 0
    assert 60 <= target["RetryPolicy"]["MaximumEventAgeInSeconds"] <= 86400
    # EventBridge needs sqs:SendMessage on both queues, and only from this stack's rules.
    for receiving in (queue, dlq):
        allowed = [
            statement
            for policy in resources(raw_template(), "AWS::SQS::QueuePolicy").values()
            if receiving in {ref_target(q) for q in policy["Properties"]["Queues"]}
            for statement in as_list(policy["Properties"]["PolicyDocument"]["Statement"])
            if statement["Effect"] == "Allow"
            and statement.get("Principal") == {"Service": "events.amazonaws.com"}
        ]
        assert allowed, f"no queue policy lets EventBridge send to {receiving}"
        for statement in allowed:
            assert as_list(statement["Action"]) == ["sqs:SendMessage"]
            sources = {ref_target(a) for a in as_list(statement["Condition"]["ArnEquals"]["aws:SourceArn"])}
            assert rule in sources, f"{receiving}'s policy does not name {rule} in aws:SourceArn"
            assert sources <= set(rule_patterns()), "only this stack's rules may send"


# ---------------------------------------------------------------------------------------------------
# IAM
# ---------------------------------------------------------------------------------------------------
def allow_statements() -> list[tuple[str, dict[str, Any]]]:
    """Allow statements of every identity policy in the translated template (SAM-generated included)."""
    return [(owner, s) for owner, s in iam_statements(translated_template()) if s["Effect"] == "Allow"]


def test_template_has_iam_statements() -> None:
    assert len(allow_statements()) >= 3


@pytest.mark.parametrize(
    ("owner", "statement"),
    allow_statements(),
    ids=[
        f"{o}.{s.get('Sid', i)} writes only to named resources" for i, (o, s) in enumerate(allow_statements())
    ],
)
def test_no_statement_allows_a_write_on_a_wildcard_resource(owner: str, statement: dict[str, Any]) -> None:
    actions = as_list(statement["Action"])
    assert not any("*" in action for action in actions), f"{owner}: wildcard action in {actions}"
    writes = [a for a in actions if is_write(a)]
    if writes:
        unscoped = [resource_text(r) for r in as_list(statement["Resource"]) if is_unscoped(r)]
        assert not unscoped, f"{owner}: {writes} on {unscoped}"


@pytest.mark.parametrize("function_id", sorted(functions()), ids=lambda f: f"{f} runs under its own role")
def test_every_function_has_a_template_role_with_only_allowed_managed_policies(function_id: str) -> None:
    template = translated_template()
    role_id = ref_target(functions()[function_id]["Properties"]["Role"])
    role = resources(template, "AWS::IAM::Role")[role_id]["Properties"]
    managed = {resource_text(arn).rsplit("/", 1)[-1] for arn in role.get("ManagedPolicyArns", [])}
    # SAM's generated roles carry AWSLambdaBasicExecutionRole and AWSLambdaSQSQueueExecutionRole (on "*").
    assert managed <= ALLOWED_MANAGED_POLICIES, f"{role_id} carries {managed - ALLOWED_MANAGED_POLICIES}"
    others = [
        fid
        for fid, f in functions().items()
        if fid != function_id and ref_target(f["Properties"]["Role"]) == role_id
    ]
    assert not others, f"{role_id} is shared with {others}"


def test_record_state_role_grants_exactly_the_table_actions_it_needs() -> None:
    statements = [s for owner, s in allow_statements() if owner == "RecordStateRole"]
    dynamodb = {a for s in statements for a in as_list(s["Action"]) if a.startswith("dynamodb:")}
    assert dynamodb == {
        "dynamodb:GetItem",
        "dynamodb:Query",
        "dynamodb:PutItem",
        # the alert ledger's confirm, when a refused call is alerted (service.permission_denied)
        "dynamodb:UpdateItem",
    }
    for statement in statements:
        for action in as_list(statement["Action"]):
            if action.startswith("dynamodb:") and is_write(action):
                # writes go to the table itself, never to an index ARN
                assert {resource_text(r) for r in as_list(statement["Resource"])} == {"${JobsTable.Arn}"}


def test_no_role_may_put_metric_data() -> None:
    # Metrics go out as EMF on stdout; PutMetricData from a handler costs an API call per flush.
    actions = {a for _, s in allow_statements() for a in as_list(s["Action"])}
    # Reading metrics is another matter: the idle detector reads training jobs' GPU metrics, alone.
    assert not {a for a in actions if a.startswith("cloudwatch:")} - {"cloudwatch:GetMetricData"}
    readers = {o for o, s in allow_statements() if "cloudwatch:GetMetricData" in as_list(s["Action"])}
    assert readers == {"DetectIdleRole"}


# ---------------------------------------------------------------------------------------------------
# Config, environment, layers
# ---------------------------------------------------------------------------------------------------
def shares_config_value() -> str:
    """The shares config the template stores in its SSM parameter."""
    return str(raw_template()["Resources"]["SharesConfigParameter"]["Properties"]["Value"])


def test_the_stored_shares_config_is_config_shares_yaml() -> None:
    assert shares_config_value() == shares_yaml_as_json(), (
        "template.yaml's SharesConfigParameter drifted from config/shares.yaml: run `shareplane config render`"
    )


def test_the_stored_shares_config_is_a_valid_config() -> None:
    assert SharesConfig.model_validate(json.loads(shares_config_value())).teams


def test_the_stored_shares_config_fits_an_advanced_ssm_parameter() -> None:
    props = raw_template()["Resources"]["SharesConfigParameter"]["Properties"]
    # SSM's advanced tier holds 8 KB a value (standard: 4 KB); the config is policy, so no stack parameter.
    assert props["Tier"] == "Advanced" and len(shares_config_value().encode()) <= 8192
    assert "SharesConfig" not in raw_template()["Parameters"]


def test_every_function_may_read_the_shares_config_and_nothing_else_of_ssm() -> None:
    # GIVEN every statement that grants an SSM action
    parameter = "arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter${SharesConfigParameter}"
    granted = [
        (o, s) for o, s in allow_statements() if any(a.startswith("ssm:") for a in as_list(s["Action"]))
    ]
    # THEN each is GetParameter on the one parameter, and every function's own role holds one
    for owner, statement in granted:
        assert as_list(statement["Action"]) == ["ssm:GetParameter"], owner
        assert [resource_text(r) for r in as_list(statement["Resource"])] == [parameter], owner
    roles = {ref_target(f["Properties"]["Role"]) for f in functions().values()}
    assert {owner for owner, _ in granted} == roles
    for function in functions().values():
        variables = function["Properties"]["Environment"]["Variables"]
        assert variables["SHAREPLANE_CONFIG_PARAMETER"] == {"Ref": "SharesConfigParameter"}


@pytest.mark.parametrize(
    "function_id", sorted(functions()), ids=lambda f: f"{f}'s environment fits Lambda's 4 KB"
)
def test_function_environment_fits_the_lambda_limit(function_id: str) -> None:
    size = sum(len(k.encode()) + len(v.encode()) for k, v in deployed_environment(function_id).items())
    assert size < LAMBDA_ENV_LIMIT_BYTES, f"{size} bytes; move the shares config out of the environment"


def test_lambda_code_reads_environment_variables() -> None:
    assert "TABLE_NAME" in set().union(*(env_keys_read_by(p) for p in lambda_code_files()))


@pytest.mark.parametrize(
    "function_id", sorted(functions()), ids=lambda f: f"{f} sets every variable the code reads"
)
def test_env_vars_read_by_the_code_are_set_on_every_function(function_id: str) -> None:
    read = set().union(*(env_keys_read_by(p) for p in lambda_code_files()))
    # AWS_* come from the Lambda runtime (or, locally, the endpoint overrides); they are not ours to set.
    ours = {k for k in read if not k.startswith(("AWS_", "_X_AMZN_", "LAMBDA_"))}
    variables = functions()[function_id]["Properties"]["Environment"]["Variables"]
    assert ours <= set(variables), f"{function_id} lacks {sorted(ours - set(variables))}"


def test_functions_get_the_core_and_powertools_layers_for_their_runtime_and_architecture() -> None:
    template = raw_template()
    function_globals = template["Globals"]["Function"]
    runtime, (arch,) = function_globals["Runtime"], function_globals["Architectures"]
    layer = resources(template, "AWS::Serverless::LayerVersion")["CoreLayer"]
    # Built by layers/core/Makefile (bytecode included), with the functions' runtime.
    assert (
        layer["Metadata"]["BuildMethod"] == "makefile"
        and runtime in layer["Properties"]["CompatibleRuntimes"]
    )
    makefile = (REPO / layer["Properties"]["ContentUri"] / "Makefile").read_text()
    assert "build-CoreLayer:" in makefile and f"PYTHON ?= {runtime}" in makefile
    assert "compileall" in makefile and "--invalidation-mode unchecked-hash" in makefile
    assert f"--python-version {runtime.removeprefix('python')}" in makefile
    assert arch in layer["Properties"]["CompatibleArchitectures"]
    assert (REPO / layer["Properties"]["ContentUri"] / "shareplane" / "bootstrap.py").is_file()
    core, powertools = function_globals["Layers"]
    assert ref_target(core) == "CoreLayer"
    _, pinned, override = powertools["Fn::If"]
    assert override == {"Ref": "PowertoolsLayerArn"}
    expected = (
        rf"^arn:aws:lambda:\$\{{AWS::Region\}}:017000801446:layer:AWSLambdaPowertoolsPythonV3-"
        rf"{runtime.replace('.', '')}-{arch}:\d+$"
    )
    assert re.match(expected, pinned["Fn::Sub"]), pinned


def test_core_layer_requirements_add_nothing_lambda_already_has() -> None:
    assert not layer_requirements() & PROVIDED_PACKAGES, layer_requirements()


@pytest.mark.parametrize("package", ["boto3", "botocore"])
def test_core_layer_pins_the_aws_sdk_the_tests_run_with(package: str) -> None:
    # The layer ships the SDK the code is tested with, not whatever the Lambda runtime bundles.
    pins = {
        name.strip().lower(): version.strip()
        for name, _, version in (
            line.split("#", 1)[0].partition("==")
            for line in (CORE / "requirements.txt").read_text().splitlines()
            if "==" in line.split("#", 1)[0]
        )
    }
    assert pins.get(package) == importlib.metadata.version(package), (
        f"layers/core/requirements.txt pins {package}=={pins.get(package)}, the tests run "
        f"{importlib.metadata.version(package)}: pin the tested version"
    )


def _is_type_checking(test: ast.expr) -> bool:
    """``TYPE_CHECKING`` or ``typing.TYPE_CHECKING``: a block only type checkers read."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """Every node that can run: the bodies of ``if TYPE_CHECKING:`` are skipped (their else is not)."""
    yield node
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for orelse in child.orelse:
                yield from _runtime_nodes(orelse)
            continue
        yield from _runtime_nodes(child)


def top_level_imports(path: Path) -> set[str]:
    """Top-level package names a module imports when it runs (absolute imports only).

    Imports under ``if TYPE_CHECKING:`` (the boto3 service stubs, say) never run, so Lambda needs none.
    """
    nodes = list(_runtime_nodes(ast.parse(path.read_text(), filename=str(path))))
    names = {alias.name for n in nodes if isinstance(n, ast.Import) for alias in n.names}
    names |= {n.module for n in nodes if isinstance(n, ast.ImportFrom) and n.module and n.level == 0}
    return {name.split(".")[0] for name in names}


def test_imports_under_type_checking_do_not_count_and_all_others_do(tmp_path: Path) -> None:
    module = tmp_path / "module.py"
    module.write_text(
        "import typing\n"
        "from typing import TYPE_CHECKING\n"
        "import yaml\n"
        "if TYPE_CHECKING:\n"
        "    from mypy_boto3_batch import BatchClient\n"
        "else:\n"
        "    import json\n"
        "if typing.TYPE_CHECKING:\n"
        "    import mypy_boto3_s3\n"
        "def handler() -> None:\n"
        "    import botocore.config\n"
        "    if TYPE_CHECKING:\n"
        "        import types_boto3\n"
    )
    assert top_level_imports(module) == {"typing", "yaml", "json", "botocore"}


@cache
def installed_distributions() -> dict[str, list[str]]:
    """Top-level module -> the distributions that provide it (read once: it walks every installed one)."""
    return dict(importlib.metadata.packages_distributions())


@cache
def layer_requirements() -> set[str]:
    """Normalised distribution names in layers/core/requirements.txt."""
    lines = (CORE / "requirements.txt").read_text().splitlines()
    return {
        re.split(r"[\s\[<>=!~;]", line.strip(), maxsplit=1)[0].lower().replace("_", "-")
        for line in lines
        if line.strip() and not line.lstrip().startswith("#")
    }


@pytest.mark.parametrize(
    "path", lambda_code_files(), ids=lambda p: f"{p.relative_to(REPO)} imports no SageMaker SDK"
)
def test_lambda_code_never_imports_the_sagemaker_sdk(path: Path) -> None:
    # The SDK costs seconds of cold start; Lambda code builds CreateTrainingJob requests itself.
    assert "sagemaker" not in top_level_imports(path)


@pytest.mark.parametrize(
    "path", lambda_code_files(), ids=lambda p: f"{p.relative_to(REPO)} imports only what Lambda will have"
)
def test_lambda_code_imports_only_packages_the_runtime_layers_or_requirements_provide(path: Path) -> None:
    distributions = installed_distributions()
    third_party = top_level_imports(path) - set(sys.stdlib_module_names) - {"shareplane", "__future__"}
    missing = {
        module
        for module in third_party
        if not {d.lower().replace("_", "-") for d in distributions.get(module, [module])}
        & (PROVIDED_PACKAGES | layer_requirements())
    }
    assert not missing, (
        f"{sorted(missing)} would be missing in Lambda; add them to layers/core/requirements.txt"
    )


# ---------------------------------------------------------------------------------------------------
# Table and outputs
# ---------------------------------------------------------------------------------------------------
def test_jobs_table_has_the_keys_index_and_protection_the_store_relies_on() -> None:
    props = raw_template()["Resources"]["JobsTable"]["Properties"]
    assert props["BillingMode"] == "PAY_PER_REQUEST"
    assert {(k["AttributeName"], k["KeyType"]) for k in props["KeySchema"]} == {
        ("pk", "HASH"),
        ("sk", "RANGE"),
    }
    (index,) = props["GlobalSecondaryIndexes"]
    assert index["IndexName"] == "ByStatus" and index["Projection"]["ProjectionType"] == "ALL"
    assert {(k["AttributeName"], k["KeyType"]) for k in index["KeySchema"]} == {
        ("gsi1pk", "HASH"),
        ("gsi1sk", "RANGE"),
    }
    assert {a["AttributeType"] for a in props["AttributeDefinitions"]} == {"S"}
    assert props["TimeToLiveSpecification"] == {"AttributeName": "expiresAt", "Enabled": True}
    assert props["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
    assert props["SSESpecification"]["SSEEnabled"] is True
    assert props["DeletionProtectionEnabled"] == {"Fn::If": ["IsProd", True, False]}


def test_outputs_name_what_the_local_stack_and_operators_need() -> None:
    outputs = raw_template()["Outputs"]
    assert {
        "JobsTableName": "JobsTable",
        "RecordStateQueueUrl": "RecordStateQueue",
        "RecordStateDeadLetterQueueUrl": "RecordStateDLQ",
        "RecordStateFunctionName": "RecordStateFunction",
    }.items() <= {name: ref_target(o["Value"]) for name, o in outputs.items()}.items()
