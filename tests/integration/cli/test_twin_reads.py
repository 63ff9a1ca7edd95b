"""What `why`, `top` and `submit --dry-run` read: the watch's bounded twin, never every job of the table,
and how fresh those inputs are."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from shareplane.domain.jobs.lifecycle import HistoryEntry, JobState, JobStatus, ObservationKind
from shareplane.service.start_predictions import ForecastLimits, ForecastPorts
from shareplane_cli.commands import top
from shareplane_cli.commands.top import TopFrame, frame_json, queue_frame, render
from shareplane_cli.commands.why import find_record, print_why, why_json, why_report
from shareplane_cli.config_file import load_config
from shareplane_cli.dry_run import dry_run_spec, print_dry_run
from shareplane_cli.twin import Twin, read_twin

from tests.fakes.job_store import FakeJobStore
from tests.fakes.shares_batch import TWO_TEAM_POLICY, FakeSharesBatch

REPO = Path(__file__).resolve().parents[3]
CONFIG = load_config(REPO / "config" / "shares.yaml")
QUEUE = "search-p4d-queue"
NOW = 1_773_720_000.0
ARN = "arn:aws:batch:us-east-1:111122223333:service-job/"
POLICY = TWO_TEAM_POLICY
#: Finished jobs read whole (FORECAST_HISTORY_JOBS), fewer than the table holds.
CAP = 3


@dataclass
class NoScanStore(FakeJobStore):
    """The jobs table, failing a read of every job (a scan) unless one is allowed."""

    scans: int = 0
    allow_scan: bool = False

    def jobs(self, status: str | None = None) -> list[JobState]:
        if status is None:
            self.scans += 1
            assert self.allow_scan, "the twin read every job of the table"
        return super().jobs(status)


def put(store: FakeJobStore, name: str, status: JobStatus, created: float, *, share: str = "ProdExp2",
        held: float | None = None, ended: float | None = None) -> None:  # fmt: skip
    def entry(at: float, entry_status: JobStatus, n: int) -> HistoryEntry:
        at_ms = int(at * 1000)
        return HistoryEntry(f"{at_ms:013d}#{n}", entry_status, at_ms, None, ObservationKind.STATE_CHANGE, "")

    state = JobState(
        job_arn=ARN + f"id-{name}",  # a service job's ARN ends in its id
        status=status,
        seq="a",
        job_id=f"id-{name}",
        job_name=name,
        job_queue=QUEUE,
        share_identifier=share,
        scheduling_priority=50,
        created_at=int(created * 1000),
        stopped_at=int(ended * 1000) if ended is not None else None,
    )
    history = [entry(created, JobStatus.SUBMITTED, 0), entry(created, JobStatus.RUNNABLE, 1)]
    if held is not None:
        history += [entry(held, JobStatus.SCHEDULED, 2), entry(held + 60, JobStatus.RUNNING, 3)]
    if ended is not None:
        history.append(entry(ended, JobStatus.SUCCEEDED, 4))
    store.put_states(state)
    store.histories[state.job_arn] = {e.key: e for e in history}


@pytest.fixture
def store() -> NoScanStore:
    table = NoScanStore()
    # Eight finished jobs, an hour apart, the newest ended ten minutes ago: the twin reads CAP of them.
    for n in range(8):
        created = NOW - 86400 + n * 3600
        put(table, f"done{n}", JobStatus.SUCCEEDED, created, held=created + 60, ended=created + 1800)
    put(table, "run1", JobStatus.RUNNING, NOW - 3000, share="ProdExp1", held=NOW - 2900)
    put(table, "wait1", JobStatus.RUNNABLE, NOW - 600)
    return table


def twin_of(store: FakeJobStore) -> Twin:
    ports = ForecastPorts(
        store=store,
        recent=store,
        batch=FakeSharesBatch(policy=POLICY, capacity=1),
        config=CONFIG,
        queue=QUEUE,
        limits=ForecastLimits(history_jobs=CAP),
    )
    return read_twin(ports, lambda _queue: {"frontOfQueue": {"jobs": [{"jobArn": ARN + "id-wait1"}]}}, NOW)


def test_the_twin_reads_the_active_jobs_and_the_newest_finished_ones_not_the_table(store) -> None:
    twin = twin_of(store)
    assert store.scans == 0
    names = {r.name for r in twin.records}
    assert names == {"run1", "wait1", "done7", "done6", "done5"}
    assert [j.name for j in twin.live.queued] == ["wait1"]  # named as `why` shows them, not by ARN
    # The finished jobs the twin did not read whole still arrive, from the arrival counts.
    assert len(twin.history.arrivals) >= 8


def test_the_twin_says_how_fresh_its_inputs_are(store) -> None:
    freshness = twin_of(store).freshness
    assert freshness is not None
    inputs = freshness.as_json()
    assert inputs["finishedJobsRead"] == CAP and inputs["finishedJobsCap"] == CAP
    assert inputs["newestRecordAgeSeconds"] == 600  # wait1's submission, ten minutes ago
    # The newest counted hour: done7's creation hour (the counts hold finished jobs).
    created7 = NOW - 86400 + 7 * 3600
    assert freshness.arrivals_hour == created7 - created7 % 3600
    assert "Inputs as of" in freshness.text() and f"at most {CAP}" in freshness.text()


@pytest.mark.parametrize("job", [ARN + "id-done0", "id-done0"])
def test_why_a_finished_job_the_twin_did_not_read_answers_from_its_own_record(store, job) -> None:
    twin = twin_of(store)
    record = find_record(twin, job)
    assert store.scans == 0  # by ARN or id: that one item
    report = why_json(why_report(twin, record, samples=5))
    assert report["job"] == "done0" and report["waiting"] is False and report["waitedSeconds"] == 60


def test_why_a_finished_job_by_name_alone_falls_back_to_the_tables_jobs(store) -> None:
    twin = twin_of(store)
    store.allow_scan = True
    report = why_json(why_report(twin, find_record(twin, "done0"), samples=5))
    assert report["waiting"] is False and store.scans == 1


def test_why_says_how_fresh_its_inputs_are(store, capsys) -> None:
    twin = twin_of(store)
    report = why_report(twin, find_record(twin, "wait1"), samples=10)
    assert why_json(report)["inputs"]["finishedJobsRead"] == CAP
    print_why(report)
    assert "Inputs as of" in capsys.readouterr().out


def test_top_reads_the_bounded_twin_and_says_how_fresh_it_is(store, monkeypatch) -> None:
    monkeypatch.setattr(top, "load_twin", lambda *_args, **_kw: twin_of(store))
    one = queue_frame(None, CONFIG, QUEUE, 3, 10, NOW)  # type: ignore[arg-type]
    assert store.scans == 0
    answer: dict[str, Any] = frame_json(TopFrame(NOW, (one,)))
    assert answer["queues"][0]["inputs"]["finishedJobsCap"] == CAP
    assert [h["job"] for h in answer["queues"][0]["heads"]] == ["wait1"]
    console = Console(width=250, record=True)
    console.print(render(TopFrame(NOW, (one,))))
    assert "Inputs as of" in console.export_text()


def test_a_dry_run_says_how_fresh_its_inputs_are(store, capsys) -> None:
    twin = twin_of(store)
    report = dry_run_spec(
        REPO / "config/jobs/prodexp1-bert.yaml", CONFIG, None, team=None, samples=10, twin=twin
    )  # type: ignore[arg-type]
    assert store.scans == 0 and report["inputs"]["finishedJobsRead"] == CAP
    print_dry_run(report)
    assert "Inputs as of" in capsys.readouterr().out
