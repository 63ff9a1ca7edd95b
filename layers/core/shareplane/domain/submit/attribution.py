"""Who uploaded a drop: the principal CloudTrail names, joined to the jobs of that upload.

S3's Object Created event names the uploader only by account (``detail.requester``,
https://docs.aws.amazon.com/AmazonS3/latest/userguide/ev-events.html). CloudTrail's data event of
the same request names the principal (``userIdentity.arn``) and carries S3's request id as
``requestID`` (https://docs.aws.amazon.com/awscloudtrail/latest/userguide/cloudtrail-event-reference-user-identity.html),
the one field both events share. The two arrive in any order, minutes apart, each possibly twice, so
both sides write what they know under the request id and read what the other wrote:

- the attribution path stores the principal under ``UPLOAD#<request id>``, then writes it on every job
  already linked to that request;
- the submit path links each job it recorded to the request, then reads the attribution and, when it is
  there, writes it on those jobs.

Each side writes before it reads (DynamoDB's strongly consistent reads see every write that finished
before them), so whichever event comes second finds the first one's write. Writing the principal is a
plain overwrite of the same value, so repeats change nothing.

This module is pure: it turns an attribution and the shares config into the principal a job carries.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from ..config.shares import SharesConfig
from .drop_access import principal_is_submitter
from .drop_keys import folder_team

#: How long the join items (attribution, request -> job links) are kept: CloudTrail delivers in
#: minutes, and an event parked in a DLQ is replayed within SQS's 14-day retention.
UPLOAD_JOIN_RETENTION_SECONDS = 30 * 24 * 3600


class PrincipalCheck(StrEnum):
    """How the uploader's principal compares with ``teams.<team>.submitters``."""

    #: One of the team's submitters (the bucket policy's rule, held by the event too).
    SUBMITTER = "submitter"
    #: Not in the list: the bucket policy should have refused the upload. The team is alerted.
    NOT_A_SUBMITTER = "not_a_submitter"
    #: The team lists no submitters: its folder is open to whoever the bucket's IAM lets write.
    TEAM_HAS_NO_SUBMITTERS = "team_has_no_submitters"
    #: The key names no configured team's folder (its drop is rejected anyway).
    NO_TEAM = "no_team"


@dataclass(frozen=True)
class UploadAttribution:
    """One S3 write as CloudTrail recorded it: the request, the object and who made it."""

    request_id: str
    bucket: str
    key: str
    event_name: str
    principal_arn: str
    principal_type: str | None = None
    principal_id: str | None = None
    account_id: str | None = None
    #: For an assumed role: the role the session was issued by (what ``aws:PrincipalArn`` is, and so
    #: what the bucket policy and ``teams.<team>.submitters`` name).
    session_issuer_arn: str | None = None

    @property
    def policy_principal(self) -> str:
        """The ARN the bucket policy evaluated: the role of an assumed-role session, else the caller."""
        return self.session_issuer_arn or self.principal_arn


@dataclass(frozen=True)
class UploaderPrincipal:
    """Who made one upload, as its jobs carry it (``uploader.principal`` on the payload item).

    The adapter writes it into the item (camelCase keys, absent members left out) and reads it back.
    """

    arn: str
    event_name: str
    check: PrincipalCheck
    type: str | None = None
    principal_id: str | None = None
    account_id: str | None = None
    session_issuer_arn: str | None = None


@dataclass(frozen=True)
class StoredAttribution:
    """What the join keeps of one request: the principal its jobs carry, and whether it was alerted.

    ``principal`` is None when the stored item's principal could not be read (a hand-edited item).
    """

    principal: UploaderPrincipal | None = None
    alerted: bool = False


def check_principal(
    attribution: UploadAttribution, config: SharesConfig
) -> tuple[str | None, PrincipalCheck]:
    """The team whose folder the object is in, and how its uploader compares with its submitters."""
    team = folder_team(attribution.key, config.teams)
    if team is None:
        return None, PrincipalCheck.NO_TEAM
    submitters = config.teams[team].submitters
    if not submitters:
        return team, PrincipalCheck.TEAM_HAS_NO_SUBMITTERS
    if principal_is_submitter(attribution.policy_principal, submitters):
        return team, PrincipalCheck.SUBMITTER
    return team, PrincipalCheck.NOT_A_SUBMITTER


def uploader_principal(attribution: UploadAttribution, config: SharesConfig) -> UploaderPrincipal:
    """What a job carries as ``uploader.principal``: the same for the same event and config, always."""
    _, check = check_principal(attribution, config)
    return UploaderPrincipal(
        arn=attribution.principal_arn,
        event_name=attribution.event_name,
        check=check,
        type=attribution.principal_type,
        principal_id=attribution.principal_id,
        account_id=attribution.account_id,
        session_issuer_arn=attribution.session_issuer_arn,
    )
