"""Read side of cost: the chargeback report (recorded attempts plus what running ones have accrued)."""

from __future__ import annotations

from ..domain.config.shares import SharesConfig
from ..domain.cost.billing import AttemptCost, UsageGroup, UsageRow, usage_rows
from .ports import CostReader
from .spend import accruing


def current_costs(reader: CostReader, config: SharesConfig, now_ms: int) -> list[AttemptCost]:
    """Every recorded attempt's cost, and what each attempt still running has accrued up to ``now_ms``,
    charged to its Batch job's team (an attempt no Batch job of a team runs is nobody's: left out)."""
    recorded = reader.costs()
    costed = {c.training_job_arn for c in recorded}
    running = [
        c
        for c in accruing(reader.open_attempts(), reader, config, now_ms)
        if c.training_job_arn not in costed and c.team is not None
    ]
    return recorded + running


def uploaders(reader: CostReader, costs: list[AttemptCost]) -> dict[str, str]:
    """Batch job ARN -> the principal that uploaded its spec (the submit path's ``uploader.principal``)."""
    out: dict[str, str] = {}
    for job_arn in sorted({c.job_arn for c in costs if c.job_arn}):
        payload = reader.load_payload(job_arn)
        if payload is not None and payload.uploader_principal_arn:
            out[job_arn] = payload.uploader_principal_arn
    return out


def chargeback(
    reader: CostReader,
    config: SharesConfig,
    by: UsageGroup,
    *,
    now_ms: int,
    since_ms: int = 0,
    team: str | None = None,
) -> list[UsageRow]:
    """Cost per team and ``by`` key since ``since_ms``, running attempts accrued up to ``now_ms``."""
    costs = current_costs(reader, config, now_ms)
    users = uploaders(reader, costs) if by is UsageGroup.USER else {}
    return usage_rows(costs, by, since_ms=since_ms, team=team, users=users)
