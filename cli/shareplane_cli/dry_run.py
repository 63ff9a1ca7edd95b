"""`shareplane submit --dry-run SPEC`: if these jobs were submitted now, when would they start.

Nothing is written anywhere: the spec is checked by the submit path's own rules (``parse_local_spec``),
the live twin is read (``twin.load_twin``, read-only calls), and the spec's jobs join the twin's queue
as the newest arrivals for the forecast.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from shareplane.domain.config.shares import SharesConfig
from shareplane.domain.explain.wait import explain_wait, requested_resources
from shareplane.domain.forecast.start_forecast import QueuedJob
from shareplane.domain.jobs.service_job_request import ServiceJobRequest
from shareplane.domain.submit.jobspec import MAX_SPEC_BYTES, parse_local_spec

from .aws import Target
from .errors import CliError, ExitCode
from .files import read_head
from .output import print_table, stdout_console
from .twin import Twin, forecast_json, inputs_text, load_twin

DRY_RUN_PREFIX = "(dry run) "


def _instances(request: ServiceJobRequest) -> int:
    payload = json.loads(request.service_request_payload or "{}")
    return int((payload.get("ResourceConfig") or {}).get("InstanceCount") or 1)


def dry_run_spec(
    spec: Path,
    config: SharesConfig,
    target: Target,
    *,
    team: str | None,
    samples: int,
    twin: Twin | None = None,
) -> dict[str, Any]:
    """The dry run's report: the spec's problems, or each job's forecast and what would hold it back."""
    if not 1 <= samples <= 10000:
        raise CliError(
            f"--samples {samples} is outside 1..10000", "pass e.g. --samples 100", ExitCode.BAD_INPUT
        )
    data = read_head(spec, MAX_SPEC_BYTES)  # one byte past the cap: parse_local_spec says too large
    checked = parse_local_spec(data, spec.name, config, team)
    report: dict[str, Any] = {"dryRun": True, "team": checked.team, "ok": checked.ok, "jobs": []}
    if not checked.ok:
        report["problems"] = checked.as_dict()
        return report
    twin = twin or load_twin(target, config)
    if twin.freshness is not None:
        report["inputs"] = twin.freshness.as_json()
    gpu_jobs = []
    requests: dict[str, ServiceJobRequest] = {}
    for job in checked.jobs:
        request = job.request
        if request is None:
            continue  # a checked spec maps every job to a request
        name = DRY_RUN_PREFIX + (job.name or f"job {job.index}")
        if request.job_queue != twin.queue and not request.job_queue.endswith(f"/{twin.queue}"):
            report["jobs"].append(
                {
                    "job": job.name,
                    "queue": request.job_queue,
                    "forecast": None,
                    "note": f"goes to {request.job_queue}, not the GPU queue {twin.queue}: no forecast",
                }
            )
            continue
        requests[name] = request
        gpu_jobs.append(
            (
                job.name,
                QueuedJob(
                    name,
                    request.share or "",
                    _instances(request),
                    request.scheduling_priority or 0,
                    twin.now,
                ),
            )
        )
    if gpu_jobs:
        report["jobs"] += _forecast_jobs(twin, gpu_jobs, requests, samples)
    return report


def _forecast_jobs(
    twin: Twin,
    gpu_jobs: list[tuple[str | None, QueuedJob]],
    requests: dict[str, ServiceJobRequest],
    samples: int,
) -> list[dict[str, Any]]:
    """Each GPU job of the spec as if queued now: its forecast and what would hold it back."""
    live = twin.with_jobs([queued for _, queued in gpu_jobs])
    forecasts = twin.forecast({q.name for _, q in gpu_jobs}, live=live, samples=samples)
    tiers, priorities = twin.tier_of_share(), twin.tier_priorities()
    out = []
    for original, queued in gpu_jobs:
        # The job's own type: what `why` moves a waiting job from (the same job on another type).
        requested = requested_resources(requests[queued.name])[0]
        explanation = explain_wait(
            live,
            queued.name,
            tier_of=tiers,
            tier_priorities=priorities,
            held_runs=twin.held_runs,
            instance_types=twin.instance_types_of(queued.share, requested),
        )
        out.append(
            {
                "job": original,
                "queue": twin.queue,
                "share": queued.share,
                "schedulingPriority": queued.priority,
                "instances": queued.instances,
                "heldBackBy": [{"code": f.code, "text": f.text} for f in explanation.held_back_by],
                "startSooner": [{"code": f.code, "text": f.text} for f in explanation.sooner],
                "forecast": forecast_json(forecasts[queued.name], twin.now),
            }
        )
    return out


def print_dry_run(report: Mapping[str, Any]) -> None:
    """The dry run for people: problems, or one row per job with its forecast wait."""
    console = stdout_console()
    if not report["ok"]:
        problems = report.get("problems") or {}
        problem_rows = [(p.get("path"), p.get("message"), p.get("fix")) for p in problems.get("problems", [])]
        for job in problems.get("jobs", []):
            problem_rows += [(p.get("path"), p.get("message"), p.get("fix")) for p in job.get("problems", [])]
        print_table(
            "dry run: the spec fails the submit rules", ["path", "problem", "fix"], problem_rows, console
        )
        return
    rows = []
    for job in report["jobs"]:
        f = job.get("forecast")
        if f is None:
            rows.append((job["job"], job.get("queue"), "-", "-", "-", job.get("note")))
            continue
        held = "; ".join(x["text"] for x in job["heldBackBy"])
        rows.append(
            (
                job["job"],
                job["share"],
                f["waitSecondsP10"],
                f["waitSecondsP50"],
                f["waitSecondsP90"],
                held[:90],
            )
        )
    print_table(
        "dry run (nothing submitted): predicted wait if submitted now, seconds",
        ["job", "share", "p10", "p50", "p90", "held back by"],
        rows,
        console,
    )
    if "inputs" in report:
        console.print(inputs_text(report["inputs"]), markup=False, highlight=False)
