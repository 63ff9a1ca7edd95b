"""`shareplane top`'s parts on a twin built from records: the heads' order, usage rows, reasons."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from rich.console import Console
from shareplane.domain.config.shares import SchedulingMode
from shareplane.domain.explain.record import JobRecord
from shareplane.domain.explain.wait import QueuePolicy, dispatch_order, forecast_position, live_from_records
from shareplane.domain.forecast.start_forecast import QueueKind
from shareplane.domain.instance_types.capacity import Capacity
from shareplane.domain.shares.batch_shares import IdentifierUsage, QueueUsage
from shareplane.service.rebalance_shares import snapshot_in_use
from shareplane_cli.commands.top import (
    QueueFrame,
    ShareUsage,
    TopFrame,
    head_json,
    queue_heads,
    render,
    share_json,
    share_usage,
)
from shareplane_cli.twin import Twin, in_batchs_order, when

from tests.integration.cli.test_why_cli import ARN, CONFIG, NOW, QUEUE, REPO, record


@pytest.fixture
def twin() -> Twin:
    records = [
        record("r1", "ProdExp1", "RUNNING", 3, NOW - 5000, held=NOW - 4000),
        record("r2", "ProdExp2", "RUNNING", 1, NOW - 3000, held=NOW - 2500),
        record("w1", "ProdExp2", "RUNNABLE", 2, NOW - 1000),
        record("w2", "ProdExp2", "RUNNABLE", 1, NOW - 500),
        record("w3", "ProdExp1", "RUNNABLE", 1, NOW - 800),
        *(
            record(
                f"old{n}", "ProdExp1", "SUCCEEDED", 1, NOW - 9000 + n, held=NOW - 9000 + n, ended=NOW - 6000
            )
            for n in range(20)
        ),
    ]
    records = [replace(r, state=replace(r.state, instance_type="ml.p4d.24xlarge")) for r in records]
    policy = QueuePolicy(
        QueueKind.FAIRSHARE, 4, weights={"ProdExp1": 1.0, "ProdExp2": 1.0}, decay_seconds=3600
    )
    live, history = live_from_records(records, policy, NOW)
    # Batch lists w2 first (its own order) and nothing else; the twin places the rest.
    snapshot = {
        "frontOfQueue": {"jobs": [{"jobArn": ARN + "w2", "earliestTimeAtPosition": int((NOW - 400) * 1000)}]}
    }
    return Twin(QUEUE, NOW, records, snapshot, policy, live, history, CONFIG)


def test_heads_follow_batchs_order_first_then_the_twins_dispatch_order(twin: Twin) -> None:
    heads = twin.heads(10)
    names = [h.record.name for h in heads]
    rest = [j.name for j in dispatch_order(twin.live) if j.name != "w2"]
    assert names == ["w2", *rest]
    assert [h.placed_by for h in heads] == ["GetJobQueueSnapshot", "twin", "twin"]
    assert heads[0].at_position_since == NOW - 400
    assert twin.heads(1) == heads[:1]
    # dispatch_order is the ranking forecast_position (why's twinPosition) reads
    for n, job in enumerate(dispatch_order(twin.live)):
        assert forecast_position(twin.live, job.name) == n


def test_each_head_has_a_forecast_from_now_and_why_reasons(twin: Twin) -> None:
    heads = [head_json(head) for head in queue_heads(twin, 3, samples=30)]
    assert [h["position"] for h in heads] == [1, 2, 3]
    for head in heads:
        starts = head["startsInSeconds"]
        assert starts["p50"] is not None and starts["p10"] <= starts["p50"]
        # start from now = wait from submission - waited so far
        assert abs(head["forecast"]["waitSecondsP50"] - head["waitedSeconds"] - starts["p50"]) <= 1
        assert "capacity_held" in [f["code"] for f in head["heldBackBy"]]  # 4 of 4 instances held
        assert head["heldBackBy"] == [
            {"code": f.code, "text": f.text}
            for f in twin.explain(head_record(twin, head["job"])).held_back_by
        ]


def head_record(twin: Twin, name: str) -> JobRecord:
    return next(r for r in twin.records if r.name == name)


def test_usage_rows_put_batchs_count_beside_the_entitlement_and_the_waiting_demand(twin: Twin) -> None:
    usage = QueueUsage(
        fairshare=(
            IdentifierUsage("ProdExp1", Capacity({"NUM_INSTANCES": 3})),
            IdentifierUsage("ProdExp1HIGHPRI", Capacity({"NUM_INSTANCES": 2})),
            IdentifierUsage("ProdExp2", Capacity({"NUM_INSTANCES": 1})),
        )
    )
    by_team, cut = snapshot_in_use(usage, SchedulingMode.FAIRSHARE, CONFIG)
    rows = {r["team"]: r for r in map(share_json, share_usage(twin, by_team, cut))}
    # a team's identifiers (its HIGHPRI one too) count against its one entitlement
    assert (rows["ProdExp1"]["held"], rows["ProdExp1"]["entitled"], rows["ProdExp1"]["waiting"]) == (5, 60, 1)
    assert (rows["ProdExp2"]["held"], rows["ProdExp2"]["entitled"], rows["ProdExp2"]["waiting"]) == (1, 40, 3)


def test_a_frame_renders_every_head_and_row(twin: Twin) -> None:
    frame = TopFrame(
        at=NOW,
        queues=(
            QueueFrame(
                queue=QUEUE,
                kind=QueueKind.FAIRSHARE,
                capacity=4,
                in_use=4,
                waiting_jobs=3,
                snapshot_cut=True,
                identifiers=(),
                shares=(
                    ShareUsage("ProdExp1", "ProdExp1", "ml.p4d.24xlarge", held=3, entitled=60, waiting=1),
                    ShareUsage("ProdExp2", "ProdExp2", "ml.p4d.24xlarge", held=None, entitled=40, waiting=3),
                ),
                shares_skipped=None,
                heads=tuple(queue_heads(twin, 3, samples=10)),
            ),
        ),
    )
    console = Console(width=250, record=True)
    console.print(render(frame))
    text = console.export_text()
    assert all(name in text for name in ("w1", "w2", "w3"))
    assert "not in the snapshot's top 20" in text  # a count Batch did not give is not shown as 0
    assert "4/4 instances in use, 3 jobs waiting" in text


def test_jobs_submitted_in_the_same_millisecond_rank_in_batchs_order() -> None:
    # GIVEN two jobs of one drop (same createdAt: the table can order them only by id) and Batch's snapshot
    records = [
        record("r1", "ProdExp1", "RUNNING", 4, NOW - 5000, held=NOW - 4000),
        record("eval-a", "ProdExp2", "RUNNABLE", 2, NOW - 1000),
        record("eval-b", "ProdExp2", "RUNNABLE", 2, NOW - 1000),
        record("later", "ProdExp2", "RUNNABLE", 1, NOW - 10),
    ]
    policy = QueuePolicy(QueueKind.FAIRSHARE, 4, weights={"ProdExp2": 1.0}, decay_seconds=3600)
    live, _ = live_from_records(records, policy, NOW)
    assert [j.name for j in dispatch_order(live)] == ["eval-a", "eval-b", "later"]
    snapshot = {"frontOfQueue": {"jobs": [{"jobArn": ARN + "eval-b"}, {"jobArn": ARN + "eval-a"}]}}
    # WHEN the twin takes Batch's order for the jobs it lists
    ranked = in_batchs_order(live, snapshot, records)
    # THEN they swap between themselves, the job past the snapshot keeps its place, and why agrees
    assert [j.name for j in dispatch_order(ranked)] == ["eval-b", "eval-a", "later"]
    assert in_batchs_order(ranked, snapshot, records) is ranked  # already in Batch's order: unchanged
    assert {j.name: j.order for j in live.queued}["later"] == {j.name: j.order for j in ranked.queued}[
        "later"
    ]


def test_the_live_view_refreshes_every_interval_until_ctrl_c(
    twin: Twin, monkeypatch: pytest.MonkeyPatch, aws_credentials: None
) -> None:
    import shareplane_cli.commands.top as top
    from shareplane_cli.main import app
    from typer.testing import CliRunner

    frames: list[tuple[str, ...]] = []
    sleeps: list[float] = []

    def frame(target: Any, config: Any, queues: tuple[str, ...], *rest: Any) -> TopFrame:
        frames.append(tuple(queues))
        return TopFrame(at=NOW + len(frames), queues=())

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        if len(sleeps) == 2:
            raise KeyboardInterrupt  # the user's Ctrl-C during the second wait

    monkeypatch.setattr(top, "frame", frame)
    monkeypatch.setattr(top.time, "sleep", sleep)
    result = CliRunner().invoke(
        app,
        [
            "top",
            "--table",
            "jobs",
            "--interval",
            "2",
            "--queue",
            QUEUE,
            "--config",
            str(REPO / "config" / "shares.yaml"),
        ],
    )
    assert result.exit_code == 0, result.output
    # the first frame, one refresh after the first interval, and a clean stop in the second
    assert frames == [(QUEUE,), (QUEUE,)] and sleeps == [2.0, 2.0]
    assert f"shareplane top  {when(NOW + 2)}" in result.output  # frame 2
