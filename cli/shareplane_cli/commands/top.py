"""`shareplane top`: a live view of each share's usage against its entitlement, and the queues' heads.

Usage is Batch's own count (GetJobQueueSnapshot's queueUtilization, per instance type, summed per
team as the rebalancer sums it: ``service.rebalance_shares.snapshot_in_use``); entitlements are the
config's. The heads are the first waiting jobs of each queue, in Batch's order where the snapshot lists
them, each with the live twin's forecast and the first reason `why` gives (the same twin, the same
``explain_wait``, the same forecast). Each queue is the kind Batch made it (``queue_policy``): the CPU
FIFO queue beside a quota-share GPU queue shows its heads and says why it has no usage rows. Read-only.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Group, RenderableType
from rich.live import Live
from rich.table import Table
from rich.text import Text
from shareplane.adapters.batch_policy import queue_usage
from shareplane.domain.config.shares import SchedulingMode, SharesConfig
from shareplane.domain.explain.durations import duration_text, start_text
from shareplane.domain.explain.wait import WAITING, WaitExplanation
from shareplane.domain.forecast.start_forecast import QueueKind, StartForecast
from shareplane.domain.instance_types.capacity import Capacity
from shareplane.domain.jobs.arns import queue_name
from shareplane.domain.shares.batch_shares import IdentifierUsage
from shareplane.service.rebalance_shares import snapshot_in_use

from ..aws import DEFAULT_TARGET, Target, account_options
from ..config_file import DEFAULT_CONFIG, config_option, load_config
from ..errors import CliError, ExitCode
from ..main import app
from ..output import Output, print_fitted, print_json, stdout_console
from ..twin import Freshness, Head, Twin, findings_json, forecast_json, load_twin, when

BAR_WIDTH = 20


def queues_of(config: SharesConfig, named: Sequence[str] | None) -> list[str]:
    """The queues to show: those named, else the GPU queue and the CPU FIFO queue (when configured)."""
    if named:
        return list(dict.fromkeys(named))
    return [config.gpu_queue_name(), *([config.queues.cpu_fifo] if config.queues.cpu_fifo else [])]


@dataclass(frozen=True)
class ShareUsage:
    """One team's instances of one type: held (Batch's count), entitled (config), waiting jobs' ask."""

    team: str
    share: str
    instance_type: str
    #: None: the snapshot listed only its top 20 identifiers and this team is not whole in it.
    held: int | None
    entitled: int
    waiting: int


@dataclass(frozen=True)
class QueueHead:
    """A waiting job at the front of a queue, with why's reasons and the live twin's forecast."""

    #: 1-based place among the heads shown.
    position: int
    head: Head
    explanation: WaitExplanation
    #: Seconds since submission, as of the twin's now.
    waited: float
    #: None: the twin forecasts no start for it.
    forecast: StartForecast | None
    #: The forecast's p10/p50/p90 starts as seconds from now (None: not within the horizon).
    starts_in: tuple[int | None, int | None, int | None] | None


@dataclass(frozen=True)
class QueueFrame:
    """One queue's part of a frame: capacity in use, usage against entitlement per team, heads."""

    queue: str
    kind: QueueKind
    capacity: int
    in_use: int
    waiting_jobs: int
    #: The snapshot may have cut its list of identifiers at the top 20.
    snapshot_cut: bool
    identifiers: tuple[IdentifierUsage, ...]
    shares: tuple[ShareUsage, ...]
    #: Why the queue has no usage rows (None: it has them).
    shares_skipped: str | None
    heads: tuple[QueueHead, ...]
    #: How fresh the twin's inputs are (None: a twin built by hand).
    freshness: Freshness | None = None


@dataclass(frozen=True)
class TopFrame:
    """Everything one refresh shows, read at ``at`` (epoch s)."""

    at: float
    queues: tuple[QueueFrame, ...]


