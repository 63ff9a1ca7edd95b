"""The uploader's principal lands on every job of its drop, whatever the order and number of events.

S3's Object Created event (the submit path) and CloudTrail's data event (the attribution path) arrive
in any order, each possibly more than once, and the second may come while the first is half done. A
hypothesis property drives both paths over moto's DynamoDB, S3 and SNS (Batch is the fake of
tests/integration/drop_world.py): any permutation of 1-3 copies of each event, with the first CloudTrail event
optionally handled in the middle of the first submit run (before any of the submit path's calls to the
join), always ends with every job carrying the same principal record, one attribution, and one alert
exactly when the uploader is not one of the team's submitters.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from moto import mock_aws
from shareplane.adapters.alert_ledger import DynamoAlertLedger
from shareplane.adapters.dynamodb_items import unmarshal
from shareplane.adapters.dynamodb_store import PAYLOAD_SK, job_pk
from shareplane.adapters.upload_attributions import DynamoUploadAttributions, principal_item
from shareplane.domain.submit.attribution import UploadAttribution, uploader_principal
from shareplane.service.record_uploader import record_upload
from shareplane.service.submit_job import submit_dropped_spec

from tests.conftest import REPO
from tests.integration.drop_world import BUCKET, NOW_MS, TABLE, DropWorld, build_world
from tests.properties import examples

REQUEST = "7K3Q9ZP1M2X8C4VA"
KEY = "submit/ProdExp1/sweep.yaml"
SPEC = (REPO / "config" / "jobs" / "prodexp1-bert.yaml").read_bytes()
SUBMITTER = UploadAttribution(
    request_id=REQUEST,
    bucket=BUCKET,
    key=KEY,
    event_name="PutObject",
    principal_arn="arn:aws:sts::111122223333:assumed-role/prodexp1-ml-engineers/alice",
    principal_type="AssumedRole",
    account_id="111122223333",
    session_issuer_arn="arn:aws:iam::111122223333:role/prodexp1-ml-engineers",
)
STRANGER = replace(
    SUBMITTER,
    principal_arn="arn:aws:iam::111122223333:user/mallory",
    principal_type="IAMUser",
    session_issuer_arn=None,
)


class Interrupting:
    """The join port of the submit path, which handles CloudTrail's event just before call ``at``."""

    def __init__(self, inner: DynamoUploadAttributions, at: int | None, interrupt: Any) -> None:
        self._inner, self._at, self._interrupt, self._calls = inner, at, interrupt, 0
        self.fired = False

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._inner, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            if self._calls == self._at:
                self._interrupt()
                self.fired = True
            self._calls += 1
            return method(*args, **kwargs)

        return call


def _payloads(world: DropWorld) -> dict[str, dict[str, Any]]:
    items = {}
    for job in world.batch.jobs.values():
        item = world.dynamodb.get_item(
            TableName=TABLE, Key={"pk": {"S": job_pk(job["jobArn"])}, "sk": {"S": PAYLOAD_SK}}
        ).get("Item")
        assert item is not None, f"{job['jobName']} has no payload item"
        items[job["jobName"]] = unmarshal(item)
    return items


