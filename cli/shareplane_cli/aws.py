"""Reach an AWS account (or the local stack) like the aws CLI does: profile, region, endpoint.

The connection options are written once, here: a command names one parameter ``target: Target`` and
decorates itself with ``@account_options`` (the stack's commands) or ``@endpoint_options`` (those that
call the account's APIs by name and never read the stack). The decorator puts the options in that
parameter's place, so ``--help`` lists them where the command put it, and builds the ``Target`` from
what was passed.

A command given no endpoint finds the project's running local stack by itself, unless it was told of an
account: see ``_with_local_stack``.
"""

from __future__ import annotations

import functools
import inspect
import os
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Annotated, Any, TypeVar
from urllib.parse import urlsplit

import boto3
import typer
from shareplane.adapters.dynamodb_store import DynamoJobStore
from shareplane.bootstrap import Root

from .clock import cluster_clock
from .errors import CliError, ExitCode
from .local.exports import FOUND_ENV_FILE, exported, find_env_file, running_exports
from .output import stderr_console

#: The stack a command works with when neither --stack-name nor SHAREPLANE_STACK names one.
DEFAULT_STACK_NAME = "shareplane-dev"
DEFAULT_STACK = os.environ.get("SHAREPLANE_STACK", DEFAULT_STACK_NAME)
#: The stack output naming the jobs table.
JOBS_TABLE_OUTPUT = "JobsTableName"

# The options every account-facing command takes, as the aws CLI names them.
Profile = Annotated[str | None, typer.Option(help="AWS profile, as for the aws CLI.")]
Region = Annotated[str | None, typer.Option(help="AWS region, as for the aws CLI.")]
Endpoint = Annotated[
    str | None,
    typer.Option(
        help="AWS endpoint URL (the local stack's, for example). Without it, and with nothing naming an "
        "account (--profile, --region, --stack-name, --table, $AWS_PROFILE, $AWS_ACCESS_KEY_ID, "
        "$SHAREPLANE_STACK, ...), the local stack running here (its env file: "
        f"{FOUND_ENV_FILE}); else the account's own.",
        show_default=False,
    ),
]
StackName = Annotated[
    str | None,
    typer.Option(
        "--stack-name",
        help="The deployed stack to work with.",
        show_default=f"the found local stack's, else $SHAREPLANE_STACK, else {DEFAULT_STACK_NAME}",
    ),
]
TableName = Annotated[
    str | None, typer.Option("--table", help="Jobs table name (default: the stack's output).")
]


@dataclass(frozen=True)
class Target:
    """Which account and stack a command talks to, and the jobs table when one was named."""

    profile: str | None = None
    region: str | None = None
    endpoint: str | None = None
    stack_name: str = DEFAULT_STACK
    table: str | None = None
    #: The exports of the local stack the command found running (``_with_local_stack``), read as if the
    #: shell had them: its service endpoints, credentials, region and clock. Empty: the shell's alone.
    local: Mapping[str, str] = field(default_factory=dict)

    def environ(self) -> dict[str, str]:
        """The environment the command's clients and clock read: the shell's, and the found stack's."""
        return {**os.environ, **self.local}

    def root(self, **parts: object) -> Root:
        """The composition root the functions use, for this account, and the parts a command names.

        Endpoints: AWS_ENDPOINT_URL_<SERVICE>, then --endpoint, then boto3's own resolution. The
        service's own variable wins over --endpoint as it wins over AWS_ENDPOINT_URL in boto3: locally
        Batch and SageMaker are the emulator, not the embedded AWS that --endpoint names.
        """
        session = boto3.session.Session(
            profile_name=self.profile,
            region_name=self.region or self.local.get("AWS_REGION"),
            aws_access_key_id=self.local.get("AWS_ACCESS_KEY_ID"),
            aws_secret_access_key=self.local.get("AWS_SECRET_ACCESS_KEY"),
        )
        parts.setdefault("clock", self.now)
        return Root(self.environ(), endpoint_url=_checked_endpoint(self.endpoint), session=session, **parts)

    def now(self) -> float:
        """The time now (epoch s) on the cluster's clock: every command dates its views and writes by it
        (see shareplane_cli.clock); the root the command builds reads it as its clock too. With --profile
        (an AWS account) it is this machine's clock."""
        # An account named by --profile runs on this machine's clock, whatever a shell once exported.
        return cluster_clock({} if self.profile else self.environ())()

    def client(self, service: str) -> Any:
        """A boto3 client of any service (see ``root`` for its endpoint); boto3 types it by name only."""
        return self.root().client(service)

    def outputs(self) -> dict[str, str]:
        """The stack's outputs (names of its table, queues, bucket ...)."""
        stacks = self.client("cloudformation").describe_stacks(StackName=self.stack_name)["Stacks"]
        return {str(o["OutputKey"]): str(o["OutputValue"]) for o in stacks[0].get("Outputs", [])}

    def output(self, key: str) -> str:
        """One output of the stack; a clear error when the stack does not have it."""
        outputs = self.outputs()
        if key not in outputs:
            raise CliError(
                f"stack {self.stack_name} has no output {key}",
                "pass --stack-name of a shareplane stack, or name the resource with its own option",
                ExitCode.NOT_FOUND,
            )
        return outputs[key]

    def jobs_table(self) -> str:
        """The jobs table: the one named (--table), else the stack's."""
        return self.table or self.output(JOBS_TABLE_OUTPUT)

    def jobs_root(self, **parts: object) -> Root:
        """The root on the jobs table, for the ports it holds (job store, ledgers, share store)."""
        return self.root(table_name=self.jobs_table(), **parts)

    def job_store(self) -> DynamoJobStore:
        """The store on the jobs table (``jobs_table``)."""
        return self.jobs_root().store


