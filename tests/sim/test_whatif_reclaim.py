"""fairshare+reclaim in the what-if: the production planner stops lower tiers so HIGHPRI starts."""

from __future__ import annotations

from gpusim.whatif.config import Policy, SharesMapping, WhatIfConfig
from gpusim.whatif.run import PolicyRun, run_policy
from gpusim.whatif.scenario import ScenarioJob, build_scenario, scenario_of

from tests.sim.test_whatif import SMALL_CONFIG
from tests.sim.traces import synthetic_trace

HOUR = 3600.0
HIGH, MID, LOW = 0, 1, 2  # indexes into the what-if's tiers


def config(**overrides) -> WhatIfConfig:
    """The defaults: HIGHPRI has its own identifier per team and reclaims after 300 s."""
    return WhatIfConfig(shares=SharesMapping(top_k=3), **overrides)


def crafted(jobs: list[ScenarioJob], capacity: int = 8):
    """Two teams entitled to half of ``capacity`` GPUs each, the given jobs, a one-day window."""
    return scenario_of(
        jobs,
        config(),
        shares=("A", "B"),
        entitlements=(capacity // 2, capacity - capacity // 2),
        window=24 * HOUR,
        offered=capacity,
    )


def job(name, submit, duration, units, share, tier, checkpoints=True) -> ScenarioJob:
    priority = {HIGH: 90, MID: 50, LOW: 10}[tier]
    return ScenarioJob(name, submit, duration, units, share, tier, priority, (), checkpoints)


def borrowed_cluster(checkpoints=True) -> list[ScenarioJob]:
    # B fills the cluster with LOWPRI work (4 of its 8 GPUs borrowed from A, the latest four);
    # A's HIGHPRI job arrives an hour later and needs 2 GPUs.
    jobs = [job(f"b{i}", float(i), 10 * HOUR, 1, 1, LOW, checkpoints) for i in range(8)]
    return [*jobs, job("hi", HOUR, HOUR, 2, 0, HIGH)]


def waits(run: PolicyRun) -> dict[str, float]:
    return {j.name: (j.first_dispatch or 0) - j.created for j in run.model.jobs.values()}


def test_a_highpri_job_starts_once_due_by_stopping_borrowed_lowpri_jobs_that_resume() -> None:
    scenario = crafted(borrowed_cluster())
    run = PolicyRun(scenario, Policy.RECLAIM)
    run.start()
    run.model.run()
    result = run.result()
    assert waits(run)["hi"] == 300.0, "due at 300 s, started at once"
    assert (result.reclaims, result.reclaim_victims) == (1, 2)
    stopped = {j.name for j in run.model.jobs.values() if len(j.attempts) > 1}
    assert stopped == {"b6", "b7"}, "the latest dispatched are the borrowed ones"
    for name in stopped:
        victim = next(j for j in run.model.jobs.values() if j.name == name)
        # Stopped at 3,900 s after training from 186 s (dispatch + 180 s start-up): four 15-minute
        # checkpoints (3,600 s) are kept, and the rest of its run is that much shorter.
        assert victim.saved == 3600.0
        assert victim.stopped_at == victim.scheduled_at + 180.0 + 10 * HOUR - 3600.0
    # Lost per GPU: dispatch (6 s and 7 s) to stop (3,900 s), less the 3,600 s kept.
    assert result.reclaim_gpu_hours_lost == (294.0 + 293.0) / 3600.0


def test_without_reclaim_the_same_highpri_job_waits_for_a_job_to_end() -> None:
    run = PolicyRun(crafted(borrowed_cluster()), Policy.TIERS)
    run.start()
    run.model.run()
    assert waits(run)["hi"] > 8 * HOUR


def test_jobs_that_never_checkpoint_are_never_victims() -> None:
    run = PolicyRun(crafted(borrowed_cluster(checkpoints=False)), Policy.RECLAIM)
    run.start()
    run.model.run()
    assert run.result().reclaims == 0
    assert waits(run)["hi"] > 8 * HOUR


def test_the_seeded_fraction_never_checkpoints() -> None:
    scenario = build_scenario(synthetic_trace(count=300), SMALL_CONFIG, seed=3)
    fraction = sum(not j.checkpoints for j in scenario.jobs) / len(scenario.jobs)
    assert 0.05 < fraction < 0.15, fraction


def test_reclaim_on_a_synthetic_trace_keeps_every_highpri_wait_near_its_threshold() -> None:
    scenario = build_scenario(synthetic_trace(count=300), SMALL_CONFIG, seed=3)
    result = run_policy(scenario, Policy.RECLAIM, seed=3)
    assert result.finished == result.jobs
    assert result.wait_seconds["HIGHPRI"]["p99"] <= 300.0 + 180.0
