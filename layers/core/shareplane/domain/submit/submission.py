"""Where a dropped spec goes after it is read, and the receipt or error report left beside it.

Pure functions of the dropped object, the parse result and what Batch answered. A file ends in one
of two places, always as a copy of the exact version that was read:

- ``accepted/<team>/<file>`` when at least one job was submitted. A file with some good and some bad
  jobs is *partially accepted*: the good jobs are submitted, the receipt lists them and also lists
  every refused job with its problems (``outcome: partially_accepted``).
- ``rejected/<team>/<file>`` when nothing was submitted.

The answer (a receipt, or an error report when nothing was submitted) is written under its own
prefix, one per object version: ``answers/<team>/<file>/<version>.json``. Drops never land there (a
file is moved to accepted/ or rejected/ only), so no drop, whatever its name, can overwrite an
answer, and two uploads of the same name each keep their own.

Keys that do not name a team folder and a spec file land under ``rejected/_invalid-key/`` with a
digest of the key in front of the name, so two bad keys never collide.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from ..jobs.service_job_request import ServiceJobRequest
from .jobspec import SUBMIT_PREFIX, TEAM_TAG, TIER_TAG, JobResult, Problem, SpecResult

ACCEPTED_PREFIX = "accepted/"
REJECTED_PREFIX = "rejected/"
ANSWERS_PREFIX = "answers/"
#: Payloads too large for a DynamoDB item are kept here (see payload_item).
PAYLOADS_PREFIX = "payloads/"
#: Prefixes the submit path writes to; objects there are its own outputs, never specs to read.
OUTPUT_PREFIXES = (ACCEPTED_PREFIX, REJECTED_PREFIX, ANSWERS_PREFIX, PAYLOADS_PREFIX)
ANSWER_SUFFIX = ".json"
INVALID_KEY_FOLDER = "_invalid-key"
RECEIPT_KIND = "shareplane.submission-receipt"
ERROR_KIND = "shareplane.submission-error"
DOCUMENT_VERSION = 1


class Outcome(StrEnum):
    """What became of a dropped file."""

    ACCEPTED = "accepted"
    PARTIALLY_ACCEPTED = "partially_accepted"
    REJECTED = "rejected"


@dataclass(frozen=True)
class DroppedObject:
    """One object version that landed in the drop bucket, as the event told it (key already decoded)."""

    bucket: str
    key: str
    version_id: str | None = None
    size: int | None = None
    etag: str | None = None
    sequencer: str | None = None

    #: Who uploaded it, as the S3 event names them: an AWS account id (or an AWS service principal).
    requester: str | None = None
    #: The account that owns the bucket (the event's ``account``).
    bucket_owner: str | None = None
    #: S3's request id of the upload: the key to its CloudTrail data event, which names the principal.
    request_id: str | None = None

    @property
    def uploader(self) -> dict[str, str | None]:
        """Who uploaded it, as the event tells: the account, and the request that names the principal."""
        return {"account": self.requester, "requestId": self.request_id}

    def as_source(self) -> dict[str, Any]:
        """The object's identity as receipts and reports record it."""
        return {"bucket": self.bucket, "key": self.key, "versionId": self.version_id, "etag": self.etag}

    @property
    def answer_id(self) -> str:
        """What tells this upload from others of the same key: its version id, else its ETag."""
        return _safe_name(self.version_id or self.etag or "unversioned")


@dataclass(frozen=True)
class SubmittedJob:
    """A job Batch accepted: what the receipt says about it."""

    index: int
    name: str
    job_arn: str
    job_id: str
    queue: str
    share: str | None
    priority: str | None
    scheduling_priority: int | None
    payload_digest: str
    client_token: str
    #: Who the job runs for: the team (the key's folder) and the tier, beside the share identifier.
    team: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The job as the receipt lists it."""
        return {
            "index": self.index,
            "name": self.name,
            "jobId": self.job_id,
            "jobArn": self.job_arn,
            "queue": self.queue,
            "team": self.team,
            "tier": self.priority,
            "share": self.share,
            "priority": self.priority,
            "schedulingPriority": self.scheduling_priority,
            "payloadDigest": self.payload_digest,
            "clientToken": self.client_token,
        }


def submitted_job(job: JobResult, queue: str, job_arn: str, job_id: str) -> SubmittedJob:
    """The receipt entry of an accepted job, from its request and Batch's answer."""
    request = job.request
    tags = (request.tags if request else None) or {}
    return SubmittedJob(
        index=job.index,
        name=request.job_name if request else str(job.name),
        job_arn=job_arn,
        job_id=job_id,
        queue=queue,
        share=request.share if request else None,
        priority=tags.get(TIER_TAG),
        team=tags.get(TEAM_TAG),
        scheduling_priority=request.scheduling_priority if request else None,
        payload_digest=job.payload_digest or "",
        client_token=(request.client_token if request else None) or "",
    )


