"""The stored layout of a job's PAYLOAD item, read back as a ``SubmittedPayload``.

Plain Python values (the DynamoDB marshalling is ``dynamodb_items``'): the job store on the table and
its in-memory fake both read their items through here. The item is written by the submit path
(``domain/submission.payload_item``), and ``uploader.principal`` joins it later
(``adapters/upload_attributions.py``)::

    entity jobArn jobId jobName team request | requestAt{bucket key} payloadDigest clientToken
    source{bucket key versionId} uploader{account requestId principal{arn check ...}} submittedAt
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..domain.jobs.service_job_request import ServiceJobRequest
from ..domain.submit.payload import RequestLocation, SubmittedPayload


def _str(value: Any) -> str | None:
    return str(value) if value is not None and value != "" else None


def _mapping(value: Any) -> Mapping[str, Any] | None:
    return value if isinstance(value, Mapping) else None


def payload_of(job_arn: str, item: Mapping[str, Any]) -> SubmittedPayload:
    """A PAYLOAD item as a value; a member of an unexpected type reads as absent."""
    where = _mapping(item.get("requestAt"))
    submitted_at = item.get("submittedAt")
    request = _mapping(item.get("request"))
    return SubmittedPayload(
        job_arn=str(item.get("jobArn") or job_arn),
        team=_str(item.get("team")),
        job_id=_str(item.get("jobId")),
        job_name=_str(item.get("jobName")),
        request=ServiceJobRequest.from_aws_fields(request) if request is not None else None,
        request_at=(
            RequestLocation(bucket=str(where.get("bucket")), key=str(where.get("key")))
            if where is not None
            else None
        ),
        payload_digest=_str(item.get("payloadDigest")),
        client_token=_str(item.get("clientToken")),
        source=_mapping(item.get("source")) or {},
        uploader=_mapping(item.get("uploader")),
        submitted_at=int(submitted_at) if isinstance(submitted_at, (int, float)) else None,
    )
