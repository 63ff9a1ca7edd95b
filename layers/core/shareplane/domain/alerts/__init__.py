"""Alerts: what an alert says, where it routes, what is counted, and how a sent alert is listed.

Its modules, each one job (callers import from the module; importing the package loads
none of them, so a handler's cold start pays only for what it uses):

- ``kinds``: Every alert kind, one row each (``ALERT_SPECS``): who sends it, when, its severity, quiet window
  and wording.
- ``alert``: Alerts and failure-path metrics, decided purely: an alert's subject, body and routing from its
  kind's row and its facts, what is counted.
- ``sent``: An alert as the ledger lists it once sent: when, what, to whom (``shareplane alerts``).
"""

__all__ = [
    "alert",
    "kinds",
    "sent",
]
