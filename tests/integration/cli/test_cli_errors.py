"""The CLI's one error path: a message naming the problem and the fix, a documented exit code, no traceback."""

from __future__ import annotations

import contextlib
import csv
import gzip
import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, NoRegionError
from botocore.stub import Stubber
from gpusim import trace as gpusim_trace
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from moto import mock_aws
from shareplane.adapters.dynamodb_store import job_state_item
from shareplane.bootstrap import Root
from shareplane.domain.errors import InvalidInputError, RejectedByServiceError
from shareplane.domain.jobs.lifecycle import JobState, JobStatus
from shareplane.domain.submit.jobspec import MAX_SPEC_BYTES
from shareplane_cli import aws
from shareplane_cli.commands.local import MAX_REPLAY_BYTES
from shareplane_cli.errors import ExitCode, explain
from shareplane_cli.main import app
from shareplane_cli.output import epoch_ms
from typer.testing import CliRunner

from tests.aws import create_jobs_table
from tests.properties import examples

REPO = Path(__file__).resolve().parents[3]
runner = CliRunner()
TABLE = "jobs"
ARN = "arn:aws:batch:us-east-1:123456789012:service-job/"


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def assert_clear(code: int, err: str, expected: ExitCode, *words: str) -> None:
    """One error path: the documented code, the problem and its fix on stderr, no traceback."""
    assert code == expected, err
    assert "error:" in err and "fix:" in err, err
    assert "Traceback" not in err
    for word in words:
        assert word in err, err


@pytest.fixture
def aws_env(aws_credentials: None) -> Any:
    with mock_aws():
        yield boto3.client("dynamodb", region_name="us-east-1")


def test_a_missing_table_is_not_found(aws_env: Any) -> None:
    code, _, err = run("jobs", "--table", "no-such-table", "--config", "/nonexistent.yaml")
    assert_clear(code, err, ExitCode.NOT_FOUND, "--table")


def test_an_unknown_stack_is_not_found(aws_env: Any) -> None:
    code, _, err = run("jobs", "--stack-name", "no-such-stack", "--config", "/nonexistent.yaml")
    assert_clear(code, err, ExitCode.NOT_FOUND, "no-such-stack", "--stack-name")


def test_an_unreachable_endpoint_is_unreachable(aws_credentials: None) -> None:
    code, _, err = run("jobs", "--table", "t", "--endpoint", "http://127.0.0.1:9", "--config", "/none.yaml")
    assert_clear(code, err, ExitCode.UNREACHABLE, "127.0.0.1:9", "--endpoint")


@pytest.mark.parametrize("endpoint", ["not a url", "ftp://host", "http://", "http://host:99999"])
def test_an_invalid_endpoint_is_bad_input(aws_credentials: None, endpoint: str) -> None:
    code, _, err = run("jobs", "--table", "t", "--endpoint", endpoint, "--config", "/none.yaml")
    assert_clear(code, err, ExitCode.BAD_INPUT, "--endpoint")


