"""The emulated Batch + SageMaker in the local stack: template resources, schedules, and a job end to end."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path
from typing import Any

import boto3
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shareplane_cli.local import LocalStack, StackSpec
from shareplane_cli.local.emulator import (
    Emulator,
    Schedule,
    ScheduleClock,
    TemplateResourceError,
    creation_order,
    resolve_outputs,
    scheduled_event,
    template_schedules,
)
from shareplane_cli.local.intrinsics import Intrinsics
from shareplane_cli.local.runner import FunctionRunner
from shareplane_cli.local.stack import patched_environ
from shareplane_cli.local.template import load_sam_template
from typer.testing import CliRunner

from tests.conftest import REPO
from tests.properties import examples

pytestmark = [pytest.mark.local, pytest.mark.xdist_group("stack-2")]

FIXTURE = Path(__file__).parent / "fixtures" / "batch_resources.yaml"
PSEUDO = {"AWS::StackName": "teststack", "AWS::Region": "us-east-1", "AWS::AccountId": "123456789012"}


def intrinsics_for(template: dict[str, Any], parameters: dict[str, str]) -> Intrinsics:
    """The stack's resolver before the emulator created anything: parameters and pseudo parameters."""
    return Intrinsics(template, parameters=parameters, pseudo=PSEUDO)


def build(resources: dict[str, Any] | None = None, **parameters: str) -> tuple[Emulator, Any, dict[str, Any]]:
    """The fixture's Batch resources created in a fresh (unstarted) emulator."""
    template = load_sam_template(FIXTURE)
    params = {"Mode": "fairshare", "GpuCapacity": "8", **parameters}
    emulator = Emulator(speed=1.0)
    made = emulator.provision(
        resources if resources is not None else template["Resources"],
        intrinsics_for(template, params),
        stack_name="teststack",
    )
    return emulator, made, template


def queues(emulator: Emulator) -> dict[str, dict[str, Any]]:
    return {q["jobQueueName"]: q for q in emulator.call("DescribeJobQueues", {})["jobQueues"]}


# ------------------------------------------------------------------------- template -> emulator
def test_every_batch_resource_kind_is_created_with_its_properties_mapped() -> None:
    emulator, made, _ = build()
    assert set(made.created) == {
        "QuotaShareResearch",
        "QuotaQueue",
        "QuotaPolicy",
        "QuotaEnvironment",
        "GpuQueue",
        "GpuPolicy",
        "GpuEnvironment",
        "CpuQueue",
    }
    by_name = queues(emulator)
    gpu = by_name["gpu-queue"]
    assert gpu["schedulingPolicyArn"] == made.created["GpuPolicy"].arn
    assert gpu["serviceEnvironmentOrder"] == [
        {"order": 1, "serviceEnvironment": made.created["GpuEnvironment"].arn}
    ]
    assert gpu["jobStateTimeLimitActions"] == [
        {
            "action": "TERMINATE",
            "state": "RUNNABLE",
            "reason": "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY",
            "maxTimeSeconds": 3600,
        }
    ]
    assert (gpu["priority"], gpu["tags"]) == (10, {"stage": "test"})
    assert "schedulingPolicyArn" not in by_name["cpu-fifo"]
    policy = emulator.call("DescribeSchedulingPolicies", {"arns": [made.created["GpuPolicy"].arn]})
    assert policy["schedulingPolicies"][0]["fairsharePolicy"] == {
        "shareDecaySeconds": 3600,
        "computeReservation": 10,
        "shareDistribution": [
            {"shareIdentifier": "ProdExp1", "weightFactor": 1.0},
            {"shareIdentifier": "ProdExp2", "weightFactor": 1.5},
        ],
    }
    # A parameter given as a string becomes the integer the API shape wants.
    environments = emulator.call("DescribeServiceEnvironments", {})["serviceEnvironments"]
    limits = {e["serviceEnvironmentName"]: e["capacityLimits"] for e in environments}
    assert limits["gpu-env"] == [{"maxCapacity": 8, "capacityUnit": "NUM_INSTANCES"}]
    # Unnamed resources get a stable stack-scoped name; Fn::Sub names resolve pseudo parameters.
    assert made.created["QuotaEnvironment"].name == "teststack-QuotaEnvironment"
    assert made.created["QuotaPolicy"].name == "teststack-quota"
    share = emulator.call("DescribeQuotaShare", {"quotaShareArn": made.created["QuotaShareResearch"].arn})
    assert (share["resourceSharingConfiguration"], share["preemptionConfiguration"], share["tags"]) == (
        {"strategy": "LEND_AND_BORROW", "borrowLimit": 50},
        {"inSharePreemption": "ENABLED"},
        {"team": "research"},
    )
    assert made.skipped == {
        "ContainerQueue": "a compute-environment queue; only SAGEMAKER_TRAINING queues are emulated"
    }