def is_output_key(key: str) -> bool:
    """True for the submit path's own outputs (accepted/, rejected/, answers/, payloads/): never specs."""
    return key.startswith(OUTPUT_PREFIXES)


def is_folder_marker(key: str, size: int | None) -> bool:
    """The empty object the S3 console creates for "Create folder": not a drop, left alone."""
    return key.endswith("/") and size == 0


def _safe_name(name: str) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", name)[:120].lstrip(".")
    return cleaned or "file"


def destination(key: str, team: str | None, outcome: Outcome) -> str:
    """Where the original goes: ``accepted/<team>/<file>`` or ``rejected/<team>/<file>``."""
    prefix = REJECTED_PREFIX if outcome is Outcome.REJECTED else ACCEPTED_PREFIX
    parts = key.split("/")
    if team is not None and len(parts) == 3 and key.startswith(SUBMIT_PREFIX) and parts[1] == team:
        return f"{prefix}{team}/{parts[2]}"
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{REJECTED_PREFIX}{INVALID_KEY_FOLDER}/{digest}-{_safe_name(parts[-1])}"


def answer_key(obj: DroppedObject, team: str | None) -> str:
    """Where the answer to this object version goes: ``answers/<team>/<file>/<version>.json``.

    The same for either outcome (the folder after accepted/ or rejected/ is the same), so whoever
    waits for an answer reads one key.
    """
    folder = destination(obj.key, team, Outcome.REJECTED).removeprefix(REJECTED_PREFIX)
    return f"{ANSWERS_PREFIX}{folder}/{obj.answer_id}{ANSWER_SUFFIX}"


def outcome_of(submitted: Sequence[SubmittedJob], refused: bool) -> Outcome:
    """Accepted when everything went in, partially when some did, rejected when none did."""
    if not submitted:
        return Outcome.REJECTED
    return Outcome.PARTIALLY_ACCEPTED if refused else Outcome.ACCEPTED


