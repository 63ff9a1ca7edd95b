"""The stored layout of the failure ledger's decision and storm-guard items, and its values back.

Plain Python values (the DynamoDB marshalling is ``dynamodb_items``'): the ledger on the table and its
in-memory fake both store these items, so a record read back is the record written, in either.

A decision item (``DECISION#<jobArn>#<attempt>`` / ``DECISION``)::

    jobArn jobId jobName jobQueue share trainingJobName tier team stormScope
    action class rule reason severity fix attempt budgetLeft delaySeconds
    mutations removals storm why summary chain{origin failures requeues spot displacedBy reclaimedAt}
    decidedAt dueAt applied scheduled newJobArn clientToken refused alerted

``mutations`` keeps the decision's payload changes; the paths it removes are listed again in
``removals``, because DynamoDB drops a None value from a map.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..domain.config.failure_rules import FailureClass, Severity
from ..domain.failures.decision import Action, FailureDecision
from ..domain.failures.record import Applied, DecisionRecord, PriorityRaise, StormFailure
from ..domain.failures.requeue import ChainState


def decision_item(record: DecisionRecord) -> dict[str, Any]:
    """The attributes of a decision item (without its keys, ``applied`` and TTL)."""
    decision, chain = record.decision, record.chain
    return {
        "jobArn": record.job_arn,
        "jobId": record.job_id,
        "jobName": record.job_name,
        "jobQueue": record.job_queue,
        "share": record.share,
        "trainingJobName": record.training_job_name,
        "action": decision.action.value,
        "class": decision.failure_class.value,
        "rule": decision.rule_id,
        "reason": decision.reason_excerpt,
        "severity": decision.severity.value,
        "fix": decision.fix,
        "attempt": decision.attempt,
        "budgetLeft": decision.budget_left,
        "delaySeconds": decision.delay_seconds,
        "mutations": dict(decision.mutations),
        "removals": [k for k, v in decision.mutations.items() if v is None],
        "storm": decision.storm,
        "why": decision.why,
        "summary": decision.summary(),
        "chain": {
            "origin": chain.origin_job_id,
            "failures": chain.failures,
            "requeues": chain.requeues,
            "spot": chain.spot_interruptions,
            "displacedBy": list(chain.displaced_by),
            "reclaimedAt": chain.reclaimed_at,
        },
        "decidedAt": record.decided_at,
        "dueAt": record.due_at,
        "tier": record.tier,
        "team": record.team,
        "stormScope": record.storm_scope,
    }


def decision_from_item(item: Mapping[str, Any]) -> DecisionRecord:
    """The record a decision item stores (the decision rebuilt as it was decided)."""
    mutations: dict[str, object] = dict(item.get("mutations") or {})
    for removed in item.get("removals") or ():
        mutations[removed] = None
    decision = FailureDecision(
        action=Action(item["action"]),
        failure_class=FailureClass(item["class"]),
        rule_id=item["rule"],
        reason_excerpt=item.get("reason") or "",
        severity=Severity(item["severity"]),
        fix=item.get("fix") or "",
        attempt=int(item.get("attempt") or 0),
        budget_left=int(item.get("budgetLeft") or 0),
        delay_seconds=int(item.get("delaySeconds") or 0),
        mutations=mutations,
        storm=bool(item.get("storm")),
        why=item.get("why") or "",
    )
    chain = item.get("chain") or {}
    decided_at = float(item.get("decidedAt") or 0)
    return DecisionRecord(
        job_arn=str(item["jobArn"]),
        decision=decision,
        chain=ChainState(
            chain.get("origin"),
            int(chain.get("failures") or 0),
            int(chain.get("requeues") or 1),
            int(chain.get("spot") or 0),
            tuple(chain.get("displacedBy") or ()),
            int(chain["reclaimedAt"]) if chain.get("reclaimedAt") is not None else None,
        ),
        decided_at=decided_at,
        due_at=float(item["dueAt"]) if item.get("dueAt") is not None else decided_at,
        job_id=item.get("jobId"),
        job_name=item.get("jobName"),
        job_queue=item.get("jobQueue"),
        share=item.get("share") or "none",
        training_job_name=item.get("trainingJobName"),
        tier=item.get("tier"),
        team=item.get("team"),
        storm_scope=item.get("stormScope"),
        applied=bool(item.get("applied")),
        scheduled=bool(item.get("scheduled")),
        result=Applied(
            new_job_arn=item.get("newJobArn"),
            client_token=item.get("clientToken"),
            refused=item.get("refused"),
            alerted=item.get("alerted"),
        ),
    )


def applied_attributes(result: Applied) -> dict[str, Any]:
    """The attributes applying sets beside ``applied`` (only those that are set)."""
    attributes = {
        "newJobArn": result.new_job_arn,
        "clientToken": result.client_token,
        "refused": result.refused,
        "alerted": result.alerted,
    }
    return {name: value for name, value in attributes.items() if value is not None}


def history_attributes(record: DecisionRecord) -> dict[str, Any]:
    """The structured half of a FAILURE_DECISION history item (its ``reason`` is the readable half)."""
    decision = record.decision
    return {
        "failureClass": decision.failure_class.value,
        "rule": decision.rule_id,
        "action": decision.action.value,
        "failureReason": decision.reason_excerpt,
        "why": decision.why,
    }


def priority_raise_attributes(raised: PriorityRaise | None) -> dict[str, int]:
    """What a PRIORITY_ESCALATED history item keeps beside its reason: the priority before and after."""
    if raised is None:
        return {}
    return {"fromPriority": raised.from_priority, "toPriority": raised.to_priority}


def storm_failure_item(failure: StormFailure) -> dict[str, Any]:
    """The attributes of a storm-guard failure item (``SHARE#<scope>`` / ``FAIL#<ms>#<jobArn>``)."""
    return {
        "share": failure.scope,
        "at": failure.at,
        "job": failure.job_arn,
        "jobName": failure.job_name,
        "class": failure.failure_class,
        "reason": failure.reason,
    }


def storm_failure_from_item(item: Mapping[str, Any]) -> StormFailure:
    """The failure a storm-guard item stores."""
    return StormFailure(
        scope=str(item["share"]),
        at=float(item["at"]),
        job_arn=str(item["job"]),
        job_name=item.get("jobName"),
        failure_class=item.get("class"),
        reason=item.get("reason"),
    )
