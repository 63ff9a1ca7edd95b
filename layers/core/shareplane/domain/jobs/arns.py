"""Names out of ARNs: events and the table carry ARNs, the config, dashboards and people use names."""

from __future__ import annotations

from collections.abc import Iterable


def arn_tail(arn: str) -> str:
    """The last ``/`` segment of an ARN: a job's id, a queue's or a training job's name.

    A bare id or name has no ``/`` and is returned as it is, so callers may pass either.
    """
    return arn.rsplit("/", 1)[-1]


def resource_name(arn: str) -> str:
    """A resource's name from its ARN, whichever separator its service uses.

    Most resources end in ``/<name>``; SNS topics, SQS queues and a few others in ``:<name>``. A trailing
    ``/`` (an S3 prefix, a URL) is ignored, and a bare name is returned as it is.
    """
    return arn_tail(arn.rstrip("/")).rsplit(":", 1)[-1]


def account_of(arn: str) -> str:
    """The 12-digit account of an ARN (``arn:aws:iam::<account>:role/...``): its fifth ``:`` field."""
    return arn.split(":")[4]


def job_id_of(job_arn: str) -> str:
    """A Batch job's id from its ARN (``.../service-job/<id>``); an id is returned as it is."""
    return arn_tail(job_arn)


def queue_name(job_queue: str | None) -> str:
    """A job queue's name from its ARN (a name is returned as it is); ``unknown`` when there is none."""
    if not job_queue:
        return "unknown"
    return arn_tail(job_queue)


def training_job_key(training_job_arn: str) -> str:
    """A training job's ARN (or name) as it is compared and stored: lower-cased.

    SageMaker returns lower-cased training-job ARNs from some calls (ListTrainingJobs,
    DescribeTrainingJob, as other AWS users report) while Batch and the events keep the name's own
    casing (``AWSBatch...``); training-job names are unique whatever their case, so the lower-cased
    ARN names one training job however a call spelled it. The one normalisation: every key and
    comparison of training jobs goes through it.
    """
    return training_job_arn.lower()


def same_training_job(a: str | None, b: str | None) -> bool:
    """Whether two training-job ARNs name the same training job, in whichever casing AWS returned them."""
    return a is not None and b is not None and training_job_key(a) == training_job_key(b)


def training_job_name(training_job_arn: str, spellings: Iterable[str] = ()) -> str:
    """The training job's name as SageMaker created it, from its ARN and other spellings of that ARN.

    CloudWatch dimensions are case-sensitive (``Host`` = ``<training job name>/algo-N``), so a
    lower-cased ARN's tail names no metric. Batch keeps the name's own casing (``AWSBatch...``): the
    first spelling of the same training job that is not all lower case is taken, else the ARN's tail.
    """
    tails = [arn_tail(a) for a in (training_job_arn, *spellings) if same_training_job(a, training_job_arn)]
    return next((tail for tail in tails if tail != tail.lower()), arn_tail(training_job_arn))
