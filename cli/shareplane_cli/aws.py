"""Reach an AWS account (or the local stack) like the aws CLI does: profile, region, endpoint."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Annotated, Any

import boto3
import typer
from botocore.config import Config
from shareplane.adapters.dynamodb_store import DynamoJobStore

DEFAULT_STACK = os.environ.get("SHAREPLANE_STACK", "shareplane-dev")

# The options every account-facing command takes, as the aws CLI names them.
Profile = Annotated[str | None, typer.Option(help="AWS profile, as for the aws CLI.")]
Region = Annotated[str | None, typer.Option(help="AWS region, as for the aws CLI.")]
Endpoint = Annotated[str | None, typer.Option(help="AWS endpoint URL (the local stack's, for example).")]
StackName = Annotated[str, typer.Option("--stack-name", help="The deployed stack to work with.")]
TableName = Annotated[
    str | None, typer.Option("--table", help="Jobs table name (default: the stack's output).")
]
_CONFIG = Config(retries={"mode": "standard", "max_attempts": 5})


@dataclass(frozen=True)
class Target:
    """Which account and stack a command talks to."""

    profile: str | None = None
    region: str | None = None
    endpoint: str | None = None
    stack_name: str = DEFAULT_STACK

    def client(self, service: str) -> Any:
        """A boto3 client: AWS_ENDPOINT_URL_<SERVICE>, then --endpoint, then boto3's own resolution.

        The service's own variable wins over --endpoint as it wins over AWS_ENDPOINT_URL in boto3:
        locally Batch and SageMaker are the emulator, not the embedded AWS that --endpoint names.
        """
        session = boto3.session.Session(profile_name=self.profile, region_name=self.region)
        endpoint = os.environ.get(f"AWS_ENDPOINT_URL_{service.upper()}") or self.endpoint
        return session.client(service, endpoint_url=endpoint, config=_CONFIG)

    def outputs(self) -> dict[str, str]:
        """The stack's outputs (names of its table, queues, bucket ...)."""
        stacks = self.client("cloudformation").describe_stacks(StackName=self.stack_name)["Stacks"]
        return {o["OutputKey"]: o["OutputValue"] for o in stacks[0].get("Outputs", [])}

    def job_store(self, table: str | None = None) -> DynamoJobStore:
        """The jobs table of the stack (or the one named)."""
        return DynamoJobStore(self.client("dynamodb"), table or self.outputs()["JobsTableName"])
