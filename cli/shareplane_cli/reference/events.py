"""The events reference: which EventBridge events reach each function, from template.yaml and events/.

Each rule (a pattern or a schedule) that targets a function's queue, the function that polls that
queue, and the sample events in ``events/`` that the rule's pattern matches.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import markdown
from .markdown import code, table
from .metrics import raw_template

__all__ = ["Rule", "page", "rules", "samples"]


@dataclass(frozen=True)
class Rule:
    """An EventBridge rule that delivers to a function's queue."""

    logical_id: str
    function: str
    description: str
    pattern: dict[str, Any] | None
    schedule: str | dict[str, str] | None


def _target(value: Any) -> str | None:
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        target = value["Fn::GetAtt"]
        return str(target[0] if isinstance(target, list) else target.split(".")[0])
    if isinstance(value, dict) and "Ref" in value:
        return str(value["Ref"])
    return None


def _function_of_queue(resources: dict[str, Any]) -> dict[str, str]:
    """Queue logical id -> the function (logical id) whose SQS event source polls it."""
    found = {}
    for name, resource in resources.items():
        if resource["Type"] != "AWS::Serverless::Function":
            continue
        for event in resource["Properties"].get("Events", {}).values():
            if event.get("Type") == "SQS":
                queue = _target(event["Properties"]["Queue"])
                if queue:
                    found[queue] = name
    return found


def rules(repo: Path) -> list[Rule]:
    """Every rule of the template whose target is a function's queue, in the template's order."""
    resources = raw_template(repo)["Resources"]
    queues = _function_of_queue(resources)
    found = []
    for name, resource in resources.items():
        if resource["Type"] != "AWS::Events::Rule":
            continue
        props = resource["Properties"]
        for target in props.get("Targets", []):
            queue = _target(target.get("Arn"))
            if queue in queues:
                found.append(
                    Rule(
                        name,
                        queues[queue],
                        props.get("Description", ""),
                        props.get("EventPattern"),
                        props.get("ScheduleExpression"),
                    )
                )
    return found


def samples(repo: Path) -> dict[str, dict[str, Any]]:
    """The sample events of ``events/``, by file name."""
    return {p.name: json.loads(p.read_text()) for p in sorted((repo / "events").glob("*.json"))}


def matches(
    pattern: dict[str, Any] | None, event: dict[str, Any], schedule: str | dict[str, str] | None, name: str
) -> bool:
    """Whether a sample is one of the rule's: its source and detail-type (and detail prefixes) match;
    a scheduled event matches the schedule whose function it names."""
    if schedule is not None:
        return bool(event.get("detail-type") == "Scheduled Event" and name in json.dumps(event["resources"]))
    if pattern is None:
        return False
    for key in ("source", "detail-type"):
        if key in pattern and event.get(key) not in pattern[key]:
            return False
    return _detail_matches(pattern.get("detail", {}), event.get("detail", {}))


def _detail_matches(pattern: dict[str, Any], detail: Any) -> bool:
    for key, wanted in pattern.items():
        value = detail.get(key) if isinstance(detail, dict) else None
        if isinstance(wanted, dict):
            if not _detail_matches(wanted, value):
                return False
            continue
        ok = False
        for option in wanted:
            if isinstance(option, dict) and "prefix" in option:
                prefixes = option["prefix"] if isinstance(option["prefix"], list) else [option["prefix"]]
                ok = ok or (isinstance(value, str) and any(value.startswith(p) for p in prefixes))
            elif isinstance(option, dict):
                ok = ok or bool(value)
            else:
                ok = ok or value == option
        if not ok:
            return False
    return True


def _pattern_text(rule: Rule) -> str:
    if isinstance(rule.schedule, dict) and "Ref" in rule.schedule:
        return f"schedule: the template parameter {code(rule.schedule['Ref'])}"
    if rule.schedule is not None:
        return f"schedule {code(rule.schedule)}"
    pattern = rule.pattern or {}
    parts = [f"{k}: {', '.join(map(str, v))}" for k, v in pattern.items() if k != "detail"]
    if "detail" in pattern:
        parts.append("detail: " + json.dumps(pattern["detail"], separators=(", ", ": ")))
    return code("; ".join(parts))


def page(repo: Path) -> str:
    """The events reference page."""
    events = samples(repo)
    rows = []
    listed: set[str] = set()
    for rule in rules(repo):
        schedule_key = rule.logical_id.removesuffix("Schedule") if rule.schedule else ""
        names = [
            n
            for n, e in events.items()
            if matches(rule.pattern, e, rule.schedule, _schedule_word(schedule_key))
        ]
        listed.update(names)
        rows.append(
            (
                code(rule.function),
                code(rule.logical_id),
                _pattern_text(rule),
                rule.description,
                ", ".join(code(f"events/{n}") for n in names) or "-",
            )
        )
    unmatched = sorted(set(events) - listed)
    other = ""
    if unmatched:
        other = "## Other samples\n\n" + "\n".join(f"- `events/{n}`" for n in unmatched)
    intro = (
        "Every EventBridge rule in `template.yaml` that delivers to a function's SQS queue (each "
        "function polls its own queue, with a dead-letter queue after 5 receives), the events it "
        "matches, and the realistic samples in `events/` that match it (`sam local invoke -e`, the "
        "tests and the emulator use them). `events/scenarios/*.jsonl` hold whole streams, one per "
        "scenario. Besides these, `reclaim_capacity` takes its own delayed re-checks of waiting jobs "
        '(`reclaim-due` messages it sends itself) and a manual run (`{"shareplane": "reclaim"}`), '
        '`detect_idle` a manual run (`{"shareplane": "detect-idle"}`), and `handle_failure` its own '
        "requeue-due messages (SQS delays, or a one-time EventBridge Scheduler schedule for waits over "
        "15 minutes)."
    )
    return markdown.page(
        "Events",
        intro,
        "## Rules\n\n" + table(("function", "rule", "matches", "description", "samples in events/"), rows),
        other,
    )


def _schedule_word(logical_id_stem: str) -> str:
    """The rule-name stem a scheduled sample's resource ARN carries (``WatchJobs``, ``RebalanceShares``)."""
    return logical_id_stem
