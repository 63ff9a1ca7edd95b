"""The dashboard and alarms in template.yaml: valid JSON, only metrics the code emits, alarms to AlertsTopic."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from shareplane.domain.alerts.alert import FAILURE_METRIC_DIMENSIONS
from shareplane.domain.cost.billing import COST_METRICS
from shareplane.domain.jobs.lifecycle import METRIC_DIMENSIONS
from shareplane.domain.shares.metrics import REBALANCE_METRIC_DIMENSIONS

from tests.fakes.failure_world import shares_config
from tests.template import raw_template, ref_target, resources

#: Every metric the code emits in the shareplane namespace, with its dimensions.
EMITTED = {**METRIC_DIMENSIONS, **FAILURE_METRIC_DIMENSIONS, **REBALANCE_METRIC_DIMENSIONS, **COST_METRICS}
_SEARCH = re.compile(r"SEARCH\('\{shareplane,([^}]*)\}\s+MetricName=\"(\w+)\"")


def dashboard_body() -> dict[str, Any]:
    """The DashboardBody with every ${...} substituted by a plausible value, parsed."""
    (dashboard,) = resources(raw_template(), "AWS::CloudWatch::Dashboard").values()
    text = dashboard["Properties"]["DashboardBody"]["Fn::Sub"]
    defaults = {k: p.get("Default") for k, p in raw_template()["Parameters"].items()}

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in defaults and isinstance(defaults[name], (int, float)):
            return str(defaults[name])
        return name.replace(".", "-").replace(":", "-")

    return json.loads(re.sub(r"\$\{([^}!]+)\}", value, text))


def metric_references() -> list[tuple[str, str, tuple[str, ...]]]:
    """(namespace, metric, dimension names) of every metric the dashboard draws."""
    found = []
    for widget in dashboard_body()["widgets"]:
        for entry in widget.get("properties", {}).get("metrics", []):
            head = entry[0]
            if isinstance(head, dict) and "expression" in head:
                for dims, name in _SEARCH.findall(head["expression"]):
                    found.append(("shareplane", name, tuple(d.strip() for d in dims.split(","))))
            else:
                namespace, name, *rest = [e for e in entry if not isinstance(e, dict)]
                found.append((namespace, name, tuple(rest[0::2])))
    return found


def test_the_dashboard_body_is_json_with_widgets_on_the_24_column_grid() -> None:
    widgets = dashboard_body()["widgets"]
    assert len(widgets) >= 10
    for widget in widgets:
        assert 0 <= widget["x"] and widget["x"] + widget["width"] <= 24


@pytest.mark.parametrize(
    ("namespace", "metric", "dims"),
    [r for r in metric_references() if r[0] == "shareplane"],
    ids=[
        f"the dashboard's {m} is emitted with dimensions {','.join(d)}"
        for _, m, d in metric_references()
        if _ == "shareplane"
    ],
)
def test_the_dashboard_names_only_metrics_the_code_emits(
    namespace: str, metric: str, dims: tuple[str, ...]
) -> None:
    assert metric in EMITTED, f"{metric} is in no METRIC_DIMENSIONS table"
    assert dims == EMITTED[metric]


def test_the_dashboard_shows_what_operators_asked_for() -> None:
    names = {m for _, m, _ in metric_references()}
    assert {
        "InstancesInUse",
        "InstancesEntitled",
        "InstanceCapacity",
        "Utilization",
        "QueueWaitSeconds",
        "FailuresByClass",
        "Requeues",
        "Preemptions",
        "Errors",
        "Duration",
        "ApproximateNumberOfMessagesVisible",
        "CostUsd",
        "UnownedTrainingJobs",
    } <= names


def dead_letter_queues() -> set[str]:
    queues = resources(raw_template(), "AWS::SQS::Queue")
    return {
        ref_target(q["Properties"]["RedrivePolicy"]["deadLetterTargetArn"])
        for q in queues.values()
        if "RedrivePolicy" in q["Properties"]
    }


def test_every_dead_letter_queue_is_on_the_dashboard_and_in_the_dlq_alarm() -> None:
    drawn = {
        e[3]
        for w in dashboard_body()["widgets"]
        for e in w["properties"].get("metrics", [])
        if isinstance(e[0], str) and e[1] == "ApproximateNumberOfMessagesVisible"
    }
    alarm = raw_template()["Resources"]["DeadLetterQueuesNotEmptyAlarm"]["Properties"]
    alarmed = {
        ref_target(m["MetricStat"]["Metric"]["Dimensions"][0]["Value"])
        for m in alarm["Metrics"]
        if "MetricStat" in m
    }
    for dlq in dead_letter_queues():
        assert f"{dlq}-QueueName" in drawn, f"{dlq} is not on the dashboard"
        assert dlq in alarmed, f"{dlq} is not in DeadLetterQueuesNotEmptyAlarm"


def test_every_function_has_an_errors_alarm() -> None:
    alarms = resources(raw_template(), "AWS::CloudWatch::Alarm").values()
    watched = {
        ref_target(a["Properties"]["Dimensions"][0]["Value"])
        for a in alarms
        if a["Properties"].get("MetricName") == "Errors"
    }
    assert watched == set(resources(raw_template(), "AWS::Serverless::Function"))


@pytest.mark.parametrize(
    "alarm",
    sorted(resources(raw_template(), "AWS::CloudWatch::Alarm")),
    ids=lambda a: f"{a} notifies AlertsTopic",
)
def test_every_alarm_notifies_the_alerts_topic(alarm: str) -> None:
    props = raw_template()["Resources"][alarm]["Properties"]
    assert [ref_target(a) for a in props["AlarmActions"]] == ["AlertsTopic"]
    if "Metrics" in props:
        # metric math: exactly one series is the alarm's, and it names only emitted metrics
        assert sum(1 for m in props["Metrics"] if m.get("ReturnData")) == 1
        for query in props["Metrics"]:
            metric = query.get("MetricStat", {}).get("Metric", {})
            if metric.get("Namespace") == "shareplane":
                assert metric["MetricName"] in EMITTED
    elif props.get("Namespace") == "shareplane":
        assert props["MetricName"] in EMITTED
        assert tuple(d["Name"] for d in props["Dimensions"]) == EMITTED[props["MetricName"]]


def test_the_highpri_wait_alarm_default_is_the_configs_slo() -> None:
    default = raw_template()["Parameters"]["HighPriWaitSloSeconds"]["Default"]
    assert default == shares_config().tiers["HIGHPRI"].wait_slo_seconds


def test_a_dead_senders_alert_claim_expires_before_its_record_is_redelivered() -> None:
    from shareplane.domain.alerts.alert import STALE_CLAIM_SECONDS

    template = raw_template()
    timeout = template["Globals"]["Function"]["Timeout"]
    queue = template["Resources"]["HandleFailureQueue"]["Properties"]
    # A live sender finishes within the function timeout; a redelivery comes after the visibility timeout.
    assert timeout < STALE_CLAIM_SECONDS < queue["VisibilityTimeout"]


def test_the_watch_items_alarm_adds_up_every_step_a_watch_run_isolates() -> None:
    import ast
    import inspect

    from shareplane.service import watch_jobs

    # GIVEN the steps the watch code passes to `isolated` (read from its source, so a new step counts)
    tree = ast.parse(inspect.getsource(watch_jobs))
    called = {
        node.args[2].value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and getattr(node.func, "id", None) == "isolated"
        and isinstance(node.args[2], ast.Constant)
    }
    # THEN the alarm sums WatchItemsFailed over exactly those
    assert called == {"list", "reconcile", "forecast", "escalate", "gauges", "budgets"}
    alarm = resources(raw_template(), "AWS::CloudWatch::Alarm")["WatchItemsFailingAlarm"]["Properties"]
    stats = [m["MetricStat"]["Metric"] for m in alarm["Metrics"] if "MetricStat" in m]
    assert {m["MetricName"] for m in stats} == {"WatchItemsFailed"}
    assert {m["Dimensions"][0]["Value"] for m in stats} == called
    assert FAILURE_METRIC_DIMENSIONS["WatchItemsFailed"] == ("Step",)
    assert alarm["AlarmActions"] == [{"Ref": "AlertsTopic"}]
