"""Cost and budgets: each training job costed once by billable time, budgets per team per month.

Its modules, each one job (callers import from the module; importing the package loads
none of them, so a handler's cold start pays only for what it uses):

- ``billing``: What jobs cost: each SageMaker training job (an attempt of a Batch job) costed once, by
  billable time.
- ``budget``: Budgets per team per month: where a team stands, its burn-rate forecast, alerts, and
  admission.
- ``budget_alerts``: The budget alert: one per team, month and threshold, routed by team and kind like every
  alert.
"""

__all__ = [
    "billing",
    "budget",
    "budget_alerts",
]
