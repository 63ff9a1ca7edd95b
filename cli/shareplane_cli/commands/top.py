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
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.table import Table
from rich.text import Text
from shareplane.adapters.batch_policy import queue_usage
from shareplane.domain.config.shares import SchedulingMode, SharesConfig
from shareplane.domain.explain.wait import WAITING
from shareplane.domain.forecast.start_forecast import QueueKind, StartForecast
from shareplane.domain.jobs.arns import queue_name
from shareplane.service.rebalance_shares import snapshot_in_use

from ..aws import DEFAULT_TARGET, Target, account_options
from ..config_file import load_config
from ..errors import CliError, ExitCode
from ..main import app
from ..output import Output, print_json
from ..twin import Twin, forecast_json, load_twin, when

BAR_WIDTH = 20


def queues_of(config: SharesConfig, named: Sequence[str] | None) -> list[str]:
    """The queues to show: those named, else the GPU queue and the CPU FIFO queue (when configured)."""
    if named:
        return list(dict.fromkeys(named))
    return [config.gpu_queue_name(), *([config.queues.cpu_fifo] if config.queues.cpu_fifo else [])]


def share_usage(twin: Twin, usage_by_team: Mapping[str, Any], cut: bool) -> list[dict[str, Any]]:
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
    rows: list[dict[str, Any]] = []
    for name, team in sorted(config.teams.items()):
        held = usage_by_team.get(team.share)
        types = sorted(set(team.entitlement) | set(held.units if held else ()))
        for instance_type in types:
            rows.append(
                {
                    "team": name,
                    "share": team.share,
                    "instanceType": instance_type,
                    # None: the snapshot listed only its top 20 identifiers and this team is not whole in it.
                    "held": None if held is None and cut else round(held.of(instance_type) if held else 0.0),
                    "entitled": team.entitlement.get(instance_type, 0),
                    "waiting": waiting.get((name, instance_type), 0),
                }
            )
    return rows


def queue_heads(twin: Twin, count: int, samples: int) -> list[dict[str, Any]]:
    """The first ``count`` waiting jobs with their place, forecast (p10/p50/p90) and reasons."""
    heads = twin.heads(count)
    names = {h.record.name for h in heads}
    forecasts = twin.forecast(names, samples=samples) if names else {}
    out = []
    for n, head in enumerate(heads, start=1):
        record = head.record
        name = record.name
        created = record.created_s or 0.0
        explanation = twin.explain(record)
        out.append(
            {
                "position": n,
                "placedBy": head.placed_by,
                "atPositionSince": when(head.at_position_since),
                "job": name,
                "jobArn": record.job_arn,
                "share": explanation.share or None,  # None: a FIFO queue's job has no share
                "tier": record.tier.value if record.tier else None,
                "instances": explanation.instances,
                "waitedSeconds": round(twin.now - created),
                "forecast": forecast_json(forecasts[name], created) if name in forecasts else None,
                "startsInSeconds": _starts_in(forecasts.get(name), twin.now),
                "storedPrediction": record.prediction.as_record() if record.prediction else None,
                "heldBackBy": [{"code": f.code, "text": f.text} for f in explanation.held_back_by],
            }
        )
    return out


def _starts_in(forecast: StartForecast | None, now: float) -> dict[str, int | None] | None:
    """The forecast's p10/p50/p90 starts as seconds from now (None: not within the horizon)."""
    if forecast is None:
        return None
    waits = forecast.waits_from(now)
    return {
        q: None if w is None else max(0, round(w)) for q, w in zip(("p10", "p50", "p90"), waits, strict=True)
    }


def queue_frame(target: Target, config: SharesConfig, queue: str, heads: int, samples: int) -> dict[str, Any]:
    """One queue's part of a frame: capacity in use, usage against entitlement per team, heads."""
    twin = load_twin(target, config, queue=queue)
    # The twin's own GetJobQueueSnapshot answer, read as the adapter reads it: one call a frame.
    usage = queue_usage(twin.snapshot)
    # The queue's own kind, not the config's mode: the CPU FIFO queue beside a quota-share GPU queue
    # has no quota shares (and a fair-share queue named with --queue lists its identifiers).
    mode = SchedulingMode.QUOTA if twin.policy.kind is QueueKind.QUOTA else SchedulingMode.FAIRSHARE
    by_team, cut = snapshot_in_use(usage, mode, config)
    in_use = sum(r.instances for r in twin.live.running)
    skipped = no_share_usage(config, queue, twin.policy.kind)
    return {
        "queue": queue,
        "kind": twin.policy.kind.value,
        "capacity": twin.policy.capacity,
        "inUse": in_use,
        "waitingJobs": len(twin.live.queued),
        "snapshotCut": cut,
        "identifiers": {u.identifier: u.capacity.as_dict() for u in usage.top(mode)},
        "shares": [] if skipped else share_usage(twin, by_team, cut),
        "sharesSkipped": skipped,
        "heads": queue_heads(twin, heads, samples),
    }