def test_physical_ids_attributes_and_outputs_name_the_created_resources() -> None:
    _, made, template = build()
    assert made.physical_ids["GpuQueue"] == "arn:aws:batch:us-east-1:123456789012:job-queue/gpu-queue"
    assert made.attributes()[("GpuQueue", "JobQueueArn")] == made.physical_ids["GpuQueue"]
    resolver = intrinsics_for(template, {"Mode": "fairshare"}).with_resources(
        made.physical_ids, made.attributes()
    )
    outputs = resolve_outputs(template["Outputs"], resolver, set(made.created))
    assert outputs == {
        "GpuJobQueueArn": made.physical_ids["GpuQueue"],
        "GpuJobQueueName": "gpu-queue",
        "QueueList": f"{made.physical_ids['GpuQueue']},{made.physical_ids['CpuQueue']}",
    }


def test_a_false_condition_leaves_a_resource_out_and_fn_if_takes_the_other_branch() -> None:
    emulator, made, _ = build(Mode="quota")
    assert made.skipped["GpuPolicy"] == "condition IsFairshare is false"
    assert "schedulingPolicyArn" not in queues(emulator)["gpu-queue"], "AWS::NoValue removes the property"


@settings(max_examples=examples(15), deadline=None)
@given(st.permutations(sorted(load_sam_template(FIXTURE)["Resources"])))
def test_the_resources_come_out_the_same_whatever_order_the_template_lists_them(order: list[str]) -> None:
    resources = load_sam_template(FIXTURE)["Resources"]
    emulator, made, _ = build({k: resources[k] for k in order})
    reference, reference_made, _ = build()
    assert made.physical_ids == reference_made.physical_ids
    assert queues(emulator) == queues(reference)


@pytest.mark.parametrize(
    ("change", "field", "needle"),
    [
        (
            lambda r: r["GpuQueue"]["Properties"].update(Colour="blue"),
            "GpuQueue.Colour",
            "has no counterpart in the API request",
        ),
        (
            lambda r: r["GpuQueue"]["Properties"].update(Priority="high"),
            "GpuQueue.Priority",
            "'high' is not a number",
        ),
        (
            lambda r: r["GpuQueue"]["Properties"].update(
                SchedulingPolicyArn={"Fn::GetAtt": ["GpuPolicy", "Colour"]}
            ),
            "GpuPolicy.Colour",
            "is not an attribute the emulator knows",
        ),
        (
            lambda r: r["GpuEnvironment"]["Properties"].update(CapacityLimits=[]),
            "GpuEnvironment",
            "CreateServiceEnvironment was refused: capacityLimits must hold at least one",
        ),
        (
            lambda r: r["GpuEnvironment"].update(DependsOn="GpuQueue"),
            "GpuEnvironment, GpuQueue",
            "refer to each other in a cycle",
        ),
    ],
    ids=[
        "a property the API does not have is named",
        "a priority that is not a number is named",
        "an attribute the resource does not have is named",
        "a request the emulated API refuses names the resource and the API's reason",
        "resources that depend on each other in a cycle are named",
    ],
)
def test_a_resource_that_cannot_be_created_is_named_with_the_fix(
    change: Any, field: str, needle: str
) -> None:
    resources = load_sam_template(FIXTURE)["Resources"]
    change(resources)
    with pytest.raises(TemplateResourceError) as info:
        build(resources)
    assert info.value.field == field
    assert needle in info.value.problem


