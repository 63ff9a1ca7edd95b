"""ServiceJobs and ReclaimBatch (both adapters/batch_service_jobs.py) in memory.

moto has no service jobs, so this fake follows the API reference: SubmitServiceJob makes one job per
clientToken and rejects a repeat of the same request
(https://docs.aws.amazon.com/batch/latest/APIReference/API_SubmitServiceJob.html), ListServiceJobs
returns summaries without priority, payload or tags, UpdateServiceJob refuses an unknown or ended job
and a priority outside 0..9999 (https://docs.aws.amazon.com/batch/latest/APIReference/API_UpdateServiceJob.html),
and TerminateServiceJob refuses a job that ended. tests/integration/contracts/test_service_jobs_contract.py
runs it and BatchServiceJobs on gpusim.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import botocore.session
from shareplane.adapters.batch_service_jobs import SubmittedServiceJob, described_job, listed_job
from shareplane.domain.errors import RejectedByServiceError
from shareplane.domain.jobs.described_job import DescribedJob, ListedJob
from shareplane.domain.jobs.service_job_request import ServiceJobRequest

#: ServiceJobSummary's members (botocore's service model): no schedulingPriority, payload or tags.
SUMMARY_KEYS = tuple(
    botocore.session.get_session().get_service_model("batch").shape_for("ServiceJobSummary").members
)
#: A job in one of these has ended: UpdateServiceJob refuses it.
FINAL_STATUSES = ("SUCCEEDED", "FAILED")


@dataclass
class FakeServiceJobs:
    """Batch's service jobs by id: submit (clientToken idempotent), describe, list, reprioritize, terminate."""

    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Every SubmitServiceJob request as sent to Batch, refused ones included.
    submits: list[dict[str, Any]] = field(default_factory=list)
    tokens: dict[str, str] = field(default_factory=dict)
    #: Batch refuses every submit with this reason.
    refuse: str | None = None
    #: Batch refuses the submits of these job names (a request it calls invalid).
    refuse_job_names: set[str] = field(default_factory=set)
    #: The next N submits fail as throttling does (not a refusal: the caller retries).
    fail_next: int = 0
    priorities: list[tuple[str, int]] = field(default_factory=list)
    #: Scripted ListServiceJobs answers by (queue name or ARN, status). Once a test scripts any,
    #: listings are only what it scripted; with none scripted a listing is read off ``jobs``.
    listed: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)
    #: Every ListServiceJobs call, as (queue as passed, status).
    list_calls: list[tuple[str, str]] = field(default_factory=list)
    terminated: list[tuple[str, str]] = field(default_factory=list)
    #: Terminate only records the call; the job stops later (Batch stops a job asynchronously).
    async_stop: bool = False
    #: Raise on the n-th terminate call (a Lambda that died mid-apply).
    die_on_call: int | None = None

    def add(self, *described: dict[str, Any]) -> dict[str, Any]:
        """Hold DescribeServiceJob results; returns the last one."""
        for job in described:
            self.jobs[job["jobId"]] = job
        return described[-1]

    @property
    def distinct_jobs(self) -> int:
        """How many jobs the submits made."""
        return len(self.tokens)

    def describe(self, job_id: str) -> DescribedJob | None:
        job = self.jobs.get(job_id.rsplit("/", 1)[-1])
        return described_job(copy.deepcopy(job)) if job else None

    def submit(self, request: ServiceJobRequest) -> SubmittedServiceJob:
        # What BatchServiceJobs sends: the request written into SubmitServiceJob's arguments.
        params = request.aws_fields()
        self.submits.append(copy.deepcopy(params))
        if self.fail_next:
            self.fail_next -= 1
            raise ConnectionError("throttled")
        if self.refuse:
            raise RejectedByServiceError("SubmitServiceJob", self.refuse, "fix it")
        if params["jobName"] in self.refuse_job_names:
            raise RejectedByServiceError(
                "SubmitServiceJob", "shareIdentifier is not allowed on this queue", "fix the queue"
            )
        token = params["clientToken"]
        if token in self.tokens:
            # API_SubmitServiceJob.html: a second identical request with the same clientToken is rejected.
            raise RejectedByServiceError("SubmitServiceJob", "Idempotent request already processed", "none")
        arn = f"arn:aws:batch:us-east-1:123456789012:service-job/new-{len(self.tokens) + 1}"
        self.tokens[token] = arn
        job_id = arn.rsplit("/", 1)[-1]
        self.jobs[job_id] = {
            **copy.deepcopy(params),
            "jobId": job_id,
            "jobArn": arn,
            "status": "SUBMITTED",
        }
        return SubmittedServiceJob(job_arn=arn, job_id=job_id, job_name=params["jobName"])

    def find_submitted(
        self, job_queue: str, job_name: str, tag: str, value: str
    ) -> SubmittedServiceJob | None:
        for job in self.jobs.values():
            if job.get("jobName") == job_name and (job.get("tags") or {}).get(tag) == value:
                return SubmittedServiceJob(job_arn=job["jobArn"], job_id=job["jobId"], job_name=job_name)
        return None

    def list_jobs(self, job_queue: str, status: str) -> list[ListedJob]:
        self.list_calls.append((job_queue, status))
        queue = job_queue.rsplit("/", 1)[-1]
        if self.listed:  # a queue is the same queue by its name or its ARN, as ListServiceJobs takes either
            summaries = next(
                (v for (q, st), v in self.listed.items() if st == status and q.rsplit("/", 1)[-1] == queue),
                [],
            )
        else:
            summaries = [
                {k: job[k] for k in SUMMARY_KEYS if k in job}
                for job in self.jobs.values()
                if job["status"] == status and str(job.get("jobQueue", "")).rsplit("/", 1)[-1] == queue
            ]
        # Read through the adapter's own reader, so a summary means here what it means on Batch.
        return [listed_job(summary) for summary in summaries]

    def update_priority(self, job_id: str, scheduling_priority: int) -> None:
        job = self.jobs.get(job_id.rsplit("/", 1)[-1])
        if job is None or job.get("status") in FINAL_STATUSES or not 0 <= scheduling_priority <= 9999:
            raise RejectedByServiceError(
                "UpdateServiceJob",
                f"job {job_id} is unknown or ended, or priority {scheduling_priority} is outside 0..9999",
                "re-read the job's state",
            )
        self.priorities.append((job_id, scheduling_priority))

    def terminate(self, job_id: str, reason: str) -> None:
        if self.die_on_call is not None and len(self.terminated) + 1 == self.die_on_call:
            self.die_on_call = None
            raise ConnectionError("the invocation died while terminating")
        job = self.jobs.get(job_id)
        if job is None or job["status"] in ("SUCCEEDED", "FAILED"):
            raise RejectedByServiceError("TerminateServiceJob", "the job has ended", "re-read it")
        self.terminated.append((job_id, reason))
        if not self.async_stop:
            job.update(status="FAILED", isTerminated=True, statusReason=reason)
