"""Who uploaded a drop, against its team's submitters: the record a job carries, and the alert."""

from __future__ import annotations

from dataclasses import replace

import pytest
from shareplane.domain.alerts.alert import uploader_alert
from shareplane.domain.submit.attribution import (
    PrincipalCheck,
    UploadAttribution,
    check_principal,
    uploader_principal,
)

from tests.fakes.failure_world import shares_config

ROLE = "arn:aws:iam::111122223333:role/prodexp1-ml-engineers"
ALICE = UploadAttribution(
    request_id="N4N7GDK58NMKJ12R",
    bucket="drop",
    key="submit/ProdExp1/sweep.yaml",
    event_name="PutObject",
    principal_arn="arn:aws:sts::111122223333:assumed-role/prodexp1-ml-engineers/alice",
    principal_type="AssumedRole",
    account_id="111122223333",
    session_issuer_arn=ROLE,
)

CASES = [
    ("a session of the team's submitter role", ALICE, "ProdExp1", PrincipalCheck.SUBMITTER),
    (
        "the submitter role of another team",
        replace(ALICE, key="submit/ProdExp2/x.yaml"),
        "ProdExp2",
        PrincipalCheck.NOT_A_SUBMITTER,
    ),
    (
        "a user of the right account",
        replace(ALICE, principal_arn="arn:aws:iam::111122223333:user/bob", session_issuer_arn=None),
        "ProdExp1",
        PrincipalCheck.NOT_A_SUBMITTER,
    ),
    (
        "the session ARN itself is not what the policy names",
        replace(ALICE, session_issuer_arn=None),
        "ProdExp1",
        PrincipalCheck.NOT_A_SUBMITTER,
    ),
    (
        "a key under no team's folder",
        replace(ALICE, key="submit/Nobody/x.yaml"),
        None,
        PrincipalCheck.NO_TEAM,
    ),
]


@pytest.mark.parametrize(("attribution", "team", "check"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_the_uploader_is_checked_as_the_bucket_policy_checks_it(
    attribution: UploadAttribution, team: str | None, check: PrincipalCheck
) -> None:
    assert check_principal(attribution, shares_config()) == (team, check)
    assert uploader_principal(attribution, shares_config()).check is check


def test_a_team_without_submitters_is_named_open() -> None:
    config = shares_config()
    open_team = config.teams["ProdExp1"].model_copy(update={"submitters": ()})
    config = config.model_copy(update={"teams": {**config.teams, "ProdExp1": open_team}})
    assert check_principal(ALICE, config) == ("ProdExp1", PrincipalCheck.TEAM_HAS_NO_SUBMITTERS)


def test_the_record_is_the_same_for_the_same_event() -> None:
    principal = uploader_principal(ALICE, shares_config())
    assert principal == uploader_principal(ALICE, shares_config())
    assert principal.arn == ALICE.principal_arn and principal.session_issuer_arn == ROLE


def test_the_alert_names_the_principal_the_submitters_and_fits_sns() -> None:
    stranger = replace(ALICE, key="submit/ProdExp2/" + "x" * 300 + ".yaml")
    team, _ = check_principal(stranger, shares_config())
    alert = uploader_alert(stranger, team, shares_config().teams["ProdExp2"].submitters)
    subject = alert.subject
    assert len(subject) <= 100 and "ProdExp2" in subject
    message = alert.body
    assert message["principal"] == ALICE.principal_arn
    assert message["policyPrincipal"] == ROLE
    assert message["submitters"] == ["arn:aws:iam::111122223333:role/prodexp2-ml-engineers"]
