"""AccessDenied on the control plane's own calls: classified, alerted once per role and action, record kept."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from botocore.exceptions import ClientError
from shareplane.adapters.aws_errors import permission_denied, role_arn
from shareplane.domain.alerts.alert import Alert, AlertKind
from shareplane.domain.errors import PermissionDeniedError, RejectedByServiceError
from shareplane.service.permission_denied import PermissionAlerts, guard

from tests.conftest import REPO, load_handler
from tests.fakes.alert_ledger import FakeAlertLedger

ROLE_SESSION = (
    "arn:aws:sts::123456789012:assumed-role/stack-HandleFailureRole-ABC/stack-HandleFailureFunction"
)
ROLE = "arn:aws:iam::123456789012:role/stack-HandleFailureRole-ABC"


def client_error(code: str, message: str, operation: str = "SubmitServiceJob") -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message}}, operation)


def denied_message(action: str, resource: str) -> str:
    return (
        f"User: {ROLE_SESSION} is not authorized to perform: {action} on resource: {resource} "
        f"because no identity-based policy allows the {action} action"
    )


@pytest.mark.parametrize(
    ("code", "message", "action", "resource", "role"),
    [
        (
            "AccessDeniedException",
            denied_message("batch:SubmitServiceJob", "arn:aws:batch:us-east-1:123456789012:job-queue/gpu"),
            "batch:SubmitServiceJob",
            "arn:aws:batch:us-east-1:123456789012:job-queue/gpu",
            ROLE,
        ),
        (
            "AccessDeniedException",
            denied_message("iam:PassRole", "arn:aws:iam::123456789012:role/team-training"),
            "iam:PassRole",
            "arn:aws:iam::123456789012:role/team-training",
            ROLE,
        ),
        (
            "AuthorizationError",
            f"User: {ROLE_SESSION} is not authorized to perform: SNS:Publish on resource: arn:aws:sns:us-east-1:123456789012:alerts",
            "SNS:Publish",
            "arn:aws:sns:us-east-1:123456789012:alerts",
            ROLE,
        ),
        ("AccessDenied", "Access Denied", "SubmitServiceJob", None, None),  # S3 names nothing
    ],
)
def test_access_denied_answers_are_classified_with_the_action_resource_and_role(
    code: str, message: str, action: str, resource: str | None, role: str | None
) -> None:
    found = permission_denied(client_error(code, message))
    assert found is not None
    assert (found.action, found.resource, found.role) == (action, resource, role)
    assert action in str(found) and "fix:" in str(found)


@pytest.mark.parametrize(
    "exc",
    [
        client_error("ThrottlingException", "Rate exceeded"),
        client_error("ClientException", "job queue not found"),
        RejectedByServiceError("request", "job queue not found", "check it"),
        ValueError("bad"),
    ],
)
def test_other_errors_are_not_permission_problems(exc: Exception) -> None:
    assert permission_denied(exc) is None


def test_a_denial_wrapped_by_an_adapter_is_still_found() -> None:
    try:
        try:
            raise client_error("AccessDeniedException", denied_message("dynamodb:PutItem", "arn:t"))
        except ClientError as exc:
            raise RuntimeError("store failed") from exc
    except RuntimeError as wrapped:
        found = permission_denied(wrapped)
    assert found is not None and found.action == "dynamodb:PutItem"


def test_role_arn_is_the_role_behind_an_assumed_role_session() -> None:
    assert role_arn(ROLE_SESSION) == ROLE
    assert role_arn("arn:aws:iam::123456789012:user/alice") == "arn:aws:iam::123456789012:user/alice"


class Topic:
    def __init__(self, fail: bool = False) -> None:
        self.sent: list[tuple[str, Mapping[str, object], Mapping[str, str]]] = []
        self.fail = fail

    def publish(self, subject: str, message: Mapping[str, object], attributes: Mapping[str, str]) -> None:
        if self.fail:
            raise client_error("AuthorizationError", "not authorized to perform: SNS:Publish", "Publish")
        self.sent.append((subject, message, attributes))


class Ledger(FakeAlertLedger):
    """The alert ledger, shared by every instance (like the jobs table); it may refuse its writes."""

    def __init__(self, refuse: bool = False) -> None:
        super().__init__()
        self.refuse = refuse

    def claim_alert(
        self, alert: Alert, now: float, quiet_seconds: float, *, claimed_at: float | None = None
    ) -> bool:
        if self.refuse:
            raise client_error(
                "AccessDeniedException", denied_message("dynamodb:PutItem", "arn:t"), "PutItem"
            )
        return super().claim_alert(alert, now, quiet_seconds, claimed_at=claimed_at)


def reporter(topic: Topic, ledger: Ledger) -> PermissionAlerts:
    return PermissionAlerts("HandleFailureFunction", lambda: topic, lambda: ledger, clock=lambda: 1000.0)


def refusing_handler(action: str = "iam:PassRole") -> Any:
    def handle(record: str) -> None:
        raise client_error(
            "AccessDeniedException", denied_message(action, "arn:aws:iam::123456789012:role/team")
        )

    return handle


def test_every_record_fails_but_only_one_alert_names_the_permission_and_the_role() -> None:
    topic, ledger = Topic(), Ledger()
    instances = [reporter(topic, ledger), reporter(topic, ledger)]  # two concurrent Lambda instances
    for instance in instances:
        handler = guard(permission_denied, lambda instance=instance: instance)(refusing_handler())
        for record in ("r1", "r2", "r3"):
            with pytest.raises(PermissionDeniedError) as raised:
                handler(record)
            assert isinstance(
                raised.value.__cause__, ClientError
            )  # the record is kept: it retries, then the DLQ
    assert len(topic.sent) == 1
    subject, body, attributes = topic.sent[0]
    assert "iam:PassRole" in subject and attributes["kind"] == AlertKind.PERMISSION_DENIED.value
    assert body["role"] == ROLE and body["action"] == "iam:PassRole"
    assert "grant iam:PassRole" in str(body["fix"]) and ROLE in str(body["fix"])


def test_a_different_missing_action_is_a_second_alert() -> None:
    topic, ledger = Topic(), Ledger()
    instance = reporter(topic, ledger)
    for action in ("iam:PassRole", "batch:DescribeServiceJob", "iam:PassRole"):
        with pytest.raises(PermissionDeniedError):
            guard(permission_denied, lambda: instance)(refusing_handler(action))("r")
    assert [body["action"] for _, body, _ in topic.sent] == ["iam:PassRole", "batch:DescribeServiceJob"]


def test_a_role_that_cannot_write_the_ledger_alerts_once_per_instance() -> None:
    topic = Topic()
    instance = reporter(topic, Ledger(refuse=True))
    for _ in range(3):
        with pytest.raises(PermissionDeniedError):
            guard(permission_denied, lambda: instance)(refusing_handler())("r")
    assert len(topic.sent) == 1


def test_a_role_that_cannot_publish_still_fails_the_record_and_frees_the_claim() -> None:
    ledger = Ledger()
    instance = reporter(Topic(fail=True), ledger)
    with pytest.raises(PermissionDeniedError) as raised:
        guard(permission_denied, lambda: instance)(refusing_handler())("r")
    assert raised.value.action == "iam:PassRole"  # the original refusal, not the alert's
    assert ledger.items == {}  # the next delivery tries again


def test_other_errors_pass_through_unchanged_and_alert_nothing() -> None:
    topic = Topic()
    throttled = client_error("ThrottlingException", "Rate exceeded")

    def handle(record: str) -> None:
        raise throttled

    with pytest.raises(ClientError) as raised:
        guard(permission_denied, lambda: reporter(topic, Ledger()))(handle)("r")
    assert raised.value is throttled and topic.sent == []


FUNCTIONS = sorted(p.name for p in (REPO / "functions").iterdir() if (p / "app.py").is_file())


@pytest.mark.parametrize("function", FUNCTIONS)
def test_every_handler_processes_its_records_through_the_guard(function: str) -> None:
    record_handler = load_handler(function).lambda_handler.record_handler
    assert record_handler.__code__.co_name == "guarded"  # functools.wraps keeps the name, not the code
    assert record_handler.__wrapped__.__module__ == f"shareplane_function_{function}"
