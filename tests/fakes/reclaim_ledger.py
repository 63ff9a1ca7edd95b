"""ReclaimLedger (adapters/reclaim_ledger.py DynamoReclaimLedger) in memory."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from shareplane.domain.alerts import Alert
from shareplane.domain.lifecycle import HistoryEntry

from tests.fakes import alert_claims


@dataclass
class FakeReclaimLedger:
    """The ledger's conditional-write semantics (one transaction per claim), in memory."""

    decisions: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    victims: dict[str, tuple[str, str]] = field(default_factory=dict)
    per_job: dict[str, int] = field(default_factory=dict)
    per_day: dict[str, int] = field(default_factory=dict)
    history: dict[str, HistoryEntry] = field(default_factory=dict)
    alert_items: dict[str, dict[str, Any]] = field(default_factory=dict)
    ticks: dict[str, str] = field(default_factory=dict)

    def last_tick(self, runner: str) -> str | None:
        return self.ticks.get(runner)

    def advance_tick(self, runner: str, tick: str) -> None:
        if runner not in self.ticks or self.ticks[runner] < tick:
            self.ticks[runner] = tick

    def victims_for(self, beneficiary_id: str) -> int:
        return self.per_job.get(beneficiary_id, 0)

    def victims_on(self, day: str) -> int:
        return self.per_day.get(day, 0)

    def stopping(self) -> dict[str, str]:
        return {v: b for v, (b, _) in self.victims.items()}

    def decision_of(self, victim_id: str) -> str | None:
        return self.victims[victim_id][1] if victim_id in self.victims else None

    def claim(
        self,
        record: Mapping[str, Any],
        histories: Sequence[tuple[str, HistoryEntry]],
        *,
        day: str,
        max_per_job: int,
        max_per_day: int,
    ) -> str:
        key = (record["jobId"], record["decisionId"])
        if key in self.decisions:
            return "exists"
        ids = [v["jobId"] for v in record["victims"]]
        n = len(ids)
        if (
            any(i in self.victims for i in ids)
            or self.per_job.get(record["jobId"], 0) + n > max_per_job
            or ("victimsBefore" in record and self.per_job.get(record["jobId"], 0) != record["victimsBefore"])
            or self.per_day.get(day, 0) + n > max_per_day
            or any(f"{arn}|{e.key}" in self.history for arn, e in histories)
        ):
            return "refused"
        self.decisions[key] = {**copy.deepcopy(dict(record)), "applied": False}
        for i in ids:
            self.victims[i] = (record["jobId"], record["decisionId"])
        self.per_job[record["jobId"]] = self.per_job.get(record["jobId"], 0) + n
        self.per_day[day] = self.per_day.get(day, 0) + n
        for arn, entry in histories:
            self.history[f"{arn}|{entry.key}"] = entry
        return "claimed"

    def load(self, beneficiary_id: str, decision_id: str) -> dict[str, Any] | None:
        return copy.deepcopy(self.decisions.get((beneficiary_id, decision_id)))

    def record_dry_run(self, record: Mapping[str, Any]) -> bool:
        key = (record["jobId"], record["decisionId"])
        if key in self.decisions:
            return False
        self.decisions[key] = {**copy.deepcopy(dict(record)), "applied": False}
        return True

    def mark_applied(self, beneficiary_id: str, decision_id: str, result: Mapping[str, Any]) -> bool:
        item = self.decisions.get((beneficiary_id, decision_id))
        if item is None or item.get("applied"):
            return False
        item.update(applied=True, **result)
        return True

    def claim_alert(
        self, alert: Alert, now: float, quiet_seconds: float, *, claimed_at: float | None = None
    ) -> bool:
        return alert_claims.claim_alert(self.alert_items, alert, now, quiet_seconds, claimed_at)

    def confirm_alert(self, alert: Alert, now: float) -> None:
        alert_claims.confirm_alert(self.alert_items, alert, now)

    def release_alert(self, alert: Alert) -> None:
        alert_claims.release_alert(self.alert_items, alert)
