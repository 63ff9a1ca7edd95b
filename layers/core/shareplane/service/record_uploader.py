"""Record who uploaded a drop: CloudTrail's principal, joined to the drop's jobs in either order.

The attribution path (this module's ``record_upload``, fed by record_uploader) and the submit path
(``attach_recorded_principal``, called by submit_job once it has recorded a drop's jobs) each write
their half of the join under the S3 request id first and read the other half after
(domain/submit/attribution.py says why that converges). Every write is idempotent.

A principal outside ``teams.<team>.submitters`` should have been refused by the drop bucket's policy;
when one got through anyway (the policy and the config drifted, or the policy was edited by hand),
the drop is still answered as usual and its jobs carry the principal, and the team is alerted once:
a human decides, since cancelling a job on a config mismatch could stop legitimate work.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from ..domain.alerts.alert import uploader_alert
from ..domain.config.shares import SharesConfig
from ..domain.submit.attribution import (
    UPLOAD_JOIN_RETENTION_SECONDS,
    PrincipalCheck,
    UploadAttribution,
    UploaderPrincipal,
    check_principal,
    uploader_principal,
)
from .alerting import AlertSender
from .ports import UploadAttributions

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class UploaderPorts:
    """Everything the attribution path talks through; built once per cold start by bootstrap."""

    attributions: UploadAttributions
    #: The not-a-submitter alert goes out through it (deduplicated per upload request, listed).
    sender: AlertSender
    #: Each team's submitters, checked against the uploader.
    config: SharesConfig


@dataclass(frozen=True)
class UploaderOutcome:
    """What recording one attribution did."""

    request_id: str
    check: str
    jobs_updated: tuple[str, ...]
    alerted: bool


def record_upload(attribution: UploadAttribution, ports: UploaderPorts, now_s: int) -> UploaderOutcome:
    """Store the principal of one S3 request, alert on a non-submitter once, write it on its jobs."""
    config = ports.config
    principal = uploader_principal(attribution, config)
    team, check = check_principal(attribution, config)
    request_id = attribution.request_id
    stored = None
    if not ports.attributions.save_attribution(request_id, principal, now_s + UPLOAD_JOIN_RETENTION_SECONDS):
        # A repeat of this request's event: write what the first one stored, so the jobs carry one
        # principal whatever the order (the submit path copies the stored one too).
        stored = ports.attributions.load_attribution(request_id)
        principal = (stored.principal if stored else None) or principal
    # The principal first: attribution never waits on the alert (a failed publish retries the record,
    # and the writes below are idempotent).
    updated = tuple(
        arn
        for arn in ports.attributions.linked_jobs(request_id)
        if ports.attributions.set_principal(arn, principal)
    )
    alerted = False
    # The alert ledger keeps a repeat quiet; the join's own mark (``alerted``) also covers an upload
    # alerted before its alert had a ledger item (a table written by an older release).
    if check is PrincipalCheck.NOT_A_SUBMITTER and not (stored and stored.alerted):
        submitters = config.teams[team].submitters if team else ()
        alert = uploader_alert(attribution, team, tuple(submitters))
        alerted = ports.sender.send(alert, now_s)
        if alerted or ports.sender.ledger.alert_sent_at(alert.dedupe_key) is not None:
            ports.attributions.mark_alerted(request_id)
    logger.info(
        "uploader recorded",
        extra={"request_id": attribution.request_id, "check": check.value, "jobs": list(updated)},
    )
    return UploaderOutcome(attribution.request_id, check.value, updated, alerted)


def attach_recorded_principal(
    request_id: str | None, job_arns: Sequence[str], attributions: UploadAttributions, now_s: int
) -> UploaderPrincipal | None:
    """The submit path's half: link the drop's jobs to its request, then copy a principal already there.

    Returns the principal written on the jobs, or None when CloudTrail's event has not come yet (the
    attribution path will write it) or the event named no request (a direct S3 notification).
    """
    if not request_id or not job_arns:
        return None
    for arn in job_arns:
        attributions.link_job(request_id, arn, now_s + UPLOAD_JOIN_RETENTION_SECONDS)
    stored = attributions.load_attribution(request_id)
    principal = stored.principal if stored else None
    if principal is None:
        return None
    for arn in job_arns:
        attributions.set_principal(arn, principal)
    return principal
