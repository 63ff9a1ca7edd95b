"""FailureLedger (adapters/failure_ledger.py DynamoFailureLedger) in memory."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from shareplane.domain.alerts import Alert
from shareplane.domain.lifecycle import HistoryEntry

from tests.fakes import alert_claims


@dataclass
class FakeFailureLedger:
    """The ledger's conditional-write semantics, in memory: decisions and alert items share ``items``."""

    items: dict[str, dict[str, Any]] = field(default_factory=dict)
    history: dict[str, dict[str, Any]] = field(default_factory=dict)
    failures: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    ticks: dict[str, str] = field(default_factory=dict)

    def claim_decision(
        self,
        key: str,
        record: Mapping[str, Any],
        history: HistoryEntry,
        job_arn: str,
        share_failure: Mapping[str, Any] | None,
    ) -> dict[str, Any] | None:
        if key in self.items:
            return copy.deepcopy(self.items[key])
        self.items[key] = {**copy.deepcopy(dict(record)), "applied": False}
        self.history[f"{job_arn}|{history.key}"] = {"entry": history, "job": job_arn}
        if share_failure is not None:
            self.failures.setdefault(share_failure["share"], []).append(dict(share_failure))
        return None

    def last_tick(self, runner: str) -> str | None:
        return self.ticks.get(runner)

    def advance_tick(self, runner: str, tick: str) -> None:
        if runner not in self.ticks or self.ticks[runner] < tick:
            self.ticks[runner] = tick

    def load_decision(self, key: str) -> dict[str, Any] | None:
        return copy.deepcopy(self.items.get(key))

    def mark_applied(self, key: str, result: Mapping[str, Any]) -> bool:
        item = self.items.get(key)
        if item is None or item.get("applied"):
            return False
        item.update(applied=True, **result)
        return True

    def mark_scheduled(self, key: str) -> None:
        self.items[key]["scheduled"] = True

    def add_history(self, job_arn: str, entry: HistoryEntry, extra: Mapping[str, Any]) -> bool:
        key = f"{job_arn}|{entry.key}"
        if key in self.history:
            return False
        self.history[key] = {"entry": entry, "job": job_arn, **extra}
        return True

    def claim_alert(
        self, alert: Alert, now: float, quiet_seconds: float, *, claimed_at: float | None = None
    ) -> bool:
        return alert_claims.claim_alert(self.items, alert, now, quiet_seconds, claimed_at)

    def confirm_alert(self, alert: Alert, now: float) -> None:
        alert_claims.confirm_alert(self.items, alert, now)

    def release_alert(self, alert: Alert) -> None:
        alert_claims.release_alert(self.items, alert)

    def share_failures(self, share: str, since: float) -> list[dict[str, Any]]:
        return [f for f in self.failures.get(share, []) if f["at"] > since]

    def alert_sent_at(self, dedupe_key: str) -> float | None:
        return self.items.get(dedupe_key, {}).get("sentAt")
