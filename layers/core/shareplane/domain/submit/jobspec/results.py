"""What a check of a spec file returns, and how its problems name values and paths."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ...jobs.service_job_request import ServiceJobRequest


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a spec: where, what, and how to fix it."""

    path: str
    message: str
    fix: str

    def as_dict(self) -> dict[str, str]:
        """The problem as a JSON-ready mapping."""
        return {"path": self.path, "message": self.message, "fix": self.fix}


@dataclass(frozen=True)
class JobResult:
    """The outcome for one job of a file: a SubmitServiceJob request, or the problems that stop it."""

    index: int
    name: str | None
    problems: tuple[Problem, ...] = ()
    #: what ``batch.submit_service_job`` is called with; None when the job is rejected
    request: ServiceJobRequest | None = None
    #: sha256 hex of ``serviceRequestPayload`` (the canonical CreateTrainingJob JSON), for receipts
    payload_digest: str | None = None

    @property
    def ok(self) -> bool:
        """True when the job maps to a request."""
        return self.request is not None and not self.problems

    def as_dict(self) -> dict[str, Any]:
        """The result as a JSON-ready mapping."""
        out: dict[str, Any] = {
            "index": self.index,
            "name": self.name,
            "valid": self.ok,
            "errors": [p.as_dict() for p in self.problems],
        }
        if self.request is not None:
            out["request"] = self.request.aws_fields()
            out["payload_digest"] = self.payload_digest
        return out


@dataclass(frozen=True)
class SpecResult:
    """The outcome for one spec file: file-level problems, or one result per job."""

    key: str
    team: str | None
    problems: tuple[Problem, ...] = ()
    jobs: tuple[JobResult, ...] = field(default=())

    @property
    def ok(self) -> bool:
        """True when the file is readable and every job in it maps to a request."""
        return not self.problems and bool(self.jobs) and all(job.ok for job in self.jobs)

    @property
    def requests(self) -> tuple[ServiceJobRequest, ...]:
        """The requests of the accepted jobs, in file order."""
        return tuple(job.request for job in self.jobs if job.request is not None)

    def as_dict(self) -> dict[str, Any]:
        """The result as a JSON-ready mapping."""
        return {
            "key": self.key,
            "team": self.team,
            "valid": self.ok,
            "problems": [p.as_dict() for p in self.problems],
            "jobs": [job.as_dict() for job in self.jobs],
        }


def describe(value: Any) -> str:
    """A value as a problem names it: its kind in words, and the value itself when it is short to show."""
    kind = {
        bool: "true/false",
        int: "a number",
        float: "a number",
        str: "text",
        list: "a list",
        dict: "a mapping",
        type(None): "null",
    }.get(type(value), type(value).__name__)
    shown = repr(value)
    return (
        f"{kind} ({shown[:40]}{'...' if len(shown) > 40 else ''})"
        if kind not in ("a list", "a mapping")
        else kind
    )


def render_path(prefix: str, loc: Sequence[int | str]) -> str:
    """The path of a problem as a spec's author reads it: ``jobs[0].inputs.train``, ``tags["aws:x"]``."""
    out = prefix
    for part in loc:
        if part == "[key]":
            continue
        if isinstance(part, int):
            out += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", part):
            out += f".{part}"
        else:
            out += f"[{json.dumps(part)}]"
    return out