def no_share_usage(config: SharesConfig, queue: str, kind: QueueKind) -> str | None:
    """Why a queue gets no usage-against-entitlement rows (None: it gets them)."""
    if kind is QueueKind.FIFO:
        return "a FIFO queue has no shares: its jobs start in submission order as capacity frees"
    if queue_name(queue) != queue_name(config.gpu_queue_name()):
        return f"the config's entitlements are the GPU queue's ({config.gpu_queue_name()}), not this one's"
    return None


def frame(
    target: Target, config: SharesConfig, queues: Sequence[str], heads: int, samples: int
) -> dict[str, Any]:
    """Everything one refresh shows, as JSON."""
    return {
        "at": when(time.time()),
        "queues": [queue_frame(target, config, q, heads, samples) for q in queues],
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


def _starts_text(starts: Mapping[str, int | None] | None) -> str:
    if not starts or starts["p50"] is None:
        return "beyond the horizon" if starts else "-"
    minutes = [starts[q] for q in ("p10", "p50", "p90")]
    return " / ".join("later" if m is None else f"{m // 60}m" for m in minutes)


def render(data: Mapping[str, Any]) -> RenderableType:
    """A frame for people: per queue, a usage table and a heads table."""
    parts: list[RenderableType] = [Text(f"shareplane top  {data['at']}", style="bold")]
    for q in data["queues"]:
        parts.append(
            Text(
                f"{q['queue']} ({q['kind'].lower()}): {q['inUse']}/{q['capacity']} instances in use, "
                f"{q['waitingJobs']} jobs waiting"
            )
        )
        if q["shares"]:
            usage = Table(title="usage vs entitlement (instances)", title_justify="left")
            for column in ("team", "type", "held", "entitled", "", "waiting"):
                usage.add_column(column, justify="left" if column in ("team", "type", "") else "right")
            for s in q["shares"]:
                usage.add_row(
                    s["team"],
                    s["instanceType"],
                    "?" if s["held"] is None else str(s["held"]),
                    str(s["entitled"]),
                    _bar(s["held"], s["entitled"]),
                    str(s["waiting"]),
                )
            parts.append(usage)
        elif q.get("sharesSkipped"):
            parts.append(Text(f"usage vs entitlement: none ({q['sharesSkipped']})", style="dim"))
        heads = Table(title="queue heads", title_justify="left")
        for column in ("#", "job", "share", "inst", "waited", "start in p10/p50/p90", "held back by"):
            heads.add_column(column, justify="right" if column in ("#", "inst", "waited") else "left")
        for h in q["heads"]:
            reason = "; ".join(f["text"] for f in h["heldBackBy"])  # all of them, in why's order
            heads.add_row(
                str(h["position"]) + ("" if h["placedBy"] == "GetJobQueueSnapshot" else "*"),
                h["job"],
                h["share"] or "-",
                str(h["instances"]),
                f"{h['waitedSeconds'] // 60}m",
                _starts_text(h["startsInSeconds"]),
                reason,
            )
        if not q["heads"]:
            heads.add_row("", "(nothing waiting)", "", "", "", "", "")
        parts.append(heads)
    parts.append(
        Text(
            "* placed by the twin: past the jobs GetJobQueueSnapshot lists. Start in: minutes from now, "
            "p10 / p50 / p90 of the live twin's forecast (as `shareplane why`).",
            style="dim",
        )
    )
    return Group(*parts)


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
    config_path: Annotated[Path, typer.Option("--config", help="The shares config.")] = Path(
        "config/shares.yaml"
    ),
    output: Annotated[
        Output, typer.Option("--output", "-o", help="table (live), or json (one frame).")
    ] = Output.TABLE,
    target: Target = DEFAULT_TARGET,
) -> None:
    """Live: each team's instances against its entitlement, and each queue's first waiting jobs with
    their predicted start and what holds them back (Ctrl-C stops it)."""
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

    def current() -> dict[str, Any]:
        return frame(target, config, queues, heads, samples)

    if output is Output.JSON:
        print_json(current())
        return
    console = Console()
    if once:
        console.print(render(current()))
        return
    with Live(render(current()), console=console, refresh_per_second=4, screen=False) as live:
        try:
            while True:
                time.sleep(interval)
                live.update(render(current()))
        except KeyboardInterrupt:
            pass
