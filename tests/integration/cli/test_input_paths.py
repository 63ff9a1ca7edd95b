"""The embedded EventBridge's input transformers, their JSONPath expressions parsed once (input_paths.py)."""

from __future__ import annotations

import json

import jsonpath_ng.ext
import pytest
from moto.events.utils import EventTemplateParser
from shareplane_cli.local import input_paths

EVENT = {
    "version": "0",
    "id": "e-1",
    "detail-type": "Service Job State Change",
    "source": "aws.batch",
    "account": "123456789012",
    "time": "2026-01-01T00:00:00Z",
    "region": "us-east-1",
    "ingestion-time": 1767225600000,
    "detail": {"jobArn": "arn:aws:batch:us-east-1:123456789012:service-job/j1", "status": "RUNNING"},
}
PATHS = {"arn": "$.detail.jobArn", "status": "$.detail.status", "missing": "$.detail.nothing"}
TEMPLATE = '{"job": "<arn>", "status": "<status>", "missing": "<missing>", "whole": <aws.events.event.json>}'


@pytest.fixture
def memoized(monkeypatch: pytest.MonkeyPatch) -> None:
    # From jsonpath-ng's own parse (a local stack this worker started may have memoized it already).
    original = getattr(jsonpath_ng.ext.parse, "__wrapped__", jsonpath_ng.ext.parse)
    monkeypatch.setattr(jsonpath_ng.ext, "parse", original)  # the process's parse is back after the test
    input_paths.install()


def test_a_transformer_gives_moto_the_same_input_with_each_expression_parsed_once(memoized: None) -> None:
    # GIVEN moto's answer before any expression was memoized (an unmemoized parse, as moto has it)
    parse = jsonpath_ng.ext.parse
    unmemoized = parse.__wrapped__  # type: ignore[attr-defined]
    expected = {
        "job": EVENT["detail"]["jobArn"],
        "status": "RUNNING",
        "missing": "<missing>",
        "whole": json.loads(json.dumps(EVENT)),
    }
    assert unmemoized("$.detail.jobArn").find(EVENT)[0].value == expected["job"]
    # WHEN moto transforms two events with the same paths
    first = EventTemplateParser.parse(TEMPLATE, PATHS, EVENT)  # type: ignore[arg-type]
    second = EventTemplateParser.parse(TEMPLATE, PATHS, {**EVENT, "id": "e-2"})  # type: ignore[arg-type]
    # THEN the input is what the expressions select, and the second event parsed nothing again
    assert first == expected and second["whole"]["id"] == "e-2"
    info = parse.cache_info()  # type: ignore[attr-defined]
    assert (info.misses, info.hits) == (len(PATHS), len(PATHS))


def test_installing_twice_memoizes_once(memoized: None) -> None:
    once = jsonpath_ng.ext.parse
    input_paths.install()
    assert jsonpath_ng.ext.parse is once
