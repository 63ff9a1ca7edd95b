"""The demo's verdict: the answer in sentences, each figure the summary's own, before any table."""

from __future__ import annotations

from typing import Any

import pytest
from shareplane.domain.config.shares import SharesConfig, Tier
from shareplane_cli.config_file import load_config
from shareplane_cli.demo.run import LiveRun
from shareplane_cli.demo.usage import UsageTracker
from shareplane_cli.demo.verdict import capacity_back, verdict
from shareplane_cli.demo.workload import DemoJob

from tests.conftest import REPO


@pytest.fixture(scope="module")
def config() -> SharesConfig:
    return load_config(REPO / "config" / "shares.yaml")


def waits(high: float | None, mid: float, low: float) -> dict[str, dict[str, float | None]]:
    return {
        "HIGHPRI": {"p50": high, "p95": high},
        "MIDPRI": {"p50": mid, "p95": mid},
        "LOWPRI": {"p50": low, "p95": low},
    }


def summary(mode: str = "fairshare", high: float | None = 300.0, **changes: Any) -> dict[str, Any]:
    return {
        "mode": mode,
        "utilization": 0.8384,
        "static_partition_utilization": 0.651,
        "makespan_hours": 3.32,
        "static_partition_makespan_hours": 4.23,
        "wait_seconds": waits(high, 1980.0, 4980.0),
        "static_partition_wait_seconds": waits(1500.0, 0.0, 6780.0),
        "capacity_back": {
            "ProdExp1": {"first_job_at_seconds": 0, "lent_at_arrival": 0, "seconds_to_entitlement": 60},
            "ProdExp2": {"first_job_at_seconds": 1200, "lent_at_arrival": 40, "seconds_to_entitlement": 3180},
        },
        **changes,
    }


def test_the_verdict_leads_with_utilization_then_highpri_then_who_got_capacity_back(
    config: SharesConfig,
) -> None:
    lines = verdict(summary(), config)
    assert lines[0] == (
        "Soft quotas kept 83.8% of the instances busy against 65.1% under hard 60/40 partitions (+18.7 points), "
        "and finished the workload in 3.32 h against 4.23 h."
    )
    assert (
        lines[1] == "HIGHPRI started 5m00s after submission, within its 15m00s SLO (hard partitions: 25m00s)."
    )
    assert lines[2] == (
        "ProdExp2 found 40 of its instances lent out when its first job came, and held its entitlement 53m00s later."
    )


def test_a_tier_slower_under_soft_quotas_is_explained_by_how_the_mode_gives_capacity_back(
    config: SharesConfig,
) -> None:
    (fair,) = [line for line in verdict(summary(), config) if line.startswith("MIDPRI")]
    assert "p50 33m00s against 0s" in fair and "only as the borrowing jobs end" in fair
    (quota,) = [line for line in verdict(summary("quota"), config) if line.startswith("MIDPRI")]
    assert "by preempting the borrowing jobs" in quota
    # LOWPRI waits less under soft quotas: nothing to explain
    assert not [line for line in verdict(summary(), config) if line.startswith("LOWPRI")]


def test_a_missed_slo_and_a_team_never_served_are_said_plainly(config: SharesConfig) -> None:
    never = summary(high=1200.0)
    never["capacity_back"]["ProdExp2"]["seconds_to_entitlement"] = None
    lines = verdict(never, config)
    assert "PAST its 15m00s SLO" in lines[1] and lines[2].endswith("and never held its entitlement.")
    assert verdict(summary(high=None), config)[1] == "HIGHPRI never started."


def test_capacity_back_reads_the_usage_timeline_at_each_teams_first_job(config: SharesConfig) -> None:
    # GIVEN ProdExp1 holding all 100 instances when ProdExp2's first job comes at 1200 s, and ProdExp2
    # reaching its 40 at 4380 s
    tracker = UsageTracker(lambda: 0.0, {})
    tracker.timeline = [(0.0, {"ProdExp1": 100}), (3000.0, {"ProdExp1": 80, "ProdExp2": 20}),
                        (4380.0, {"ProdExp1": 60, "ProdExp2": 40})]  # fmt: skip
    jobs = [
        DemoJob("a", "ProdExp1", Tier.MIDPRI, 0, 10, 60),
        DemoJob("b", "ProdExp2", Tier.MIDPRI, 20, 10, 60),
    ]
    run = LiveRun(tracker, [], {"a": 0.0, "b": 1200.0}, 5000.0, 0, [])
    back = capacity_back(run, jobs, config)
    assert back["ProdExp2"] == {
        "first_job_at_seconds": 1200.0,
        "lent_at_arrival": 40,
        "seconds_to_entitlement": 3180.0,
    }
    assert back["ProdExp1"]["lent_at_arrival"] == 0
