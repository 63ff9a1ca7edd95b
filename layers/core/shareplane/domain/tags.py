"""The tags shareplane puts on every job it submits, naming the team and tier it runs for.

Kept apart from the job-spec parser so that the failure and reclaim paths, which read these tags
off the jobs Batch describes, do not load that parser (and PyYAML) at cold start.
"""

from __future__ import annotations

TEAM_TAG = "shareplane:team"
TIER_TAG = "shareplane:tier"
