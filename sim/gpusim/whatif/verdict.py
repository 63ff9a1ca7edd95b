"""The what-if's answer first: what load it replayed, and each policy's result in one sentence.

Every figure is a ``PolicyResult``'s own; the sentences only choose which to say first.
"""

from __future__ import annotations

from shareplane.domain.config.shares import Tier
from shareplane.domain.explain.durations import duration_text

from .run import PolicyResult, WhatIfResult


def load_line(result: WhatIfResult) -> str:
    """What the replay is: jobs, span, capacity, load, and what the share names are."""
    sc = result.scenario
    mapping = sc.config.shares
    return (
        f"Replays {len(sc.jobs):,} jobs over {sc.window / 86400:.1f} days on {sc.capacity_gpus:,} GPUs: "
        f"offered load {sc.offered_gpus:,.1f} GPUs, {sc.offered_load:.2f} of capacity (seed {result.seed}). "
        f"Shares are the trace's own teams under the trace's ids (Philly's are hashed): the "
        f"{mapping.top_k} largest by GPU-time a share each, the others together in {mapping.other!r}."
    )


def policy_line(name: str, result: PolicyResult, highpri_slo_seconds: float) -> str:
    """One policy's result: utilization against its bound, the worst-off share, the disparity and the
    least paid back, HIGHPRI against its SLO."""
    bound = result.work_conserving_bound
    of_bound = f" ({result.utilization / bound:.1%} of the work-conserving bound)" if bound else ""
    high = result.wait_seconds[Tier.HIGHPRI.value]["p95"]
    attained = result.slo_attainment.get(Tier.HIGHPRI.value)
    within = "" if attained is None else f", {attained:.1%} of HIGHPRI jobs within it"
    spread = "" if result.disparity is None else f" (disparity {result.disparity:.2f})"
    paid = result.worst_paid_back_share
    paid_back = (
        ""
        if paid is None
        else f"; the lender least paid back held above its entitlement {paid:.1%} of what it lent"
    )
    return (
        f"{name}: utilization {result.utilization:.1%}{of_bound}; worst share received "
        f"{result.worst_team_entitlement_ratio:.3f} of its entitlement{spread}{paid_back}; HIGHPRI p95 wait "
        f"{duration_text(high)} against its {duration_text(highpri_slo_seconds)} SLO{within}."
    )


def verdict(result: WhatIfResult) -> list[str]:
    """The load, the policies that did best on utilization and on fairness, then each policy's line."""
    results = result.results
    if not results:
        return [load_line(result)]
    busiest = max(results, key=lambda n: results[n].utilization)
    fairest = max(results, key=lambda n: results[n].worst_team_entitlement_ratio)
    slo = result.scenario.config.tiers[Tier.HIGHPRI].wait_slo_seconds
    return [
        load_line(result),
        f"Highest utilization: {busiest} ({results[busiest].utilization:.1%}). Fairest (the worst-off "
        f"share's ratio highest): {fairest} ({results[fairest].worst_team_entitlement_ratio:.3f}).",
        *(policy_line(name, r, slo) for name, r in results.items()),
    ]
