"""Reach an AWS account (or the local stack) like the aws CLI does: profile, region, endpoint."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import urlsplit

import boto3
import typer
from shareplane.adapters.dynamodb_store import DynamoJobStore
from shareplane.bootstrap import Root

from .errors import CliError, ExitCode

DEFAULT_STACK = os.environ.get("SHAREPLANE_STACK", "shareplane-dev")

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
    """Which account and stack a command talks to."""

    profile: str | None = None
    region: str | None = None
    endpoint: str | None = None
    stack_name: str = DEFAULT_STACK

    def root(self, **parts: object) -> Root:
        """The composition root the functions use, for this account, and the parts a command names.

        Endpoints: AWS_ENDPOINT_URL_<SERVICE>, then --endpoint, then boto3's own resolution. The
        service's own variable wins over --endpoint as it wins over AWS_ENDPOINT_URL in boto3: locally
        Batch and SageMaker are the emulator, not the embedded AWS that --endpoint names.
        """
        session = boto3.session.Session(profile_name=self.profile, region_name=self.region)
        return Root.from_environment(endpoint_url=_checked_endpoint(self.endpoint), session=session, **parts)

    def client(self, service: str) -> Any:
        """A boto3 client of any service (see ``root`` for its endpoint)."""
        return self.root().client(service)

    def outputs(self) -> dict[str, str]:
        """The stack's outputs (names of its table, queues, bucket ...)."""
        stacks = self.client("cloudformation").describe_stacks(StackName=self.stack_name)["Stacks"]
        return {o["OutputKey"]: o["OutputValue"] for o in stacks[0].get("Outputs", [])}

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

    def job_store(self, table: str | None = None) -> DynamoJobStore:
        """The jobs table of the stack (or the one named)."""
        return self.root(table_name=table or self.output("JobsTableName")).store


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
