"""The CLI's one error path: every failure becomes a message naming the problem and the fix, and an exit code.

Exit codes (docs/reference/exit-codes.md is generated from this list):

- 0 ``OK``: done.
- 1 ``REJECTED``: the command ran and its answer is no (``submit`` rejected a spec, ``validate`` found
  problems, ``cleanup`` could not terminate every job).
- 2 ``BAD_INPUT``: an argument, option or local file is wrong (usage errors, a bad ``--config``, an
  unreadable or non-UTF-8 file, an ``--out`` that cannot be written, a malformed ``--endpoint``).
- 3 ``TIMEOUT``: waited and gave up (``submit`` without an answer or with jobs still running).
- 4 ``UNREACHABLE``: AWS (or the local stack) cannot be reached or used: no region, no credentials,
  endpoint down, an AWS error that is not "not found".
- 5 ``NOT_FOUND``: the stack, its table or the job named does not exist.
- 70 ``INTERNAL``: a bug; ``--debug`` shows the traceback.

Without ``--debug`` no traceback is printed; with it the original exception propagates.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    NoRegionError,
    PartialCredentialsError,
    ProfileNotFound,
    ReadTimeoutError,
)
from shareplane.domain.errors import InvalidInputError, RejectedByServiceError, ShareplaneError


class ExitCode(IntEnum):
    """What the process exit status of a command means."""

    OK = 0
    REJECTED = 1
    BAD_INPUT = 2
    TIMEOUT = 3
    UNREACHABLE = 4
    NOT_FOUND = 5
    INTERNAL = 70


class CliError(Exception):
    """A failure the CLI reports as one message: the problem, the fix, and its exit code."""

    def __init__(self, problem: str, fix: str, code: ExitCode) -> None:
        super().__init__(f"{problem} (fix: {fix})")
        self.problem = problem
        self.fix = fix
        self.code = code


@dataclass(frozen=True)
class Explained:
    """An exception as the user reads it."""

    problem: str
    fix: str
    code: ExitCode


#: Error codes AWS uses for "the thing named does not exist".
_NOT_FOUND_CODES = frozenset(
    {"ResourceNotFoundException", "NoSuchBucket", "NoSuchKey", "NotFound", "NoSuchEntity", "404"}
)
_LOCAL_HINT = "is `shareplane up` running, and its variables exported?"


def explain(exc: BaseException) -> Explained | None:
    """The message and exit code of ``exc``; None for an exception nobody anticipated (a bug)."""
    if isinstance(exc, CliError):
        return Explained(exc.problem, exc.fix, exc.code)
    if isinstance(exc, RejectedByServiceError):
        if _says_not_found(exc.problem):
            fix = "check the id (`shareplane jobs` lists them) and that --region and --endpoint are the job's"
            return Explained(f"{exc.field}: {exc.problem}", fix, ExitCode.NOT_FOUND)
        return Explained(f"{exc.field}: {exc.problem}", exc.fix, ExitCode.UNREACHABLE)
    if isinstance(exc, InvalidInputError):
        return Explained(f"{exc.field}: {exc.problem}", exc.fix, ExitCode.BAD_INPUT)
    if isinstance(exc, NoRegionError):
        return Explained(
            "no AWS region is set",
            "pass --region, or set AWS_REGION (or AWS_DEFAULT_REGION, or a region in the profile)",
            ExitCode.UNREACHABLE,
        )
    if isinstance(exc, (NoCredentialsError, PartialCredentialsError)):
        return Explained(
            f"no usable AWS credentials ({exc})",
            f"pass --profile or set AWS credentials; for the local stack: {_LOCAL_HINT}",
            ExitCode.UNREACHABLE,
        )
    if isinstance(exc, ProfileNotFound):
        return Explained(str(exc), "pass a --profile from ~/.aws/config", ExitCode.UNREACHABLE)
    if isinstance(exc, (EndpointConnectionError, ConnectTimeoutError, ReadTimeoutError)):
        return Explained(
            f"cannot reach AWS: {exc}",
            f"check --endpoint and the network; for the local stack: {_LOCAL_HINT}",
            ExitCode.UNREACHABLE,
        )
    if isinstance(exc, ClientError):
        return _client_error(exc)
    if isinstance(exc, BotoCoreError):
        return Explained(
            f"AWS call failed: {exc}", "check --region, --profile and --endpoint", ExitCode.UNREACHABLE
        )
    if isinstance(exc, UnicodeDecodeError):
        return Explained(
            f"a file is not UTF-8 text ({exc.reason} at byte {exc.start})",
            "save the file as UTF-8",
            ExitCode.BAD_INPUT,
        )
    if isinstance(exc, OSError) and exc.filename is not None:
        return Explained(
            f"cannot use {exc.filename}: {exc.strerror or exc}",
            "pass a path that exists and that you may read (or write, for an output file)",
            ExitCode.BAD_INPUT,
        )
    if isinstance(exc, ShareplaneError):
        return Explained(
            str(exc), "retry; if it persists, rerun with --debug and report it", ExitCode.INTERNAL
        )
    return None


def _client_error(exc: ClientError) -> Explained:
    error = exc.response.get("Error", {})
    code = str(error.get("Code") or "")
    message = str(error.get("Message") or exc)
    operation = exc.operation_name
    if code in _NOT_FOUND_CODES or _says_not_found(message):
        if operation == "DescribeStacks":
            fix = f"pass --stack-name of a deployed stack (or set SHAREPLANE_STACK); locally: {_LOCAL_HINT}"
        elif "table" in message.casefold() or operation in ("Query", "Scan", "GetItem"):
            fix = "pass --table with an existing jobs table, or deploy the stack that creates it"
        else:
            fix = "check the name or id, and that --region and --endpoint point at the right account"
        return Explained(f"{operation}: {message}", fix, ExitCode.NOT_FOUND)
    return Explained(
        f"{operation} failed: {code}: {message}",
        "check the permissions of your credentials and the arguments named above",
        ExitCode.UNREACHABLE,
    )


def _says_not_found(message: str) -> bool:
    text = message.casefold()
    return any(p in text for p in ("does not exist", "not found", "cannot be found", "unknown job", "no job"))
