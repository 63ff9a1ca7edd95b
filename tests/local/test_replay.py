"""The whole state-recording path on the local stack built from template.yaml."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from shareplane_cli.main import app
from typer.testing import CliRunner

from tests.conftest import REPO, SCENARIOS, load_scenario, scenario_names

pytestmark = [pytest.mark.local, pytest.mark.xdist_group("stack-2")]


def replay(tmp_path: Path, lines: list[dict], name: str) -> list[dict]:
    stream = tmp_path / f"{name}.jsonl"
    stream.write_text("\n".join(json.dumps(e) for e in lines))
    result = CliRunner().invoke(
        app, ["replay", str(stream), "--output", "json", "--template", str(REPO / "template.yaml")]
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_replaying_every_scenario_records_every_job(tmp_path: Path) -> None:
    events = [e for name in scenario_names() for e in load_scenario(name)]
    records = replay(tmp_path, events, "all")
    assert len(records) == len(scenario_names())
    by_name = {r["jobName"]: r for r in records}
    requeued = by_name["vit-finetune-sweep-07"]
    assert (requeued["status"], requeued["capacityRequeues"], requeued["attempts"]) == ("SUCCEEDED", 1, 1)
    assert by_name["ranker-distill-q3"]["preemptions"] == 1
    assert by_name["asr-conformer-large"]["attempts"] == 2
    oom = by_name["llm13b-sft-bs64"]
    assert oom["status"] == "FAILED" and "CUDA out of memory" in oom["failureReason"]
    # Each record names the team of its share (by the stack's config) beside the share identifier
    owners = {(r["shareIdentifier"], r["team"]) for r in records if r["shareIdentifier"]}
    assert owners and owners <= {("ProdExp1", "ProdExp1"), ("ProdExp2", "ProdExp2")}
    for record in records:
        assert set(record) >= {
            "jobId",
            "jobName",
            "jobQueue",
            "status",
            "statusReason",
            "shareIdentifier",
            "schedulingPriority",
            "createdAt",
            "startedAt",
            "stoppedAt",
            "trainingJobArn",
            "attempts",
            "preemptions",
            "capacityRequeues",
            "history",
        }
        assert [h["at"] for h in record["history"]] == sorted(h["at"] for h in record["history"])


def test_a_shuffled_duplicated_stream_prints_the_same_records_as_the_ordered_one(tmp_path: Path) -> None:
    ordered = [e for name in scenario_names() for e in load_scenario(name)]
    rng = random.Random(11)
    noisy = ordered + [{**e, "id": f"redelivered-{i}"} for i, e in enumerate(rng.sample(ordered, 25))]
    rng.shuffle(noisy)
    assert replay(tmp_path, noisy, "noisy") == replay(tmp_path, ordered, "ordered")


def test_a_bad_event_ends_in_the_dlq_and_the_rest_is_applied(tmp_path: Path) -> None:
    from shareplane_cli.commands.local import put_events
    from shareplane_cli.local import LocalStack, StackSpec
    from shareplane_cli.local.runner import FunctionRunner

    good = load_scenario("job_whole_life")
    broken = {**good[-1], "detail": {"status": "SUCCEEDED"}}  # no jobArn: cannot be recorded
    with LocalStack(StackSpec(REPO / "template.yaml")) as stack:
        put_events(stack, [*good, broken])
        runner = FunctionRunner(stack)
        runner.drain()
        sqs = stack.client("sqs")
        dead = sqs.receive_message(
            QueueUrl=stack.outputs["RecordStateDeadLetterQueueUrl"], MaxNumberOfMessages=10
        )
        bodies = [json.loads(m["Body"]) for m in dead.get("Messages", [])]
        assert [b["detail"] for b in bodies] == [{"status": "SUCCEEDED"}]
        assert sum(i.failed for i in runner.invocations) == 5, (
            "retried up to maxReceiveCount, then dead-lettered"
        )
        table = stack.outputs["JobsTableName"]
        states = stack.client("dynamodb").scan(
            TableName=table, FilterExpression="sk = :s", ExpressionAttributeValues={":s": {"S": "STATE"}}
        )["Items"]
        assert {s["status"]["S"] for s in states if s["entity"]["S"] == "job"} == {"SUCCEEDED"}


def test_scenarios_exist() -> None:
    assert SCENARIOS.is_dir() and len(scenario_names()) >= 7


def test_exported_history_replays_in_the_what_if_simulator(tmp_path: Path) -> None:
    from gpusim.trace import load_trace
    from shareplane_cli.commands.local import put_events
    from shareplane_cli.local import LocalStack, StackSpec
    from shareplane_cli.local.runner import FunctionRunner

    events = [e for name in scenario_names() for e in load_scenario(name) if e["source"] == "aws.batch"]
    with LocalStack(StackSpec(REPO / "template.yaml"), emulate=False) as stack:
        put_events(stack, events)
        FunctionRunner(stack).drain()
        out = tmp_path / "jobs.jsonl"
        result = CliRunner().invoke(
            app,
            [
                "export",
                "--out",
                str(out),
                "--endpoint",
                stack.endpoint or "",
                "--table",
                stack.outputs["JobsTableName"],
            ],
            env=stack.environment(),
        )
        assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == len(scenario_names())
    trace = load_trace(out)
    shared = [r for r in records if r["shareIdentifier"] or r["quotaShareName"]]
    assert len(trace) == len(shared) == len(records) - 1, "the FIFO CPU job has no share to replay"
