"""FailureLedger (adapters/failure_ledger.py DynamoFailureLedger) in memory, holding the same item layout."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from shareplane.adapters.failure_items import (
    applied_attributes,
    decision_from_item,
    decision_item,
    priority_raise_attributes,
    storm_failure_from_item,
    storm_failure_item,
)
from shareplane.domain.config.failure_rules import FailureClass, Severity
from shareplane.domain.failures.decision import Action, FailureDecision
from shareplane.domain.failures.record import Applied, DecisionRecord, PriorityRaise, StormFailure
from shareplane.domain.failures.requeue import ChainState
from shareplane.domain.jobs.lifecycle import HistoryEntry


@dataclass
class FakeFailureLedger:
    """The ledger's conditional-write semantics, in memory: decision items by key in ``items``."""

    items: dict[str, dict[str, Any]] = field(default_factory=dict)
    history: dict[str, dict[str, Any]] = field(default_factory=dict)
    failures: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def claim_decision(
        self, key: str, record: DecisionRecord, history: HistoryEntry, share_failure: StormFailure | None
    ) -> DecisionRecord | None:
        if key in self.items:
            return decision_from_item(self.items[key])
        self.items[key] = {**decision_item(record), "applied": False}
        job_arn = record.job_arn
        self.history[f"{job_arn}|{history.key}"] = {"entry": history, "job": job_arn}
        if share_failure is not None:
            self.failures.setdefault(share_failure.scope, []).append(storm_failure_item(share_failure))
        return None

    def load_decision(self, key: str) -> DecisionRecord | None:
        item = self.items.get(key)
        return decision_from_item(copy.deepcopy(item)) if item is not None else None

    def mark_applied(self, key: str, result: Applied) -> bool:
        item = self.items.get(key)
        if item is None or item.get("applied"):
            return False
        item.update(applied=True, **applied_attributes(result))
        return True

    def mark_scheduled(self, key: str) -> None:
        self.items[key]["scheduled"] = True

    def add_history(self, job_arn: str, entry: HistoryEntry, raised: PriorityRaise | None = None) -> bool:
        key = f"{job_arn}|{entry.key}"
        if key in self.history:
            return False
        self.history[key] = {"entry": entry, "job": job_arn, **priority_raise_attributes(raised)}
        return True

    def share_failures(self, share: str, since: float) -> list[StormFailure]:
        return [storm_failure_from_item(f) for f in self.failures.get(share, []) if f["at"] > since]


def decided(
    job_arn: str,
    action: Action = Action.REQUEUE,
    failure_class: FailureClass = FailureClass.INTERNAL_ERROR,
    *,
    at: float = 1000.0,
    mutations: Mapping[str, object] | None = None,
) -> DecisionRecord:
    """A decision record as the failure path stores it (the ledger tests' decisions)."""
    decision = FailureDecision(
        action=action,
        failure_class=failure_class,
        rule_id="test-rule",
        reason_excerpt="failed",
        severity=Severity.WARNING,
        fix="",
        attempt=1,
        budget_left=2,
        mutations=mutations or {},
    )
    return DecisionRecord(job_arn=job_arn, decision=decision, chain=ChainState(), decided_at=at, due_at=at)
