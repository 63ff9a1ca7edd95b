"""Job specs dropped in S3: parse, validate, authorize, admit, and map to SubmitServiceJob requests.

A spec file lives at ``submit/<team>/<file>`` (``.yaml``, ``.yml`` or ``.json``) and holds one job
(a mapping) or a list of jobs. Everything here is a pure function of the bytes, the key and the
shares config: the result lists, per job, either the SubmitServiceJob request or its problems, plus
problems that concern the whole file. Nothing raises on bad input; every problem names the path
(``jobs[1].instance_count``), what is wrong and how to fix it. Paths always use ``jobs[i]``, also
for a file that holds a single job.

The package follows the way a file is checked, one module a step:

- ``keys``: the team of a drop key ``submit/<team>/<file>``.
- ``reading``: the bytes to raw jobs (size, encoding, a small YAML dialect, JSON).
- ``model``: a job's shape (types, required and unknown fields, names, URI syntax), every shape
  problem at once.
- ``rules``: once the shape is right, the ordered rules that need a whole job (authorization against
  the team's config, admission against the cluster, cross-field rules).
- ``request``: an accepted job's SubmitServiceJob request, client token and payload digest.
- ``parse``: the whole file, through those steps; ``results``: what it returns.

Callers import from this package; the names below are its public face.
"""

from __future__ import annotations

from ...jobs.tags import SUBMISSION_TAG, TEAM_TAG, TIER_TAG
from ..drop_keys import SUBMIT_PREFIX
from .keys import MAX_KEY_BYTES, SPEC_SUFFIXES, TEAM_PATTERN, team_from_key
from .model import MAX_NAME_CHARS, MAX_SPEC_TAGS, NAME_PATTERN, SPEC_FIELDS, JobSpec
from .parse import parse_local_spec, parse_spec_file, team_in_spec
from .reading import MAX_JOBS_PER_FILE, MAX_SPEC_BYTES
from .request import (
    CHECKPOINT_LOCAL_PATH,
    EVALUATE_ON_EXIT,
    SERVICE_JOB_TYPE,
    TRAINING_INPUT_MODE,
    canonical_json,
    client_token,
    demoted_request,
    payload_digest,
)
from .results import JobResult, Problem, SpecResult
from .rules import JOB_RULES, RESERVED_TAG_PREFIXES

__all__ = [
    "CHECKPOINT_LOCAL_PATH",
    "EVALUATE_ON_EXIT",
    "JOB_RULES",
    "MAX_JOBS_PER_FILE",
    "MAX_KEY_BYTES",
    "MAX_NAME_CHARS",
    "MAX_SPEC_BYTES",
    "MAX_SPEC_TAGS",
    "NAME_PATTERN",
    "RESERVED_TAG_PREFIXES",
    "SERVICE_JOB_TYPE",
    "SPEC_FIELDS",
    "SPEC_SUFFIXES",
    "SUBMISSION_TAG",
    "SUBMIT_PREFIX",
    "TEAM_PATTERN",
    "TEAM_TAG",
    "TIER_TAG",
    "TRAINING_INPUT_MODE",
    "JobResult",
    "JobSpec",
    "Problem",
    "SpecResult",
    "canonical_json",
    "demoted_request",
    "client_token",
    "parse_local_spec",
    "parse_spec_file",
    "payload_digest",
    "team_from_key",
    "team_in_spec",
]