def test_creation_order_puts_what_is_referenced_first() -> None:
    order = creation_order(load_sam_template(FIXTURE)["Resources"])
    for later, earlier in [
        ("GpuQueue", "GpuPolicy"),
        ("GpuQueue", "GpuEnvironment"),
        ("QuotaShareResearch", "QuotaQueue"),
        ("QuotaQueue", "QuotaPolicy"),
        ("CpuQueue", "GpuEnvironment"),
    ]:
        assert order.index(earlier) < order.index(later), (earlier, later)


# ------------------------------------------------------------------------------------ schedules
SCHEDULES = {
    "Reconcile": {
        "Type": "AWS::Scheduler::Schedule",
        "Properties": {
            "ScheduleExpression": "rate(5 minutes)",
            "Target": {"Arn": {"Fn::GetAtt": ["ReconcileFunction", "Arn"]}, "Input": '{"kind": "reconcile"}'},
        },
    },
    "Rebalance": {
        "Type": "AWS::Scheduler::Schedule",
        "Properties": {"ScheduleExpression": "rate(1 hour)", "Target": {"Arn": {"Fn::GetAtt": ["Q", "Arn"]}}},
    },
    "Nightly": {
        "Type": "AWS::Scheduler::Schedule",
        "Properties": {"ScheduleExpression": "cron(0 3 * * ? *)", "Target": {"Arn": {"Ref": "X"}}},
    },
    "Paused": {
        "Type": "AWS::Scheduler::Schedule",
        "Properties": {"ScheduleExpression": "rate(1 minute)", "State": "DISABLED", "Target": {"Arn": "x"}},
    },
}


def test_rate_schedules_are_read_and_the_rest_are_named_with_the_reason() -> None:
    schedules, skipped = template_schedules(SCHEDULES)
    assert schedules == [
        Schedule("Rebalance", 3600.0, "Q", {}),
        Schedule("Reconcile", 300.0, "ReconcileFunction", {"kind": "reconcile"}),
    ]
    assert skipped == {
        "Nightly": "'cron(0 3 * * ? *)': only rate() expressions run locally",
        "Paused": "disabled",
    }


def test_schedule_rules_deliver_a_scheduled_event_and_resolve_their_expression() -> None:
    rules = {
        "Tick": {
            "Type": "AWS::Events::Rule",
            "Properties": {
                "ScheduleExpression": {"Ref": "Every"},
                "Targets": [{"Id": "t1", "Arn": {"Fn::GetAtt": ["TickQueue", "Arn"]}}],
            },
        },
        "Pattern": {"Type": "AWS::Events::Rule", "Properties": {"EventPattern": {"source": ["aws.batch"]}}},
    }
    schedules, skipped = template_schedules(rules, lambda v: "rate(2 hours)" if v == {"Ref": "Every"} else v)
    assert (schedules, skipped) == ([Schedule("Tick", 7200.0, "TickQueue", None, "t1")], {})
    event = scheduled_event(
        "arn:aws:events:us-east-1:123456789012:rule/tick", 1773619201999, "123456789012", "us-east-1"
    )
    assert (event["detail-type"], event["source"], event["time"], event["detail"]) == (
        "Scheduled Event",
        "aws.events",
        "2026-03-16T00:00:01Z",
        {},
    )


def test_a_schedule_fires_on_the_virtual_clock_and_once_when_it_fell_behind() -> None:
    clock = ScheduleClock([Schedule("R", 300.0, "F", {})], start=100.0)
    assert [clock.due(t) for t in (399.0, 400.0, 401.0)] == [[], [clock.schedules[0]], []]
    assert len(clock.due(2000.0)) == 1, "five missed periods fire once"
    assert clock.due(2099.0) == [] and len(clock.due(2200.0)) == 1


# ---------------------------------------------------------------------------------- end to end
def stack_template(tmp_path: Path) -> Path:
    """template.yaml when it defines Batch queues; else template.yaml plus the fixture's GPU queue."""
    template = load_sam_template(REPO / "template.yaml")
    if any(r["Type"] == "AWS::Batch::JobQueue" for r in template["Resources"].values()):
        return REPO / "template.yaml"
    fixture = load_sam_template(FIXTURE)
    for section in ("Parameters", "Conditions"):
        template.setdefault(section, {}).update(fixture[section])
    for name in ("GpuEnvironment", "GpuPolicy", "GpuQueue"):
        template["Resources"][name] = fixture["Resources"][name]
    for resource in template["Resources"].values():  # code paths stay valid from the copy's folder
        for key in ("CodeUri", "ContentUri"):
            value = resource.get("Properties", {}).get(key)
            if isinstance(value, str) and not value.startswith("s3://"):
                resource["Properties"][key] = str((REPO / value).resolve())
    path = tmp_path / "template.json"
    path.write_text(json.dumps(template))
    return path


