"""Requeue requests, built purely: the failed job's own SubmitServiceJob, changed only by the decision.

A requeue resubmits what Batch ran (``serviceRequestPayload`` from DescribeServiceJob, so it works
for jobs shareplane did not submit) to the same queue, share and priority, with the same retry,
timeout and preemption settings. ``CheckpointConfig`` is carried over untouched, so the new training
job resumes from the last checkpoint. The only changes are the decision's mutations and the chain
tags that carry the failure budget from one resubmission to the next.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..errors import InvalidInputError
from ..jobs.arns import job_id_of
from ..jobs.described_job import DescribedJob
from ..jobs.service_job_request import ServiceJobRequest
from ..jobs.tags import SUBMISSION_TAG

__all__ = [
    "CHAIN_TAGS",
    "ChainState",
    "RequeueRequest",
    "apply_mutations",
    "build_requeue",
    "client_token",
    "requeue_job_name",
]

#: Tags a requeued job carries: the job it descends from and what the chain has used up so far.
TAG_ORIGIN = "shareplane:origin-job"
TAG_FAILURES = "shareplane:failures"
TAG_REQUEUES = "shareplane:requeues"
TAG_SPOT = "shareplane:spot-interruptions"
#: The jobs reclaim stopped this chain for (space-separated ids, newest last): it never reclaims from them.
TAG_DISPLACED_BY = "shareplane:displaced-by"
#: When reclaim last stopped this chain (epoch seconds): the cooldown before it can be a victim again.
TAG_RECLAIMED_AT = "shareplane:reclaimed-at"
CHAIN_TAGS = (TAG_ORIGIN, TAG_FAILURES, TAG_REQUEUES, TAG_SPOT, TAG_DISPLACED_BY, TAG_RECLAIMED_AT)
#: A tag value holds 256 characters: the newest six job ids (36 characters and a space each).
DISPLACED_BY_MAX = 6
#: SubmitServiceJob limits (botocore): jobName 1-128 characters, clientToken 1-64, 50 tags.
JOB_NAME_MAX = 128
CLIENT_TOKEN_MAX = 64
MAX_TAGS = 50


@dataclass(frozen=True)
class ChainState:
    """What a job's requeue chain has used up, read from its tags (zeros for a first submission)."""

    origin_job_id: str | None = None
    failures: int = 0
    requeues: int = 0
    spot_interruptions: int = 0
    #: Jobs reclaim stopped this chain for, oldest first.
    displaced_by: tuple[str, ...] = ()
    #: When reclaim last stopped this chain (epoch seconds); None: never.
    reclaimed_at: int | None = None

    @classmethod
    def from_tags(cls, tags: Mapping[str, str] | None) -> ChainState:
        """The chain state a job's tags record; malformed counts read as 0 (tags are user-editable)."""
        tags = tags or {}

        def count(key: str) -> int:
            try:
                return max(0, int(tags.get(key, "0")))
            except ValueError:
                return 0

        return cls(
            tags.get(TAG_ORIGIN),
            count(TAG_FAILURES),
            count(TAG_REQUEUES),
            count(TAG_SPOT),
            tuple(tags.get(TAG_DISPLACED_BY, "").split()),
            count(TAG_RECLAIMED_AT) or None,
        )

    def displaced(self, beneficiary: str, at: float) -> ChainState:
        """This chain after reclaim stopped it for ``beneficiary`` at ``at``."""
        ids = tuple(i for i in self.displaced_by if i != beneficiary) + (beneficiary,)
        return replace(self, displaced_by=ids[-DISPLACED_BY_MAX:], reclaimed_at=int(at))


def client_token(job_id: str, attempt: str) -> str:
    """SubmitServiceJob's clientToken for requeueing ``job_id`` after failure ``attempt``: stable, <= 64."""
    if not job_id:
        raise InvalidInputError("job_id", "is empty", "pass the failed job's id")
    digest = hashlib.sha256(f"{job_id}|{attempt}".encode()).hexdigest()
    return f"shareplane-rq-{digest}"[:CLIENT_TOKEN_MAX]


def requeue_job_name(job_name: str, requeues: int) -> str:
    """``<name>-rq<n>``: a resubmission is a new Batch job; its name says which one it is."""
    head, sep, tail = job_name.rpartition("-rq")
    base = head if sep and tail.isdigit() else job_name
    suffix = f"-rq{requeues}"
    return base[: JOB_NAME_MAX - len(suffix)] + suffix


