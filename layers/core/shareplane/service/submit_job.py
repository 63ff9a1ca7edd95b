"""Submit a dropped job spec: read, validate, authorize, submit once, record, move, answer, notify.

Every step is idempotent, so a duplicated or re-delivered S3 event changes nothing:

1. HEAD the exact object version (size cap before any read). Gone and answered: done. The
   console's folder marker (a key ending in ``/``, zero bytes) is no drop and is left alone.
2. Parse with the jobspec rules (the same code as ``shareplane validate``), then check the uploader
   against the team's submitters (drop_access: the one check that needs the event).
3. Per valid job: SubmitServiceJob with the job's clientToken. Batch rejects a second identical
   request with the same token (API_SubmitServiceJob.html), so a refused request is first looked
   up by name and submission tag: a retry finds the job its first try created. Then the job's
   SUBMITTED record through record_state's rules (its time is the object's LastModified, so a
   repeat is a content duplicate) and the payload item (conditional write; a request too large
   for a DynamoDB item is kept in S3 under payloads/ and the item points at it).
4. Copy the original to accepted/ or rejected/, write the answer under answers/ (keyed by the
   object version), alert on any rejection (to the team whose folder it is, even for a bad name;
   through the alert sender, once per answer, so `shareplane alerts` lists it), and only then
   delete the version that was read.

Between 3 and 4 the jobs are linked to the upload's S3 request id, and the principal CloudTrail named
for it is copied onto them when its event came first (service/record_uploader.py; the other order is
the attribution path's to finish).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from ..domain.alerts.alert import Alert, spec_rejected_alert
from ..domain.config.shares import BudgetConfig, BudgetEnforcement, SharesConfig, Tier
from ..domain.cost.budget import (
    Admission,
    BudgetStatus,
    admission,
    budget_status,
    demotion_note,
    refusal_message,
)
from ..domain.errors import InvalidInputError, RejectedByServiceError
from ..domain.jobs.lifecycle import JobObservation, JobStatus, ObservationKind
from ..domain.jobs.service_job_request import ServiceJobRequest
from ..domain.submit.drop_access import drop_refusal
from ..domain.submit.drop_keys import folder_team
from ..domain.submit.jobspec import (
    MAX_SPEC_BYTES,
    SUBMISSION_TAG,
    SUBMIT_PREFIX,
    TIER_TAG,
    JobResult,
    Problem,
    SpecResult,
    demoted_request,
    parse_spec_file,
    team_from_key,
)
from ..domain.submit.payload import SubmittedPayload
from ..domain.submit.submission import (
    DroppedObject,
    Outcome,
    SubmittedJob,
    answer_key,
    answers,
    build_answer,
    first_predictions_of,
    is_folder_marker,
    is_output_key,
    payload_item,
    payload_request_key,
    submitted_job,
    too_large_for_an_item,
    with_first_predictions,
)
from .ports import (
    JobStore,
    MetricsSink,
    PayloadStore,
    ServiceJobs,
    SpecBucket,
    SubmittedRef,
    UploadAttributions,
)
from .record_state import record_observation
from .record_uploader import attach_recorded_principal

if TYPE_CHECKING:
    from .alerting import AlertSender
    from .receipt_prediction import ReceiptForecast

logger = logging.getLogger(__name__)


class SubmitStore(JobStore, PayloadStore, Protocol):
    """The jobs table as the submit path writes it: each job's state, and the payload it was sent with."""


@dataclass(frozen=True)
class QueueNames:
    """Deployed queue names (or ARNs) that stand in for the names in the shares config."""

    gpu: str | None = None
    cpu: str | None = None

    def resolve(self, configured: str, config: SharesConfig) -> str:
        """The queue to submit to for a queue name taken from the config."""
        if self.gpu and configured == config.gpu_queue_name():
            return self.gpu
        if self.cpu and configured == config.queues.cpu_fifo:
            return self.cpu
        return configured


