"""MetricsSink: the fake and EmfMetricsSink agree on what is measured, under which dimensions.

EMF has no AWS call to back it (CloudWatch reads the documents from the function's log), so the real
sink's stdout is read back. It runs with the literal environment every function gets from the
template's Globals: a Powertools variable there that changes the documents shows here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from shareplane.adapters.emf_metrics import NAMESPACE, EmfMetricsSink
from shareplane.domain.jobs.lifecycle import JobMetricEvent

from tests.fakes.metrics import FakeMetrics
from tests.template import raw_template

#: One measurement as a dashboard sees it: (name, value, dimensions).
Measured = tuple[str, float, dict[str, str]]


@dataclass
class SinkUnderTest:
    sink: Any
    measured: Callable[[], list[Measured]]


def from_emf(text: str) -> list[Measured]:
    found = []
    for line in text.splitlines():
        document = json.loads(line)
        (directive,) = document["_aws"]["CloudWatchMetrics"]
        assert directive["Namespace"] == NAMESPACE
        ((name, value),) = [(m["Name"], document[m["Name"]]) for m in directive["Metrics"]]
        (dimensions,) = directive["Dimensions"]
        found.append(
            (
                name,
                float(value[0] if isinstance(value, list) else value),
                {d: document[d] for d in dimensions},
            )
        )
    return found


@pytest.fixture(params=["fake", "EMF"])
def under_test(request: pytest.FixtureRequest) -> Iterator[SinkUnderTest]:
    if request.param == "fake":
        fake = FakeMetrics()
        yield SinkUnderTest(fake, lambda: list(fake.emitted))
        return
    monkeypatch, capsys = request.getfixturevalue("monkeypatch"), request.getfixturevalue("capsys")
    variables = raw_template()["Globals"]["Function"]["Environment"]["Variables"]
    for name, value in variables.items():
        if isinstance(value, str):
            monkeypatch.setenv(name, value)
    capsys.readouterr()
    yield SinkUnderTest(EmfMetricsSink(), lambda: from_emf(capsys.readouterr().out))


JOB = {"jobArn": "arn:aws:batch:us-east-1:123456789012:service-job/j1"}


def test_each_measurement_goes_out_under_its_own_dimensions_only(under_test: SinkUnderTest) -> None:
    events = [JobMetricEvent("Transitions", 1, "Count"), JobMetricEvent("GPUSeconds", 5760.0, "Seconds")]
    dimensions = {"Queue": "search-p4d-queue", "Team": "ProdExp1", "Tier": "HIGHPRI", "Status": "RUNNING"}
    under_test.sink.emit(events, dimensions, JOB)
    assert under_test.measured() == [
        ("Transitions", 1.0, dimensions),
        ("GPUSeconds", 5760.0, {"Queue": "search-p4d-queue", "Team": "ProdExp1"}),
    ]


def test_a_dimension_not_given_is_none_and_a_property_is_never_one(under_test: SinkUnderTest) -> None:
    under_test.sink.emit([JobMetricEvent("QueueWaitSeconds", 12.5, "Seconds")], {"Queue": "gpu"}, JOB)
    assert under_test.measured() == [
        ("QueueWaitSeconds", 12.5, {"Queue": "gpu", "Team": "none", "Tier": "none"})
    ]


def test_a_unit_cloudwatch_does_not_know_is_refused(under_test: SinkUnderTest) -> None:
    with pytest.raises(ValueError, match="Instances"):
        under_test.sink.emit([JobMetricEvent("Transitions", 1, "Instances")], {}, JOB)
    assert under_test.measured() == []