def share_usage(twin: Twin, usage_by_team: Mapping[str, Capacity], cut: bool) -> list[ShareUsage]:
    """Per team and instance type: instances held (Batch), entitled (config) and asked for by waiting jobs."""
    config = twin.config
    waiting: dict[tuple[str, str], int] = {}
    for record in twin.records:
        if record.state.status not in WAITING:
            continue
        owner = config.team_for_share(record.state.share)
        instance_type = record.instance_type or next(iter(sorted(config.instance_types)), "")
        if owner:
            key = (owner, instance_type)
            waiting[key] = waiting.get(key, 0) + record.instances
    rows: list[ShareUsage] = []
    for name, team in sorted(config.teams.items()):
        held = usage_by_team.get(team.share)
        types = sorted(set(team.entitlement) | set(held.units if held else ()))
        for instance_type in types:
            count = None if held is None and cut else round(held.of(instance_type) if held else 0.0)
            entitled = team.entitlement.get(instance_type, 0)
            rows.append(
                ShareUsage(
                    name, team.share, instance_type, count, entitled, waiting.get((name, instance_type), 0)
                )
            )
    return rows


def queue_heads(twin: Twin, count: int, samples: int) -> list[QueueHead]:
    """The first ``count`` waiting jobs with their place, forecast (p10/p50/p90) and reasons."""
    heads = twin.heads(count)
    names = {h.record.name for h in heads}
    forecasts = twin.forecast(names, samples=samples) if names else {}
    out = []
    for n, head in enumerate(heads, start=1):
        record = head.record
        forecast = forecasts.get(record.name)
        waited = twin.now - (record.created_s or 0.0)
        starts = _starts_in(forecast, twin.now)
        out.append(QueueHead(n, head, twin.explain(record), waited, forecast, starts))
    return out


def _starts_in(
    forecast: StartForecast | None, now: float
) -> tuple[int | None, int | None, int | None] | None:
    """The forecast's p10/p50/p90 starts as seconds from now (None: not within the horizon)."""
    if forecast is None:
        return None
    low, median, high = (None if w is None else max(0, round(w)) for w in forecast.waits_from(now))
    return low, median, high


def queue_frame(
    target: Target, config: SharesConfig, queue: str, heads: int, samples: int, now: float
) -> QueueFrame:
    """One queue's part of a frame at ``now`` (epoch s): capacity in use, usage against entitlement per
    team, heads."""
    twin = load_twin(target, config, queue=queue, now=now)
    # The twin's own GetJobQueueSnapshot answer, read as the adapter reads it: one call a frame.
    usage = queue_usage(twin.snapshot)
    # The queue's own kind, not the config's mode: the CPU FIFO queue beside a quota-share GPU queue
    # has no quota shares (and a fair-share queue named with --queue lists its identifiers).
    mode = SchedulingMode.QUOTA if twin.policy.kind is QueueKind.QUOTA else SchedulingMode.FAIRSHARE
    by_team, cut = snapshot_in_use(usage, mode, config)
    skipped = no_share_usage(config, queue, twin.policy.kind)
    return QueueFrame(
        queue=queue,
        kind=twin.policy.kind,
        capacity=twin.policy.capacity,
        in_use=sum(r.instances for r in twin.live.running),
        waiting_jobs=len(twin.live.queued),
        snapshot_cut=cut,
        identifiers=usage.top(mode),
        shares=() if skipped else tuple(share_usage(twin, by_team, cut)),
        shares_skipped=skipped,
        heads=tuple(queue_heads(twin, heads, samples)),
        freshness=twin.freshness,
    )


def no_share_usage(config: SharesConfig, queue: str, kind: QueueKind) -> str | None:
    """Why a queue gets no usage-against-entitlement rows (None: it gets them)."""
    if kind is QueueKind.FIFO:
        return "a FIFO queue has no shares: its jobs start in submission order as capacity frees"
    if queue_name(queue) != queue_name(config.gpu_queue_name()):
        return f"the config's entitlements are the GPU queue's ({config.gpu_queue_name()}), not this one's"
    return None


