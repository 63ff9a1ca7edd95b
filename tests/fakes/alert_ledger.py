"""AlertLedger (adapters/alert_ledger.py DynamoAlertLedger) and TickWatermarks (adapters/tick_ledger.py)
in memory.

Alert and sent items are kept in the table's layout (adapters/alert_items.py) and listed back through it,
with the table's claim condition as ``claim_is_quiet``, so a claim or a listing the fake answers is the one
the table answers (tests/integration/contracts/test_alert_ledger_contract.py runs both).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from shareplane.adapters.alert_items import alert_item, claim_is_quiet, sent_alerts_of, sent_item
from shareplane.domain.alerts.alert import Alert
from shareplane.domain.alerts.sent import SentAlert
from shareplane.domain.config.shares import SharesConfig
from shareplane.service.alerting import AlertSender
from shareplane.service.ports import AlertPublisher, MetricsSink


@dataclass
class FakeAlertLedger:
    """Every alert's dedupe item, by its key (``ALERT#<job or share>#<kind>``), and each send's item."""

    items: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Sent items by their key and sort key (``SENT#<epoch ms>``).
    sends: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)

    def claim_alert(
        self, alert: Alert, now: float, quiet_seconds: float, *, claimed_at: float | None = None
    ) -> bool:
        lease = now if claimed_at is None else claimed_at
        if claim_is_quiet(self.items.get(alert.dedupe_key), now, lease):
            return False
        self.items[alert.dedupe_key] = alert_item(alert, now, quiet_seconds, lease)
        return True

    def confirm_alert(self, alert: Alert, now: float) -> None:
        self.items[alert.dedupe_key]["sentAt"] = now
        sent = sent_item(alert, now)
        self.sends[(sent["pk"], sent["sk"])] = sent

    def release_alert(self, alert: Alert) -> None:
        if "sentAt" not in self.items.get(alert.dedupe_key, {}):
            self.items.pop(alert.dedupe_key, None)

    def alert_sent_at(self, dedupe_key: str) -> float | None:
        return self.items.get(dedupe_key, {}).get("sentAt")

    def alerts(self, since: float) -> list[SentAlert]:
        # The index's range, as the table reads it: sort keys from ``since`` (epoch ms) on.
        start = f"{int(since * 1000):013d}"
        indexed = [*self.items.values(), *self.sends.values()]
        return sent_alerts_of(i for i in indexed if i["gsi1sk"] >= start)


@dataclass
class FakeTickWatermarks:
    """Each runner's newest tick, only ever moved forward."""

    ticks: dict[str, str] = field(default_factory=dict)

    def last_tick(self, runner: str) -> str | None:
        return self.ticks.get(runner)

    def advance_tick(self, runner: str, tick: str) -> None:
        if runner not in self.ticks or self.ticks[runner] < tick:
            self.ticks[runner] = tick


class AlertingWorld(Protocol):
    """What a world of fakes holds that its alerts go through."""

    alert_ledger: FakeAlertLedger
    alerts: AlertPublisher
    metrics: MetricsSink
    config: SharesConfig
    clock: Callable[[], float]


def sender_of(world: AlertingWorld) -> AlertSender:
    """The world's sender: its alert ledger, its topic, its metrics, its config and clock."""
    return AlertSender(
        ledger=world.alert_ledger,
        topic=world.alerts,
        metrics=world.metrics,
        config=world.config,
        clock=world.clock,
    )