def test_no_region_says_how_to_set_one(aws_credentials: None, monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    code, _, err = run("jobs", "--table", "t", "--config", "/none.yaml")
    assert_clear(code, err, ExitCode.UNREACHABLE, "region", "--region")


def test_cancelling_an_unknown_job_is_not_found(
    aws_credentials: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN Batch answers TerminateServiceJob for an unknown id as it does: a ClientException
    client = boto3.client("batch", region_name="us-east-1")
    stub = Stubber(client)
    stub.add_client_error("terminate_service_job", "ClientException", "Job nope not found", 400)
    stub.activate()
    monkeypatch.setattr(aws.Target, "root", lambda self, **parts: Root({}, batch=client, **parts))
    with mock_aws():  # an empty jobs table: `cancel` looks the name up there first
        create_jobs_table(boto3.client("dynamodb", region_name="us-east-1"), TABLE)
        code, out, err = run("cancel", "nope", "--table", TABLE)
    assert_clear(code, err, ExitCode.NOT_FOUND, "nope", "shareplane jobs")
    assert "terminated" not in out


def test_an_unwritable_out_is_bad_input(aws_env: Any, tmp_path: Path) -> None:
    create_jobs_table(aws_env, TABLE)
    code, _, err = run("export", "--table", TABLE, "--out", str(tmp_path))  # a directory
    assert_clear(code, err, ExitCode.BAD_INPUT, str(tmp_path))


def test_a_non_utf8_replay_file_is_bad_input(tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    events.write_bytes(b'{"detail": "caf\xe9"}\n')
    code, _, err = run("replay", str(events))
    assert code == ExitCode.BAD_INPUT and "UTF-8" in err and "Traceback" not in err


def test_a_config_that_is_an_endless_stream_is_read_with_a_bound() -> None:
    code, _, err = run("failures", "classify", "boom", "--config", "/dev/zero")
    assert code == ExitCode.BAD_INPUT and "larger than" in err and "Traceback" not in err


def test_debug_lets_the_original_exception_out(aws_credentials: None) -> None:
    result = runner.invoke(
        app, ["--debug", "jobs", "--table", "t", "--endpoint", "x", "--config", "/no.yaml"]
    )
    assert result.exit_code != ExitCode.BAD_INPUT and isinstance(result.exception, Exception)
    assert "not an http(s) URL" in str(result.exception)


def test_an_unexpected_error_is_internal_and_says_to_rerun_with_debug(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(self: Any, table: str | None = None) -> Any:
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(aws.Target, "job_store", broken)
    code, _, err = run("jobs", "--config", "/none.yaml")
    assert_clear(code, err, ExitCode.INTERNAL, "ZeroDivisionError", "--debug")


def test_submit_keeps_rejected_distinct_from_errors() -> None:
    assert len({ExitCode.REJECTED, ExitCode.BAD_INPUT, ExitCode.UNREACHABLE, ExitCode.NOT_FOUND}) == 4
    assert ExitCode.REJECTED == 1 and ExitCode.TIMEOUT == 3


def test_jobs_survives_bad_rows_already_stored(aws_env: Any) -> None:
    # GIVEN a table with a good job, one stored with createdAt 10^15 (before times were bounded), and a
    # row whose status no version of shareplane wrote
    create_jobs_table(aws_env, TABLE)
    from shareplane.adapters.dynamodb_items import marshal

    def put(job_id: str, created: int, status: str = "RUNNABLE") -> None:
        item = job_state_item(
            JobState(
                job_arn=ARN + job_id, status=JobStatus.RUNNABLE, seq="a", job_id=job_id, created_at=created
            )
        )
        item["status"] = status
        aws_env.put_item(TableName=TABLE, Item=marshal(item))

    put("good", 1773720000000)
    put("future", 10**15)
    put("bad-status", 1773720000000, status="DANCING")
    # WHEN the jobs are listed, as a table and as JSON
    code, out, err = run("jobs", "--table", TABLE, "--config", "/none.yaml")
    json_code, json_out, _ = run("jobs", "--table", TABLE, "--config", "/none.yaml", "-o", "json")
    # THEN both readable jobs are listed, the far time shown as a number, the unreadable row skipped
    assert code == 0 and json_code == 0, err
    assert "2 jobs" in out
    assert epoch_ms(10**15) == f"{10**15} ms (out of range)"
    assert sorted(r["jobId"] for r in json.loads(json_out)) == ["future", "good"]


# ------------------------------------------------------------------------------------------------
# Any exception gets a message and a documented code
# ------------------------------------------------------------------------------------------------
aws_errors = st.builds(
    lambda code, message, operation: ClientError({"Error": {"Code": code, "Message": message}}, operation),
    st.sampled_from(["ResourceNotFoundException", "ValidationError", "AccessDenied", "ClientException", ""]),
    st.text(max_size=80),
    st.sampled_from(["DescribeStacks", "Query", "TerminateServiceJob", "PutObject"]),
)
errors = st.one_of(
    aws_errors,
    st.builds(lambda t: InvalidInputError("field", t, "fix it"), st.text(max_size=40)),
    st.builds(lambda t: RejectedByServiceError("TerminateServiceJob", t, "re-read"), st.text(max_size=40)),
    st.just(NoRegionError()),
    st.builds(lambda u: EndpointConnectionError(endpoint_url=u), st.text(max_size=40)),
    st.builds(lambda name: PermissionError(13, "Permission denied", name), st.text(min_size=1, max_size=40)),
    st.just(UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte")),
)


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(exc=errors)
def test_every_anticipated_error_has_a_problem_a_fix_and_a_documented_code(exc: Exception) -> None:
    explained = explain(exc)
    assert explained is not None
    assert explained.problem and explained.fix
    assert explained.code in {ExitCode.BAD_INPUT, ExitCode.UNREACHABLE, ExitCode.NOT_FOUND}


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=400))
def test_any_config_file_is_answered_without_a_traceback(data: bytes, tmp_path_factory: Any) -> None:
    config = tmp_path_factory.mktemp("cfg") / "shares.yaml"
    config.write_bytes(data)
    code, _, err = run("failures", "classify", "boom", "--config", str(config))
    assert code == ExitCode.BAD_INPUT and "Traceback" not in err and "error:" in err


def test_the_manual_documents_every_exit_code() -> None:
    page = (REPO / "docs" / "reference" / "exit-codes.md").read_text(encoding="utf-8")
    for code in ExitCode:
        assert f"| `{int(code)}` | `{code.name}` |" in page, code


def test_a_whatif_config_that_is_an_endless_stream_is_read_with_a_bound(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    trace.write_text("")
    code, _, err = run("simulate", "--trace", str(trace), "--config", "/dev/zero")
    assert code == ExitCode.BAD_INPUT and "larger than" in err and "Traceback" not in err


@contextmanager
def endless_stream(tmp_path: Path, budget: int) -> Iterator[list[int]]:
    """A FIFO a writer feeds with up to ``budget`` zero bytes; yields [bytes the reader took so far].

    /dev/zero never ends, so a reader without a bound would never return; this stream ends at
    ``budget``, so the test finishes either way and can say how much was read.
    """
    fifo = tmp_path / "endless"
    os.mkfifo(fifo)
    written = [0]

    def feed() -> None:
        chunk = bytes(1024 * 1024)
        with contextlib.suppress(BrokenPipeError), open(fifo, "wb") as handle:
            while written[0] < budget:
                handle.write(chunk)
                written[0] += len(chunk)

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    try:
        yield written
    finally:
        if writer.is_alive():  # the command never opened it, or stopped reading: let the writer end
            # Opened without waiting for a writer: the writer may end (its pipe broken) between the
            # check above and this open, and a blocking open would then wait for one forever.
            drain = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
            os.set_blocking(drain, True)
            with contextlib.suppress(OSError):
                while os.read(drain, 1024 * 1024):
                    pass
            os.close(drain)
        writer.join(timeout=30)


#: What the kernel may hold in the pipe plus the writer's chunk in flight, beyond what the reader took.
PIPE_SLACK = 2 * 1024 * 1024


@pytest.mark.parametrize(
    ("command", "cap", "code"),
    [
        (["submit", "{file}", "--dry-run", "--config", str(REPO / "config/shares.yaml")], MAX_SPEC_BYTES, 1),
        (["replay", "{file}"], MAX_REPLAY_BYTES, ExitCode.BAD_INPUT),
    ],
    ids=[
        "submit --dry-run reads a spec that never ends only to its cap, and rejects it",
        "replay reads an events file that never ends only to its cap, and refuses it",
    ],
)
def test_a_file_argument_that_never_ends_is_read_only_to_its_cap(
    tmp_path: Path, command: list[str], cap: int, code: int
) -> None:
    with endless_stream(tmp_path, budget=cap + 16 * 1024 * 1024) as written:
        args = [str(tmp_path / "endless") if a == "{file}" else a for a in command]
        result = runner.invoke(app, args)
        taken = written[0]
    assert result.exit_code == code, result.output
    assert taken <= cap + PIPE_SLACK, f"read {taken} bytes of an endless stream (cap {cap})"
    assert "Traceback" not in result.output


def test_a_trace_is_read_only_to_its_cap_even_gzipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a gzipped trace that unpacks to 4 MiB, and a cap of 1 MiB (the real one is 512 MiB)
    monkeypatch.setattr(gpusim_trace, "MAX_TRACE_BYTES", 1024 * 1024, raising=False)
    trace = tmp_path / "jobs.jsonl.gz"
    trace.write_bytes(gzip.compress(b"\n" * (4 * 1024 * 1024)))
    # WHEN it is simulated
    code, _, err = run("simulate", "--trace", str(trace))
    # THEN it stops at the cap and says so, as bad input
    assert_clear(code, err, ExitCode.BAD_INPUT, "larger than 1048576 bytes")


def test_a_csv_trace_field_over_the_csv_readers_limit_is_bad_input_naming_the_line(tmp_path: Path) -> None:
    trace = tmp_path / "philly.csv"
    trace.write_text(
        "timestamp,duration,num_gpus,gpu_time,cluster\n" + "2017-10-03 00:00:00,60,1,60," + "x" * 200_000
    )
    code, _, err = run("simulate", "--trace", str(trace))
    assert_clear(code, err, ExitCode.BAD_INPUT, "trace line 2", str(csv.field_size_limit()))


@pytest.mark.parametrize(
    ("args", "accepted"),
    [
        (["budgets", "--month", "0000-01"], ["1970-01", "9998-12"]),
        (["budgets", "--month", "9999-12"], ["1970-01", "9998-12"]),
        (["idle", "--hours", "1e308"], ["0 to 9600"]),
        (["idle", "--hours", "nan"], ["0 to 9600"]),
    ],
    ids=[
        "budgets --month 0000-01 names the months it takes",
        "budgets --month 9999-12 names the months it takes",
        "idle --hours 1e308 names the hours it takes",
        "idle --hours nan names the hours it takes",
    ],
)
def test_an_argument_out_of_range_is_bad_input_before_any_aws_call(
    aws_credentials: None, args: list[str], accepted: list[str]
) -> None:
    # An unreachable endpoint: a command that called AWS first would exit 4 (UNREACHABLE), not 2.
    result = runner.invoke(app, [*args, "--endpoint", "http://127.0.0.1:9"])
    assert result.exit_code == ExitCode.BAD_INPUT, result.output
    assert "Traceback" not in result.output
    flat = " ".join(result.output.replace("│", " ").split())
    for words in accepted:
        assert words in flat, result.output