def frame(target: Target, config: SharesConfig, queues: Sequence[str], heads: int, samples: int) -> TopFrame:
    """Everything one refresh shows, every queue dated by one reading of the cluster's clock."""
    now = target.now()
    return TopFrame(now, tuple(queue_frame(target, config, q, heads, samples, now) for q in queues))


def frame_json(top: TopFrame) -> dict[str, Any]:
    """A frame as JSON (`top -o json`)."""
    return {"at": when(top.at), "queues": [_queue_json(q) for q in top.queues]}


def _queue_json(q: QueueFrame) -> dict[str, Any]:
    return {
        "queue": q.queue,
        "kind": q.kind.value,
        "capacity": q.capacity,
        "inUse": q.in_use,
        "waitingJobs": q.waiting_jobs,
        "snapshotCut": q.snapshot_cut,
        "identifiers": {u.identifier: u.capacity.as_dict() for u in q.identifiers},
        "shares": [share_json(row) for row in q.shares],
        "sharesSkipped": q.shares_skipped,
        "heads": [head_json(head) for head in q.heads],
        "inputs": q.freshness.as_json() if q.freshness is not None else None,
    }


def share_json(row: ShareUsage) -> dict[str, Any]:
    """One usage row as JSON."""
    return {
        "team": row.team,
        "share": row.share,
        "instanceType": row.instance_type,
        "held": row.held,
        "entitled": row.entitled,
        "waiting": row.waiting,
    }


def head_json(q: QueueHead) -> dict[str, Any]:
    """One queue head as JSON."""
    record, explanation = q.head.record, q.explanation
    created = record.created_s or 0.0
    starts = None if q.starts_in is None else dict(zip(("p10", "p50", "p90"), q.starts_in, strict=True))
    return {
        "position": q.position,
        "placedBy": q.head.placed_by,
        "atPositionSince": when(q.head.at_position_since),
        "job": record.name,
        "jobArn": record.job_arn,
        "share": explanation.share or None,  # None: a FIFO queue's job has no share
        "tier": record.tier.value if record.tier else None,
        "instances": explanation.instances,
        "waitedSeconds": round(q.waited),
        "forecast": forecast_json(q.forecast, created) if q.forecast is not None else None,
        "startsInSeconds": starts,
        "storedPrediction": record.prediction.as_record() if record.prediction else None,
        "heldBackBy": findings_json(explanation.held_back_by),
    }


def _bar(held: float | None, entitled: int) -> Text:
    if held is None:
        return Text("? (not in the snapshot's top 20)", style="dim")
    scale = max(entitled, held, 1)
    own = round(BAR_WIDTH * min(held, entitled) / scale)
    over = round(BAR_WIDTH * max(held - entitled, 0) / scale)
    idle = max(0, round(BAR_WIDTH * entitled / scale) - own)
    share = f" {held / entitled:.0%}" if entitled else ""
    return Text.assemble(("█" * own, "green"), ("█" * over, "yellow"), ("░" * idle, "dim"), share)


def _starts_text(starts: tuple[int | None, int | None, int | None] | None) -> str:
    if starts is None or starts[1] is None:
        return "beyond the horizon" if starts else "-"
    return start_text(*starts) or "beyond the horizon"


def render(top: TopFrame) -> RenderableType:
    """A frame for people: per queue, a usage table and a heads table."""
    parts: list[RenderableType] = [Text(f"shareplane top  {when(top.at)}", style="bold")]
    for q in top.queues:
        parts.append(
            Text(
                f"{q.queue} ({q.kind.value.lower()}): {q.in_use}/{q.capacity} instances in use, "
                f"{q.waiting_jobs} jobs waiting"
            )
        )
        if q.shares:
            parts.append(_usage_table(q.shares))
        elif q.shares_skipped:
            parts.append(Text(f"usage vs entitlement: none ({q.shares_skipped})", style="dim"))
        parts.append(_heads_table(q.heads))
        if q.freshness is not None:
            parts.append(Text(q.freshness.text(), style="dim"))
    parts.append(
        Text(
            "* placed by the twin: past the jobs GetJobQueueSnapshot lists. Predicted start: from now, the "
            "p50 of the live twin's forecast and its p10-p90 range (as `shareplane why`).",
            style="dim",
        )
    )
    return Group(*parts)