def apply_mutations(payload: Mapping[str, Any], mutations: Mapping[str, object]) -> dict[str, Any]:
    """A copy of ``payload`` with dotted-path ``mutations`` applied; a None value removes the key.

    The input is not modified. Setting a path creates the objects it passes through.
    """
    result = copy.deepcopy(dict(payload))
    for path, value in mutations.items():
        keys = path.split(".")
        if not all(keys):
            raise InvalidInputError(f"mutations.{path}", "has an empty path segment", "use Dotted.Key.Paths")
        node: Any = result
        for key in keys[:-1]:
            if not isinstance(node.get(key), dict):
                if value is None:
                    node = None
                    break
                node[key] = {}
            node = node[key]
        if node is None:
            continue
        if value is None:
            node.pop(keys[-1], None)
        else:
            node[keys[-1]] = copy.deepcopy(value)
    return result


@dataclass(frozen=True)
class RequeueRequest:
    """The SubmitServiceJob request of one requeue, and what it was derived from."""

    request: ServiceJobRequest
    client_token: str
    chain: ChainState

    @property
    def payload(self) -> dict[str, Any]:
        """The CreateTrainingJob request inside (parsed)."""
        payload: dict[str, Any] = json.loads(self.request.service_request_payload)
        return payload


def build_requeue(
    described: DescribedJob,
    *,
    attempt: str,
    mutations: Mapping[str, object],
    chain: ChainState,
    scheduling_priority: int | None = None,
) -> RequeueRequest:
    """The SubmitServiceJob request that resubmits the job Batch described as ``described``.

    ``chain`` is the state the new job starts with (already counting this failure);
    ``scheduling_priority`` replaces the job's own when given.
    """
    if not described.job_queue:
        raise InvalidInputError(
            "jobQueue", "is missing from DescribeServiceJob", "requeue only jobs Batch describes in a queue"
        )
    raw = described.payload
    if not raw:
        raise InvalidInputError(
            "serviceRequestPayload",
            "is missing from DescribeServiceJob",
            "requeue only service jobs Batch still describes (finished jobs are kept for a limited time)",
        )
    try:
        payload = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(
            "serviceRequestPayload", f"is not JSON ({exc.msg})", "resubmit by hand"
        ) from exc
    if not isinstance(payload, dict):
        raise InvalidInputError("serviceRequestPayload", "is not a JSON object", "resubmit by hand")
    job_id = described.job_id or job_id_of(described.job_arn)
    tags = {k: v for k, v in described.tags.items() if k not in CHAIN_TAGS}
    chain_tags = {
        TAG_ORIGIN: chain.origin_job_id or job_id,
        TAG_FAILURES: str(chain.failures),
        TAG_REQUEUES: str(chain.requeues),
        TAG_SPOT: str(chain.spot_interruptions),
    }
    # Only a chain reclaim has stopped carries these (a first failure's requeue looks as it always did).
    if chain.displaced_by:
        chain_tags[TAG_DISPLACED_BY] = " ".join(chain.displaced_by[-DISPLACED_BY_MAX:])
    if chain.reclaimed_at is not None:
        chain_tags[TAG_RECLAIMED_AT] = str(chain.reclaimed_at)
    token = client_token(job_id, attempt)
    # DescribeServiceJob returns no clientToken, so it travels as a tag: a retry that Batch rejects as
    # a repeat finds the job its first try created by it.
    chain_tags[SUBMISSION_TAG] = token
    # Ours win over the job's own, and the job's are cut first if the 50-tag limit would break.
    tags = dict(list(tags.items())[: MAX_TAGS - len(chain_tags)]) | chain_tags
    carried = {key: copy.deepcopy(setting) for key, setting in described.carried.items()}
    request = ServiceJobRequest(
        job_name=requeue_job_name(described.job_name or job_id, chain.requeues),
        job_queue=described.job_queue,
        service_job_type=described.service_job_type or "SAGEMAKER_TRAINING",
        service_request_payload=json.dumps(apply_mutations(payload, mutations), separators=(",", ":")),
        tags=tags,
        client_token=token,
        scheduling_priority=(
            scheduling_priority if scheduling_priority is not None else described.scheduling_priority
        ),
        retry_strategy=carried.get("retryStrategy"),
        timeout_config=carried.get("timeoutConfig"),
        preemption_configuration=carried.get("preemptionConfiguration"),
        share_identifier=described.share_identifier,
        quota_share_name=described.quota_share_name,
    )
    return RequeueRequest(request, token, chain)
