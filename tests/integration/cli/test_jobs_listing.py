"""`shareplane jobs` as a listing: one line per job, whole names, columns, formats, filters, order and counts."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from dataclasses import replace

import pytest
from moto import mock_aws
from shareplane.domain.jobs.lifecycle import JobObservation, JobStatus
from shareplane.service.record_state import record_observation
from shareplane_cli.commands import jobs as jobs_command
from shareplane_cli.main import app
from typer.testing import CliRunner, Result

from tests.integration.cli.plain_table import plain_rows
from tests.integration.drop_world import TABLE, build_world
from tests.integration.test_uploader_join import KEY, REQUEST, SPEC

DEFAULT = ["job", "status", "team", "tier", "wait", "age", "start"]
NAMES = {"bert-large-ranker-ft-01", "ranker-lr-sweep-07", "ranker-tokenize-v7"}
runner = CliRunner()


@pytest.fixture
def listed(aws_credentials: None) -> Iterator[None]:
    """A drop's three jobs on the table: one running, one failed, one (on the CPU queue) still submitted."""
    with mock_aws():
        world = build_world()
        world.handle(replace(world.drop(KEY, SPEC), request_id=REQUEST, requester="111122223333"))
        jobs = {s.job_name: s for s in world.store.jobs()}
        running, failed = jobs["bert-large-ranker-ft-01"], jobs["ranker-lr-sweep-07"]
        created = running.created_at or 0
        for observation in (
            JobObservation(
                running.job_arn, JobStatus.RUNNING, created_at=created, scheduled_at=created + 90_000
            ),
            JobObservation(
                failed.job_arn, JobStatus.FAILED, created_at=failed.created_at, stopped_at=created
            ),
        ):
            record_observation(observation, world.store, world.ports.metrics, world.config)
        yield


def jobs(*args: str) -> Result:
    return runner.invoke(app, ["jobs", "--table", TABLE, *args])


def test_piped_the_list_is_one_whole_line_per_job_with_a_count_line_per_queue(listed: None) -> None:
    # WHEN the jobs are listed into a pipe (the runner's stdout is not a terminal)
    result = jobs()
    # THEN each job is one line under the default columns, its name whole, and no history
    assert result.exit_code == 0, result.output
    rows = plain_rows(result.stdout, DEFAULT)
    assert {row["job"] for row in rows} == NAMES
    assert {row["job"]: row["status"] for row in rows}["bert-large-ranker-ft-01"] == "RUNNING"
    assert "history" not in result.stdout and "│" not in result.stdout
    # AND each queue's jobs are counted by status, in lifecycle order
    lines = result.stdout.splitlines()
    assert "search-p4d-queue: 1 RUNNING, 1 FAILED" in lines
    assert "search-cpu-fifo-queue: 1 SUBMITTED" in lines


def test_wide_columns_and_csv_choose_what_is_printed(listed: None) -> None:
    wide = jobs("-o", "wide")
    assert wide.exit_code == 0, wide.output
    assert {row["queue"] for row in plain_rows(wide.stdout, list(jobs_command.JOB_COLUMNS))} == {
        "search-p4d-queue",
        "search-cpu-fifo-queue",
    }
    chosen = jobs("--columns", "job,queue")
    assert plain_rows(chosen.stdout, ["job", "queue"])[0].keys() == {"job", "queue"}
    assert "status" not in chosen.stdout.splitlines()[1]
    as_csv = jobs("-o", "csv", "--columns", "job,status")
    assert list(csv.DictReader(io.StringIO(as_csv.stdout))) == [
        {"job": "bert-large-ranker-ft-01", "status": "RUNNING"},
        {"job": "ranker-lr-sweep-07", "status": "FAILED"},
        {"job": "ranker-tokenize-v7", "status": "SUBMITTED"},
    ]
    unknown = jobs("--columns", "job,colour")
    assert unknown.exit_code == 2 and "colour" in unknown.output and "queue" in unknown.output


def test_no_headers_prints_the_rows_alone(listed: None) -> None:
    result = jobs("--no-headers", "--columns", "job")
    assert sorted(result.stdout.split()) == sorted(NAMES)


def test_filters_take_several_values_and_refuse_unknown_ones(listed: None) -> None:
    both = jobs("-o", "csv", "--columns", "job", "--status", "RUNNING,FAILED")
    assert both.stdout.split()[1:] == ["bert-large-ranker-ft-01", "ranker-lr-sweep-07"]
    repeated = jobs("-o", "csv", "--columns", "job", "--status", "RUNNING", "--status", "SUBMITTED")
    assert repeated.stdout.split()[1:] == ["bert-large-ranker-ft-01", "ranker-tokenize-v7"]
    tiers = jobs("-o", "csv", "--columns", "job", "--tier", "HIGHPRI,LOWPRI")
    assert tiers.stdout.split()[1:] == ["bert-large-ranker-ft-01", "ranker-lr-sweep-07"]
    bogus = jobs("--status", "RUNNING,DONE")
    assert bogus.exit_code == 2 and "DONE" in bogus.output and "SUCCEEDED" in bogus.output


def test_sort_limit_and_since_narrow_and_order_the_list(listed: None) -> None:
    last_two = jobs("-o", "csv", "--columns", "job", "--sort", "-job", "--limit", "2")
    assert last_two.stdout.split()[1:] == ["ranker-tokenize-v7", "ranker-lr-sweep-07"]
    titled = jobs("--sort", "status", "--limit", "1")
    assert titled.stdout.splitlines()[0] == "1 of 3 jobs"
    assert plain_rows(titled.stdout, DEFAULT)[0]["status"] == "SUBMITTED"  # lifecycle order, not letters
    assert len(jobs("-o", "csv", "--since", "1h").stdout.splitlines()) == 4
    assert len(jobs("-o", "csv", "--since", "2999-01-01T00:00").stdout.splitlines()) == 1
    bad = jobs("--since", "yesterday")
    assert bad.exit_code == 2 and "ISO" in bad.output
    unsortable = jobs("--sort", "colour")
    assert unsortable.exit_code == 2 and "colour" in unsortable.output


def test_watch_redraws_until_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    shown: list[int] = []
    slept: list[float] = []
    monkeypatch.setattr(jobs_command.time, "sleep", slept.append)
    jobs_command.watch_listing(lambda: shown.append(len(shown)), 2.0, rounds=3)
    assert shown == [0, 1, 2] and slept == [2.0, 2.0]


def test_a_cpu_job_shows_and_filters_by_the_team_and_tier_it_was_submitted_as(listed: None) -> None:
    # GIVEN the drop's CPU job (the FIFO queue: no share for the config to map), submitted as MIDPRI
    rows = {row["job"]: row for row in plain_rows(jobs().stdout, DEFAULT)}
    # THEN it shows its team and tier all the same
    assert (rows["ranker-tokenize-v7"]["team"], rows["ranker-tokenize-v7"]["tier"]) == ("ProdExp1", "MIDPRI")
    # AND the team and tier filters find it, and leave it out when they name others
    midpri = jobs("-o", "csv", "--columns", "job", "--team", "ProdExp1", "--tier", "MIDPRI")
    assert midpri.stdout.split()[1:] == ["ranker-tokenize-v7"]
    assert "ranker-tokenize-v7" not in jobs("-o", "csv", "--columns", "job", "--team", "ProdExp2").stdout
