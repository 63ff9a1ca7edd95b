"""The local stack's chatter goes to its log file; the terminal keeps what a person acts on."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

import pytest
from shareplane_cli.local.noise_log import noise_to_log


def test_library_warnings_and_log_records_go_to_the_file_not_the_terminal(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "logs" / "up.log"
    with noise_to_log(path) as noise:
        logging.getLogger("moto").warning("No Moto CloudFormation support for %s", "AWS::CloudWatch::Alarm")
        warnings.warn("Tried to parse AWS::CloudWatch::Alarm", UserWarning, stacklevel=1)
        noise.note("[green]schedule[/] WatchJobsSchedule -> WatchJobsQueue", "schedule")
    out, err = capfd.readouterr()
    assert "No Moto" not in out + err and "Tried to parse" not in out + err
    logged = path.read_text()
    assert "WARNING moto: No Moto CloudFormation support for AWS::CloudWatch::Alarm" in logged
    assert "UserWarning: Tried to parse AWS::CloudWatch::Alarm" in logged
    assert "schedule: schedule WatchJobsSchedule -> WatchJobsQueue" in logged  # markup removed
    assert (noise.warnings, noise.counts) == (2, {"schedule": 1})
    assert noise.where().startswith(f"log: {path}")


def test_once_closed_the_file_takes_nothing_more(tmp_path: Path) -> None:
    path = tmp_path / "up.log"
    with noise_to_log(path):
        pass
    logging.getLogger("moto").warning("after the stack stopped")
    assert "after the stack stopped" not in path.read_text()
