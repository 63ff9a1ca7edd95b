"""Who may drop specs for a team: the checks made on each S3 event and each CloudTrail event.

Three checks guard ``submit/<team>/``, all from ``teams.<team>.submitters`` in the shares config:

1. The drop bucket's policy (rendered into template.yaml by ``shareplane config render``) denies
   s3:PutObject under the folder to every principal that is not one of the team's submitters. S3
   enforces it before the object exists, for principals of any account.
2. This check, on the event: S3's Object Created event names the uploader only by account
   (``detail.requester``: "the AWS account ID or AWS service principal of requester",
   https://docs.aws.amazon.com/AmazonS3/latest/userguide/ev-events.html). A drop from another
   account than the bucket owner's is refused unless one of the team's submitters is in that
   account. Inside the owner's account the account says nothing more, and the policy decides.
3. After the fact, on CloudTrail's data event of the upload, which names the principal: one that is
   not in the list (the policy should have refused it) is recorded on the jobs and alerted
   (domain/submit/attribution.py, service/record_uploader.py).

Nothing here loads the job-spec parser: the attribution path uses these rules without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..config.shares import TeamConfig
from ..jobs.arns import account_of

if TYPE_CHECKING:
    from .jobspec import Problem


def drop_refusal(
    team_name: str, team: TeamConfig, requester: str | None, bucket_owner: str | None
) -> Problem | None:
    """The problem that refuses a drop for ``team_name`` uploaded by ``requester``; None when allowed."""
    if not team.submitters or requester is None or requester == bucket_owner:
        return None
    if requester in {account_of(arn) for arn in team.submitters}:
        return None
    from .jobspec import Problem  # the submit path's alone, which has the parser loaded already

    return Problem(
        "key",
        f"was uploaded by {requester[:128]!r}, which is not an account of team {team_name}'s submitters",
        f"drop it as one of {list(team.submitters)}, or ask the platform team to add your role to "
        f"teams.{team_name}.submitters",
    )


def principal_is_submitter(principal_arn: str, submitters: tuple[str, ...] | list[str]) -> bool:
    """True when the principal is one of the submitters, compared as the bucket policy's ArnLike does.

    Submitters are exact ARNs (the config's pattern allows no wildcards), so ArnLike is string equality.
    """
    return principal_arn in set(submitters)


def caller_is_submitter(caller_arn: str, submitters: tuple[str, ...] | list[str]) -> bool:
    """Whether STS GetCallerIdentity's ARN is one of the submitters, before anything is uploaded.

    An assumed-role session (``arn:aws:sts::ACCOUNT:assumed-role/NAME/SESSION``) is its role, as the
    bucket policy sees it; the session's ARN drops the role's path, so the role is matched by account
    and name. Any other caller is matched as ``principal_is_submitter`` matches it.
    """
    parts = caller_arn.split(":", 5)
    resource = parts[5] if len(parts) == 6 else ""
    if parts[2:3] == ["sts"] and resource.startswith("assumed-role/"):
        role_name = resource.split("/")[1]
        return any(
            account_of(arn) == parts[4]
            and arn.split(":", 5)[-1].startswith("role/")
            and arn.rsplit("/", 1)[-1] == role_name
            for arn in submitters
        )
    return principal_is_submitter(caller_arn, submitters)
