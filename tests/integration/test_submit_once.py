"""Submit exactly once against the emulator's HTTP Batch: a repeated clientToken is rejected, the job is found.

The API reference says a second identical SubmitServiceJob with the same clientToken "is rejected"
(https://docs.aws.amazon.com/batch/latest/APIReference/API_SubmitServiceJob.html); the adapter turns
that into RejectedByServiceError like any refusal, and find_submitted finds the first job by name and
submission tag through ListServiceJobs and DescribeServiceJob, over real boto3 calls.
"""

from __future__ import annotations

import pytest
from shareplane.adapters.batch_service_jobs import BatchServiceJobs
from shareplane.domain.errors import RejectedByServiceError
from shareplane.domain.jobs.service_job_request import ServiceJobRequest
from shareplane.domain.submit.jobspec import SUBMISSION_TAG

from tests.sim.conftest import payload
from tests.sim.test_server import Served, served  # noqa: F401 - the fixture

TOKEN = "a" * 64


def request(name: str, token: str = TOKEN) -> ServiceJobRequest:
    return ServiceJobRequest(
        job_name=name,
        job_queue="q",
        service_job_type="SAGEMAKER_TRAINING",
        service_request_payload=payload(name),
        tags={SUBMISSION_TAG: token},
        client_token=token,
    )


def test_a_repeated_request_is_rejected_and_its_job_found(served: Served) -> None:  # noqa: F811
    served.env()
    served.queue()
    jobs = BatchServiceJobs(served.batch)
    first = jobs.submit(request("ranker"))
    # a namesake from another upload (another token) is not the one
    jobs.submit(request("ranker", token="b" * 64))
    with pytest.raises(RejectedByServiceError):
        jobs.submit(request("ranker"))
    found = jobs.find_submitted("q", "ranker", SUBMISSION_TAG, TOKEN)
    assert found is not None and (found.job_id, found.job_arn) == (first.job_id, first.job_arn)


def test_nothing_is_found_for_a_token_no_job_carries(served: Served) -> None:  # noqa: F811
    served.env()
    served.queue()
    jobs = BatchServiceJobs(served.batch)
    jobs.submit(request("ranker"))
    assert jobs.find_submitted("q", "ranker", SUBMISSION_TAG, "c" * 64) is None
    assert jobs.find_submitted("q", "rank", SUBMISSION_TAG, TOKEN) is None  # names match exactly
