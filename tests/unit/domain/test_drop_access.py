"""Whether the caller of `shareplane submit` is one of a team's submitters, before it uploads."""

from __future__ import annotations

import pytest
from shareplane.domain.submit.drop_access import caller_is_submitter

ROLE = "arn:aws:iam::111122223333:role/prodexp1-ml-engineers"
ROLE_WITH_PATH = "arn:aws:iam::111122223333:role/ml/prodexp1-ml-engineers"
USER = "arn:aws:iam::111122223333:user/alice"


@pytest.mark.parametrize(
    ("caller", "submitters", "expected"),
    [
        ("arn:aws:sts::111122223333:assumed-role/prodexp1-ml-engineers/alice", (ROLE,), True),
        ("arn:aws:sts::111122223333:assumed-role/prodexp1-ml-engineers/alice", (ROLE_WITH_PATH,), True),
        ("arn:aws:sts::444455556666:assumed-role/prodexp1-ml-engineers/alice", (ROLE,), False),
        ("arn:aws:sts::111122223333:assumed-role/prodexp2-ml-engineers/bob", (ROLE,), False),
        (USER, (ROLE, USER), True),
        ("arn:aws:iam::123456789012:user/moto", (ROLE,), False),
        ("arn:aws:iam::111122223333:user/prodexp1-ml-engineers", (ROLE,), False),
    ],
    ids=[
        "a session of the role",
        "a session of a role with a path",
        "the same role name in another account",
        "another role",
        "a listed user",
        "the local stack's default identity",
        "a user named like the role",
    ],
)
def test_a_caller_is_a_submitter_as_the_bucket_policy_sees_it(
    caller: str, submitters: tuple[str, ...], expected: bool
) -> None:
    assert caller_is_submitter(caller, submitters) is expected
