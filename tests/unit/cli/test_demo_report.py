"""The demo report's data: usage steps a hover reads right, and the job bars of the records."""

from __future__ import annotations

import pytest
from shareplane_cli.demo.report import JobBar, job_bars, usage_steps
from shareplane_cli.demo.usage import UsageTracker


def tracker(timeline: list[tuple[float, dict[str, int]]]) -> UsageTracker:
    return UsageTracker(lambda: 0.0, {}, timeline=timeline)


def test_each_step_is_drawn_from_its_change_to_the_next_and_held_to_the_end() -> None:
    hours, counts = usage_steps(tracker([(0, {"a": 2}), (3600, {"a": 5, "b": 1}), (7200, {})]), "a", 3 * 3600)
    assert hours == [0, 1, 1, 2, 2, 3]
    assert counts == [2, 2, 5, 5, 0, 0]


def test_a_team_never_seen_is_zero_throughout() -> None:
    hours, counts = usage_steps(tracker([(0, {"a": 2}), (3600, {})]), "b", 7200)
    assert hours == [0, 1, 1, 2] and counts == [0, 0, 0, 0]


@pytest.mark.parametrize(
    ("history", "stopped", "expected"),
    [
        (
            [("RUNNABLE", 1000), ("STARTING", 61_000), ("RUNNING", 70_000)],
            3_661_000,
            [JobBar("j", "t", 60, 3660, "SUCCEEDED")],
        ),
        ([("RUNNABLE", 1000)], 5_000, []),
        ([("STARTING", 61_000)], None, []),
    ],
    ids=[
        "a job that ran spans first start to stop",
        "a job that never started has no bar",
        "a job still running has no bar",
    ],
)
def test_job_bars_span_first_start_to_stop(history, stopped, expected) -> None:
    record = {
        "jobName": "j",
        "team": "t",
        "shareIdentifier": None,
        "quotaShareName": None,
        "createdAt": 1000,
        "history": [{"status": s, "at": at} for s, at in history],
        "stoppedAt": stopped,
        "status": "SUCCEEDED",
    }
    assert job_bars([record]) == expected


def record(name: str, status: str, created: int, started: int, stopped: int, tier: str = "LOWPRI") -> dict:
    return {
        "jobName": name,
        "team": "ProdExp1",
        "tier": tier,
        "shareIdentifier": None,
        "quotaShareName": None,
        "createdAt": created,
        "history": [{"status": "RUNNING", "at": started}],
        "stoppedAt": stopped,
        "status": status,
    }


def test_a_reclaim_victim_and_an_idle_stop_are_marked_stopped_and_their_requeues_are_not() -> None:
    # GIVEN a victim terminated (FAILED) and requeued under its name, and a job the idle detector stopped
    records = [
        record("sweep", "FAILED", 0, 60_000, 600_000),
        record("stuck", "FAILED", 0, 60_000, 900_000),
        record("sweep", "SUCCEEDED", 600_000, 660_000, 3_600_000),
        record("launch", "SUCCEEDED", 300_000, 600_000, 1_200_000, tier="HIGHPRI"),
    ]
    # WHEN the timeline's bars are built with the summary's victims and idle stops
    bars = job_bars(records, reclaimed={"sweep"}, idled={"stuck"})
    # THEN the victim's stopped run and the idle stop say why they stopped; the requeued run does not
    assert [(b.name, b.stopped_by) for b in bars] == [
        ("sweep", "reclaim"),
        ("stuck", "idle"),
        ("launch", None),
        ("sweep", None),
    ]
    # and each bar knows its tier and when it was submitted, so its wait shows
    launch = bars[2]
    assert (launch.tier, launch.submitted, launch.start) == ("HIGHPRI", 300, 600)