def _iso(epoch_ms: int) -> str:
    return (
        datetime.fromtimestamp(epoch_ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    )


def _refused_jobs(result: SpecResult, refused_by_batch: Mapping[int, Problem]) -> list[dict[str, Any]]:
    out = []
    for job in result.jobs:
        problems = list(job.problems)
        if job.index in refused_by_batch:
            problems.append(refused_by_batch[job.index])
        if problems:
            out.append({"index": job.index, "name": job.name, "errors": [p.as_dict() for p in problems]})
    return out


#: Where a submitted job's start predictions are when the submit path made none: the watch's next tick
#: predicts the job with the whole queue's other waiting jobs and stores it on the job's record;
#: `submit --dry-run` gives the same forecast before submitting.
FIRST_PREDICTION = {
    "predictedBy": "the next watch_jobs tick (every 5 minutes), on the job's record",
    "read": "shareplane jobs --job JOB (field prediction; column predicted start) or shareplane why JOB",
    "beforeSubmitting": "shareplane submit --dry-run SPEC",
}
#: The receipt's prediction block when the submit path forecast its GPU jobs (each job's entry has its own).
PREDICTED_AT_SUBMISSION = {
    "predictedBy": (
        "submit_job, on the live twin right after submission (each job's prediction); "
        "each later watch_jobs tick refreshes it on the job's record"
    ),
    "read": FIRST_PREDICTION["read"],
    "beforeSubmitting": FIRST_PREDICTION["beforeSubmitting"],
}


def with_first_predictions(
    document: Mapping[str, Any], predictions: Mapping[str, Mapping[str, Any]], reason: str | None
) -> dict[str, Any]:
    """The receipt with each job's first prediction (``predictions``: job ARN -> its record, as
    ``StartPrediction.as_record``; a job without one gets None) and the block saying where they came
    from; ``reason`` says why a job has none (or why the runs were fewer than asked)."""
    out = dict(document)
    out["jobs"] = [{**job, "prediction": predictions.get(str(job.get("jobArn")))} for job in document["jobs"]]
    block: dict[str, Any] = dict(PREDICTED_AT_SUBMISSION if predictions else FIRST_PREDICTION)
    if reason:
        block["notAtSubmission" if not predictions else "note"] = reason
    out["prediction"] = block
    return out


def first_predictions_of(document: Any) -> tuple[dict[str, Mapping[str, Any]], dict[str, Any]] | None:
    """The first predictions an earlier answer gave (job ARN -> record) and its prediction block; None
    when it gave none (so a re-delivered drop's receipt keeps what its first answer said)."""
    if not isinstance(document, Mapping) or not isinstance(document.get("prediction"), Mapping):
        return None
    jobs = [j for j in document.get("jobs") or () if isinstance(j, Mapping) and "prediction" in j]
    if not jobs:
        return None
    made = {str(j["jobArn"]): j["prediction"] for j in jobs if isinstance(j.get("prediction"), Mapping)}
    return made, dict(document["prediction"])


def build_answer(
    obj: DroppedObject,
    result: SpecResult,
    submitted: Sequence[SubmittedJob],
    refused_by_batch: Mapping[int, Problem],
    share: str | None,
    processed_at_ms: int,
) -> tuple[Outcome, str, str, dict[str, Any]]:
    """(outcome, where the original goes, where the answer goes, the answer document)."""
    refused = _refused_jobs(result, refused_by_batch)
    outcome = outcome_of(submitted, bool(refused or result.problems))
    dest = destination(obj.key, result.team, outcome)
    problems = [p.as_dict() for p in result.problems] + [e for job in refused for e in job["errors"]]
    document: dict[str, Any] = {
        "kind": ERROR_KIND if outcome is Outcome.REJECTED else RECEIPT_KIND,
        "version": DOCUMENT_VERSION,
        "outcome": outcome.value,
        "source": obj.as_source(),
        "team": result.team,
        "share": share,
        "original": dest,
        "processedAt": _iso(processed_at_ms),
        "jobs": [job.as_dict() for job in sorted(submitted, key=lambda j: j.index)],
        "rejected": refused,
        "problems": problems,
    }
    if submitted:
        document["prediction"] = FIRST_PREDICTION
    if outcome is Outcome.PARTIALLY_ACCEPTED:
        document["note"] = (
            f"{len(submitted)} job(s) submitted, {len(refused)} refused: the file moved to accepted/ "
            "because some of it runs; fix the refused jobs and drop them in a new file"
        )
    elif outcome is Outcome.REJECTED:
        document["note"] = "nothing was submitted; fix every problem listed and drop the file again"
    return outcome, dest, answer_key(obj, result.team), document


def answers(document: Any, obj: DroppedObject) -> bool:
    """True when a receipt or error report is the answer to exactly this object version."""
    if not isinstance(document, Mapping) or document.get("kind") not in (RECEIPT_KIND, ERROR_KIND):
        return False
    source = document.get("source") or {}
    same_upload = (
        source.get("versionId") == obj.version_id
        if obj.version_id is not None
        else source.get("versionId") is None and source.get("etag") == obj.etag
    )
    return source.get("bucket") == obj.bucket and source.get("key") == obj.key and same_upload


#: DynamoDB's item limit is 400 KB, names and values in UTF-8. The JSON text of an item is an upper
#: bound of that (quotes, separators and escapes cost more than DynamoDB's per-element overhead);
#: the margin keeps the attribute names of the key and the index out of the question.
MAX_ITEM_JSON_BYTES = 350 * 1024


def payload_item(
    request: ServiceJobRequest, entry: SubmittedJob, obj: DroppedObject, team: str, landed_at_ms: int
) -> dict[str, Any]:
    """The PAYLOAD item: the exact request submitted, so a requeue can submit it again."""
    return {
        "entity": "payload",
        "jobArn": entry.job_arn,
        "jobId": entry.job_id,
        "jobName": entry.name,
        "team": team,
        "request": request.aws_fields(),
        "payloadDigest": entry.payload_digest,
        "clientToken": entry.client_token,
        "source": obj.as_source(),
        # Cost reports by uploader: the account S3 names (its event carries no principal ARN); the
        # principal from CloudTrail's data event of the same request id joins it as
        # uploader.principal (service/record_uploader.py).
        "uploader": obj.uploader,
        "submittedAt": landed_at_ms,
    }


def too_large_for_an_item(item: Mapping[str, Any]) -> bool:
    """True when ``item`` may outgrow a DynamoDB item (its request then goes to S3)."""
    return len(json.dumps(item, ensure_ascii=False, default=str).encode("utf-8")) > MAX_ITEM_JSON_BYTES


def payload_request_key(team: str, job_id: str) -> str:
    """Where a request too large for its PAYLOAD item is kept in the drop bucket."""
    return f"{PAYLOADS_PREFIX}{_safe_name(team or 'unknown')}/{_safe_name(job_id)}.json"