def submit_request(stack: LocalStack, batch: Any, name: str) -> dict[str, Any]:
    """A SubmitServiceJob request for the stack's first SageMaker queue, with the share it needs."""
    created = stack.emulated.created
    queue = next(created[k] for k in sorted(created) if created[k].type == "AWS::Batch::JobQueue")
    detail = batch.describe_job_queues(jobQueues=[queue.arn])["jobQueues"][0]
    environment = batch.describe_service_environments(
        serviceEnvironments=[detail["serviceEnvironmentOrder"][0]["serviceEnvironment"]]
    )["serviceEnvironments"][0]
    unit = environment["capacityLimits"][0]["capacityUnit"]
    request: dict[str, Any] = {
        "jobName": name,
        "jobQueue": queue.arn,
        "serviceJobType": "SAGEMAKER_TRAINING",
        "schedulingPriority": 50,
        "tags": {"gpusim:duration-seconds": "600"},
        "serviceRequestPayload": json.dumps(
            {
                "TrainingJobName": name,
                "AlgorithmSpecification": {
                    "TrainingImage": "111122223333.dkr.ecr.us-east-1.amazonaws.com/prodexp1/t:1",
                    "TrainingInputMode": "File",
                },
                "RoleArn": "arn:aws:iam::111122223333:role/shareplane-search-ProdExp1-training",
                "OutputDataConfig": {"S3OutputPath": "s3://search-ml-training/prodexp1/"},
                "ResourceConfig": {
                    "InstanceType": "ml.p4d.24xlarge" if unit == "NUM_INSTANCES" else unit,
                    "InstanceCount": 1,
                    "VolumeSizeInGB": 100,
                },
                "StoppingCondition": {"MaxRuntimeInSeconds": 86400},
            }
        ),
    }
    policy = detail.get("schedulingPolicyArn")
    if policy:
        described = batch.describe_scheduling_policies(arns=[policy])["schedulingPolicies"][0]
        if "fairsharePolicy" in described:
            request["shareIdentifier"] = described["fairsharePolicy"]["shareDistribution"][0][
                "shareIdentifier"
            ]
        else:
            shares = batch.list_quota_shares(jobQueue=queue.arn)["quotaShares"]
            request["quotaShareName"] = shares[0]["quotaShareName"]
    return request


def test_a_job_submitted_through_boto3_is_recorded_with_its_whole_history(tmp_path: Path) -> None:
    from shareplane.adapters.dynamodb_store import DynamoJobStore
    from shareplane.domain.explain.record_json import record_json
    from shareplane.domain.jobs.arns import same_training_job
    from shareplane.service.queries import job_records

    # GIVEN the local stack with its emulator at 5000x (a ten-minute job takes a fraction of a second)
    with LocalStack(StackSpec(stack_template(tmp_path)), speed=5000) as stack:
        env = stack.environment()
        assert env["AWS_ENDPOINT_URL_BATCH"] == env["AWS_ENDPOINT_URL_SAGEMAKER"] == stack.emulator.endpoint
        # WHEN a client configured only by the exported variables submits a job (as a handler would)
        with patched_environ(env):
            batch, sagemaker = boto3.client("batch"), boto3.client("sagemaker")
        job = batch.submit_service_job(**submit_request(stack, batch, "e2e-train"))
        deadline = time.monotonic() + 30
        while batch.describe_service_job(jobId=job["jobId"])["status"] != "SUCCEEDED":
            assert time.monotonic() < deadline, "the virtual clock did not run the job to the end"
            time.sleep(0.05)
        described = batch.describe_service_job(jobId=job["jobId"])
        training_arn = described["latestAttempt"]["serviceResourceId"]["value"]
        # SageMaker lowercases names in ARNs (the local stack's emulator does, as other AWS users report
        # of the real one): find the job's real name by its ARN, compared as the control plane compares it.
        ((training_name, listed_arn),) = [
            (t["TrainingJobName"], t["TrainingJobArn"])
            for t in sagemaker.list_training_jobs()["TrainingJobSummaries"]
            if same_training_job(t["TrainingJobArn"], training_arn)
        ]
        assert listed_arn == training_arn.lower() != training_arn, (
            "the local stack lower-cases SageMaker's ARNs"
        )
        assert (
            sagemaker.describe_training_job(TrainingJobName=training_name)["TrainingJobStatus"] == "Completed"
        )
        # AND every event reached EventBridge, whose rules fed record_state's queue, which the runner drains
        assert stack.emulator.wait_for_events(10)
        runner = FunctionRunner(stack)
        runner.drain()
        assert runner.invocations and not any(i.failed for i in runner.invocations)
        store = DynamoJobStore(stack.client("dynamodb"), stack.outputs["JobsTableName"])
        records = [record_json(r) for r in job_records(store)]
    # THEN the job is in DynamoDB with its full history and its SageMaker training job
    (record,) = records
    assert (record["jobId"], record["jobName"], record["status"]) == (job["jobId"], "e2e-train", "SUCCEEDED")
    assert [h["status"] for h in record["history"]] == [
        "RUNNABLE",
        "SCHEDULED",
        "STARTING",
        "RUNNING",
        "SUCCEEDED",
    ]
    assert (record["trainingJobArn"], record["trainingJobStatus"]) == (training_arn, "Completed")
    assert record["jobQueue"] == described["jobQueue"]
    assert record["attempts"] == 1


