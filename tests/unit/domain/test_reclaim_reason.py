"""Reclaim's stop reason: it names the job stopped for, and the failure path classifies it as a reclaim."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from shareplane.domain.config.failure_rules import DEFAULT_RULES, FailureClass
from shareplane.domain.config.shares import Tier
from shareplane.domain.failures.decision import FailureSignal, classify
from shareplane.domain.reclaim.plan import utc_day
from shareplane.domain.reclaim.reason import REASON_MAX_CHARS, beneficiary_of, stop_reason


@given(
    job_id=st.uuids().map(str),
    name=st.none() | st.text(min_size=1, max_size=300),
    tier=st.sampled_from(list(Tier)),
    waited=st.floats(min_value=0, max_value=1e7),
)
def test_the_reason_names_its_beneficiary_whatever_the_name_and_fits_batch(
    job_id, name, tier, waited
) -> None:
    reason = stop_reason(job_id, name, tier, waited)
    assert beneficiary_of(reason) == job_id and len(reason) <= REASON_MAX_CHARS


@pytest.mark.parametrize(
    ("case", "reason", "terminated", "expected"),
    [
        (
            "our reason on a terminated job is a reclaim",
            stop_reason("j1", "n", Tier.HIGHPRI, 60),
            True,
            FailureClass.RECLAIMED,
        ),
        (
            "with Batch's prefix too",
            "Received status from SageMaker: " + stop_reason("j1", None, Tier.HIGHPRI, 60),
            True,
            FailureClass.RECLAIMED,
        ),
        (
            "any other termination is a person's stop",
            "terminated by alice",
            True,
            FailureClass.STOPPED_BY_USER,
        ),
    ],
    ids=lambda v: v if isinstance(v, str) and v[:3] in ("our", "wit", "any") else "",
)
def test_the_failure_path_classifies_a_reclaim(
    case: str, reason: str, terminated: bool, expected: FailureClass
) -> None:
    found = classify(FailureSignal(status_reason=reason, was_terminated=terminated), DEFAULT_RULES)
    assert found.failure_class is expected, case


def test_other_texts_name_no_beneficiary_and_days_are_utc() -> None:
    assert beneficiary_of("Essential container exited") is None and beneficiary_of(None) is None
    assert utc_day(1_773_705_599.0) == "2026-03-16" and utc_day(1_773_705_600.0) == "2026-03-17"
