"""Names out of ARNs: events and the table carry ARNs, the config, dashboards and people use names."""

from __future__ import annotations


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
