"""The demo summary's account of an idle stop: which waiting jobs took the instances it freed, and when."""

from __future__ import annotations

from typing import Any

from shareplane_cli.demo.summary import next_dispatch_from_the_queue


def record(name: str, *history: tuple[str, int]) -> dict[str, Any]:
    return {"jobName": name, "history": [{"status": s, "at": at} for s, at in history]}


def test_the_jobs_waiting_at_the_stop_and_dispatched_first_after_it_took_its_instances() -> None:
    stop = 1000.0  # seconds; history times are milliseconds
    records = [
        record("waited-then-ran", ("RUNNABLE", 10_000), ("SCHEDULED", 1_060_000)),
        record("requeued-then-ran", ("RUNNING", 10_000), ("RUNNABLE", 900_000), ("SCHEDULED", 1_060_000)),
        record("ran-later", ("RUNNABLE", 10_000), ("SCHEDULED", 2_000_000)),
        record("already-running", ("RUNNABLE", 10_000), ("SCHEDULED", 20_000), ("RUNNING", 30_000)),
        record("submitted-after", ("RUNNABLE", 1_010_000), ("SCHEDULED", 1_020_000)),
    ]
    assert next_dispatch_from_the_queue(records, stop) == (["requeued-then-ran", "waited-then-ran"], 60.0)


def test_nothing_took_the_instances_when_no_job_was_waiting() -> None:
    records = [record("already-running", ("RUNNABLE", 10_000), ("SCHEDULED", 20_000))]
    assert next_dispatch_from_the_queue(records, 1000.0) == ([], None)
