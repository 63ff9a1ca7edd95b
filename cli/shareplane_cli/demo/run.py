"""The live demo: the workload submitted to the emulated cluster, every event through the real handlers."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
from gpusim import Faults
from gpusim.engine import SteppedClock
from shareplane.bootstrap import Root
from shareplane.domain.config.shares import SchedulingMode, SharesConfig
from shareplane.domain.cost.billing import AttemptCost
from shareplane.domain.explain.record_json import record_json
from shareplane.domain.idle.record import IdleRecord
from shareplane.domain.reclaim.record import ReclaimRecord
from shareplane.service.queries import job_records

from .. import queue_template
from ..local.loop import StackLoop
from ..local.noise_log import NoiseLog
from ..local.runner import FunctionRunner
from ..local.stack import LocalStack, StackSpec
from .usage import UsageTracker
from .workload import DemoJob, scripted_outcomes, submit_request

#: Virtual seconds per wall second: the script's ~4 hours of cluster time in under a minute.
DEMO_SPEED = 400.0
#: A wall-clock bound, so a stuck run fails with a reason instead of hanging. The emulator's clock is
#: held while the handlers work, so the run takes the script's time at DEMO_SPEED plus handler time.
WALL_LIMIT_SECONDS = 900.0


@dataclass(frozen=True)
class LiveRun:
    """What the live run leaves behind: the usage timeline and the job records from DynamoDB."""

    tracker: UsageTracker
    records: list[dict[str, Any]]
    submitted_at: dict[str, float]
    end: float
    invocations: int
    #: Reclaim decisions as audited in the jobs table (who waited, the victims, what each lost).
    reclaims: list[ReclaimRecord]
    #: Each training job's cost as record_state recorded it (its billable time x instances x price).
    costs: list[AttemptCost] = field(default_factory=list)
    #: The idle detector's decisions that acted (warnings, alerts, stops), as audited in the jobs table.
    idle: list[IdleRecord] = field(default_factory=list)


def template_for(
    mode: SchedulingMode, config: SharesConfig, template: Path, workdir: Path, *, stem: str = "demo"
) -> tuple[Path, SharesConfig]:
    """template.yaml as is when the mode matches the config, else re-rendered for the other mode
    (as ``.<stem>-<mode>.template.yaml`` beside it: callers that may run at once pass their own stem)."""
    if mode == config.mode:
        return template, config
    other = config.model_copy(update={"mode": mode})
    raw = other.model_dump(mode="json", exclude_none=True)
    text = queue_template.apply(
        template.read_text(), queue_template.render(other), queue_template.shares_config_json(raw)
    )
    # Beside the original: the template's CodeUri paths are relative to it.
    path = template.parent / f".{stem}-{mode.value}.template.yaml"
    path.write_text(text)
    return path, other


def run_live(
    jobs: list[DemoJob],
    config: SharesConfig,
    mode: SchedulingMode,
    template: Path,
    speed: float = DEMO_SPEED,
    on_tick: Callable[[UsageTracker, float], None] = lambda _t, _now: None,
    log: NoiseLog | None = None,
) -> LiveRun:
    """Start a fresh local stack, play the script on its virtual clock, return what happened (each
    schedule tick and handler invocation written to ``log`` when given)."""
    with tempfile.TemporaryDirectory() as workdir:
        path, config = template_for(mode, config, template, Path(workdir))
        try:
            stack = LocalStack(
                StackSpec(path),
                speed=speed,
                faults=Faults(scripted=scripted_outcomes(jobs)),
                clock=SteppedClock(),
            )
            with stack:
                return _play(stack, jobs, config, on_tick, log)
        finally:
            if path != template:
                path.unlink(missing_ok=True)


def stack_root(stack: LocalStack) -> Root:
    """The composition root the CLI's commands use, bound to this stack: its table, Batch on the emulator."""
    env = stack.environment()
    session = boto3.session.Session(
        aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
        region_name=env["AWS_DEFAULT_REGION"],
    )
    environ = {**env, "TABLE_NAME": stack.outputs["JobsTableName"]}
    return Root(environ, endpoint_url=env["AWS_ENDPOINT_URL"], session=session)


def _play(
    stack: LocalStack,
    jobs: list[DemoJob],
    config: SharesConfig,
    on_tick: Callable[[UsageTracker, float], None],
    log: NoiseLog | None,
) -> LiveRun:
    emulator = stack.running_emulator()
    start = emulator.virtual_now()
    tracker = UsageTracker(
        lambda: emulator.engine.now - start,
        {j.name: j.instances for j in jobs},
        lambda share: config.team_for_share(share) or share,
    )
    emulator.model.subscribe(tracker)
    root = stack_root(stack)
    batch = root.batch
    runner = FunctionRunner(stack, on_invocation=log.invocation if log else None)
    loop = StackLoop(stack, runner, report=log.tick if log else lambda _message: None)
    pending = sorted(jobs, key=lambda j: j.submit_minute)
    submitted_at: dict[str, float] = {}
    wall_deadline = time.monotonic() + WALL_LIMIT_SECONDS
    while True:
        now = emulator.virtual_now() - start
        while pending and pending[0].submit_minute * 60 <= now:
            job = pending.pop(0)
            batch.submit_service_job(**submit_request(job, config))
            submitted_at[job.name] = now
        loop.step(wake_at=start + pending[0].submit_minute * 60 if pending else None)
        on_tick(tracker, now)
        if not pending and tracker.all_final(len(jobs)):
            runner.drain()  # the last job events through the handlers; schedules stop here
            break
        if time.monotonic() > wall_deadline:
            raise TimeoutError(f"the demo did not finish within {WALL_LIMIT_SECONDS:.0f} s of wall time")
    end = max(t for t, _ in tracker.timeline)
    # The report and its summary read the records in the form `jobs -o json` prints (the report's data).
    records = [dict(record_json(r)) for r in job_records(root.store, config=config)]
    reclaims = root.reclaim_ledger.reclaims(since=0)
    return LiveRun(
        tracker,
        records,
        submitted_at,
        end,
        len(runner.invocations),
        reclaims,
        root.store.costs(),
        root.idle_ledger.since(0),
    )
