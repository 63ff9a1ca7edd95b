"""Shares: fair-share math, the rebalancer's policy, tier charge, ownership and Batch's view.

Its modules, each one job (callers import from the module; importing the package loads
none of them, so a handler's cold start pays only for what it uses):

- ``batch_shares``: What AWS Batch says about a queue's shares, the settings it runs by, and the updates a
  plan makes.
- ``fairshare``: AWS Batch fair-share math: weights, decayed usage, the next share to serve, the reserved
  fraction.
- ``metrics``: The share rebalancer's metrics: names, units and their (low-cardinality) dimensions.
- ``observation``: What the rebalancer observed, typed once: a ``QueueObservation`` in, the
  ``ShareSnapshot`` out.
- ``ownership``: Who owns a share's setting: the template its baseline, the rebalancer the value in force.
- ``rebalance``: The share rebalancer's pure policy: an immutable ``ShareSnapshot`` in, a ``RebalancePlan``
  out.
- ``state``: What the rebalancer keeps between runs (its state) and of each plan (its audit record), as
  values.
- ``tier_charge``: A team's own-share tiers are charged to the team, so HIGHPRI priority does not grow its
  entitlement.
"""

__all__ = [
    "batch_shares",
    "fairshare",
    "metrics",
    "observation",
    "ownership",
    "rebalance",
    "state",
    "tier_charge",
]
