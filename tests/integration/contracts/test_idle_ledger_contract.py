"""IdleLedger (decisions, the counted-idle watermark): the fake and the table agree.

Its alerts are the alert ledger's (test_alert_ledger_contract.py).
"""

from __future__ import annotations

from typing import Any

import pytest
from shareplane.adapters.idle_ledger import DynamoIdleLedger
from shareplane.domain.idle.policy import Act, Signal
from shareplane.domain.idle.record import IdleRecord

from tests.fakes.idle_world import FakeIdleLedger

T = 1_773_738_000.0
ARN = "arn:aws:batch:us-east-1:123456789012:service-job/"


@pytest.fixture(params=["fake", "on the table"])
def ledger(request: pytest.FixtureRequest) -> Any:
    if request.param == "fake":
        return FakeIdleLedger()
    return request.getfixturevalue("on_the_table")(DynamoIdleLedger)


def record(job_id: str, act: Act, at: float, **extra: Any) -> IdleRecord:
    fields: dict[str, Any] = {
        "job_arn": ARN + job_id,
        "job_id": job_id,
        "signal": Signal.IDLE,
        "act": act,
        "decided_at": at,
        "since": T,
        "until": at - 60.5,
        "reason": "every GPU below 5% for 1800 s (window 1800 s)",
        "team": "ProdExp2",
        "tier": "LOWPRI",
        "instance_type": "ml.p4d.24xlarge",
        "instances": 2,
        "gpus": 16,
        "peak_host_percent": 1.25,
        "idle_gpu_hours": 7.911,
        **extra,
    }
    return IdleRecord(**fields)


def test_a_decision_is_written_once_and_read_back_whole(ledger: Any) -> None:
    warn = record("a", Act.WARN, T + 1860, stop_at=T + 2760.0)
    assert ledger.record(warn) is True
    assert ledger.record(warn) is False  # the same tick again
    stop = record("a", Act.STOP, T + 2760, stopped=True, peak_memory_percent=30.0)
    assert ledger.record(stop) is True
    assert ledger.decisions("a") == [warn, stop]
    assert ledger.decisions("b") == []


def test_decisions_since_a_time_across_jobs_oldest_first(ledger: Any) -> None:
    ledger.record(record("b", Act.ALERT, T + 4000, signal=Signal.HUNG))
    ledger.record(record("a", Act.WARN, T + 1860))
    ledger.record(record("a", Act.STOP, T + 2760))
    assert [(r.job_id, r.act) for r in ledger.since(T + 2000)] == [("a", Act.STOP), ("b", Act.ALERT)]
    assert len(ledger.since(0)) == 3


def test_the_counted_idle_watermark_only_moves_up(ledger: Any) -> None:
    assert ledger.count_idle("a", T + 600) is None
    assert ledger.count_idle("a", T + 900) == T + 600
    assert ledger.count_idle("a", T + 300) == T + 300  # older: nothing new counted
    assert ledger.count_idle("a", T + 900) == T + 900  # the same again: nothing new
    assert ledger.count_idle("a", T + 1200) == T + 900
    # the watermark is not a decision
    assert ledger.decisions("a") == []
