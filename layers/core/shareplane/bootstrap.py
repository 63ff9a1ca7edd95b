"""Composition root: reads the environment and builds clients once per cold start.

The only module that reads ``os.environ``. Locally the same code runs against the embedded AWS,
reached through the standard ``AWS_ENDPOINT_URL`` / ``AWS_ENDPOINT_URL_<SERVICE>`` variables that
boto3 honours on its own: there is no local-mode branch.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import cache

import boto3
from botocore.config import Config

from .adapters.dynamodb_store import DynamoJobStore
from .adapters.emf_metrics import EmfMetricsSink
from .domain.config import SharesConfig

#: Standard retry mode: throttling and 5xx are retried with backoff before a record fails back to SQS.
_BOTO_CONFIG = Config(retries={"mode": "standard", "max_attempts": 5}, connect_timeout=5, read_timeout=20)


@dataclass(frozen=True)
class Dependencies:
    """Everything a handler needs, built once."""

    store: DynamoJobStore
    metrics: EmfMetricsSink
    config: SharesConfig | None


def load_config_from_env() -> SharesConfig | None:
    """The shares config the template passes as JSON in SHAREPLANE_CONFIG (None when unset)."""
    raw = os.environ.get("SHAREPLANE_CONFIG")
    return SharesConfig.model_validate(json.loads(raw)) if raw else None


@cache
def dependencies() -> Dependencies:
    """Build the dependencies on first use (not at import, so importing a handler is cheap and safe)."""
    session = boto3.session.Session()
    dynamodb = session.client("dynamodb", config=_BOTO_CONFIG)
    return Dependencies(
        store=DynamoJobStore(dynamodb, os.environ["TABLE_NAME"]),
        metrics=EmfMetricsSink(os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "shareplane")),
        config=load_config_from_env(),
    )
