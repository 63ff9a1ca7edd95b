"""ReclaimLedger (adapters/reclaim_ledger.py DynamoReclaimLedger) in memory.

Decisions are kept as the table's items (adapters/reclaim_items.py), so what the fake gives back went
through the same layout as on the table.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from shareplane.adapters.reclaim_items import reclaim_item, reclaim_of
from shareplane.domain.jobs.lifecycle import HistoryEntry
from shareplane.domain.reclaim.plan import ClaimBudgets
from shareplane.domain.reclaim.record import ReclaimRecord


@dataclass
class FakeReclaimLedger:
    """The ledger's conditional-write semantics (one transaction per claim), in memory."""

    decisions: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    victims: dict[str, tuple[str, str]] = field(default_factory=dict)
    per_job: dict[str, int] = field(default_factory=dict)
    per_day: dict[str, int] = field(default_factory=dict)
    per_window: dict[str, int] = field(default_factory=dict)
    history: dict[str, HistoryEntry] = field(default_factory=dict)

    def victims_for(self, beneficiary_id: str) -> int:
        return self.per_job.get(beneficiary_id, 0)

    def victims_on(self, day: str) -> int:
        return self.per_day.get(day, 0)

    def victims_in(self, window: str) -> int:
        return self.per_window.get(window, 0)

    def stopping(self) -> dict[str, str]:
        return {v: b for v, (b, _) in self.victims.items()}

    def decision_of(self, victim_id: str) -> str | None:
        return self.victims[victim_id][1] if victim_id in self.victims else None

    def claim(
        self, record: ReclaimRecord, histories: Sequence[tuple[str, HistoryEntry]], budgets: ClaimBudgets
    ) -> str:
        day, window = budgets.day, budgets.window
        key = (record.job_id, record.decision_id)
        if key in self.decisions:
            return "exists"
        ids = [v.job_id for v in record.victims]
        n = len(ids)
        held = self.per_job.get(record.job_id, 0)
        if (
            any(i in self.victims for i in ids)
            or held + n > budgets.max_per_job
            or (record.victims_before is not None and held != record.victims_before)
            or self.per_day.get(day, 0) + n > budgets.max_per_day
            or self.per_window.get(window, 0) + n > budgets.max_per_window
            or any(f"{arn}|{e.key}" in self.history for arn, e in histories)
        ):
            return "refused"
        self.decisions[key] = reclaim_item(record)
        for i in ids:
            self.victims[i] = key
        self.per_job[record.job_id] = held + n
        self.per_day[day] = self.per_day.get(day, 0) + n
        self.per_window[window] = self.per_window.get(window, 0) + n
        for arn, entry in histories:
            self.history[f"{arn}|{entry.key}"] = entry
        return "claimed"

    def release(
        self,
        record: ReclaimRecord,
        histories: Sequence[tuple[str, HistoryEntry]],
        budgets: ClaimBudgets,
        unstopped: int,
    ) -> bool:
        key = (record.job_id, record.decision_id)
        item = self.decisions.get(key)
        ids = [v.job_id for v in record.victims]
        counters = [
            (self.per_job, record.job_id),
            (self.per_day, budgets.day),
            (self.per_window, budgets.window),
        ]
        if (
            item is None
            or item.get("applied")
            or any(self.victims.get(i, (None,))[0] != record.job_id for i in ids)
            or any(counter.get(name, 0) < unstopped for counter, name in counters if unstopped)
        ):
            return False
        del self.decisions[key]
        for i in ids:
            del self.victims[i]
        for counter, name in counters:
            if unstopped:
                counter[name] -= unstopped
        for arn, entry in histories:
            self.history.pop(f"{arn}|{entry.key}", None)
        return True

    def load(self, beneficiary_id: str, decision_id: str) -> ReclaimRecord | None:
        item = self.decisions.get((beneficiary_id, decision_id))
        return reclaim_of(copy.deepcopy(item)) if item is not None else None

    def reclaims(self, since: float) -> list[ReclaimRecord]:
        # The table lists by the index's sort key: the decision time in whole milliseconds.
        since_ms = int(since * 1000)
        found = [
            reclaim_of(i) for i in self.decisions.values() if int(float(i["decidedAt"]) * 1000) >= since_ms
        ]
        return sorted(found, key=lambda r: (r.decided_at, r.decision_id))

    def record_dry_run(self, record: ReclaimRecord) -> bool:
        key = (record.job_id, record.decision_id)
        if key in self.decisions:
            return False
        self.decisions[key] = reclaim_item(record)
        return True

    def mark_applied(self, beneficiary_id: str, decision_id: str, applied_at: float) -> bool:
        item = self.decisions.get((beneficiary_id, decision_id))
        if item is None or item.get("applied"):
            return False
        item.update(applied=True, appliedAt=applied_at)
        return True
