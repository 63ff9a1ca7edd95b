"""A refused AWS call of the control plane's own: one alert naming the permission and the role.

Every handler's record processing goes through ``guard``: when AWS answered AccessDenied (recognised by
a ``DenialReader``: the composition root wires ``adapters.aws_errors``, which knows botocore's errors,
so this module never does), the missing permission is a deployment error that no retry fixes. It is
alerted once per role and action (the claim of ``ports.AlertLedger``, the ledger every alert goes through
and `shareplane alerts` lists, keeps concurrent and later instances quiet for the kind's window in
``ALERT_SPECS``; a role that cannot even write the ledger falls back to once per instance), logged, and
re-raised as PermissionDeniedError so the record itself is kept: it retries and ends in the function's
dead-letter queue, to be replayed once the role is fixed.

It claims and publishes itself rather than through ``alerting.AlertSender``: the sender needs the shares
config, whose read may be the very call AWS refused, and fails its caller when publishing fails, while a
report must never hide the refusal it reports.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import wraps
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ..domain.errors import PermissionDeniedError

if TYPE_CHECKING:
    from ..domain.alerts.alert import Alert
    from .ports import AlertLedger, AlertPublisher

logger = logging.getLogger("shareplane.permissions")

R = TypeVar("R")


class DenialReader(Protocol):
    """The permission problem behind an exception (or one it was raised from); None for any other."""

    def __call__(self, exc: BaseException, /) -> PermissionDeniedError | None: ...


@dataclass
class PermissionAlerts:
    """Where a refused call is reported: the alerts topic, the alert ledger, the clock."""

    function: str
    alerts: Callable[[], AlertPublisher]
    ledger: Callable[[], AlertLedger]
    clock: Callable[[], float]
    #: Alerts this instance sent (dedupe keys): the fallback when the ledger itself is refused.
    sent: set[str] = field(default_factory=set)

    def report(self, denied: PermissionDeniedError) -> bool:
        """Alert once for this role and action; True when this call sent it. Never raises."""
        from ..domain.alerts.alert import permission_denied_alert  # only on this rare path: not at cold start

        alert = permission_denied_alert(
            action=denied.action,
            resource=denied.resource,
            role=denied.role,
            function=self.function,
            message=denied.aws_message,
        )
        logger.error(
            "permission denied",
            extra={"action": denied.action, "resource": denied.resource, "role": denied.role},
        )
        if alert.dedupe_key in self.sent:
            return False
        now = self.clock()
        claimed = self._claim(alert, now)
        if claimed is False:
            return False
        try:
            self.alerts().publish(alert.subject, dict(alert.body), alert.attributes)
        except Exception as exc:  # noqa: BLE001 - the report must not hide the refusal it reports
            logger.error("permission alert not sent", extra={"alert": alert.dedupe_key, "error": repr(exc)})
            if claimed:
                self._quietly(lambda: self.ledger().release_alert(alert))
            return False
        self.sent.add(alert.dedupe_key)
        if claimed:
            self._quietly(lambda: self.ledger().confirm_alert(alert, now))
        return True

    def _claim(self, alert: Alert, now: float) -> bool | None:
        """The ledger's claim; None when the ledger could not be asked (then this instance decides)."""
        from ..domain.alerts.kinds import fixed_quiet_seconds

        try:
            return self.ledger().claim_alert(alert, now, fixed_quiet_seconds(alert.kind), claimed_at=now)
        except Exception as exc:  # noqa: BLE001 - a refused ledger write is the same kind of problem
            logger.error("alert ledger unavailable", extra={"alert": alert.dedupe_key, "error": repr(exc)})
            return None

    @staticmethod
    def _quietly(step: Callable[[], Any]) -> None:
        try:
            step()
        except Exception as exc:  # noqa: BLE001
            logger.error("alert ledger update failed", extra={"error": repr(exc)})


def guard(
    read_denial: DenialReader, reporter: Callable[[], PermissionAlerts]
) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """Wrap a record handler: an AccessDenied is reported once and re-raised as PermissionDeniedError."""

    def decorate(handler: Callable[..., R]) -> Callable[..., R]:
        @wraps(handler)
        def guarded(*args: Any, **kwargs: Any) -> R:
            try:
                return handler(*args, **kwargs)
            except Exception as exc:
                denied = read_denial(exc)
                if denied is None:
                    raise
                reporter().report(denied)
                if denied is exc:
                    raise
                raise denied from exc

        return guarded

    return decorate