def test_shareplane_up_prints_the_exports_and_stops_everything_on_ctrl_c(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from shareplane_cli.commands import local as local_command
    from shareplane_cli.main import app

    real_sleep, naps = time.sleep, []

    def interrupt(seconds: float) -> None:
        # Ctrl-C once the virtual clock has passed a few 5-minute schedules (at 250x, 1.2 s each)
        naps.append(seconds)
        if sum(naps) > 1.5:
            raise KeyboardInterrupt
        real_sleep(seconds)

    monkeypatch.setattr(local_command.time, "sleep", interrupt)
    log, env_file = tmp_path / "up.log", tmp_path / "up.env"
    result = CliRunner().invoke(
        app,
        ["up", "--template", str(stack_template(tmp_path)), "--speed", "250", "--log", str(log)]
        + ["--env-file", str(env_file)],
    )
    assert result.exit_code == 0, result.output
    assert not env_file.exists()  # what `up --env` reads is gone with the stack
    # The first screen is the exports, where the stack is, where the log is and a summary; moto's
    # warnings and every schedule tick are in the log.
    assert "No Moto CloudFormation support" not in result.output and "UserWarning" not in result.output
    assert not [line for line in result.stderr.splitlines() if line.startswith("schedule ")]
    assert f"log: {log}" in result.stderr
    logged = log.read_text()
    assert "No Moto CloudFormation support for AWS::CloudWatch::Alarm" in logged and "UserWarning" in logged
    ticks = logged.count("schedule: schedule ")
    assert ticks >= 3 and "schedule: schedule WatchJobsSchedule -> WatchJobsQueue" in logged
    assert f"stopped: {ticks} schedule ticks" in result.stderr
    exports = dict(line.removeprefix("export ").split("=", 1) for line in result.stdout.splitlines())
    assert {
        "AWS_ENDPOINT_URL",
        "AWS_ENDPOINT_URL_BATCH",
        "AWS_ENDPOINT_URL_SAGEMAKER",
        "AWS_REGION",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "SHAREPLANE_STACK",
    } <= set(exports)
    assert "(250x)" in result.stderr
    for key in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_BATCH"):
        endpoint = urllib.parse.urlsplit(exports[key])
        with pytest.raises(OSError), socket.create_connection((endpoint.hostname, endpoint.port), timeout=1):
            pass  # nothing listens any more: Ctrl-C stopped the embedded AWS and the emulator


def test_shareplane_up_env_starts_a_stack_in_the_background_for_eval(tmp_path: Path) -> None:
    from shareplane_cli.local.exports import PID_VARIABLE, exported

    env_file = tmp_path / "up.env"
    up_env = [
        sys.executable,
        "-m",
        "shareplane_cli",
        "up",
        "--env",
        "--template",
        str(stack_template(tmp_path)),
    ]
    up_env += ["--log", str(tmp_path / "up.log"), "--env-file", str(env_file)]

    def ignoring_ctrl_c() -> None:
        # As a script's background job starts it (POSIX shells ignore SIGINT there), and the stack inherits
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    first = subprocess.run(up_env, capture_output=True, text=True, timeout=300, preexec_fn=ignoring_ctrl_c)
    variables = exported(first.stdout.splitlines())
    try:
        # GIVEN `up --env` started a stack in the background and printed its exports alone
        assert first.returncode == 0, first.stderr
        assert all(line.startswith("export ") for line in first.stdout.splitlines())
        assert {"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_BATCH", "SHAREPLANE_STACK", PID_VARIABLE} <= set(
            variables
        )
        # WHEN it runs again, THEN it prints the running stack's exports (no second stack)
        again = subprocess.run(up_env, capture_output=True, text=True, timeout=60)
        assert again.returncode == 0 and again.stdout == first.stdout
        # AND a shell that evaluates them reaches the stack with the CLI
        jobs = subprocess.run(
            ["sh", "-c", 'eval "$1"; exec "$2" -m shareplane_cli jobs --output json', "sh", first.stdout]
            + [sys.executable],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert jobs.returncode == 0, jobs.stderr
        assert json.loads(jobs.stdout) == []
    finally:
        if PID_VARIABLE in variables:
            os.kill(int(variables[PID_VARIABLE]), signal.SIGINT)
    deadline = time.monotonic() + 60
    while env_file.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not env_file.exists()  # Ctrl-C (SIGINT) stopped it as it stops a foreground `up`


def test_up_detach_then_commands_find_the_stack_and_config_then_down_stops_it(tmp_path: Path) -> None:
    from shareplane_cli.local.exports import PID_VARIABLE, answers, exported

    # GIVEN a project (a repository with its shares config) and a shell that names no account or stack
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / "config").mkdir()
    (project / "config" / "shares.yaml").write_text((REPO / "config" / "shares.yaml").read_text())
    below = project / "jobs" / "mine"
    below.mkdir(parents=True)
    shell = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("AWS_", "SHAREPLANE_")) or name == "SHAREPLANE_DEBUG"
    }
    cli = [sys.executable, "-m", "shareplane_cli"]
    env_file = project / "reports" / "local" / "up.env"
    up = [*cli, "up", "-d", "--template", str(stack_template(tmp_path)), "--log", str(tmp_path / "up.log")]
    started = subprocess.run(up, cwd=project, env=shell, capture_output=True, text=True, timeout=300)
    variables = exported(env_file.read_text().splitlines()) if env_file.exists() else {}
    try:
        # WHEN `up -d` runs, THEN it returns with the stack up, saying how to use and stop it
        assert started.returncode == 0, started.stderr
        assert "local stack up at" in started.stdout and "shareplane down" in started.stdout
        # AND a second `up -d` starts none
        again = subprocess.run(up, cwd=project, env=shell, capture_output=True, text=True, timeout=60)
        assert again.returncode == 0 and "already running" in again.stdout
        # AND a command run below the project, given no endpoint, finds the stack and the config (the
        # team filter needs the config: exit 2 without it)
        jobs = subprocess.run(
            [*cli, "jobs", "-o", "json", "--team", "ProdExp1"],
            cwd=below,
            env=shell,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert jobs.returncode == 0, jobs.stderr
        assert json.loads(jobs.stdout) == []
        assert f"at {variables['AWS_ENDPOINT_URL']} (found {env_file.resolve()}" in jobs.stderr
        # AND `down`, run below the project too, stops it
        down = subprocess.run(
            [*cli, "down"], cwd=below, env=shell, capture_output=True, text=True, timeout=90
        )
        assert down.returncode == 0, down.stderr
        assert "local stack stopped" in down.stdout
    finally:
        if env_file.exists() and PID_VARIABLE in variables:
            os.kill(int(variables[PID_VARIABLE]), signal.SIGINT)
    assert not env_file.exists() and not answers(variables["AWS_ENDPOINT_URL"])
    nothing = subprocess.run([*cli, "down"], cwd=below, env=shell, capture_output=True, text=True, timeout=60)
    assert nothing.returncode == 0 and "no local stack runs" in nothing.stdout
