"""Jobs as recorded: lifecycle and history, training jobs, described service jobs, ARNs and tags.

Its modules, each one job (callers import from the module; importing the package loads
none of them, so a handler's cold start pays only for what it uses):

- ``arns``: Names out of ARNs: events and the table carry ARNs, the config, dashboards and people use names.
- ``described_job``: A service job as AWS Batch describes it (DescribeServiceJob) or lists it
  (ListServiceJobs).
- ``lifecycle``: Job lifecycle: normalized observations, dedupe and ordering keys, and the transition
  decision.
- ``service_job_request``: A SubmitServiceJob request as a value, and its one AWS shape (camelCase keys,
  absent members left out).
- ``tags``: The tags shareplane puts on every job it submits: the team and tier it runs for, its
  clientToken.
- ``training``: SageMaker training jobs: observations of one training job and their fold into its state.
"""

__all__ = [
    "arns",
    "described_job",
    "lifecycle",
    "service_job_request",
    "tags",
    "training",
]
