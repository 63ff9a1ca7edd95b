"""The drop bucket's policy, evaluated: who may write each team folder and the submit path's answers.

moto stores bucket policies but enforces none, so the rendered statements are evaluated here with
IAM's rules for what they use (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic.html):
an explicit Deny wins over any Allow; a statement applies when its Action, Resource (or NotResource)
and every Condition operator match; ARN and Action patterns take ``*`` and ``?``; a negated operator
(``ArnNotLike``, ``ArnNotEquals``) with several values holds when the key matches none of them
(https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_condition_operators.html).
Every request here is assumed allowed by the principal's own IAM policy, so the answer is "denied by
the bucket policy or not".
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from typing import Any

import pytest
from cfnlint.decode import cfn_yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from shareplane.domain.config.shares import SharesConfig
from shareplane_cli import drop_policy
from shareplane_cli.config_file import load_config

from tests.conftest import REPO
from tests.properties import examples

TEMPLATE = REPO / "template.yaml"
BUCKET_ARN = "arn:aws:s3:::shareplane-drop"
SUBMIT_ROLE = "arn:aws:iam::123456789012:role/shareplane-SubmitJobRole-ABC"
STRANGER = "arn:aws:iam::123456789012:role/someone-else"
OTHER_ACCOUNT = "arn:aws:iam::999999999999:role/prodexp1-ml-engineers"


@dataclass(frozen=True)
class Request:
    """One S3 request as IAM sees it."""

    principal_arn: str
    action: str
    key: str
    secure_transport: bool = True

    @property
    def resource(self) -> str:
        return f"{BUCKET_ARN}/{self.key}"


def _glob(pattern: str, value: str) -> bool:
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, value) is not None


def _values(value: Any) -> list[str]:
    return [str(v) for v in (value if isinstance(value, list) else [value])]


def _condition_holds(operator: str, key: str, expected: Any, request: Request) -> bool:
    actual = {"aws:PrincipalArn": request.principal_arn, "aws:SecureTransport": request.secure_transport}[key]
    values = _values(expected)
    if operator == "Bool":
        return str(actual).lower() in [v.lower() for v in values]
    matches = {
        "ArnLike": _glob,
        "ArnNotLike": _glob,
        "ArnEquals": lambda p, v: p == v,
        "ArnNotEquals": lambda p, v: p == v,
    }[operator]
    hit = any(matches(v, str(actual)) for v in values)
    return not hit if "Not" in operator else hit


def applies(statement: dict[str, Any], request: Request) -> bool:
    """True when every element of ``statement`` matches ``request``."""
    if statement.get("Principal") != "*":
        raise AssertionError(f"{statement['Sid']}: only Principal '*' is evaluated here")
    if not any(_glob(a, request.action) for a in _values(statement["Action"])):
        return False
    if "Resource" in statement and not any(
        _glob(r, request.resource) for r in _values(statement["Resource"])
    ):
        return False
    if "NotResource" in statement and any(
        _glob(r, request.resource) for r in _values(statement["NotResource"])
    ):
        return False
    return all(
        _condition_holds(operator, key, expected, request)
        for operator, keys in (statement.get("Condition") or {}).items()
        for key, expected in keys.items()
    )


def denied(statements: list[dict[str, Any]], request: Request) -> bool:
    """True when an explicit Deny of the bucket policy applies (nothing here grants: Deny-only)."""
    assert all(s["Effect"] == "Deny" for s in statements), "the drop bucket policy grants nothing"
    return any(applies(s, request) for s in statements)


def _resolve(node: Any) -> Any:
    """The template's intrinsics for this bucket and this submit role."""
    if isinstance(node, dict) and set(node) == {"Fn::Sub"}:
        return node["Fn::Sub"].replace("${DropBucket.Arn}", BUCKET_ARN)
    if isinstance(node, dict) and set(node) == {"Fn::GetAtt"}:
        return {("SubmitJobRole", "Arn"): SUBMIT_ROLE, ("DropBucket", "Arn"): BUCKET_ARN}[
            tuple(node["Fn::GetAtt"])
        ]
    if isinstance(node, dict):
        return {k: _resolve(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_resolve(v) for v in node]
    return node


@cache
def template_statements() -> list[dict[str, Any]]:
    template = json.loads(json.dumps(cfn_yaml.load(str(TEMPLATE))))
    policy = template["Resources"]["DropBucketPolicy"]["Properties"]["PolicyDocument"]
    return _resolve(policy["Statement"])


@cache
def config() -> SharesConfig:
    return load_config(REPO / "config" / "shares.yaml")


def test_the_template_holds_the_statements_the_config_renders() -> None:
    assert drop_policy.read_statements(TEMPLATE.read_text()) == drop_policy.render_statements(config()), (
        "template.yaml is out of date with config/shares.yaml: run `shareplane config render`"
    )


def test_a_team_folder_takes_drops_from_its_submitters_only() -> None:
    statements = template_statements()
    prodexp1 = config().teams["ProdExp1"].submitters[0]
    prodexp2 = config().teams["ProdExp2"].submitters[0]
    assert not denied(statements, Request(prodexp1, "s3:PutObject", "submit/ProdExp1/a.yaml"))
    assert denied(statements, Request(prodexp2, "s3:PutObject", "submit/ProdExp1/a.yaml"))
    assert denied(statements, Request(STRANGER, "s3:PutObject", "submit/ProdExp1/a.yaml"))
    # the same role name in another account is another principal
    assert denied(statements, Request(OTHER_ACCOUNT, "s3:PutObject", "submit/ProdExp1/a.yaml"))
    # a nested path is still inside the folder
    assert denied(statements, Request(prodexp2, "s3:PutObject", "submit/ProdExp1/x/a.yaml"))
    # and a team's submitter is not stopped from reading or from its own folder
    assert not denied(statements, Request(prodexp2, "s3:PutObject", "submit/ProdExp2/a.yaml"))
    assert not denied(statements, Request(prodexp2, "s3:GetObject", "submit/ProdExp1/a.yaml"))


def test_only_the_submit_path_writes_answers_payloads_and_moved_originals() -> None:
    statements = template_statements()
    prodexp1 = config().teams["ProdExp1"].submitters[0]
    for key in ("answers/ProdExp1/a.yaml/v1.json", "accepted/ProdExp1/a.yaml", "rejected/x", "payloads/a"):
        assert denied(statements, Request(prodexp1, "s3:PutObject", key)), key
        assert not denied(statements, Request(SUBMIT_ROLE, "s3:PutObject", key)), key


def test_plain_http_is_refused_to_everyone() -> None:
    request = Request(SUBMIT_ROLE, "s3:GetObject", "answers/a", secure_transport=False)
    assert denied(template_statements(), request)


@pytest.mark.parametrize(
    ("operator", "values", "principal", "holds"),
    [
        ("ArnNotLike", ["arn:aws:iam::1:role/a", "arn:aws:iam::1:role/b"], "arn:aws:iam::1:role/b", False),
        ("ArnNotLike", ["arn:aws:iam::1:role/a", "arn:aws:iam::1:role/b"], "arn:aws:iam::1:role/c", True),
        ("ArnNotLike", ["arn:aws:iam::1:role/team-*"], "arn:aws:iam::1:role/team-x", False),
        ("ArnNotEquals", ["arn:aws:iam::1:role/team-*"], "arn:aws:iam::1:role/team-x", True),
    ],
)
def test_the_evaluator_follows_the_documented_operator_semantics(
    operator: str, values: list[str], principal: str, holds: bool
) -> None:
    assert (
        _condition_holds(operator, "aws:PrincipalArn", values, Request(principal, "s3:PutObject", "k"))
        is holds
    )


def expected_denied(cfg: SharesConfig, request: Request) -> bool:
    """The access rule in words, independently of the statements: what the policy must decide."""
    if request.action != "s3:PutObject":
        return False
    if request.key.startswith(("accepted/", "rejected/", "answers/", "payloads/")):
        return request.principal_arn != SUBMIT_ROLE
    parts = request.key.split("/")
    if parts[0] == "submit" and len(parts) >= 3 and parts[1] in cfg.teams:
        submitters = cfg.teams[parts[1]].submitters
        return bool(submitters) and request.principal_arn not in submitters
    return False


PRINCIPALS = st.sampled_from(
    [
        SUBMIT_ROLE,
        STRANGER,
        OTHER_ACCOUNT,
        *(arn for team in sorted(config().teams) for arn in config().teams[team].submitters),
    ]
)
KEYS = st.builds(
    lambda prefix, team, name: f"{prefix}{team}/{name}",
    st.sampled_from(["submit/", "answers/", "accepted/", "rejected/", "payloads/", "elsewhere/", "submit"]),
    st.sampled_from([*sorted(config().teams), "Nobody", "ProdExp", "ProdExp1x", ""]),
    st.text(alphabet="abc./ -", min_size=0, max_size=12),
)


@settings(max_examples=examples(400), deadline=None)
@given(
    principal=PRINCIPALS,
    key=KEYS,
    action=st.sampled_from(["s3:PutObject", "s3:GetObject", "s3:DeleteObject"]),
)
def test_the_policy_decides_every_principal_and_key_as_the_access_rule_says(
    principal: str, key: str, action: str
) -> None:
    request = Request(principal, action, key)
    assert denied(template_statements(), request) is expected_denied(config(), request)
