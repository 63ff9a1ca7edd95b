"""What the submit path kept of a job it submitted: the request, the drop it came from, who uploaded it.

The job store reads it off the job's PAYLOAD item (``adapters/payload_items.py`` owns that layout);
a requeue submits the request again, cost reports group by its uploader, alerts name its team.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ..config.shares import Tier
from ..jobs.service_job_request import ServiceJobRequest
from ..jobs.tags import TIER_TAG

__all__ = ["RequestLocation", "SubmittedPayload"]


@dataclass(frozen=True)
class RequestLocation:
    """Where a request too large for its item was kept (an object in the drop bucket)."""

    bucket: str
    key: str


@dataclass(frozen=True)
class SubmittedPayload:
    """A submitted job's stored payload; absent members (the store drops empty ones) read as None."""

    job_arn: str
    team: str | None = None
    job_id: str | None = None
    job_name: str | None = None
    #: The SubmitServiceJob request as submitted; None when it was kept in S3 (``request_at``) or is
    #: unreadable.
    request: ServiceJobRequest | None = None
    request_at: RequestLocation | None = None
    payload_digest: str | None = None
    client_token: str | None = None
    #: The drop the job came from (bucket, key, version).
    source: Mapping[str, Any] = field(default_factory=dict)
    #: Who uploaded the drop: S3's account and request id, and CloudTrail's ``principal`` once joined.
    uploader: Mapping[str, Any] | None = None
    submitted_at: int | None = None

    def __post_init__(self) -> None:
        if self.uploader is not None:
            object.__setattr__(self, "uploader", MappingProxyType(dict(self.uploader)))
        object.__setattr__(self, "source", MappingProxyType(dict(self.source)))

    @property
    def tier(self) -> Tier | None:
        """The tier the job was submitted as (its request's tier tag); None when unknown or kept in S3."""
        value = (self.request.tags or {}).get(TIER_TAG) if self.request is not None else None
        return next((tier for tier in Tier if tier.value == value), None)

    @property
    def uploader_principal_arn(self) -> str | None:
        """The ARN of the principal CloudTrail says uploaded the drop, once recorded."""
        principal = (self.uploader or {}).get("principal")
        arn = principal.get("arn") if isinstance(principal, Mapping) else None
        return str(arn) if arn else None
