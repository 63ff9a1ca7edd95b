"""ReclaimLedger (decisions, victims, budget counters): the fake and the table agree.

Its alerts and tick watermark are in test_alert_ledger_contract.py.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shareplane.adapters.reclaim_ledger import DynamoReclaimLedger
from shareplane.domain.jobs.lifecycle import HistoryEntry, JobStatus, ObservationKind
from shareplane.domain.reclaim.plan import ClaimBudgets
from shareplane.domain.reclaim.record import ReclaimRecord, ReclaimVictimRecord

from tests.aws import clear_table
from tests.fakes.reclaim_ledger import FakeReclaimLedger
from tests.properties import examples

DAY = "2026-03-17"
WINDOW = "300s@1773720000"
WAITING = "hi-1"
ARN = "arn:aws:batch:us-east-1:123456789012:service-job/"


@pytest.fixture(params=["fake", "on the table"])
def ledger(request: pytest.FixtureRequest) -> Any:
    if request.param == "fake":
        return FakeReclaimLedger()
    return request.getfixturevalue("on_the_table")(DynamoReclaimLedger)


def record(decision: str, *victims: str, waiting: str = WAITING, **extra: Any) -> ReclaimRecord:
    """A reclaim decision record as reclaim_capacity writes it."""
    return ReclaimRecord(
        decision_id=decision,
        job_id=waiting,
        job_arn=ARN + waiting,
        team="ProdExp1",
        tier="HIGHPRI",
        victims=tuple(
            ReclaimVictimRecord(
                job_id=v, job_arn=ARN + v, team="ProdExp2", tier="LOWPRI", instances=1, reason="stopped"
            )
            for v in victims
        ),
        decided_at=1773720000.0,
        **extra,
    )


def history(job: str, decision: str) -> tuple[str, HistoryEntry]:
    entry = HistoryEntry(
        key=f"1773720000000#RECLAIM#{decision}",
        status=JobStatus.RUNNING,
        at=1773720000000,
        reason="stopped for a waiting HIGHPRI job",
        kind=ObservationKind.RECLAIMED,
        digest=decision,
    )
    return ARN + job, entry


def budgets(per_job: int = 4, per_day: int = 10, per_window: int = 10) -> ClaimBudgets:
    return ClaimBudgets(DAY, WINDOW, per_job, per_day, per_window)


def claim(
    ledger: Any,
    rec: ReclaimRecord,
    *,
    per_job: int = 4,
    per_day: int = 10,
    per_window: int = 10,
    histories: Any = None,
) -> str:
    if histories is None:
        histories = [history(v.job_id, rec.decision_id) for v in rec.victims]
    return ledger.claim(rec, histories, budgets(per_job, per_day, per_window))


def test_a_claim_writes_its_victims_and_counters_once(ledger: Any) -> None:
    assert claim(ledger, record("d1", "lo-1", "lo-2")) == "claimed"
    assert claim(ledger, record("d1", "lo-1", "lo-2")) == "exists"
    assert ledger.victims_for(WAITING) == 2 and ledger.victims_on(DAY) == 2
    assert ledger.victims_for("hi-never") == 0 and ledger.victims_on("2026-03-18") == 0
    assert ledger.stopping() == {"lo-1": WAITING, "lo-2": WAITING}
    assert ledger.decision_of("lo-1") == "d1" and ledger.decision_of("lo-3") is None
    stored = ledger.load(WAITING, "d1")
    assert stored is not None and stored.applied is False and stored.team == "ProdExp1"
    assert [v.job_id for v in stored.victims] == ["lo-1", "lo-2"]
    assert stored == record("d1", "lo-1", "lo-2")
    assert ledger.load(WAITING, "d2") is None


def test_a_victim_is_claimed_for_one_waiting_job_only_and_a_refusal_writes_nothing(ledger: Any) -> None:
    assert claim(ledger, record("d1", "lo-1")) == "claimed"
    assert claim(ledger, record("d2", "lo-2", "lo-1", waiting="hi-2")) == "refused"
    assert ledger.load("hi-2", "d2") is None
    assert ledger.victims_for("hi-2") == 0 and ledger.victims_on(DAY) == 1
    assert ledger.stopping() == {"lo-1": WAITING}
    assert claim(ledger, record("d3", "lo-2", waiting="hi-2")) == "claimed"


@pytest.mark.parametrize(
    ("already", "more", "outcome"),
    [(0, 2, "claimed"), (0, 3, "refused"), (1, 1, "claimed"), (1, 2, "refused"), (2, 1, "refused")],
    ids=["two of two", "three of two at once", "second of two", "one over", "budget spent"],
)
def test_the_per_job_budget_is_never_overrun(ledger: Any, already: int, more: int, outcome: str) -> None:
    if already:
        assert claim(ledger, record("d0", *[f"old-{i}" for i in range(already)]), per_job=2) == "claimed"
    victims = [f"new-{i}" for i in range(more)]
    assert claim(ledger, record("d1", *victims), per_job=2) == outcome
    assert ledger.victims_for(WAITING) == already + (more if outcome == "claimed" else 0)


@pytest.mark.parametrize(
    ("more", "outcome"), [(1, "claimed"), (2, "refused")], ids=["the day's last", "past the day's budget"]
)
def test_the_per_day_budget_counts_every_waiting_job(ledger: Any, more: int, outcome: str) -> None:
    assert claim(ledger, record("d0", "lo-1", "lo-2", waiting="hi-0"), per_day=3) == "claimed"
    victims = [f"new-{i}" for i in range(more)]
    assert claim(ledger, record("d1", *victims), per_day=3) == outcome
    assert ledger.victims_on(DAY) == 2 + (more if outcome == "claimed" else 0)


def test_the_rate_window_budget_holds_across_claims_for_any_waiting_job(ledger: Any) -> None:
    # GIVEN a rate limit of one victim per window: four claims one after the other (four triggers)
    outcomes = [claim(ledger, record(f"d{n}", f"lo-{n}", waiting=f"hi-{n}"), per_window=1) for n in range(4)]
    # THEN only the first stops anyone; the others write nothing
    assert outcomes == ["claimed", "refused", "refused", "refused"]
    assert ledger.victims_in(WINDOW) == 1 and ledger.victims_in("300s@1773720300") == 0
    assert ledger.stopping() == {"lo-0": "hi-0"}


def test_a_released_claim_gives_back_its_victims_counters_and_history(ledger: Any) -> None:
    rec = record("d1", "lo-1", "lo-2")
    histories = [history(v.job_id, "d1") for v in rec.victims]
    assert claim(ledger, rec, histories=histories) == "claimed"
    # WHEN its waiting job no longer waits, before any victim was stopped
    assert ledger.release(rec, histories, budgets(), 2) is True
    # THEN nothing of it is left, and it is released once
    assert ledger.load(WAITING, "d1") is None and ledger.stopping() == {}
    assert (ledger.victims_for(WAITING), ledger.victims_on(DAY), ledger.victims_in(WINDOW)) == (0, 0, 0)
    assert ledger.release(rec, histories, budgets(), 2) is False
    # AND its history items are free again: the same decision can be claimed anew
    assert claim(ledger, rec, histories=histories) == "claimed"


def test_an_applied_claim_is_never_released(ledger: Any) -> None:
    rec = record("d1", "lo-1")
    claim(ledger, rec)
    ledger.mark_applied(WAITING, "d1", 1773720060.0)
    assert ledger.release(rec, [], budgets(), 1) is False
    assert ledger.stopping() == {"lo-1": WAITING} and ledger.victims_on(DAY) == 1


def test_an_over_budget_first_claim_is_refused_on_a_fresh_day(ledger: Any) -> None:
    assert claim(ledger, record("d1", "lo-1", "lo-2", "lo-3"), per_day=2) == "refused"
    assert ledger.victims_on(DAY) == 0 and ledger.victims_for(WAITING) == 0


def test_the_victim_count_the_plan_read_must_still_hold(ledger: Any) -> None:
    assert claim(ledger, record("d0", "lo-1", victims_before=0)) == "claimed"
    # a racing run planned from the count before d0: its plan is stale
    assert claim(ledger, record("d1", "lo-2", victims_before=0)) == "refused"
    assert claim(ledger, record("d2", "lo-2", victims_before=1)) == "claimed"
    assert ledger.victims_for(WAITING) == 2


def test_a_claim_whose_history_item_exists_is_refused(ledger: Any) -> None:
    shared = history("lo-9", "same")
    assert claim(ledger, record("d1", "lo-1"), histories=[shared]) == "claimed"
    assert claim(ledger, record("d2", "lo-2", waiting="hi-2"), histories=[shared]) == "refused"
    assert ledger.load("hi-2", "d2") is None


def test_a_dry_run_is_recorded_once_with_no_victims_or_counters(ledger: Any) -> None:
    dry = record("d1", "lo-1", dry_run=True)
    assert ledger.record_dry_run(dry) is True
    assert ledger.record_dry_run(dry) is False
    assert ledger.load(WAITING, "d1").dry_run is True
    assert ledger.victims_for(WAITING) == 0 and ledger.victims_on(DAY) == 0 and ledger.stopping() == {}
    # the same decision cannot then be claimed for real: it exists
    assert claim(ledger, record("d1", "lo-1")) == "exists"


def test_a_reclaim_is_marked_applied_once_with_its_result(ledger: Any) -> None:
    claim(ledger, record("d1", "lo-1"))
    assert ledger.mark_applied(WAITING, "d1", 1773720060.5) is True
    assert ledger.mark_applied(WAITING, "d1", 1773720999.0) is False
    stored = ledger.load(WAITING, "d1")
    assert stored.applied is True and stored.applied_at == 1773720060.5
    assert ledger.mark_applied(WAITING, "d-never", 1.0) is False
    assert ledger.load(WAITING, "d-never") is None


def test_reclaims_are_listed_from_a_time_on_oldest_first(ledger: Any) -> None:
    claim(ledger, record("d2", "lo-2", waiting="hi-2"))
    claim(ledger, replace(record("d1", "lo-1"), decided_at=1773719000.0))
    ledger.mark_applied("hi-2", "d2", 1773720060.5)
    assert [(r.decision_id, r.applied) for r in ledger.reclaims(0)] == [("d1", False), ("d2", True)]
    assert [r.decision_id for r in ledger.reclaims(1773720000.0)] == ["d2"]
    assert ledger.reclaims(1773720000.001) == []


claims = st.lists(
    st.tuples(
        st.sampled_from(["hi-0", "hi-1"]),
        st.sets(st.sampled_from([f"lo-{i}" for i in range(6)]), min_size=1, max_size=4),
        st.sampled_from(["2026-03-17", "2026-03-18"]),
        st.booleans(),
    ),
    min_size=1,
    max_size=8,
)


@settings(
    max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(claims=claims, per_job=st.integers(1, 4), per_day=st.integers(1, 6), per_window=st.integers(1, 6))
def test_any_run_of_claims_ends_alike_and_within_every_budget(
    jobs_table: tuple[Any, str],
    claims: list[tuple[str, set[str], str, bool]],
    per_job: int,
    per_day: int,
    per_window: int,
) -> None:
    # GIVEN any sequence of reclaims (some planned from the count they read), on the fake and the table
    fake = FakeReclaimLedger()
    client, name = jobs_table
    clear_table(client, name)
    table = DynamoReclaimLedger(client, name)
    outcomes: dict[str, list[str]] = {"fake": [], "table": []}
    for n, (waiting, victims, day, read_count) in enumerate(claims):
        for name, ledger in (("fake", fake), ("table", table)):
            extra = {"victims_before": ledger.victims_for(waiting)} if read_count else {}
            rec = record(f"d{n}", *sorted(victims), waiting=waiting, **extra)
            histories = [history(v, f"d{n}") for v in sorted(victims)]
            limits = ClaimBudgets(day, f"300s@{day}", per_job, per_day, per_window)
            outcomes[name].append(ledger.claim(rec, histories, limits))
    # THEN both answer every claim the same, hold the same victims and counts, within the budgets
    assert outcomes["fake"] == outcomes["table"]
    assert fake.stopping() == table.stopping()
    for waiting in ("hi-0", "hi-1"):
        assert fake.victims_for(waiting) == table.victims_for(waiting) <= per_job
    for day in ("2026-03-17", "2026-03-18"):
        assert fake.victims_on(day) == table.victims_on(day) <= per_day
        assert fake.victims_in(f"300s@{day}") == table.victims_in(f"300s@{day}") <= per_window
