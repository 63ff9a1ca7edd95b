"""record_state handler: real events from events/, a Lambda context, moto behind boto3."""

from __future__ import annotations

import json
import random
from collections import Counter
from typing import Any

import boto3
import pytest
from moto import mock_aws
from shareplane import bootstrap
from shareplane.adapters.dynamodb_store import DynamoJobStore
from shareplane.domain.jobs.lifecycle import METRIC_DIMENSIONS

from tests.aws import SHARES_CONFIG_PARAMETER, FaultInjector, create_jobs_table, store_shares_config
from tests.conftest import REPO, load_event, load_handler, load_scenario, scenario_names
from tests.sqs import sqs_batch, sqs_record

TABLE = "shareplane-jobs"


@pytest.fixture
def handler(aws_credentials: None, monkeypatch: pytest.MonkeyPatch) -> Any:
    import yaml

    config = yaml.safe_load((REPO / "config" / "shares.yaml").read_text())
    monkeypatch.setenv("TABLE_NAME", TABLE)
    monkeypatch.setenv("SHAREPLANE_CONFIG_PARAMETER", SHARES_CONFIG_PARAMETER)
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "shareplane")
    with mock_aws():
        store_shares_config(boto3.client("ssm", region_name="us-east-1"), config)
        create_jobs_table(boto3.client("dynamodb", region_name="us-east-1"), TABLE)
        with bootstrap.installed(bootstrap.Root.from_environment()):
            yield load_handler("record_state")


def stored_store() -> DynamoJobStore:
    return bootstrap.root().store


@pytest.mark.parametrize(
    "scenario", scenario_names(), ids=lambda s: f"the {s} scenario is recorded in one batch"
)
def test_a_scenario_batch_is_recorded(handler: Any, lambda_context: Any, scenario: str) -> None:
    events = load_scenario(scenario)
    response = handler.lambda_handler(sqs_batch(events), lambda_context)
    assert response == {"batchItemFailures": []}
    jobs = stored_store().jobs()
    last_job_event = [e for e in events if e["source"] == "aws.batch" and "jobArn" in e["detail"]][-1]
    assert [j.status.value for j in jobs] == [last_job_event["detail"]["status"]]


def test_bad_records_fail_alone_and_the_rest_is_applied(handler: Any, lambda_context: Any) -> None:
    # GIVEN a batch with good events, an unknown detail-type, broken JSON and a detail missing jobArn
    good = load_scenario("job_whole_life")
    unknown = {
        **load_event("batch_service_job_state_change_running"),
        "detail-type": "EC2 Spot Instance Interruption Warning",
    }
    missing = {**load_event("batch_service_job_state_change_succeeded"), "detail": {"status": "RUNNING"}}
    bodies = [good[0], unknown, "{not json", missing, *good[1:]]
    # WHEN the handler gets the batch
    response = handler.lambda_handler(sqs_batch(bodies), lambda_context)
    # THEN exactly the three bad records are reported for retry (and, after maxReceiveCount, the DLQ)
    assert response["batchItemFailures"] == [{"itemIdentifier": f"m{i}"} for i in (1, 2, 3)]
    assert [j.status.value for j in stored_store().jobs()] == ["SUCCEEDED"]


def test_metrics_are_emf_with_low_cardinality_dimensions(
    handler: Any, lambda_context: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    handler.lambda_handler(sqs_batch(load_scenario("preemption")), lambda_context)
    documents = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
    names = Counter(m["Name"] for d in documents for m in d["_aws"]["CloudWatchMetrics"][0]["Metrics"])
    assert names["Preemptions"] == 1 and names["GPUSeconds"] == 1 and names["QueueWaitSeconds"] == 1
    for document in documents:
        directive = document["_aws"]["CloudWatchMetrics"][0]
        assert directive["Namespace"] == "shareplane"
        dims = set(directive["Dimensions"][0])
        # exactly the table's dimensions: the dashboard's SEARCH schemas match dimension sets exactly
        assert dims == set(METRIC_DIMENSIONS[directive["Metrics"][0]["Name"]])
        assert "jobArn" in document and "jobArn" not in dims
    transitions = [
        d for d in documents if d["_aws"]["CloudWatchMetrics"][0]["Metrics"][0]["Name"] == "Transitions"
    ]
    assert {d["Tier"] for d in transitions} == {"LOWPRI"} and {d["Team"] for d in transitions} == {"ProdExp1"}


def deliver_until_settled(
    handler: Any, context: Any, events: list[dict[str, Any]], max_receives: int, seed: int
) -> list[int]:
    """Deliver like SQS would: failed records come back (in a new order) until maxReceiveCount, then DLQ."""
    rng = random.Random(seed)
    pending = {i: 0 for i in range(len(events))}
    dead: list[int] = []
    while pending:
        ids = list(pending)
        rng.shuffle(ids)
        for start in range(0, len(ids), 10):
            chunk = ids[start : start + 10]
            batch = {"Records": [sqs_record(events[i], str(i), pending[i] + 1) for i in chunk]}
            failed = {
                int(f["itemIdentifier"]) for f in handler.lambda_handler(batch, context)["batchItemFailures"]
            }
            for i in chunk:
                pending[i] += 1
                if i not in failed:
                    del pending[i]
                elif pending[i] >= max_receives:
                    del pending[i]
                    dead.append(i)
    return dead


@pytest.mark.parametrize("seed", [1, 2, 3], ids=lambda s: f"throttles and 5xx on every call, seed {s}")
def test_under_injected_faults_every_event_is_applied_once_or_dead_lettered(
    handler: Any, lambda_context: Any, seed: int
) -> None:
    # GIVEN a long stream: every scenario, each event duplicated, and 30% of AWS calls failing
    events = [e for name in scenario_names() for e in load_scenario(name)]
    events = events + [{**e, "id": f"dup-{i}"} for i, e in enumerate(events)]
    store = stored_store()
    faults = FaultInjector(rate=0.3, seed=seed)
    faults.attach(store._client)  # noqa: SLF001 - the client the handler uses
    # WHEN SQS delivers it with redelivery of failed records up to maxReceiveCount 5
    dead = deliver_until_settled(handler, lambda_context, events, max_receives=5, seed=seed)
    faults.rate = 0.0
    # THEN faults happened, and every distinct Batch event is in history exactly once unless dead-lettered
    assert faults.injected > 0
    from shareplane.domain.jobs.lifecycle import JobObservation
    from shareplane.schemas import parse_state_event

    dead_digests = {parse_state_event(events[i]).digest for i in dead if events[i]["source"] == "aws.batch"}  # type: ignore[union-attr]
    expected = {o.digest: o for o in map(parse_state_event, events) if isinstance(o, JobObservation)}
    recorded: Counter[str] = Counter()
    for job in store.jobs():
        recorded.update(h.digest for h in store.job_history(job.job_arn))
    assert all(count == 1 for count in recorded.values()), "an event was applied twice"
    for digest in expected:
        assert recorded[digest] == 1 or digest in dead_digests, "an event was lost"
