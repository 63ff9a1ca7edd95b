"""Who lends idle entitlement and who borrows it, at an instant: one rule for the rebalancer's credits
design (``rebalance.credit_rates``), the what-if's lend/payback ledger and the demo's."""

from __future__ import annotations

from collections.abc import Sequence


def loans(
    held: Sequence[float], entitled: Sequence[float], unentitled: float = 0.0
) -> tuple[list[float], list[float]]:
    """Units each team lends and is paid back (borrows) at an instant: ``(lent, paid_back)``, team by team.

    With ``held_i`` the units team ``i`` holds (all its tier identifiers together) and ``E_i`` its
    entitlement, the capacity on loan is ``L = min(sum of (E_i - held_i)+, sum of (held_i - E_i)+ -
    unentitled)``: entitlement left idle by some teams and held by others beyond theirs, once the
    capacity nobody is entitled to (borrowed from nobody) is used up. A team holding less than its
    entitlement *lends* its part of ``L`` in proportion to its idle entitlement ``(E_i - held_i)``; a
    team holding more *is paid back* its part of ``L`` in proportion to its excess ``(held_i - E_i)``.
    With two teams that is the smaller of the lender's idle entitlement and the borrower's excess; with
    more, what is lent equals what is borrowed at every instant (no loan counted twice). Whether a team
    has work does not matter: entitlement it leaves idle is lent as soon as another team uses it.
    """
    spare = [max(0.0, e - h) for e, h in zip(entitled, held, strict=True)]
    excess = [max(0.0, h - e) for e, h in zip(entitled, held, strict=True)]
    total_spare, total_excess = sum(spare), sum(excess)
    on_loan = min(total_spare, max(0.0, total_excess - unentitled))
    if on_loan <= 0:
        return [0.0] * len(spare), [0.0] * len(spare)
    return (
        [s * on_loan / total_spare for s in spare],
        [x * on_loan / total_excess for x in excess],
    )
