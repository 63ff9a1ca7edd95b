"""The demo's hard-partition baseline is the what-if's ``static`` policy on the demo's script.

One scenario builder (``scenario_of``), one replay (``PolicyRun.replay``): what the demo reports
for hard partitions and what ``shareplane simulate`` measures under ``static`` come from one run.
"""

from __future__ import annotations

from gpusim.whatif.config import TIERS, Policy
from gpusim.whatif.run import PolicyRun
from gpusim.whatif.scenario import ScenarioJob
from shareplane.domain.config.shares import Tier
from shareplane.domain.shares.observation import percentile
from shareplane_cli.config_file import load_config
from shareplane_cli.demo.baseline import partition_scenario, run_static_partitions
from shareplane_cli.demo.summary import static_waits
from shareplane_cli.demo.usage import UsageTracker, utilization
from shareplane_cli.demo.workload import INSTANCE_TYPE, blog_workload

from tests.conftest import REPO

CONFIG = load_config(REPO / "config" / "shares.yaml")


def test_the_script_becomes_one_share_per_team_of_exactly_its_entitlement() -> None:
    jobs = blog_workload()
    scenario = partition_scenario(jobs, CONFIG)
    assert scenario.shares == ("ProdExp1", "ProdExp2")
    assert scenario.entitlements == (60, 40) and scenario.capacity_units == 100
    assert scenario.gpus_per_unit == 8 and scenario.capacity_gpus == 800
    # every job as the submit path makes it: its priority, its retry strategy, its scripted failures
    by_name = {j.name: j for j in scenario.jobs}
    assert len(by_name) == len(jobs)
    oom = by_name["p1-lowpri-late-02"]
    assert (
        oom.script == ("cuda_oom",)
        and oom.retry is not None
        and oom.retry["evaluateOnExit"][-1]["action"] == "EXIT"
    )
    high = by_name["p1-highpri-launch-01"]
    assert high == ScenarioJob(
        "p1-highpri-launch-01",
        40 * 60,
        45 * 60,
        10,
        0,
        TIERS.index(Tier.HIGHPRI),
        CONFIG.tiers[Tier.HIGHPRI].scheduling_priority,
        (),
        True,
        high.retry,
    )


def test_the_baseline_is_hard_partitions_with_the_measured_figures() -> None:
    # GIVEN the demo's script WHEN it replays under the what-if's static policy
    jobs = blog_workload()
    static = run_static_partitions(jobs, CONFIG)
    # THEN no team ever holds more than its entitlement (nothing is lent)
    peak = {team: max(use.get(team, 0) for _, use in static.timeline) for team in CONFIG.teams}
    assert peak == {"ProdExp1": 60, "ProdExp2": 40}
    # AND the figures the README's result table reports for hard partitions are these
    end = max(t for t, _ in static.timeline)
    capacity = CONFIG.instance_types[INSTANCE_TYPE].capacity
    assert round(utilization(static.timeline, capacity, 0, end), 4) == 0.651
    assert round(end / 3600, 2) == 4.23
    assert static_waits(static, jobs)["HIGHPRI"] == {"p50": 1500.0, "p95": 1500.0}
    # AND the CUDA OOM job failed once (EXIT), the internal error was retried, and the same idle
    # detector stopped the stuck job 63 minutes in (its 5 instances back to ProdExp1's queue)
    statuses = {view.name: view.status for view in static.jobs.values()}
    assert statuses["p1-lowpri-late-02"] == "FAILED" and statuses["p1-lowpri-stuck-01"] == "FAILED"
    assert sum(1 for s in statuses.values() if s == "FAILED") == 2
    assert (3780.0, {"ProdExp1": 55, "ProdExp2": 40}) in static.timeline


def test_the_demo_and_the_what_if_measure_the_same_waits_from_one_run() -> None:
    jobs = blog_workload()
    run = PolicyRun(partition_scenario(jobs, CONFIG), Policy.STATIC)
    tracker = UsageTracker(lambda: run.model.engine.now, {j.name: j.instances for j in jobs}, lambda s: s)
    run.model.subscribe(tracker)
    result = run.replay()
    assert result.finished == result.jobs == len(jobs)
    demo_waits = static_waits(tracker, jobs)
    for tier in TIERS:
        waits = result.waits_by_tier[tier.value]
        assert demo_waits[tier.value] == {"p50": percentile(waits, 0.5), "p95": percentile(waits, 0.95)}
