"""Every drop is answered, to its team, in a place no other drop reaches: the submit path's hard cases on moto."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from moto import mock_aws
from shareplane.adapters.sns_alerts import MAX_SUBJECT_CHARS, sns_subject
from shareplane.domain.submit.jobspec import MAX_SPEC_BYTES, SUBMISSION_TAG
from shareplane.domain.submit.submission import DroppedObject, answers
from shareplane.service.submit_job import payload_request

from tests.integration.drop_world import BUCKET, DropWorld, build_world
from tests.integration.service.test_submit_job import as_list, job
from tests.properties import examples

OWNER = "123456789012"


@pytest.fixture
def world(aws_credentials: None) -> Iterator[DropWorld]:
    with mock_aws():
        yield build_world()


def alert_messages(world: DropWorld) -> list[dict[str, Any]]:
    """What SNS delivered to the inbox: subject, message and attributes."""
    return [
        {
            "subject": body.get("Subject"),
            "message": json.loads(body["Message"]),
            "attributes": {k: v["Value"] for k, v in body["MessageAttributes"].items()},
        }
        for body in world.alerts()
    ]


# -- payloads that outgrow a DynamoDB item ----------------------------------------------------------


def test_a_request_too_large_for_an_item_is_kept_in_s3_and_read_back(world: DropWorld) -> None:
    # GIVEN a spec under the 256 KB file cap whose request grows in JSON: 100 hyperparameters of 2,500
    # double quotes, each escaped once in the payload and again in the item
    quotes = '"' * 2500
    values = "".join(f"  h{i}: '{quotes}'\n" for i in range(100))
    body = (job("big-hypers") + "hyperparameters:\n" + values).encode()
    assert len(body) <= MAX_SPEC_BYTES
    obj = world.drop("submit/ProdExp1/big.yaml", body)
    # WHEN the submit path handles it
    outcome = world.handle(obj)
    # THEN the job is submitted and answered, and its request is kept in S3 beside the answers
    assert outcome.status == "accepted" and world.json(outcome.answer or "")["outcome"] == "accepted"
    (entry,) = outcome.jobs
    item = world.store.load_payload(entry.job_arn)
    assert item is not None and item.request is None
    assert item.request_at is not None and item.request_at.key.startswith("payloads/ProdExp1/")
    # AND reading the item back yields exactly the request Batch got
    (sent,) = world.batch.submits
    request = payload_request(item, world.ports.bucket)
    assert request is not None and request.aws_fields() == sent
    assert json.loads(sent["serviceRequestPayload"])["HyperParameters"]["h0"] == '"' * 2500


def test_a_request_that_fits_stays_in_the_item(world: DropWorld) -> None:
    outcome = world.handle(world.drop("submit/ProdExp1/small.yaml", job().encode()))
    item = world.store.load_payload(outcome.jobs[0].job_arn)
    assert item is not None and item.request_at is None
    request = payload_request(item, world.ports.bucket)
    assert request is not None and request.aws_fields() == world.batch.submits[0]
    assert not any(k.startswith("payloads/") for k in world.keys())


@settings(
    max_examples=examples(15), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    # sizes in bands, so the few examples reach both sides of the item limit
    count=st.sampled_from([0, 10, 60, 100]),
    length=st.sampled_from([1, 900, 1700, 2400]),
    char=st.sampled_from(['"', "\\", "\u00e9", "a", "\u2603"]),
)
def test_whatever_a_spec_under_the_file_cap_grows_to_its_payload_is_kept_and_read_back(
    world: DropWorld, count: int, length: int, char: str
) -> None:
    # moto refuses items over 400 KB as DynamoDB does, so a wrong threshold fails the write here
    hypers = {f"h{i}": char * length for i in range(count)}
    body = yaml.safe_dump([{**BASE_JOB, "hyperparameters": hypers}], allow_unicode=True)
    if len(body.encode()) > MAX_SPEC_BYTES:
        return  # over the file cap: refused before it is read (tested elsewhere)
    outcome = world.handle(world.drop(f"submit/ProdExp1/p{count}-{length}.yaml", body.encode()))
    assert outcome.status == "accepted"
    item = world.store.load_payload(outcome.jobs[0].job_arn)
    request = payload_request(item, world.ports.bucket) if item is not None else None
    assert request is not None and request.aws_fields() == world.batch.submits[-1]


# -- SNS subjects -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    ["submit/ProdExp1/a\nb.yaml", "submit/ProdExp1/a\tb.yaml", "submit/ProdExp1/\u00e9t\u00e9 \u2603.txt"],
)
def test_an_alert_about_a_key_with_control_or_non_ascii_characters_has_a_subject_sns_accepts(
    world: DropWorld, key: str
) -> None:
    outcome = world.handle(world.drop(key, job().encode()))
    assert outcome.status == "rejected"
    (alert,) = alert_messages(world)
    assert re.fullmatch(r"[!-~][ -~]{0,99}", alert["subject"]), alert["subject"]
    # and it still goes to the team whose folder it was dropped in
    assert alert["attributes"]["team"] == "ProdExp1" and alert["message"]["team"] == "ProdExp1"


@settings(max_examples=examples(300), deadline=None)
@given(text=st.text(max_size=300))
def test_every_subject_meets_the_publish_rules(text: str) -> None:
    # https://docs.aws.amazon.com/sns/latest/api/API_Publish.html: ASCII text that begins with a letter,
    # number or punctuation mark; no line breaks or control characters; at most 100 characters.
    subject = sns_subject(text)
    assert 1 <= len(subject) <= MAX_SUBJECT_CHARS
    assert subject.isascii() and subject.isprintable() and subject[0] != " "
    if text.isascii() and text.isprintable() and text.strip() and "  " not in text:
        assert subject == text.strip()[:MAX_SUBJECT_CHARS].rstrip()


# -- badly named drops and folder markers -----------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    [
        "submit/ProdExp1/nested/a.yaml",
        "submit/ProdExp1/a.txt",
        "submit/ProdExp1/.hidden.yaml",
        "submit/ProdExp1/a.yaml ",
        "submit/ProdExp1/",  # a folder marker with content is no marker
    ],
)
def test_a_badly_named_drop_under_a_team_folder_is_answered_and_alerted_to_that_team(
    world: DropWorld, key: str
) -> None:
    obj = world.drop(key, job().encode())
    outcome = world.handle(obj)
    assert outcome.status == "rejected" and world.batch.submits == []
    report = world.json(outcome.answer or "")
    assert report["team"] == "ProdExp1" and report["problems"][0]["path"] == "key"
    (alert,) = alert_messages(world)
    assert alert["attributes"]["team"] == "ProdExp1"
    assert alert["message"]["answer"] == f"s3://{BUCKET}/{outcome.answer}"
    assert key not in world.keys() and world.body(outcome.destination or "") == job().encode()


@pytest.mark.parametrize("key", ["submit/ProdExp1/", "submit/ProdExp1/sub/", "submit/"])
def test_the_consoles_folder_marker_is_left_alone(world: DropWorld, key: str) -> None:
    obj = world.drop(key, b"")
    assert world.handle(obj).status == "ignored"
    # without a size in the event, HEAD tells
    assert world.handle(replace(obj, size=None)).status == "ignored"
    assert world.keys() == {key} and world.alerts() == [] and world.batch.submits == []


# -- answers no drop can overwrite ------------------------------------------------------------------


def test_drops_named_like_answers_do_not_touch_the_answer_they_mimic(world: DropWorld) -> None:
    # GIVEN x.yaml answered
    obj = world.drop("submit/ProdExp1/x.yaml", job().encode())
    first = world.handle(obj)
    answer = world.body(first.answer or "")
    # WHEN files named like its answers, and like its answer under answers/, are dropped and handled
    for name in ("x.yaml.error.json", "x.yaml.receipt.json", f"{obj.version_id}.json"):
        world.handle(world.drop(f"submit/ProdExp1/{name}", b'{"kind": "shareplane.submission-error"}'))
    # THEN the answer of x.yaml is byte for byte what it was, and still answers x.yaml
    assert world.body(first.answer or "") == answer and answers(world.json(first.answer or ""), obj)


def test_two_uploads_of_one_name_each_keep_their_own_answer(world: DropWorld) -> None:
    first = world.drop("submit/ProdExp1/same.yaml", job().encode())
    second = world.drop("submit/ProdExp1/same.yaml", b"name: [")
    a, b = world.handle(first), world.handle(second)
    assert (a.status, b.status) == ("accepted", "rejected") and a.answer != b.answer
    assert answers(world.json(a.answer or ""), first) and answers(world.json(b.answer or ""), second)


def test_an_unversioned_bucket_keys_answers_by_etag(world: DropWorld) -> None:
    world.s3.create_bucket(Bucket="plain")
    world.s3.put_object(Bucket="plain", Key="submit/ProdExp1/a.yaml", Body=job().encode())
    etag = world.s3.head_object(Bucket="plain", Key="submit/ProdExp1/a.yaml")["ETag"].strip('"')
    obj = DroppedObject("plain", "submit/ProdExp1/a.yaml", None, None, etag)
    outcome = world.handle(obj)
    assert outcome.answer == f"answers/ProdExp1/a.yaml/{etag}.json"
    assert world.handle(obj).status == "already_answered"


# -- submit exactly once ----------------------------------------------------------------------------


def test_a_crash_after_batch_accepted_is_retried_into_the_same_job(
    world: DropWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the payload write fails once after Batch accepted the job (the function crashed there)
    obj = world.drop("submit/ProdExp1/crash.yaml", as_list(job("c-1"), job("c-2")).encode())
    save = world.store.save_payload
    failures = iter([ConnectionError("crashed")])

    def crash_once(arn: str, item: Any) -> bool:
        for error in failures:
            raise error
        return save(arn, item)

    monkeypatch.setattr(world.store, "save_payload", crash_once)
    with pytest.raises(ConnectionError):
        world.handle(obj)
    # WHEN SQS delivers the event again: Batch rejects the repeated request (same clientToken)
    outcome = world.handle(obj)
    # THEN the job the first try created is found by its submission tag: accepted, two jobs in all,
    # the receipt names them, and each has its payload
    assert outcome.status == "accepted" and world.batch.distinct_jobs == 2
    assert [c["jobName"] for c in world.batch.submits] == ["c-1", "c-1", "c-2"]
    tokens = {c["clientToken"] for c in world.batch.submits}
    assert {e.client_token for e in outcome.jobs} == tokens
    assert all(world.store.load_payload(e.job_arn) for e in outcome.jobs)


def test_a_refusal_for_another_reason_is_still_a_refusal(world: DropWorld) -> None:
    world.batch.refuse_job_names = {"bad-one"}
    outcome = world.handle(world.drop("submit/ProdExp1/r.yaml", job("bad-one").encode()))
    assert outcome.status == "rejected" and world.batch.jobs == {}
    assert world.batch.submits[0]["tags"][SUBMISSION_TAG] == world.batch.submits[0]["clientToken"]


# -- who may drop for a team ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("requester", "status"),
    [
        (OWNER, "accepted"),  # the bucket owner's account: the bucket policy names its principals
        ("111122223333", "accepted"),  # the account of ProdExp1's submitters
        ("999999999999", "rejected"),  # any other account
        (None, "accepted"),  # an event without a requester: the bucket policy alone decides
    ],
)
def test_the_uploaders_account_is_checked_against_the_teams_submitters(
    world: DropWorld, requester: str | None, status: str
) -> None:
    obj = replace(
        world.drop("submit/ProdExp1/who.yaml", job().encode()),
        requester=requester,
        bucket_owner=OWNER,
        request_id="N4N7GDK58NMKJ12R",
    )
    outcome = world.handle(obj)
    assert outcome.status == status
    answer = world.json(outcome.answer or "")
    assert answer["uploader"] == {"account": requester, "requestId": "N4N7GDK58NMKJ12R"}
    if status == "rejected":
        (problem,) = answer["problems"]
        assert problem["path"] == "key" and "submitters" in problem["message"]
        assert "teams.ProdExp1.submitters" in problem["fix"] and world.batch.submits == []
    else:
        item = world.store.load_payload(outcome.jobs[0].job_arn)
        # (the store leaves out empty values)
        assert item is not None and (item.uploader or {}).get("account") == requester


# -- generated keys ---------------------------------------------------------------------------------

SEGMENT = st.text(alphabet="ab.-_ +", min_size=0, max_size=6)
GENERATED_KEYS = st.builds(
    lambda team, parts, suffix: "/".join(["submit", team, *parts]) + suffix,
    st.sampled_from(["ProdExp1", "ProdExp2", "Nobody"]),
    st.lists(SEGMENT, min_size=1, max_size=3),
    st.sampled_from([".yaml", ".json", ".txt", "", "/", ".yaml.error.json", ".yaml.receipt.json", " "]),
)


@settings(
    max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(keys=st.lists(GENERATED_KEYS, min_size=1, max_size=4), good=st.booleans())
def test_generated_drops_are_each_answered_to_their_team_and_no_answer_is_overwritten(
    world: DropWorld, keys: list[str], good: bool
) -> None:
    answered: list[tuple[DroppedObject, str]] = []
    for key in keys:
        obj = world.drop(key, job(f"g{len(answered)}").encode() if good else b"name: [")
        outcome = world.handle(obj)
        if outcome.status == "ignored":
            continue
        assert outcome.answer is not None and outcome.answer.startswith("answers/")
        team = key.split("/")[1]
        if team in world.config.teams:
            assert world.json(outcome.answer)["team"] == team
        answered.append((obj, outcome.answer))
    # every answer still answers its own drop: none was overwritten by a later one
    for obj, at in answered:
        assert answers(world.json(at), obj), at


# -- `shareplane validate` and the Lambda agree -----------------------------------------------------

FIELD_VALUES = {
    "instance_type": st.sampled_from(["ml.p4d.24xlarge", "ml.c5.xlarge", "ml.p5.48xlarge", "p4d"]),
    "instance_count": st.sampled_from([1, 2, 0, 33, 101, "2"]),
    "name": st.sampled_from(["ok-name", "-bad", "x" * 64, "dup"]),
    "team": st.sampled_from(["ProdExp1", "ProdExp2"]),
    "hyperparameters": st.dictionaries(
        st.sampled_from(["lr", "note", "q"]),
        st.one_of(st.text(max_size=30), st.integers(), st.just('"' * 40)),
    ),
    "output_path": st.sampled_from(
        ["s3://search-ml-training/prodexp1/out/", "s3://search-ml-training/prodexp2/", "s3://x/y"]
    ),
    "retry_attempts": st.sampled_from([1, 3, 4, 11]),
    "tags": st.dictionaries(st.sampled_from(["p", "shareplane:team", "aws:x"]), st.sampled_from(["v", ""])),
    "rolearn": st.just("arn:aws:iam::1:role/Admin"),
}
BASE_JOB = {
    "name": "ok-name",
    "instance_type": "ml.p4d.24xlarge",
    "framework": "pytorch",
    "framework_version": "2.6.0",
    "output_path": "s3://search-ml-training/prodexp1/out/",
}
SPECS = st.lists(
    st.fixed_dictionaries({}, optional=FIELD_VALUES).map(lambda changes: {**BASE_JOB, **changes}),
    min_size=1,
    max_size=3,
)


@settings(
    max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    jobs=SPECS,
    name=st.sampled_from(["a.yaml", "a.json", "a.txt", ".a.yaml", "a b.yml"]),
    as_json=st.booleans(),
)
def test_validate_and_the_lambda_give_the_same_verdict_and_problems(
    world: DropWorld, jobs: list[dict[str, Any]], name: str, as_json: bool
) -> None:
    from shareplane.domain.submit.jobspec import parse_local_spec

    data = (json.dumps(jobs) if as_json else yaml.safe_dump(jobs)).encode()
    local = parse_local_spec(data, name, world.config, "ProdExp1")
    outcome = world.handle(world.drop(f"submit/ProdExp1/{name}", data))
    answer = world.json(outcome.answer or "")
    expected = (
        "accepted"
        if local.ok
        else ("rejected" if not any(j.ok for j in local.jobs) else "partially_accepted")
    )
    assert outcome.status == expected
    local_problems = [p.as_dict() for p in local.problems] + [
        p.as_dict() for j in local.jobs for p in j.problems
    ]
    assert answer["problems"] == local_problems
    assert [j["name"] for j in answer["jobs"]] == [j.name for j in local.jobs if j.ok]
