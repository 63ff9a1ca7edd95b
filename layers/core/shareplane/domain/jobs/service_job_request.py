"""A SubmitServiceJob request as a value, and its one AWS shape (camelCase keys, absent members left out).

The submit path builds it from a spec, the failure path from DescribeServiceJob; the Batch adapter
writes it into the SubmitServiceJob call. The same shape is what the PAYLOAD item, its S3 overflow
document and the validate / receipt JSON keep, so the writer and its reader live here beside the type,
where both the adapters and the domain's documents reach them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

__all__ = ["ServiceJobRequest"]


@dataclass(frozen=True)
class ServiceJobRequest:
    """One SubmitServiceJob request; members Batch does not require are None when absent.

    ``retry_strategy``, ``timeout_config`` and ``preemption_configuration`` are Batch's structures,
    carried as Batch spells them.
    """

    job_name: str
    job_queue: str
    service_job_type: str
    #: The CreateTrainingJob request, as one JSON text.
    service_request_payload: str
    client_token: str | None = None
    tags: Mapping[str, str] | None = None
    share_identifier: str | None = None
    quota_share_name: str | None = None
    scheduling_priority: int | None = None
    retry_strategy: Mapping[str, Any] | None = None
    timeout_config: Mapping[str, Any] | None = None
    preemption_configuration: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        for name in _MAPPING_MEMBERS:
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, MappingProxyType(dict(value)))

    @property
    def share(self) -> str | None:
        """The share the job is submitted to: its fair-share identifier or its quota share."""
        return self.share_identifier or self.quota_share_name

    def aws_fields(self) -> dict[str, Any]:
        """The request as SubmitServiceJob takes it (and as it is stored): camelCase keys, None left out."""
        values = ((key, getattr(self, member)) for key, member in _AWS_KEYS)
        return {key: _plain(value) for key, value in values if value is not None}

    @classmethod
    def from_aws_fields(cls, fields: Mapping[str, Any]) -> ServiceJobRequest | None:
        """A request stored in its AWS shape read back; None when a member is missing or of the wrong type."""
        tags, priority = fields.get("tags"), fields.get("schedulingPriority")
        if (
            not all(isinstance(fields.get(key), str) for key in _REQUIRED_TEXT)
            or not all(isinstance(fields.get(key), str | None) for key in _OPTIONAL_TEXT)
            or not all(isinstance(fields.get(key), Mapping | None) for key in _OPTIONAL_MAPPINGS)
            or not (tags is None or (isinstance(tags, Mapping) and _all_text(tags)))
            or not (priority is None or (isinstance(priority, int) and not isinstance(priority, bool)))
        ):
            return None
        return cls(
            job_name=fields["jobName"],
            job_queue=fields["jobQueue"],
            service_job_type=fields["serviceJobType"],
            service_request_payload=fields["serviceRequestPayload"],
            client_token=fields.get("clientToken"),
            tags=tags,
            share_identifier=fields.get("shareIdentifier"),
            quota_share_name=fields.get("quotaShareName"),
            scheduling_priority=priority,
            retry_strategy=fields.get("retryStrategy"),
            timeout_config=fields.get("timeoutConfig"),
            preemption_configuration=fields.get("preemptionConfiguration"),
        )


#: The AWS shape's keys in the order the request has always been written, and the member each holds.
_AWS_KEYS = (
    ("jobName", "job_name"),
    ("jobQueue", "job_queue"),
    ("serviceJobType", "service_job_type"),
    ("serviceRequestPayload", "service_request_payload"),
    ("retryStrategy", "retry_strategy"),
    ("timeoutConfig", "timeout_config"),
    ("tags", "tags"),
    ("clientToken", "client_token"),
    ("shareIdentifier", "share_identifier"),
    ("quotaShareName", "quota_share_name"),
    ("schedulingPriority", "scheduling_priority"),
    ("preemptionConfiguration", "preemption_configuration"),
)
_MAPPING_MEMBERS = ("tags", "retry_strategy", "timeout_config", "preemption_configuration")
_REQUIRED_TEXT = ("jobName", "jobQueue", "serviceJobType", "serviceRequestPayload")
_OPTIONAL_TEXT = ("clientToken", "shareIdentifier", "quotaShareName")
_OPTIONAL_MAPPINGS = ("retryStrategy", "timeoutConfig", "preemptionConfiguration")


def _all_text(mapping: Mapping[Any, Any]) -> bool:
    return all(isinstance(k, str) and isinstance(v, str) for k, v in mapping.items())


def _plain(value: Any) -> Any:
    """``value`` in plain JSON types: boto3 and ``json`` take dicts and lists, not read-only views."""
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [_plain(item) for item in value]
    return value
