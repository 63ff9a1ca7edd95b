"""Programmatic submission: validate a spec locally, drop it in the stack's bucket, wait for the answer.

``submit_spec`` is what ``shareplane submit`` runs; it uses the same jobspec rules as the submit_job
Lambda, so a spec that fails here is never uploaded. The answer is the receipt (accepted) or the
error report (rejected) the Lambda writes under answers/, one per object version; it is matched to
this upload by bucket, key and version id, so another upload of the same file name never answers it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError
from shareplane.domain.config.shares import SharesConfig
from shareplane.domain.errors import InvalidInputError
from shareplane.domain.jobs.lifecycle import JobState
from shareplane.domain.submit.drop_access import caller_is_submitter
from shareplane.domain.submit.jobspec import MAX_SPEC_BYTES, SUBMIT_PREFIX, SpecResult, parse_local_spec
from shareplane.domain.submit.submission import RECEIPT_KIND, DroppedObject, answer_key, answers
from shareplane.service.ports import SpecBucket

from .aws import Target
from .config_file import load_config
from .files import read_head

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

DROP_BUCKET_OUTPUT = "DropBucketName"


@dataclass(frozen=True)
class SubmitResult:
    """What happened to one submitted spec file."""

    local: SpecResult
    bucket: str | None = None
    key: str | None = None
    version_id: str | None = None
    answer_key: str | None = None
    answer: Mapping[str, Any] | None = None
    final_states: Mapping[str, JobState] = field(default_factory=dict)
    #: Where the team folder came from: "--team", or "spec" (the jobs' own team: field, all agreeing).
    team_from: str = "--team"

    @property
    def uploaded(self) -> bool:
        """True when the spec passed the local check and was put in the bucket."""
        return self.key is not None

    @property
    def outcome(self) -> str:
        """accepted / partially_accepted / rejected, or invalid (not uploaded) / pending (no answer)."""
        if not self.uploaded:
            return "invalid"
        if self.answer is None:
            return "pending"
        return str(self.answer.get("outcome"))

    @property
    def job_arns(self) -> list[str]:
        """ARNs of the jobs the receipt lists."""
        if not self.answer or self.answer.get("kind") != RECEIPT_KIND:
            return []
        return [job["jobArn"] for job in self.answer.get("jobs", [])]

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready summary (what ``--output json`` prints)."""
        return {
            "outcome": self.outcome,
            "bucket": self.bucket,
            "key": self.key,
            "versionId": self.version_id,
            "answerKey": self.answer_key,
            "answer": dict(self.answer) if self.answer else None,
            "team": self.local.team,
            "teamFrom": self.team_from,
            "local": None if self.uploaded else self.local.as_dict(),
            "finalStates": {arn: s.status.value for arn, s in self.final_states.items()},
        }


def _read_spec(spec: Path) -> bytes:
    return read_head(spec, MAX_SPEC_BYTES)


def submit_spec(
    spec: Path | str,
    *,
    team: str | None = None,
    bucket: str | None = None,
    config: SharesConfig | Path | str = Path("config/shares.yaml"),
    target: Target | None = None,
    s3: S3Client | None = None,
    timeout: float = 120.0,
    poll_seconds: float = 1.0,
    sleep: Callable[[float], None] | None = None,
    warn: Callable[[str, str], None] | None = None,
) -> SubmitResult:
    """Validate ``spec`` locally, upload it to ``submit/<team>/<file>``, and wait for its answer.

    Returns without uploading when the local check finds a problem (``outcome == "invalid"``), and
    with ``outcome == "pending"`` when no answer came within ``timeout`` seconds. With ``warn``, a
    caller who is not one of the team's submitters is told (problem, fix) before the upload.
    """
    spec = Path(spec)
    shares = config if isinstance(config, SharesConfig) else load_config(config)
    data = _read_spec(spec)
    # Without --team the folder is the spec's own team: field, and every job naming a team must name
    # that one (a job naming another is refused, never dropped under the wrong folder); the bucket
    # policy then decides whether this caller may write there.
    team_from = "--team" if team is not None else "spec"
    local = parse_local_spec(data, spec.name, shares, team)
    if not local.ok:
        return SubmitResult(local, team_from=team_from)
    target = target or Target()
    bucket = bucket or target.outputs()[DROP_BUCKET_OUTPUT]
    # The root's S3 client and drop-bucket adapter (``s3``, when given, stands in for its client).
    root = target.root() if s3 is None else target.root(s3=s3)
    key = local.key
    if not key.startswith(SUBMIT_PREFIX):
        raise InvalidInputError("key", f"{key} is not under {SUBMIT_PREFIX}", "pass --team")
    team_config = shares.teams.get(local.team or "")
    if warn is not None and local.team and team_config is not None:
        outsider = not_a_submitter(root.client("sts"), local.team, team_config.submitters)
        if outsider is not None:
            warn(*outsider)
    response = root.s3.put_object(Bucket=bucket, Key=key, Body=data, ContentType=_content_type(spec.name))
    version_id = response.get("VersionId")
    etag = (response.get("ETag") or "").strip('"') or None
    found = wait_for_answer(
        root.spec_bucket, bucket, key, version_id, local.team, timeout, poll_seconds, sleep, etag
    )
    answer_key, answer = found if found else (None, None)
    return SubmitResult(local, bucket, key, version_id, answer_key, answer, team_from=team_from)