def _alerts(world: DropWorld) -> list[dict[str, Any]]:
    notes = []
    while batch := world.alerts():
        notes += batch
    return [n for n in notes if "uploader_not_submitter" in n.get("Message", "")]


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    drops=st.integers(1, 3),
    trails=st.integers(1, 3),
    uploader=st.sampled_from([SUBMITTER, STRANGER]),
    mid_submit=st.none() | st.integers(0, 7),
    data=st.data(),
)
def test_every_order_and_duplicate_ends_with_the_principal_on_every_job(
    drops: int, trails: int, uploader: UploadAttribution, mid_submit: int | None, data: st.DataObject
) -> None:
    order = data.draw(st.permutations(["drop"] * drops + ["trail"] * trails), label="order")
    with mock_aws():
        world = build_world()
        dropped = replace(world.drop(KEY, SPEC), request_id=REQUEST, requester="111122223333")
        attributions = DynamoUploadAttributions(world.dynamodb, TABLE)
        uploader_ports = world.uploader_ports(attributions)

        def trail() -> None:
            record_upload(uploader, uploader_ports, NOW_MS // 1000)

        remaining = list(order)
        if mid_submit is not None and "drop" in remaining and "trail" in remaining:
            # the first CloudTrail event is handled while the first drop event is half done
            remaining.remove("trail")
            remaining.remove("drop")
            interrupting = Interrupting(attributions, mid_submit, trail)
            ports = replace(world.ports, attributions=interrupting, queues=world.queues)
            submit_dropped_spec(dropped, ports, NOW_MS)
            if not interrupting.fired:
                trail()  # past the submit path's last join call: the trail event simply comes after
        for event in remaining:
            if event == "drop":
                world.handle(dropped)
            else:
                trail()

        expected = uploader_principal(uploader, world.config)
        payloads = _payloads(world)
        assert len(payloads) == 3, "the drop's three jobs were submitted once each"
        for name, item in payloads.items():
            assert item["uploader"] == {
                "account": "111122223333",
                "requestId": REQUEST,
                "principal": principal_item(expected),
            }, name
        stored = attributions.load_attribution(REQUEST)
        assert stored is not None and stored.principal == expected
        assert sorted(attributions.linked_jobs(REQUEST)) == sorted(
            j["jobArn"] for j in world.batch.jobs.values()
        )
        alerts = _alerts(world)
        if expected.check == "not_a_submitter":
            assert len(alerts) == 1 and stored.alerted is True
        else:
            assert alerts == [] and not stored.alerted


class FailingOnce:
    """An alert publisher whose first publish fails (SNS throttled, KMS refused)."""

    def __init__(self, inner: Any) -> None:
        self._inner, self.failed = inner, False

    def publish(self, *args: Any) -> None:
        if not self.failed:
            self.failed = True
            raise ConnectionError("SNS unavailable")
        self._inner.publish(*args)


def test_a_failed_alert_holds_back_neither_the_principal_nor_its_redelivered_alert() -> None:
    with mock_aws():
        # GIVEN a stranger's drop, submitted, and an alert topic that fails once
        world = build_world()
        dropped = replace(world.drop(KEY, SPEC), request_id=REQUEST, requester="111122223333")
        world.handle(dropped)
        attributions = DynamoUploadAttributions(world.dynamodb, TABLE)
        ports = world.uploader_ports(attributions, FailingOnce(world.ports.sender.topic))
        # WHEN CloudTrail's event is handled and its alert fails, then the record is redelivered twice
        try:
            record_upload(STRANGER, ports, NOW_MS // 1000)
        except ConnectionError:
            pass
        else:
            raise AssertionError("the failed publish must fail the record, so it is redelivered")
        principals = {name: item["uploader"]["principal"]["arn"] for name, item in _payloads(world).items()}
        for _ in range(2):
            record_upload(STRANGER, ports, NOW_MS // 1000 + 30)
        # THEN the jobs carried the principal before the alert went out, and the alert went out once
        assert set(principals.values()) == {STRANGER.principal_arn}
        assert len(_alerts(world)) == 1
        assert attributions.load_attribution(REQUEST).alerted is True


def test_the_alert_on_a_stranger_is_listed_with_every_other_alert() -> None:
    with mock_aws():
        # GIVEN a stranger's drop
        world = build_world()
        world.handle(replace(world.drop(KEY, SPEC), request_id=REQUEST, requester="111122223333"))
        # WHEN CloudTrail's event is recorded, twice
        ports = world.uploader_ports(DynamoUploadAttributions(world.dynamodb, TABLE))
        for _ in range(2):
            record_upload(STRANGER, ports, NOW_MS // 1000)
        # THEN the alert ledger, which `shareplane alerts` reads, lists the one alert sent, to the team
        (listed,) = DynamoAlertLedger(world.dynamodb, TABLE).alerts(since=0)
        assert (listed.kind, listed.team) == ("uploader_not_submitter", "ProdExp1")
        assert listed.body["principal"] == STRANGER.principal_arn and len(_alerts(world)) == 1