#: The account and stack of the environment (its profile and region, SHAREPLANE_STACK): a command's
#: ``target`` default, which the connection options replace before it is ever used.
DEFAULT_TARGET = Target()


def _account_target(
    profile: Profile = None,
    region: Region = None,
    endpoint: Endpoint = None,
    stack_name: StackName = None,
    table: TableName = None,
) -> Target:
    told = stack_name is not None or table is not None
    return _with_local_stack(Target(profile, region, endpoint, stack_name or DEFAULT_STACK, table), told=told)


def _endpoint_target(profile: Profile = None, region: Region = None, endpoint: Endpoint = None) -> Target:
    return _with_local_stack(Target(profile, region, endpoint))


#: Variables that name an account, its credentials or an endpoint (boto3 reads each): with one set, a
#: command never looks for a local stack.
ACCOUNT_VARIABLES = (
    "AWS_ENDPOINT_URL",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_ACCESS_KEY_ID",
    "AWS_ROLE_ARN",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "SHAREPLANE_STACK",
)


def _with_local_stack(target: Target, *, told: bool = False) -> Target:
    """The target on the local stack running here (`shareplane up`, `up -d`), when the command was told
    of no account: no --endpoint, --profile, --region, --stack-name or --table (``told``), none of
    ACCOUNT_VARIABLES set. Never a silent switch: one line on stderr names the stack found. Unchanged
    when none runs."""
    if told or target.endpoint or target.profile or target.region:
        return target
    if any(os.environ.get(name) for name in ACCOUNT_VARIABLES):
        return target
    env_file = find_env_file()
    lines = running_exports(env_file)
    if lines is None:
        return target
    local = exported(lines)
    stack_name = local.get("SHAREPLANE_STACK", target.stack_name)
    stderr_console().print(
        f"local stack {stack_name} at {local['AWS_ENDPOINT_URL']} (found {env_file}; "
        "--endpoint, --profile or --stack-name for another)",
        highlight=False,
        markup=False,
    )
    return replace(target, endpoint=local["AWS_ENDPOINT_URL"], stack_name=stack_name, local=local)


_Result = TypeVar("_Result")
#: The name of the parameter the connection options stand in for.
TARGET_PARAMETER = "target"


def _options_of(build: Callable[..., Target]) -> Callable[[Callable[..., _Result]], Callable[..., _Result]]:
    """A decorator putting ``build``'s parameters in place of a command's ``target`` and passing the
    ``Target`` built from them; ``build``'s signature is where the options are written."""
    options = list(inspect.signature(build, eval_str=True).parameters.values())
    option_hints = {option.name: option.annotation for option in options}

    def decorate(command: Callable[..., _Result]) -> Callable[..., _Result]:
        hints = typing.get_type_hints(command, include_extras=True)
        if TARGET_PARAMETER not in hints:
            raise TypeError(f"{command.__qualname__} has no parameter {TARGET_PARAMETER!r} for the options")
        parameters: list[inspect.Parameter] = []
        for parameter in inspect.signature(command).parameters.values():
            if parameter.name == TARGET_PARAMETER:
                parameters += [option.replace(kind=parameter.kind) for option in options]
            else:
                parameters.append(parameter.replace(annotation=hints[parameter.name]))

        # Click passes each parsed value by keyword, typed only by the signature below: the values are
        # as loosely typed here as typer hands them over.
        @functools.wraps(command)
        def run(**values: Any) -> _Result:
            chosen = {option.name: values.pop(option.name) for option in options}
            return command(**values, **{TARGET_PARAMETER: build(**chosen)})

        hints.pop(TARGET_PARAMETER)
        # typer reads the command's parameters from inspect's __signature__, which typeshed does not
        # declare on functions (any function takes it).
        run.__signature__ = inspect.signature(command).replace(parameters=parameters)  # type: ignore[attr-defined]
        run.__annotations__ = {**hints, **option_hints}
        return run

    return decorate


#: The five options of a command that works on the stack: profile, region, endpoint, stack, table.
account_options = _options_of(_account_target)
#: The three of a command that calls the account's APIs by name: profile, region, endpoint.
endpoint_options = _options_of(_endpoint_target)


def _checked_endpoint(endpoint: str | None) -> str | None:
    """The endpoint URL, or a clear error when it is not one (botocore's is a bare ValueError)."""
    if endpoint is None:
        return None
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise CliError(
            f"--endpoint {endpoint!r} is not an http(s) URL",
            "pass a URL such as http://127.0.0.1:4566 (the one `shareplane up` prints)",
            ExitCode.BAD_INPUT,
        )
    try:
        parts.port  # noqa: B018 (a port out of range raises here)
    except ValueError as exc:
        problem = f"--endpoint {endpoint!r} has a bad port ({exc})"
        raise CliError(problem, "use a port 1-65535", ExitCode.BAD_INPUT) from exc
    return endpoint
