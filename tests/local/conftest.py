"""The local stack's scenarios, each run once a session, and every AWS call the functions made in them.

A scenario (the failure path, escalation, reclaim, idle detection) starts a stack of its own, since
each needs its own config and workload; its tests then read what the one run left behind. The IAM
replay (``test_iam_local.py``) evaluates the calls those same runs made, recorded as they happen,
instead of running them again. Under ``pytest -n`` the scenarios and the replay share the
``xdist_group`` "stack-1" (``--dist loadgroup``), so each scenario starts once, on one worker. The
other local tests form "stack-2", and the demo's two modes join one each, so the two demos (the
longest tests) run on different workers.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from shareplane_cli.local import aws_calls
from shareplane_cli.local.aws_calls import AwsCall

from tests.local import (
    test_escalation_local,
    test_failures_local,
    test_idle_local,
    test_lost_events_local,
    test_reclaim_local,
)


@pytest.fixture(scope="session")
def recorded_calls() -> Iterator[list[AwsCall]]:
    """Every AWS call a function made on a local stack in this session (this worker) from now on."""
    calls: list[AwsCall] = []
    aws_calls.observers.append(calls.append)
    try:
        yield calls
    finally:
        aws_calls.observers.remove(calls.append)


@pytest.fixture(scope="session")
def failure_run(recorded_calls: list[AwsCall]) -> test_failures_local.FailureRun:
    return test_failures_local.run_scenario()


@pytest.fixture(scope="session")
def escalation_run(recorded_calls: list[AwsCall]) -> test_escalation_local.EscalationRun:
    return test_escalation_local.run_scenario()


@pytest.fixture(scope="session")
def reclaim_run(recorded_calls: list[AwsCall]) -> test_reclaim_local.ReclaimRun:
    return test_reclaim_local.run_scenario()


@pytest.fixture(scope="session")
def idle_run(recorded_calls: list[AwsCall]) -> test_idle_local.IdleRun:
    return test_idle_local.run_scenario()


@pytest.fixture(scope="session")
def lost_event_run(recorded_calls: list[AwsCall]) -> test_lost_events_local.LostEventRun:
    return test_lost_events_local.run_scenario()