def _usage_table(rows: Sequence[ShareUsage]) -> Table:
    usage = Table(title="usage vs entitlement (instances)", title_justify="left")
    for column in ("team", "type", "held", "entitled", "", "waiting"):
        usage.add_column(column, justify="left" if column in ("team", "type", "") else "right")
    for row in rows:
        usage.add_row(
            row.team,
            row.instance_type,
            "?" if row.held is None else str(row.held),
            str(row.entitled),
            _bar(row.held, row.entitled),
            str(row.waiting),
        )
    return usage


def _heads_table(queue_heads: Sequence[QueueHead]) -> Table:
    heads = Table(title="queue heads", title_justify="left")
    for column in ("#", "job", "share", "inst", "waited", "predicted start", "held back by"):
        heads.add_column(column, justify="right" if column in ("#", "inst", "waited") else "left")
    for q in queue_heads:
        reason = "; ".join(f.text for f in q.explanation.held_back_by)  # all of them, in why's order
        heads.add_row(
            str(q.position) + ("" if q.head.placed_by == "GetJobQueueSnapshot" else "*"),
            q.head.record.name,
            q.explanation.share or "-",
            str(q.explanation.instances),
            duration_text(q.waited),
            _starts_text(q.starts_in),
            reason,
        )
    if not queue_heads:
        heads.add_row("", "(nothing waiting)", "", "", "", "", "")
    return heads


@app.command("top")
@account_options
def top_command(
    interval: Annotated[float, typer.Option(help="Seconds between refreshes.")] = 5.0,
    once: Annotated[bool, typer.Option("--once", help="Print one frame and exit.")] = False,
    heads: Annotated[int, typer.Option(help="Waiting jobs shown per queue.")] = 5,
    samples: Annotated[int, typer.Option(help="Forward runs of the twin per refresh.")] = 50,
    queue: Annotated[
        list[str] | None,
        typer.Option(help="A job queue to show (repeatable; default: the config's GPU and CPU queues)."),
    ] = None,
    config_path: Annotated[Path, config_option("The shares config.")] = DEFAULT_CONFIG,
    output: Annotated[
        Output, typer.Option("--output", "-o", help="table (live), or json (one frame).")
    ] = Output.TABLE,
    target: Target = DEFAULT_TARGET,
) -> None:
    """Live: each team's instances against entitlement; each queue's first waiting jobs, when they start.

    Each waiting job shows its predicted start and what holds it back; Ctrl-C stops the view.
    """
    if interval < 0.5:
        raise CliError(f"--interval {interval} is below 0.5 s", "pass e.g. --interval 5", ExitCode.BAD_INPUT)
    if not 1 <= heads <= 100:
        raise CliError(f"--heads {heads} is outside 1..100", "pass e.g. --heads 5", ExitCode.BAD_INPUT)
    if not 1 <= samples <= 10000:
        raise CliError(
            f"--samples {samples} is outside 1..10000", "pass e.g. --samples 50", ExitCode.BAD_INPUT
        )
    config = load_config(config_path)
    # The stack's outputs are read once, not on every refresh.
    target = replace(target, table=target.jobs_table())
    queues = queues_of(config, queue)

    def current() -> TopFrame:
        return frame(target, config, queues, heads, samples)

    if output is Output.JSON:
        print_json(frame_json(current()))
        return
    console = stdout_console()
    if once:
        print_fitted(render(current()), console)
        return
    with Live(render(current()), console=console, refresh_per_second=4, screen=False) as live:
        try:
            while True:
                time.sleep(interval)
                live.update(render(current()))
        except KeyboardInterrupt:
            pass
