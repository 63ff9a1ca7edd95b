"""The tags shareplane puts on every job it submits: the team and tier it runs for, its clientToken.

Kept apart from the job-spec parser so that the failure and reclaim paths, which read these tags
off the jobs Batch describes, do not load that parser (and PyYAML) at cold start.
"""

from __future__ import annotations

TEAM_TAG = "shareplane:team"
TIER_TAG = "shareplane:tier"
#: The job's clientToken, so a retried submit or requeue can find the job it created: SubmitServiceJob
#: rejects a second identical request with the same token, and DescribeServiceJob does not return it.
SUBMISSION_TAG = "shareplane:submission"
