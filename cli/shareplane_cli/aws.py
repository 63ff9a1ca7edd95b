"""Reach an AWS account (or the local stack) like the aws CLI does: profile, region, endpoint.

The connection options are written once, here: a command names one parameter ``target: Target`` and
decorates itself with ``@account_options`` (the stack's commands) or ``@endpoint_options`` (those that
call the account's APIs by name and never read the stack). The decorator puts the options in that
parameter's place, so ``--help`` lists them where the command put it, and builds the ``Target`` from
what was passed.
"""

from __future__ import annotations

import functools
import inspect
import os
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar
from urllib.parse import urlsplit

import boto3
import typer
from shareplane.adapters.dynamodb_store import DynamoJobStore
from shareplane.bootstrap import Root

from .clock import cluster_clock
from .errors import CliError, ExitCode

DEFAULT_STACK = os.environ.get("SHAREPLANE_STACK", "shareplane-dev")
#: The stack output naming the jobs table.
JOBS_TABLE_OUTPUT = "JobsTableName"

# The options every account-facing command takes, as the aws CLI names them.
Profile = Annotated[str | None, typer.Option(help="AWS profile, as for the aws CLI.")]
Region = Annotated[str | None, typer.Option(help="AWS region, as for the aws CLI.")]
Endpoint = Annotated[str | None, typer.Option(help="AWS endpoint URL (the local stack's, for example).")]
StackName = Annotated[str, typer.Option("--stack-name", help="The deployed stack to work with.")]
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

    def root(self, **parts: object) -> Root:
        """The composition root the functions use, for this account, and the parts a command names.

        Endpoints: AWS_ENDPOINT_URL_<SERVICE>, then --endpoint, then boto3's own resolution. The
        service's own variable wins over --endpoint as it wins over AWS_ENDPOINT_URL in boto3: locally
        Batch and SageMaker are the emulator, not the embedded AWS that --endpoint names.
        """
        session = boto3.session.Session(profile_name=self.profile, region_name=self.region)
        parts.setdefault("clock", self.now)
        return Root.from_environment(endpoint_url=_checked_endpoint(self.endpoint), session=session, **parts)

    def now(self) -> float:
        """The time now (epoch s) on the cluster's clock: every command dates its views and writes by it
        (see shareplane_cli.clock); the root the command builds reads it as its clock too."""
        return cluster_clock(os.environ)()

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
    stack_name: StackName = DEFAULT_STACK,
    table: TableName = None,
) -> Target:
    return Target(profile, region, endpoint, stack_name, table)


def _endpoint_target(profile: Profile = None, region: Region = None, endpoint: Endpoint = None) -> Target:
    return Target(profile, region, endpoint)


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
