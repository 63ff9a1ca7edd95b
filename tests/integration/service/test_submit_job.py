"""submit_job's use case on moto: every rule answered in the bucket, one submission per job, nothing lost."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from moto import mock_aws
from shareplane.domain.jobs.lifecycle import JobStatus, ObservationKind
from shareplane.domain.submit.jobspec import MAX_SPEC_BYTES

from tests.conftest import REPO
from tests.integration.drop_world import NOW_MS, DropWorld, build_world
from tests.properties import examples

GOOD_JOB = """\
name: {name}
priority: HIGHPRI
instance_type: ml.p4d.24xlarge
instance_count: 2
framework: pytorch
framework_version: "2.6.0"
output_path: s3://search-ml-training/prodexp1/output/
"""


def job(name: str = "ranker-ft-01", **extra: str) -> str:
    return GOOD_JOB.format(name=name) + "".join(f"{k}: {v}\n" for k, v in extra.items())


def as_list(*jobs: str) -> str:
    return "".join("- " + j.replace("\n", "\n  ").rstrip() + "\n" for j in jobs)


@pytest.fixture
def world(aws_credentials: None) -> Iterator[DropWorld]:
    with mock_aws():
        yield build_world()


def test_a_good_spec_is_submitted_recorded_moved_and_receipted(world: DropWorld) -> None:
    # GIVEN a valid one-job spec dropped by ProdExp1
    obj = world.drop("submit/ProdExp1/ranker.yaml", job().encode())
    # WHEN the submit path handles its event
    outcome = world.handle(obj)
    # THEN the job is submitted once, to the GPU queue, on the team's share, at its tier's priority
    assert outcome.status == "accepted"
    (request,) = world.batch.submits
    # (the team x tier layout: the team's HIGHPRI identifier)
    assert (request["jobQueue"], request["shareIdentifier"], request["schedulingPriority"]) == (
        "search-p4d-queue",
        "ProdExp1HIGHPRI",
        90,
    )
    # AND the original moved (copy, then delete), its receipt under answers/ keyed by the version
    receipt_key = f"answers/ProdExp1/ranker.yaml/{obj.version_id}.json"
    assert world.keys() == {"accepted/ProdExp1/ranker.yaml", receipt_key} and outcome.answer == receipt_key
    assert world.body("accepted/ProdExp1/ranker.yaml") == job().encode()
    receipt = world.json(receipt_key)
    (entry,) = receipt["jobs"]
    assert receipt["outcome"] == "accepted" and receipt["source"]["versionId"] == obj.version_id
    assert (
        entry["queue"] == "search-p4d-queue"
        and entry["share"] == "ProdExp1HIGHPRI"
        and entry["priority"] == "HIGHPRI"
        and (entry["team"], entry["tier"]) == ("ProdExp1", "HIGHPRI")
    )
    assert entry["clientToken"] == request["clientToken"] and len(entry["payloadDigest"]) == 64
    # AND it says where the job's first predicted start will be: the watch's next tick stores it
    assert "watch_jobs tick" in receipt["prediction"]["predictedBy"]
    # AND the job's first record is SUBMITTED, with the payload kept for requeue
    state = world.store.load_job(entry["jobArn"])
    assert (
        state is not None
        and state.status is JobStatus.SUBMITTED
        and state.share_identifier == "ProdExp1HIGHPRI"
    )
    (history,) = world.store.job_history(entry["jobArn"])
    assert history.kind is ObservationKind.SUBMITTED
    payload = world.store.load_payload(entry["jobArn"])
    assert (
        payload is not None
        and payload.request is not None
        and payload.request.service_request_payload == request["serviceRequestPayload"]
    )
    # AND nobody is alerted about an accepted file
    assert world.alerts() == []


def test_the_deployed_queue_stands_in_for_the_configured_name(world: DropWorld) -> None:
    from shareplane.service.submit_job import QueueNames

    world.queues = QueueNames(gpu="arn:aws:batch:us-east-1:111122223333:job-queue/search-p4d-queue")
    world.handle(world.drop("submit/ProdExp1/a.yaml", job().encode()))
    assert world.batch.submits[0]["jobQueue"].startswith("arn:aws:batch:")


BAD_INPUTS: list[tuple[str, str, bytes, str, str]] = [
    (
        "a file that is not UTF-8 is rejected",
        "submit/ProdExp1/a.yaml",
        b"name: \xff\xfe",
        "file",
        "not UTF-8",
    ),
    ("a binary file is rejected", "submit/ProdExp1/a.yaml", b"\x00\x01\x02binary", "file", "binary"),
    ("an empty file is rejected", "submit/ProdExp1/a.yaml", b"   \n", "file", "empty"),
    (
        "a YAML tag is rejected",
        "submit/ProdExp1/a.yaml",
        b"name: !!python/object:os.system x\n",
        "file",
        "tags",
    ),
    ("a YAML anchor is rejected", "submit/ProdExp1/a.yaml", b"a: &x 1\nb: *x\n", "file", "anchors"),
    (
        "an alias bomb is rejected before it expands",
        "submit/ProdExp1/a.yaml",
        b'a: &a ["x","x"]\nb: &b [*a,*a]\nc: &c [*b,*b]\nd: [*c,*c]\n',
        "file",
        "anchors",
    ),
    (
        "an unknown field is rejected",
        "submit/ProdExp1/a.yaml",
        job(hyperparmeters="{a: 1}").encode(),
        "jobs[0].hyperparmeters",
        "not a spec field",
    ),
    (
        "a wrong type is rejected",
        "submit/ProdExp1/a.yaml",
        job().replace("instance_count: 2", "instance_count: two").encode(),
        "jobs[0].instance_count",
        "whole number",
    ),
    (
        "a traversal in a path is rejected",
        "submit/ProdExp1/a.yaml",
        job(checkpoint_path="s3://search-ml-training/prodexp1/../prodexp2/ck/").encode(),
        "jobs[0].checkpoint_path",
        "..",
    ),
    (
        "another team's share is refused",
        "submit/ProdExp1/a.yaml",
        job(share="ProdExp2").encode(),
        "jobs[0].share",
        "may not choose a share",
    ),
    (
        "another team's name in the spec is refused",
        "submit/ProdExp2/a.yaml",
        job(team="ProdExp1").encode(),
        "jobs[0].team",
        "names team",
    ),
    (
        "a disallowed instance type is refused",
        "submit/ProdExp2/a.yaml",
        job().replace("prodexp1", "prodexp2").replace("ml.p4d.24xlarge", "ml.c5.xlarge").encode(),
        "jobs[0].instance_type",
        "may not use",
    ),
    (
        "another team's image is refused",
        "submit/ProdExp1/a.yaml",
        job()
        .replace(
            'framework: pytorch\nframework_version: "2.6.0"\n',
            "image: 111122223333.dkr.ecr.us-east-1.amazonaws.com/prodexp2/x:1\n",
        )
        .encode(),
        "jobs[0].image",
        "image prefixes",
    ),
    (
        "choosing a role is refused",
        "submit/ProdExp1/a.yaml",
        job(role_arn="arn:aws:iam::1:role/Admin").encode(),
        "jobs[0].role_arn",
        "may not choose an IAM role",
    ),
    (
        "a team folder that is not in the config is refused",
        "submit/Nobody/a.yaml",
        job().encode(),
        "key",
        "not in the shares config",
    ),
    (
        "a nested folder under the team is refused",
        "submit/ProdExp1/x/a.yaml",
        job().encode(),
        "key",
        "not submit/<team>/<file>",
    ),
    (
        "a file that is not YAML or JSON by name is refused",
        "submit/ProdExp1/a.txt",
        job().encode(),
        "key",
        "not .yaml",
    ),
]


@pytest.mark.parametrize(
    ("key", "body", "path", "message"), [b[1:] for b in BAD_INPUTS], ids=[b[0] for b in BAD_INPUTS]
)
def test_bad_input_is_rejected_beside_its_original_with_a_problem_naming_path_and_fix(
    world: DropWorld, key: str, body: bytes, path: str, message: str
) -> None:
    obj = world.drop(key, body)
    outcome = world.handle(obj)
    assert outcome.status == "rejected" and world.batch.submits == []
    report = world.json(outcome.answer or "")
    assert any(p["path"] == path and message in p["message"] and p["fix"] for p in report["problems"]), report
    # the original is moved, byte for byte; nothing stays under submit/
    assert outcome.destination and outcome.destination.startswith("rejected/")
    assert world.body(outcome.destination) == body
    assert not any(k.startswith("submit/") for k in world.keys())
    (alert,) = world.alerts()
    attributes = {k: v["Value"] for k, v in alert["MessageAttributes"].items()}
    assert attributes["kind"] == "spec_rejected" and attributes["severity"] == "warning"
    # the team whose folder the key lies under is told, however bad the rest of the name; a key under
    # no known team folder has no team to filter on. Nothing was submitted, so no share identifier is
    # known (a team has one per tier).
    parts = key.split("/")
    known = parts[0] == "submit" and len(parts) >= 3 and parts[1] in world.config.teams
    assert attributes["team"] == (parts[1] if known else "none")
    assert not known or report["team"] == parts[1]
    assert attributes["share"] == "none"


def test_a_file_over_256_kb_is_rejected_without_being_read(world: DropWorld, monkeypatch: Any) -> None:
    reads: list[str] = []
    original = world.ports.bucket.read
    monkeypatch.setattr(world.ports.bucket, "read", lambda *a: reads.append(a[1]) or original(*a))
    body = b"# " + b"x" * MAX_SPEC_BYTES + b"\n" + job().encode()
    outcome = world.handle(world.drop("submit/ProdExp1/big.yaml", body))
    report = world.json(outcome.answer or "")
    assert reads == [] and outcome.status == "rejected"
    assert (
        report["problems"][0]["path"] == "file" and f"{len(body)} bytes" in report["problems"][0]["message"]
    )
    assert world.body("rejected/ProdExp1/big.yaml") == body


def test_a_mixed_list_submits_the_good_jobs_and_reports_the_bad_ones(world: DropWorld) -> None:
    body = as_list(job("good-one"), job("bad-one", retry_attempts="9"), job("good-two")).encode()
    outcome = world.handle(world.drop("submit/ProdExp1/mixed.yaml", body))
    assert outcome.status == "partially_accepted"
    assert [c["jobName"] for c in world.batch.submits] == ["good-one", "good-two"]
    receipt = world.json(outcome.answer or "")
    assert [j["name"] for j in receipt["jobs"]] == ["good-one", "good-two"]
    assert [r["index"] for r in receipt["rejected"]] == [1] and "accepted/" in receipt["note"]
    assert all(p["path"].startswith("jobs[1].") for p in receipt["problems"])
    (alert,) = world.alerts()
    assert {k: v["Value"] for k, v in alert["MessageAttributes"].items()} == {
        "severity": "warning",
        "team": "ProdExp1",
        "tier": "HIGHPRI",
        "share": "ProdExp1HIGHPRI",
        "kind": "spec_rejected",
        "queue": "search-p4d-queue",
    }


def test_a_rejected_drops_alert_is_listed_where_shareplane_alerts_reads_and_sent_once(
    world: DropWorld, monkeypatch: Any
) -> None:
    # GIVEN a drop with one good and one bad job, whose first try dies after alerting, before its delete
    obj = world.drop(
        "submit/ProdExp1/mixed.yaml", as_list(job("good-one"), job("bad-one", team="X")).encode()
    )
    original_delete = world.ports.bucket.delete
    calls: list[str] = []

    def dies_once(*args: Any) -> None:
        calls.append(args[1])
        if len(calls) == 1:
            raise ConnectionError("the invocation ended before the delete")
        original_delete(*args)

    monkeypatch.setattr(world.ports.bucket, "delete", dies_once)
    with pytest.raises(ConnectionError):
        world.handle(obj)
    # WHEN the record is delivered again
    again = world.handle(obj)
    # THEN the drop is answered, and its alert went out once
    assert again.status == "partially_accepted" and calls == [obj.key, obj.key]
    (published,) = world.alerts()
    # AND the alert ledger `shareplane alerts` reads lists it, routed to the team, naming the answer
    (listed,) = world.ports.sender.ledger.alerts(since=0)
    assert (listed.kind, listed.severity, listed.team, listed.tier, listed.share, listed.queue) == (
        "spec_rejected",
        "warning",
        "ProdExp1",
        "HIGHPRI",
        "ProdExp1HIGHPRI",
        "search-p4d-queue",
    )
    assert listed.sent_at == NOW_MS / 1000 and listed.subject == published["Subject"]
    assert "partly rejected" in listed.subject and "mixed.yaml" in listed.subject
    assert listed.body["answer"] == f"s3://{obj.bucket}/{again.answer}"
    assert [r["index"] for r in listed.body["rejected"]] == [1] and listed.body["fix"]


def test_a_job_batch_refuses_is_reported_and_the_rest_submitted(world: DropWorld) -> None:
    world.batch.refuse_job_names = {"bad-one"}
    outcome = world.handle(
        world.drop("submit/ProdExp1/m.yaml", as_list(job("ok-one"), job("bad-one")).encode())
    )
    receipt = world.json(outcome.answer or "")
    assert outcome.status == "partially_accepted"
    assert receipt["rejected"][0]["errors"][0]["message"].startswith("AWS Batch refused the job")


def test_a_key_outside_submit_gets_a_report_and_is_left_where_it_is(world: DropWorld) -> None:
    obj = world.drop("incoming/ProdExp1/a.yaml", job().encode())
    outcome = world.handle(obj)
    assert (
        outcome.status == "rejected" and outcome.answer and outcome.answer.startswith("answers/_invalid-key/")
    )
    assert "incoming/ProdExp1/a.yaml" in world.keys()
    assert world.json(outcome.answer)["problems"][0]["path"] == "key"


def test_the_submit_paths_own_answers_are_never_read_as_specs(world: DropWorld) -> None:
    outcome = world.handle(world.drop("accepted/ProdExp1/a.yaml", job().encode()))
    assert (
        outcome.status == "ignored"
        and world.batch.submits == []
        and world.keys() == {"accepted/ProdExp1/a.yaml"}
    )


def test_duplicate_events_submit_once_and_record_one_submitted_entry(world: DropWorld) -> None:
    obj = world.drop("submit/ProdExp1/dup.yaml", as_list(job("a-1"), job("a-2")).encode())
    first = world.handle(obj)
    again = world.handle(obj)
    assert first.status == "accepted" and again.status == "already_answered"
    assert world.batch.distinct_jobs == 2 and len(world.batch.submits) == 2
    for entry in first.jobs:
        assert [h.status for h in world.store.job_history(entry.job_arn)] == [JobStatus.SUBMITTED]


def test_a_retry_after_a_transient_failure_submits_each_job_once(world: DropWorld) -> None:
    # GIVEN Batch throttles the second job: the record fails and SQS delivers it again
    obj = world.drop("submit/ProdExp1/retry.yaml", as_list(job("r-1"), job("r-2")).encode())
    world.batch.fail_next = 0
    calls = world.batch.submits
    original_submit = world.batch.submit

    def flaky(request: Any) -> Any:
        if request.job_name == "r-2" and sum(c["jobName"] == "r-2" for c in calls) == 0:
            calls.append(request.aws_fields())
            raise ConnectionError("throttled")
        return original_submit(request)

    world.ports = type(world.ports)(
        **{
            **world.ports.__dict__,
            "batch": type(
                "B", (), {"submit": staticmethod(flaky), "find_submitted": world.batch.find_submitted}
            )(),
        }
    )
    with pytest.raises(ConnectionError):
        world.handle(obj)
    assert "submit/ProdExp1/retry.yaml" in world.keys(), "the original stays until it is answered"
    # WHEN the event comes again
    outcome = world.handle(obj)
    # THEN r-1 was sent twice with one token: Batch rejected the repeat and the job it created was
    # found by its submission tag (one job); r-2 once more, and one SUBMITTED record each
    assert outcome.status == "accepted" and world.batch.distinct_jobs == 2
    for entry in outcome.jobs:
        assert len(world.store.job_history(entry.job_arn)) == 1


def test_a_new_upload_under_the_same_name_is_a_new_submission(world: DropWorld) -> None:
    first = world.handle(world.drop("submit/ProdExp1/same.yaml", job().encode()))
    second = world.handle(world.drop("submit/ProdExp1/same.yaml", job().encode()))
    assert first.jobs[0].client_token != second.jobs[0].client_token and world.batch.distinct_jobs == 2


def test_an_object_deleted_before_it_was_read_is_gone_not_an_error(world: DropWorld) -> None:
    obj = world.drop("submit/ProdExp1/x.yaml", job().encode())
    world.s3.delete_object(Bucket=obj.bucket, Key=obj.key, VersionId=obj.version_id)
    assert world.handle(obj).status == "gone"


def test_the_example_spec_in_config_jobs_is_accepted(world: DropWorld) -> None:
    body = (REPO / "config" / "jobs" / "prodexp1-bert.yaml").read_bytes()
    outcome = world.handle(world.drop("submit/ProdExp1/prodexp1-bert.yaml", body))
    assert outcome.status == "accepted"
    assert {c["jobQueue"] for c in world.batch.submits} == {"search-p4d-queue", "search-cpu-fifo-queue"}


SPECISH = st.one_of(
    st.binary(max_size=300),
    st.text(max_size=300).map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.lists(
        st.sampled_from([job(), "- ", "name: x\n", "&a [1]\n", "*a\n", "!!str x\n", "{", "\x00", "  - 1\n"]),
        max_size=6,
    ).map(lambda parts: "".join(parts).encode()),
)
KEYS = st.sampled_from(
    [
        "submit/ProdExp1/f.yaml",
        "submit/ProdExp1/f.json",
        "submit/ProdExp2/f y+z.yml",
        "submit/ProdExp1/ä.yaml",
        "submit/X/../f.yaml",
        "submit/f.yaml",
        "other/f.yaml",
        "submit/ProdExp1/.hidden.yaml",
    ]
)


@settings(
    max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(body=SPECISH, key=KEYS)
def test_fuzz_every_file_is_answered_and_never_lost(world: DropWorld, body: bytes, key: str) -> None:
    obj = world.drop(key, body)
    outcome = world.handle(obj)  # no exception, whatever the bytes
    assert outcome.answer is not None
    answer = world.json(outcome.answer)
    assert answer["source"]["versionId"] == obj.version_id
    # the original's bytes survive: moved beside the answer, or left where they were
    assert world.body(outcome.destination or obj.key) == body
    assert world.handle(obj).status in ("already_answered", "rejected")  # a repeat changes nothing new


# -- the receipt's first start prediction ---------------------------------------------------------
def with_forecast(world: DropWorld, budget: float = 10.0) -> list[int]:
    """The submit path given the receipt's forecast, reading the twin from the moto table through the
    adapters the Lambda uses (the ByStatus index, each job's history); returns the forecasts' chunks."""
    import shareplane.domain.forecast.start_forecast as start_forecast
    from shareplane.adapters.share_store import DynamoShareStore
    from shareplane.service.receipt_prediction import ReceiptForecast
    from shareplane.service.start_predictions import ForecastLimits, ForecastPorts

    from tests.fakes.shares_batch import FakeSharesBatch
    from tests.unit.service.test_start_predictions import POLICY

    chunks: list[int] = []
    forecast = start_forecast.forecast_starts

    def counted(*args: Any, **kwargs: Any) -> Any:
        chunks.append(1)
        return forecast(*args, **kwargs)

    start_forecast.forecast_starts = counted  # type: ignore[assignment]
    twin = ForecastPorts(
        store=world.store,
        recent=DynamoShareStore(world.dynamodb, "shareplane-jobs"),
        batch=FakeSharesBatch(policy=POLICY, capacity=4),
        config=world.config,
        queue="search-p4d-queue",
        limits=ForecastLimits(samples=40),
    )
    forecast_ports = ReceiptForecast(twin=twin, clock=lambda: 0.0, budget_seconds=budget)
    world.ports = replace(world.ports, forecast=forecast_ports)
    return chunks


@pytest.fixture
def chunks(world: DropWorld, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    import shareplane.domain.forecast.start_forecast as start_forecast

    monkeypatch.setattr(start_forecast, "forecast_starts", start_forecast.forecast_starts)  # restored after
    return with_forecast(world)


def test_the_receipt_carries_each_gpu_jobs_first_prediction(world: DropWorld, chunks: list[int]) -> None:
    # GIVEN a spec with two GPU jobs dropped while the GPU queue has room for one
    obj = world.drop(
        "submit/ProdExp1/pair.yaml",
        as_list(job("p-1"), job("p-2").replace("instance_count: 2", "instance_count: 3")).encode(),
    )
    # WHEN the submit path handles it
    outcome = world.handle(obj)
    # THEN the receipt gives each job its p10/p50/p90, made at the submission's time from 40 runs
    receipt = world.json(outcome.answer or "")
    assert outcome.status == "accepted" and len(chunks) == 4
    for entry in receipt["jobs"]:
        prediction = entry["prediction"]
        assert prediction["predictedAt"] >= NOW_MS and prediction["samples"] == 40
        assert (
            prediction["predictedAt"]
            <= prediction["startP10"]
            <= prediction["startP50"]
            <= prediction["startP90"]
        )
    assert "submit_job" in receipt["prediction"]["predictedBy"]
    # AND the jobs' records hold no prediction: those are the watch's
    assert all(world.store.load_prediction(e["jobArn"]) is None for e in receipt["jobs"])


def test_a_redelivered_drop_keeps_the_first_answers_predictions(world: DropWorld, chunks: list[int]) -> None:
    # GIVEN a drop answered once, whose original could not be deleted (the record fails and comes again)
    obj = world.drop("submit/ProdExp1/again.yaml", job("g-1").encode())
    bucket = world.ports.bucket

    class Undeletable:
        def __getattr__(self, name: str) -> Any:
            return getattr(bucket, name)

        def delete(self, *args: Any) -> None:
            raise ConnectionError("S3 unreachable")

    world.ports = replace(world.ports, bucket=Undeletable())  # type: ignore[arg-type]
    with pytest.raises(ConnectionError):
        world.handle(obj)
    first = world.json(next(k for k in world.keys() if k.startswith("answers/")))
    forecasts = len(chunks)
    # WHEN it is handled again, with more work queued in between
    world.ports = replace(world.ports, bucket=bucket)
    world.handle(
        world.drop(
            "submit/ProdExp1/other.yaml",
            job("o-1").replace("instance_count: 2", "instance_count: 4").encode(),
        )
    )
    forecasts_between = len(chunks)
    outcome = world.handle(obj)
    # THEN its receipt gives the very predictions the first answer gave, without a new forecast
    again = world.json(outcome.answer or "")
    assert again["jobs"] == first["jobs"] and again["prediction"] == first["prediction"]
    assert forecasts_between > forecasts and len(chunks) == forecasts_between


def test_a_failing_forecast_never_fails_the_submission(world: DropWorld, chunks: list[int]) -> None:
    # GIVEN Batch's queue settings cannot be read
    assert world.ports.forecast is not None
    twin = world.ports.forecast.twin

    class Unreachable:
        def __getattr__(self, name: str) -> Any:
            raise ConnectionError("Batch endpoint unreachable")

    broken = replace(world.ports.forecast, twin=replace(twin, batch=Unreachable()))  # type: ignore[arg-type]
    world.ports = replace(world.ports, forecast=broken)
    # WHEN a spec is dropped
    outcome = world.handle(world.drop("submit/ProdExp1/f.yaml", job("f-1").encode()))
    # THEN it is submitted and receipted as ever, the receipt saying why it has no prediction
    receipt = world.json(outcome.answer or "")
    assert outcome.status == "accepted" and world.batch.distinct_jobs == 1
    assert receipt["jobs"][0]["prediction"] is None
    assert receipt["prediction"]["notAtSubmission"].startswith("the forecast failed: ConnectionError")
    assert "watch_jobs tick" in receipt["prediction"]["predictedBy"]
