"""A whole spec file: read it, check each job (shape, then rules), map the accepted jobs to requests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from ...config.shares import SharesConfig
from ...errors import InvalidInputError
from ..drop_keys import SUBMIT_PREFIX
from .keys import MAX_KEY_BYTES, team_from_key
from .model import JobSpec, shape_problem
from .reading import load_jobs
from .request import service_job_request
from .results import JobResult, Problem, SpecResult, describe
from .rules import JobContext, check_job, image_choice


def _evaluate(raw_jobs: list[Any], ctx: JobContext) -> tuple[JobResult, ...]:
    results: list[JobResult] = []
    names_seen: dict[str, int] = {}
    for index, raw in enumerate(raw_jobs):
        at = f"jobs[{index}]"
        raw_name = raw.get("name") if isinstance(raw, dict) else None
        name = raw_name if isinstance(raw_name, str) else None
        if not isinstance(raw, dict):
            results.append(
                JobResult(
                    index,
                    None,
                    (
                        Problem(
                            at,
                            f"must be a job (a mapping), found {describe(raw)}",
                            "write the job as name: ..., instance_type: ..., ...",
                        ),
                    ),
                )
            )
            continue
        try:
            spec = JobSpec.model_validate(raw)
        except ValidationError as exc:
            shape_problems = tuple(shape_problem(at, error) for error in exc.errors(include_url=False))
            results.append(JobResult(index, name, shape_problems))
            continue
        problems = check_job(spec, at, ctx)
        image, _ = image_choice(spec, ctx)
        if spec.name in names_seen:
            problems.append(
                Problem(
                    f"{at}.name",
                    f"{spec.name} is also the name of jobs[{names_seen[spec.name]}] in this file",
                    "give every job in the file its own name",
                )
            )
        names_seen.setdefault(spec.name, index)
        if problems or image is None:
            results.append(JobResult(index, spec.name, tuple(problems)))
            continue
        request, digest = service_job_request(spec, index, image, ctx)
        results.append(JobResult(index, spec.name, (), request, digest))
    return tuple(results)


def _finish(
    raw_jobs: list[Any], key: str, team_name: str, config: SharesConfig, bucket: str, version_id: str | None
) -> SpecResult:
    team = config.teams.get(team_name)
    if team is None:
        return SpecResult(
            key,
            team_name,
            (
                Problem(
                    "key",
                    f"team {team_name!r} is not in the shares config",
                    f"use one of {sorted(config.teams)}",
                ),
            ),
        )
    ctx = JobContext(config, team_name, team, bucket, key, version_id)
    return SpecResult(key, team_name, (), _evaluate(raw_jobs, ctx))


def parse_spec_file(
    data: bytes, key: str, config: SharesConfig, *, bucket: str = "", version_id: str | None = None
) -> SpecResult:
    """Parse, validate, authorize and admit a dropped spec; never raises on bad input.

    ``key`` is the decoded object key; ``bucket`` and ``version_id`` only feed the client tokens.
    """
    try:
        team_name = team_from_key(key)
    except InvalidInputError as exc:
        return SpecResult(str(key)[:MAX_KEY_BYTES], None, (Problem(exc.field, exc.problem, exc.fix),))
    raw_jobs, problems = load_jobs(data, key.rsplit("/", 1)[-1])
    if raw_jobs is None:
        return SpecResult(key, team_name, problems)
    return _finish(raw_jobs, key, team_name, config, bucket, version_id)


def _team_of(raw_jobs: Sequence[Any]) -> str | None:
    for raw in raw_jobs:
        if isinstance(raw, dict) and isinstance(team := raw.get("team"), str):
            return team
    return None


def team_in_spec(data: bytes, filename: str = "spec.yaml") -> str | None:
    """The team the first job of a spec names, if the file is readable and any job names one."""
    raw_jobs, _ = load_jobs(data, filename)
    return _team_of(raw_jobs or ())


def parse_local_spec(
    data: bytes, filename: str, config: SharesConfig, team: str | None = None, *, bucket: str = "local"
) -> SpecResult:
    """Check a local spec file exactly as if it were dropped at ``submit/<team>/<filename>``.

    Without ``team``, the team comes from the spec's own ``team`` field (the first job naming one).
    The check itself is ``parse_spec_file``, the submit path's, so `shareplane validate` and the
    Lambda agree on everything that needs no live state (only the uploader check needs the event).
    """
    if team is None:
        raw_jobs, problems = load_jobs(data, filename)
        if raw_jobs is None:
            return SpecResult(filename, None, problems)
        team = _team_of(raw_jobs)
        if team is None:
            fix = "pass --team TEAM or add team: <your team> to the job"
            return SpecResult(filename, None, (Problem("team", "the spec names no team", fix),))
    return parse_spec_file(data, f"{SUBMIT_PREFIX}{team}/{filename}", config, bucket=bucket)