def not_a_submitter(sts: Any, team: str, submitters: tuple[str, ...]) -> tuple[str, str] | None:
    """(problem, fix) when the caller is not one of ``team``'s submitters; None when it is, or the team
    lists none (then the bucket policy lets anyone drop there).

    The upload still goes ahead: the bucket policy is what refuses it on AWS, and the uploader's check
    alerts the team of a drop it let through (the local stack enforces no bucket policy).
    """
    if not submitters:
        return None
    try:
        caller = str(sts.get_caller_identity()["Arn"])
    except (ClientError, BotoCoreError):
        return None  # a warning only: who the caller is cannot be told, the upload goes ahead

    if caller_is_submitter(caller, submitters):
        return None
    return (
        f"you are {caller}, not one of team {team}'s submitters ({', '.join(submitters)}): on AWS the "
        "bucket policy refuses the drop, and one let through (the local stack enforces no bucket policy) "
        "raises an uploader_not_submitter alert",
        f"use the credentials of one of those roles (aws sts assume-role --role-arn {submitters[0]} ...), "
        f"or ask the platform team to add yours to teams.{team}.submitters in the shares config",
    )


def _content_type(name: str) -> str:
    return "application/json" if name.lower().endswith(".json") else "application/yaml"


def wait_for_answer(
    reader: SpecBucket,
    bucket: str,
    key: str,
    version_id: str | None,
    team: str | None,
    timeout: float,
    poll_seconds: float,
    sleep: Callable[[float], None] | None = None,
    etag: str | None = None,
) -> tuple[str, Mapping[str, Any]] | None:
    """(answer key, answer) for exactly this upload, or None after ``timeout`` seconds."""
    dropped = DroppedObject(bucket, key, version_id, etag=etag)
    at = answer_key(dropped, team)
    deadline = time.monotonic() + timeout
    while True:
        document = reader.get_json(bucket, at)
        if answers(document, dropped):
            assert isinstance(document, Mapping)
            return at, document
        if time.monotonic() >= deadline:
            return None
        (sleep or time.sleep)(poll_seconds)


def wait_for_jobs(
    load_job: Callable[[str], JobState | None],
    job_arns: list[str],
    timeout: float,
    poll_seconds: float = 5.0,
    on_change: Callable[[str, JobState], None] | None = None,
    sleep: Callable[[float], None] | None = None,
) -> dict[str, JobState]:
    """Follow jobs in the jobs table until each is SUCCEEDED or FAILED (or the timeout passes)."""
    seen: dict[str, JobState] = {}
    deadline = time.monotonic() + timeout
    while True:
        for arn in job_arns:
            state = load_job(arn)
            if state is not None and (arn not in seen or seen[arn].status is not state.status):
                seen[arn] = state
                if on_change:
                    on_change(arn, state)
        if all(arn in seen and seen[arn].status.is_final for arn in job_arns) or time.monotonic() >= deadline:
            return seen
        (sleep or time.sleep)(poll_seconds)