@dataclass(frozen=True)
class SubmitPorts:
    """Everything the submit use case talks through; built once per cold start by bootstrap."""

    bucket: SpecBucket
    batch: ServiceJobs
    store: SubmitStore
    metrics: MetricsSink
    #: Sends the alert of a rejected drop, listed in the alert ledger with every other alert.
    sender: AlertSender
    #: The uploader's principal from CloudTrail, joined to the drop's jobs by S3 request id.
    attributions: UploadAttributions
    config: SharesConfig
    #: The deployed queues that the config's queue names stand for.
    queues: QueueNames = field(default_factory=QueueNames)
    #: The receipt's first start prediction of the drop's GPU jobs (None: the receipt points to the watch).
    forecast: ReceiptForecast | None = None


#: The parts of a rejected drop's answer its alert repeats (the whole answer is at the location it names).
_ALERTED_PARTS = ("outcome", "source", "team", "original", "problems", "rejected", "jobs")


@dataclass(frozen=True)
class SubmitOutcome:
    """What handling one dropped object did."""

    key: str
    status: str  # an Outcome value, or ignored / already_answered / gone
    destination: str | None = None
    answer: str | None = None
    jobs: tuple[SubmittedJob, ...] = field(default=())


def submit_dropped_spec(
    obj: DroppedObject, ports: SubmitPorts, now_ms: int, time_left: Callable[[], float] | None = None
) -> SubmitOutcome:
    """Handle one dropped object exactly once, whatever the number of events about it.

    ``time_left``: the seconds the invocation can still give the receipt's forecast (see
    ``service/receipt_prediction.py``).
    """
    config, queues = ports.config, ports.queues
    if is_output_key(obj.key):
        # Our own answers: never specs (guards a notification configured on the whole bucket).
        return SubmitOutcome(obj.key, "ignored")
    if is_folder_marker(obj.key, obj.size):
        return SubmitOutcome(obj.key, "ignored")
    head = ports.bucket.head(obj.bucket, obj.key, obj.version_id)
    if head is None:
        return _gone(obj, ports)
    if is_folder_marker(obj.key, head.size):
        return SubmitOutcome(obj.key, "ignored")
    version = obj.version_id or head.version_id
    obj = replace(obj, version_id=version, size=head.size, etag=head.etag or obj.etag)
    result = _refuse_foreign_uploader(_read_and_parse(obj, ports, config), obj, config)
    submitted: list[SubmittedJob] = []
    refused: dict[int, Problem] = {}
    budget = _budget_check(result.team, ports, config, head.last_modified_ms)
    for job in result.jobs:
        if not job.ok:
            continue
        job, refusal = budget.admit(job, config, partial(_submitted_before, ports=ports, queues=queues))
        if refusal is not None:
            refused[job.index] = refusal
            continue
        try:
            submitted.append(
                _submit_one(job, obj, result.team or "", ports, config, queues, head.last_modified_ms)
            )
        except RejectedByServiceError as exc:
            refused[job.index] = Problem(
                f"jobs[{job.index}]",
                f"AWS Batch refused the job: {exc.problem}",
                exc.fix,
            )
    # The jobs are recorded: link them to the upload; take its principal if CloudTrail's event came first.
    arns = [j.job_arn for j in submitted]
    attach_recorded_principal(obj.request_id, arns, ports.attributions, now_ms // 1000)
    # A badly named drop under a real team folder is still that team's: its answer and alert say so.
    team = result.team if result.team in config.teams else folder_team(obj.key, config.teams)
    share, tier = _file_share(config, team, submitted)
    outcome, dest, answer_at, document = build_answer(obj, result, submitted, refused, share, now_ms)
    document["team"] = result.team or team
    document["uploader"] = obj.uploader
    if budget.notes:
        document["budget"] = {**(budget.status.as_dict() if budget.status else {}), "notes": budget.notes}
    if submitted and ports.forecast is not None:
        at_ms = max(now_ms, head.last_modified_ms)
        document = _with_receipt_predictions(document, obj, answer_at, submitted, ports, at_ms, time_left)
    movable = obj.key.startswith(SUBMIT_PREFIX)
    if movable:
        ports.bucket.copy(obj.bucket, obj.key, obj.version_id, dest)
    else:
        document["original"] = obj.key  # not ours to move: only spec drops under submit/ are moved
    ports.bucket.put_json(obj.bucket, answer_at, document)
    if outcome is not Outcome.ACCEPTED:
        alert = _rejection_alert(obj, outcome, answer_at, document, submitted, (team, tier, share))
        ports.sender.send(alert, now_ms / 1000)
    if movable:
        ports.bucket.delete(obj.bucket, obj.key, obj.version_id)
    logger.info(
        "spec answered",
        extra={"key": obj.key, "outcome": outcome.value, "submitted": len(submitted), "answer": answer_at},
    )
    return SubmitOutcome(obj.key, outcome.value, dest if movable else obj.key, answer_at, tuple(submitted))


def _rejection_alert(
    obj: DroppedObject,
    outcome: Outcome,
    answer_at: str,
    document: Mapping[str, Any],
    submitted: list[SubmittedJob],
    routing: tuple[str | None, str | None, str | None],
) -> Alert:
    """The alert of a drop rejected whole or in part, routed (team, tier, share) as its answer says."""
    team, tier, share = routing
    return spec_rejected_alert(
        key=obj.key,
        partly=outcome is Outcome.PARTIALLY_ACCEPTED,
        answer=f"s3://{obj.bucket}/{answer_at}",
        details={k: document[k] for k in _ALERTED_PARTS},
        team=team,
        tier=tier,
        share=share,
        queue=next(iter({j.queue for j in submitted}), None),
    )


def _with_receipt_predictions(
    document: dict[str, Any],
    obj: DroppedObject,
    answer_at: str,
    submitted: list[SubmittedJob],
    ports: SubmitPorts,
    at_ms: int,
    time_left: Callable[[], float] | None,
) -> dict[str, Any]:
    """The receipt with the GPU jobs' first predictions: an earlier answer's to this very version when
    there is one (a re-delivered drop keeps what it was told), else a forecast made at ``at_ms``, in its
    budget: the handler's time, never before the jobs' creation (the drop's LastModified, on S3's clock,
    which the twin would otherwise count as the future and leave the jobs out)."""
    assert ports.forecast is not None
    # Loaded on this path only: a drop that submitted nothing never pays for it.
    from .receipt_prediction import gpu_jobs, predict_first_starts

    previous = ports.bucket.get_json(obj.bucket, answer_at)
    earlier = first_predictions_of(previous) if answers(previous, obj) else None
    if earlier is not None:
        made, block = earlier
        return {**with_first_predictions(document, made, None), "prediction": block}
    gpu = gpu_jobs({j.job_arn: j.queue for j in submitted}, ports.forecast.twin.queue)
    if not gpu:
        return with_first_predictions(document, {}, "only jobs of the GPU queue are forecast")
    first = predict_first_starts(ports.forecast, gpu, at_ms / 1000, time_left)
    logger.info(
        "receipt forecast",
        extra={
            "key": obj.key,
            "predicted": len(first.predictions),
            "seconds": None if first.seconds is None else round(first.seconds, 3),
            "reason": first.reason,
        },
    )
    return with_first_predictions(
        document, {arn: p.as_record() for arn, p in first.predictions.items()}, first.reason
    )


@dataclass
class _BudgetCheck:
    """An over-budget team's enforcement, applied to each new job of one drop (never to queued work)."""

    status: BudgetStatus | None = None
    budget: BudgetConfig | None = None
    team: str = ""
    #: What the answer says of each refused or demoted job.
    notes: list[str] = field(default_factory=list)

    def admit(
        self, job: JobResult, config: SharesConfig, submitted_before: Callable[[JobResult], bool]
    ) -> tuple[JobResult, Problem | None]:
        """The job as it goes in (LOWPRI when demoted), or a Problem when it is refused."""
        request = job.request
        asked = ((request.tags if request else None) or {}).get(TIER_TAG)
        tier = Tier(asked) if isinstance(asked, str) and asked in config.tiers else None
        decision = admission(self.status, self.budget, tier)
        if decision is Admission.REFUSE and submitted_before(job):
            # Enforcement is for new work only: on a retry of a drop whose first try already submitted
            # this job (the spend may have crossed the budget in between), the answer names that job.
            return job, None
        if decision is Admission.REFUSE and self.status is not None:
            problem, fix = refusal_message(self.status)
            self.notes.append(f"jobs[{job.index}] refused: {problem}")
            return job, Problem(f"jobs[{job.index}]", problem, fix)
        if decision is Admission.DEMOTE and self.status is not None and tier is not None:
            if request is None or (request.share_identifier is None and request.quota_share_name is None):
                return job, None  # a CPU job goes to the FIFO queue: no tier to move it to
            demoted, digest = demoted_request(request, self.team, config)
            self.notes.append(f"jobs[{job.index}] {demotion_note(self.status, tier)}")
            return replace(job, request=demoted, payload_digest=digest), None
        return job, None


def _budget_check(
    team: str | None, ports: SubmitPorts, config: SharesConfig, landed_at_ms: int
) -> _BudgetCheck:
    """The team's month at the drop's time (billed, and accrued by its running jobs), read only when
    its budget enforces anything."""
    budget = config.budgets.get(team or "")
    if team is None or budget is None or budget.enforcement is BudgetEnforcement.NONE:
        return _BudgetCheck()
    from .spend import team_months  # only a drop of a team whose budget enforces reads the month

    month = team_months(ports.store, config, [team], landed_at_ms)[team]
    status = budget_status(team, budget, month.billed_usd, landed_at_ms / 1000, month.accrued_usd)
    return _BudgetCheck(status, budget, team)


def _file_share(
    config: SharesConfig, team: str | None, submitted: list[SubmittedJob]
) -> tuple[str | None, str | None]:
    """The share identifier and tier a whole file went to, when it is one; else the team's share, no tier.

    In the team_tier layout a file's jobs may go to several identifiers (one per tier), so the answer's
    ``share`` is set only when all of them went to one; the ``team`` beside it always routes.
    """
    team_config = config.teams.get(team) if team else None
    if team_config is None:
        return None, None
    identifiers = {job.share for job in submitted if job.share}
    tiers = {job.priority for job in submitted if job.priority}
    tier = next(iter(tiers)) if len(tiers) == 1 else None
    if not config.tiered_shares:
        return team_config.share, tier
    return (next(iter(identifiers)) if len(identifiers) == 1 else None), tier


def _gone(obj: DroppedObject, ports: SubmitPorts) -> SubmitOutcome:
    """The version is gone: answered already (a re-delivered event), or deleted before we saw it."""
    try:
        team: str | None = team_from_key(obj.key)
    except InvalidInputError:
        team = None  # a bad key has its answer under rejected/_invalid-key/
    key = answer_key(obj, team)
    if answers(ports.bucket.get_json(obj.bucket, key), obj):
        return SubmitOutcome(obj.key, "already_answered", answer=key)
    logger.warning(
        "object version gone before it was read", extra={"key": obj.key, "version": obj.version_id}
    )
    return SubmitOutcome(obj.key, "gone")


def _refuse_foreign_uploader(result: SpecResult, obj: DroppedObject, config: SharesConfig) -> SpecResult:
    """The parse result, or the whole file refused when its uploader may not drop for the team."""
    team = config.teams.get(result.team or "")
    if team is None:
        return result
    problem = drop_refusal(result.team or "", team, obj.requester, obj.bucket_owner)
    return result if problem is None else SpecResult(result.key, result.team, (problem,))


def _read_and_parse(obj: DroppedObject, ports: SubmitPorts, config: SharesConfig) -> SpecResult:
    size = obj.size or 0
    if size > MAX_SPEC_BYTES:
        # Never read an oversized object: the cap holds before any byte is fetched.
        try:
            team = team_from_key(obj.key)
        except InvalidInputError as exc:
            return SpecResult(obj.key, None, (Problem(exc.field, exc.problem, exc.fix),))
        too_big = Problem(
            "file",
            f"is {size} bytes, over the {MAX_SPEC_BYTES // 1024} KB limit",
            "split the jobs across several files",
        )
        return SpecResult(obj.key, team, (too_big,))
    data = ports.bucket.read(obj.bucket, obj.key, obj.version_id) or b""
    return parse_spec_file(data, obj.key, config, bucket=obj.bucket, version_id=obj.version_id)


def _submit_one(
    job: JobResult,
    obj: DroppedObject,
    team: str,
    ports: SubmitPorts,
    config: SharesConfig,
    queues: QueueNames,
    landed_at_ms: int,
) -> SubmittedJob:
    assert job.request is not None  # only accepted jobs are submitted
    request = replace(job.request, job_queue=queues.resolve(job.request.job_queue, config))
    answer = _submit_once(request, ports)
    entry = submitted_job(job, request.job_queue, answer.job_arn, answer.job_id)
    observation = JobObservation(
        job_arn=answer.job_arn,
        status=JobStatus.SUBMITTED,
        kind=ObservationKind.SUBMITTED,
        job_id=answer.job_id,
        job_name=entry.name,
        job_queue=entry.queue,
        share_identifier=request.share_identifier,
        quota_share_name=request.quota_share_name,
        scheduling_priority=request.scheduling_priority,
        # The drop time, not the clock: a repeat of this step records the very same observation.
        created_at=landed_at_ms,
    )
    record_observation(observation, ports.store, ports.metrics, config)
    item = payload_item(request, entry, obj, team, landed_at_ms)
    if too_large_for_an_item(item):
        # DynamoDB refuses items over 400 KB; the request goes to S3 and the item points at it.
        key = payload_request_key(team, entry.job_id)
        ports.bucket.put_json(obj.bucket, key, {"request": item.pop("request")})
        item["requestAt"] = {"bucket": obj.bucket, "key": key}
    ports.store.save_payload(answer.job_arn, item)
    return entry


def _submitted_before(job: JobResult, ports: SubmitPorts, queues: QueueNames) -> bool:
    """Whether an earlier try of this drop submitted the job (found by its clientToken's tag)."""
    request = job.request
    if request is None or not request.client_token:
        return False
    queue = queues.resolve(request.job_queue, ports.config)
    found = ports.batch.find_submitted(queue, request.job_name, SUBMISSION_TAG, request.client_token)
    return found is not None


def _submit_once(request: ServiceJobRequest, ports: SubmitPorts) -> SubmittedRef:
    """SubmitServiceJob, or the job an earlier try of this very request created.

    Batch rejects a second identical request with the same clientToken ("the second request is
    rejected", https://docs.aws.amazon.com/batch/latest/APIReference/API_SubmitServiceJob.html), so
    a refusal is first checked against the jobs of that name carrying this token as a tag.
    """
    try:
        return ports.batch.submit(request)
    except RejectedByServiceError:
        token = request.client_token
        earlier = (
            ports.batch.find_submitted(request.job_queue, request.job_name, SUBMISSION_TAG, token)
            if token
            else None
        )
        if earlier is None:
            raise
        logger.info("found the job an earlier try submitted", extra={"job_arn": earlier.job_arn})
        return earlier


def payload_request(payload: SubmittedPayload, bucket: SpecBucket) -> ServiceJobRequest | None:
    """The request a stored payload holds, read back from S3 when it was too large for the item."""
    if payload.request is not None:
        return payload.request
    if payload.request_at is None:
        return None
    document = bucket.get_json(payload.request_at.bucket, payload.request_at.key)
    request = document.get("request") if isinstance(document, Mapping) else None
    return ServiceJobRequest.from_aws_fields(request) if isinstance(request, Mapping) else None
