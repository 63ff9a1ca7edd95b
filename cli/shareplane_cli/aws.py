"""Reach an AWS account (or the local stack) like the aws CLI does: profile, region, endpoint."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import boto3
from botocore.config import Config
from shareplane.adapters.dynamodb_store import DynamoJobStore

DEFAULT_STACK = os.environ.get("SHAREPLANE_STACK", "shareplane-dev")
_CONFIG = Config(retries={"mode": "standard", "max_attempts": 5})


@dataclass(frozen=True)
class Target:
    """Which account and stack a command talks to."""

    profile: str | None = None
    region: str | None = None
    endpoint: str | None = None
    stack_name: str = DEFAULT_STACK

    def client(self, service: str) -> Any:
        """A boto3 client; AWS_ENDPOINT_URL* in the environment is honoured by boto3 itself."""
        session = boto3.session.Session(profile_name=self.profile, region_name=self.region)
        return session.client(service, endpoint_url=self.endpoint, config=_CONFIG)

    def outputs(self) -> dict[str, str]:
        """The stack's outputs (names of its table, queues, bucket ...)."""
        stacks = self.client("cloudformation").describe_stacks(StackName=self.stack_name)["Stacks"]
        return {o["OutputKey"]: o["OutputValue"] for o in stacks[0].get("Outputs", [])}

    def job_store(self, table: str | None = None) -> DynamoJobStore:
        """The jobs table of the stack (or the one named)."""
        return DynamoJobStore(self.client("dynamodb"), table or self.outputs()["JobsTableName"])
