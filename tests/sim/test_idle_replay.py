"""Idle GPUs in the what-if: seeded idle jobs, the Lambda's decision on its schedule, and what it gives back."""

from __future__ import annotations

import dataclasses

import pytest
from gpusim.idle_replay import IdleRun, certainly_busy
from gpusim.whatif.config import Policy, SharesMapping, WhatIfConfig
from gpusim.whatif.run import PolicyRun
from gpusim.whatif.scenario import ScenarioJob, build_scenario, scenario_of, seed_idle
from hypothesis import given, settings
from hypothesis import strategies as st
from shareplane.domain.config.shares import IdleAction, IdleConfig
from shareplane.domain.errors import InvalidInputError
from shareplane.domain.idle.policy import Act, GpuSample, IdlePolicy, Verdict, decide

from tests.properties import examples
from tests.sim.traces import synthetic_trace

HOUR = 3600.0
LOW = 2  # index of LOWPRI in the what-if's tiers
P4D_GPUS = 8


def crafted(jobs: list[ScenarioJob], capacity: int = 8, **idle: object) -> object:
    """One share holding ``capacity`` GPUs, the given jobs, a two-day window."""
    config = WhatIfConfig(shares=SharesMapping(top_k=1), idle=IdleRun(**idle))  # type: ignore[arg-type]
    return scenario_of(
        jobs, config, shares=("A",), entitlements=(capacity,), window=48 * HOUR, offered=capacity
    )


def job(
    name: str, submit: float, duration: float, units: int, idle_after: float | None = None
) -> ScenarioJob:
    return ScenarioJob(name, submit, duration, units, 0, LOW, 10, idle_after=idle_after)


def test_an_idle_job_is_stopped_after_its_warning_and_the_waiting_job_gets_its_gpus() -> None:
    # GIVEN 8 GPUs, a 10-hour job idle from its first second, and a job that needs all 8 GPUs after it
    scenario = crafted([job("idler", 0, 10 * HOUR, 8, idle_after=0.0), job("waiter", 60, HOUR, 8)])
    # WHEN fair-share replays it with the detector on its 5-minute schedule
    run = PolicyRun(scenario, Policy.FAIRSHARE)  # type: ignore[arg-type]
    result = run.replay()
    # THEN the idler is stopped after grace (900 s) + window (1800 s) + warning grace (900 s), within ticks
    idler = run.model.jobs[next(i for i, j in run.model.jobs.items() if j.name == "idler")]
    waiter = next(j for j in run.model.jobs.values() if j.name == "waiter")
    assert idler.status == "FAILED" and "shareplane idle" in (idler.reason or "")
    stopped = idler.stopped_at
    assert stopped is not None and 3600 <= stopped <= 3600 + 2 * 300 + 180
    assert waiter.first_dispatch == stopped  # its capacity went to the waiting job at once
    idle = result.idle
    assert idle.idle_jobs == 1 and idle.idle_jobs_stopped == 1 and idle.busy_jobs_stopped == 0
    assert idle.idle_gpu_hours == pytest.approx(8 * 10)
    trained = stopped - (idler.training_since or 0)
    assert idle.reclaimed_gpu_hours == pytest.approx(8 * (10 * HOUR - trained) / HOUR)
    assert result.summary()["idle"]["reclaimed_gpu_hours"] == round(idle.reclaimed_gpu_hours, 3)


def test_a_job_idle_after_a_point_is_stopped_only_after_that_point_and_busy_jobs_never() -> None:
    scenario = crafted([job("late", 0, 6 * HOUR, 4, idle_after=2 * HOUR), job("busy", 0, 12 * HOUR, 4)])
    run = PolicyRun(scenario, Policy.FAIRSHARE)  # type: ignore[arg-type]
    result = run.replay()
    late = next(j for j in run.model.jobs.values() if j.name == "late")
    busy = next(j for j in run.model.jobs.values() if j.name == "busy")
    assert late.status == "FAILED" and (late.stopped_at or 0) >= 2 * HOUR + 1800 + 900
    assert busy.status == "SUCCEEDED"
    assert result.idle.busy_jobs_stopped == 0 and result.idle.idle_jobs_stopped == 1


def test_an_alert_only_policy_stops_nothing_and_reclaims_nothing() -> None:
    scenario = crafted(
        [job("idler", 0, 10 * HOUR, 8, idle_after=0.0)], policy=IdleConfig(action=IdleAction.ALERT)
    )
    result = PolicyRun(scenario, Policy.FAIRSHARE).replay()  # type: ignore[arg-type]
    assert result.idle.idle_jobs_stopped == 0 and result.idle.reclaimed_gpu_hours == 0
    assert result.idle.idle_gpu_hours == pytest.approx(80)


def test_skipping_ticks_a_job_is_certainly_busy_on_changes_nothing() -> None:
    scenario = seed_idle(build_scenario(synthetic_trace(count=200), WhatIfConfig(), 64, seed=3), 0.2, seed=3)
    outcomes = []
    for skipping in (True, False):
        run = PolicyRun(scenario, Policy.FAIRSHARE)
        assert run.idle is not None
        run.idle.skipping = skipping
        result = run.replay()
        outcomes.append(dataclasses.replace(result.idle, decisions=0))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0].idle_jobs > 0 and outcomes[0].busy_jobs_stopped == 0


def test_seed_idle_draws_the_fraction_from_its_own_stream_and_keeps_every_other_draw() -> None:
    base = build_scenario(synthetic_trace(count=300), WhatIfConfig(), 64, seed=1)
    seeded = seed_idle(base, 0.3, seed=1)
    idle = [j for j in seeded.jobs if j.idle_after is not None]
    assert 0.2 < len(idle) / len(seeded.jobs) < 0.4
    assert any(j.idle_after == 0 for j in idle) and any(0 < (j.idle_after or 0) < j.duration for j in idle)
    assert [dataclasses.replace(j, idle_after=None) for j in seeded.jobs] == list(base.jobs)
    assert seeded.config.idle.fraction == 0.3
    assert seed_idle(base, 0.0) is base
    with pytest.raises(InvalidInputError, match="--idle-fraction"):
        seed_idle(base, 1.5)


@settings(max_examples=examples(200), deadline=None)
@given(
    values=st.lists(st.tuples(st.floats(0, 100), st.floats(0, 100)), min_size=1, max_size=70),
    started=st.floats(0, 3000),
    now=st.floats(3000, 8000),
    checkpointing=st.booleans(),
    last_checkpoint=st.one_of(st.none(), st.floats(0, 8000)),
)
def test_certainly_busy_holds_only_where_decide_answers_busy_with_no_act(
    values: list[tuple[float, float]],
    started: float,
    now: float,
    checkpointing: bool,
    last_checkpoint: float | None,
) -> None:
    policy = IdlePolicy(action=IdleAction.STOP_AFTER_WARNING)
    newest = 60.0 * (now // 60)
    samples = [
        GpuSample(f"algo-{h + 1}", newest - 60.0 * k, pair[h] * P4D_GPUS)
        for k, pair in enumerate(values)
        for h in range(2)
    ]
    if not certainly_busy(policy, values[0][0], now, started, checkpointing, last_checkpoint):
        return
    decision = decide(
        policy,
        started_at=started,
        instance_type="ml.p4d.24xlarge",
        instance_count=2,
        samples=samples,
        now=now,
        checkpointing=checkpointing,
        last_checkpoint_at=last_checkpoint,
    )
    assert decision.act is Act.NONE
    assert decision.verdict in (Verdict.BUSY, Verdict.GRACE, Verdict.NO_DATA)
