"""Names out of ARNs: events and the table carry ARNs, the config, dashboards and people use names."""

from __future__ import annotations


def queue_name(job_queue: str | None) -> str:
    """A job queue's name from its ARN (a name is returned as it is); ``unknown`` when there is none."""
    if not job_queue:
        return "unknown"
    return job_queue.rsplit("/", 1)[-1]
