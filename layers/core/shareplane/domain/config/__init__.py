"""The one declarative shares config (teams, capacity, tiers, policies) and the failure path's rules.

Its modules, each one job (callers import from the module; importing the package loads
none of them, so a handler's cold start pays only for what it uses):

- ``failure_rules``: Failure-path config: the ordered classifier rules, per-class and per-tier retry policy,
  guards.
- ``shares``: The one declarative shares config: teams, capacity, priority tiers. Validated here, read
  everywhere.
- ``strict_model``: The base of every config model: unknown fields refused, values frozen.
"""

__all__ = [
    "failure_rules",
    "shares",
    "strict_model",
]
