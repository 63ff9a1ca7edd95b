"""Checkpoint-aware reclaim: who may be a victim, the least work lost inside the class order, budgets, no thrash."""

from __future__ import annotations

import copy
from dataclasses import replace
from itertools import combinations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shareplane.domain.config.shares import ReclaimConfig, Tier, TierConfig
from shareplane.domain.reclaim.plan import (
    SKIP_FITS,
    SKIP_JOB_BUDGET,
    SKIP_NO_VICTIMS,
    SKIP_RUN_BUDGET,
    ReclaimSnapshot,
    RunningJob,
    WaitingJob,
    borrowed_jobs,
    plan_reclaim,
)

from tests.properties import examples

P4 = "ml.p4d.24xlarge"
NOW = 1_760_000_000.0
TIERS = {
    Tier.HIGHPRI: TierConfig(scheduling_priority=90, wait_slo_seconds=900, reclaim_after_seconds=300),
    Tier.MIDPRI: TierConfig(scheduling_priority=50, wait_slo_seconds=3600),
    Tier.LOWPRI: TierConfig(scheduling_priority=10, wait_slo_seconds=14400),
}
RULES = ReclaimConfig(min_runtime_seconds=600, cooldown_seconds=3600)
ENTITLED = {"A": {P4: 6}, "B": {P4: 4}}


def waiter(job_id="hi", team="A", tier=Tier.HIGHPRI, instances=2, waited=600.0, **kw) -> WaitingJob:
    return WaitingJob(job_id, team, tier, P4, instances, NOW - waited, **kw)


def runner(job_id, team="B", tier=Tier.LOWPRI, instances=1, ran=3600.0, ckpt_age=300.0, **kw) -> RunningJob:
    kw.setdefault("checkpoints", True)
    last = NOW - ckpt_age if ckpt_age is not None else None
    return RunningJob(job_id, team, tier, P4, instances, NOW - ran, last_checkpoint_at=last, **kw)


def snap(waiting, running, capacity=10, **kw) -> ReclaimSnapshot:
    return ReclaimSnapshot(NOW, {P4: capacity}, ENTITLED, tuple(waiting), tuple(running), **kw)


def victims(plan) -> list[str]:
    return list(plan.victim_ids)


# A: 4 entitled jobs of 1 (within 6), B: 6 jobs of 1 (4 entitled + 2 borrowed, the latest two).
def full_cluster(**overrides):
    jobs = [runner(f"a{i}", team="A", ran=7200 - i) for i in range(4)]
    jobs += [runner(f"b{i}", team="B", ran=7200 - 10 * i) for i in range(6)]
    return jobs


@pytest.mark.parametrize(
    ("case", "waiting", "running", "expected"),
    [
        ("a HIGHPRI job below its threshold reclaims nothing", [waiter(waited=100)], full_cluster(), []),
        ("a MIDPRI job never reclaims (no threshold)", [waiter(tier=Tier.MIDPRI)], full_cluster(), []),
        ("borrowed LOWPRI capacity of the other team goes first", [waiter()], full_cluster(), ["b4", "b5"]),
        (
            "the other team's entitled jobs are never victims",
            [waiter(instances=3)],
            [runner(f"b{i}", ran=7200 - i) for i in range(4)]
            + [runner(f"x{i}", team="A", tier=Tier.HIGHPRI) for i in range(6)],
            [],
        ),
        (
            "inside its own team a lower tier is a victim even within the entitlement",
            [waiter(instances=1)],
            [runner("a0", team="A", tier=Tier.MIDPRI)]
            + [runner(f"b{i}", ran=7200 - i) for i in range(4)]
            + [runner(f"h{i}", team="A", tier=Tier.HIGHPRI) for i in range(5)],
            ["a0"],
        ),
        (
            "one large victim beats two small ones",
            [waiter(instances=2)],
            [runner(f"e{i}", ran=200_000) for i in range(4)]
            + [runner("big", instances=2, ran=100_000), runner("s1", ran=9_000), runner("s2", ran=9_001)]
            + [runner(f"a{i}", team="A", tier=Tier.HIGHPRI) for i in range(2)],
            ["big"],
        ),
        (
            "among equally few victims the newest checkpoint loses least",
            [waiter(instances=1)],
            [
                runner("b0", ran=9000),
                runner("b1", ran=9001),
                runner("b2", ran=9002),
                runner("b3", ran=9003),
                runner("old", ran=8000, ckpt_age=800),
                runner("new", ran=8001, ckpt_age=60),
            ]
            + [runner(f"a{i}", team="A", tier=Tier.HIGHPRI) for i in range(4)],
            ["new"],
        ),
        (
            "a job without a CheckpointConfig is never a victim",
            [waiter(instances=1)],
            [runner(f"b{i}", ran=9000 - i) for i in range(4)]
            + [runner("nock", checkpoints=False, ckpt_age=None)]
            + [runner(f"a{i}", team="A", tier=Tier.HIGHPRI) for i in range(5)],
            [],
        ),
        (
            "a job younger than the minimum runtime is never a victim",
            [waiter(instances=1)],
            [runner(f"b{i}", ran=9000 - i) for i in range(4)]
            + [runner("young", ran=60)]
            + [runner(f"a{i}", team="A", tier=Tier.HIGHPRI) for i in range(5)],
            [],
        ),
        (
            "a job stopped recently is not stopped again",
            [waiter(instances=1)],
            [runner(f"b{i}", ran=9000 - i) for i in range(4)]
            + [runner("hit", last_stopped_at=NOW - 600)]
            + [runner(f"a{i}", team="A", tier=Tier.HIGHPRI) for i in range(5)],
            [],
        ),
        (
            "free capacity first: a job that fits reclaims nothing",
            [waiter(instances=2)],
            [runner(f"b{i}") for i in range(8)],
            [],
        ),
        (
            "capacity already being released counts as free",
            [waiter(instances=2)],
            [runner("s1", stopping_for="hi"), runner("s2", stopping_for="hi")] + full_cluster()[2:],
            [],
        ),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_victim_choice(case, waiting, running, expected):
    plan = plan_reclaim(snap(waiting, running), TIERS, RULES)
    assert sorted(victims(plan)) == sorted(expected), case


def test_a_victim_never_reclaims_from_the_job_that_displaced_it():
    # GIVEN a requeued job that was stopped for "hi", now waiting as a HIGHPRI job itself
    back = waiter("back", team="B", instances=1, displaced_by=frozenset({"hi"}))
    running = [runner("hi", team="A", tier=Tier.MIDPRI)] + [
        runner(f"b{i}", tier=Tier.HIGHPRI) for i in range(9)
    ]
    plan = plan_reclaim(snap([back], running), TIERS, RULES)
    assert victims(plan) == []
    assert plan.skipped[0].reason == SKIP_NO_VICTIMS


def test_skips_say_why():
    running = full_cluster()
    fits = plan_reclaim(snap([waiter(instances=1)], running[:9]), TIERS, RULES)
    assert fits.skipped[0].reason == SKIP_FITS
    spent = plan_reclaim(snap([waiter(victims_so_far=4)], running), TIERS, RULES)
    assert spent.skipped[0].reason == SKIP_JOB_BUDGET
    day = plan_reclaim(snap([waiter()], running, victims_today=100), TIERS, RULES)
    assert day.skipped[0].reason == SKIP_RUN_BUDGET
    assert victims(day) == []


def test_audit_fields_describe_the_cost():
    plan = plan_reclaim(snap([waiter()], full_cluster()), TIERS, RULES)
    (reclaim,) = plan.reclaims
    assert (reclaim.job_id, reclaim.short_instances, reclaim.waited_seconds) == ("hi", 2, 600.0)
    assert all(v.borrowed and v.checkpoint_age_seconds == 300.0 for v in reclaim.victims)
    assert reclaim.lost_instance_seconds == 600.0


def test_higher_tier_and_older_waiters_are_served_first_within_the_run_budget():
    rules = RULES.model_copy(update={"max_victims_per_window": 2})
    young = waiter("young", instances=2, waited=400)
    old = waiter("old", instances=2, waited=900)
    plan = plan_reclaim(snap([young, old], full_cluster()), TIERS, rules)
    assert [r.job_id for r in plan.reclaims] == ["old"]
    assert plan.skipped[0].job_id == "young"


def test_capacity_released_for_a_skipped_waiter_is_counted_for_no_other():
    # GIVEN one instance being released for "hi", whose victim budget is spent, and a second waiter
    running = [runner("s", stopping_for="hi")] + [runner(f"a{i}", team="A", ran=9000 - i) for i in range(3)]
    hi = waiter("hi", instances=3, victims_so_far=4, waited=900)
    hi2 = waiter("hi2", instances=1, waited=600)
    plan = plan_reclaim(ReclaimSnapshot(NOW, {P4: 4}, ENTITLED, (hi, hi2), tuple(running)), TIERS, RULES)
    # THEN hi2 does not count hi's instance as free: it needs a victim of its own
    assert [s.job_id for s in plan.skipped] == ["hi"]
    assert [r.job_id for r in plan.reclaims] == ["hi2"] and len(plan.victim_ids) == 1


def test_a_checkpoint_path_that_stayed_empty_cannot_resume_so_it_is_not_a_victim():
    # GIVEN B's borrowed LOWPRI job with a CheckpointConfig that never wrote a checkpoint (11 h run),
    # and A's own LOWPRI jobs with checkpoints 30 s old, on a full cluster
    never = runner("b-never", ran=11 * 3600, ckpt_age=None)
    own = [runner(f"a{i}", team="A", ckpt_age=30) for i in range(2)]
    entitled = [runner(f"b{i}", ran=50_000 - i) for i in range(4)] + [
        runner(f"x{i}", team="A") for i in range(3)
    ]
    cluster = [never, *own, *entitled]
    plan = plan_reclaim(snap([waiter(instances=1)], cluster), TIERS, RULES)
    # THEN an own-team job that can resume is stopped, losing 30 s, never the one that cannot
    assert victims(plan) == ["a0"] and plan.reclaims[0].lost_instance_seconds == 30
    # AND where the config allows jobs that cannot resume, it loses everything since its dispatch
    allowed = plan_reclaim(
        snap([waiter(instances=1)], cluster),
        TIERS,
        RULES.model_copy(update={"allow_no_checkpoint_victims": True}),
    )
    assert victims(allowed) == ["b-never"] and allowed.reclaims[0].lost_instance_seconds == 11 * 3600


def test_inside_a_class_the_least_work_lost_beats_the_fewest_victims():
    # GIVEN B's borrowed jobs: one of 2 instances checkpointed 50 min ago, two of 1 checkpointed 1 min ago
    running = [runner(f"b{i}", ran=20_000 - i, ckpt_age=60) for i in range(4)]
    running += [
        runner("big", instances=2, ckpt_age=3000),
        runner("s1", ckpt_age=60),
        runner("s2", ckpt_age=60),
    ]
    plan = plan_reclaim(snap([waiter(instances=2)], running, capacity=8), TIERS, RULES)
    # THEN the two small ones go (120 instance-s lost), not the big one (6000)
    assert sorted(victims(plan)) == ["s1", "s2"] and plan.reclaims[0].lost_instance_seconds == 120


def test_borrowed_jobs_are_the_most_recently_dispatched():
    jobs = [runner(f"b{i}", ran=1000 - i) for i in range(6)]
    assert borrowed_jobs(jobs, ENTITLED) == {"b4", "b5"}


def test_bad_times_are_refused_with_the_field():
    with pytest.raises(Exception, match="waiting_since"):
        WaitingJob("x", "A", Tier.HIGHPRI, P4, 1, 1e15)


# ----------------------------------------------------------------------------- properties
job_sizes = st.integers(min_value=1, max_value=4)


@st.composite
def clusters(draw):
    capacity = draw(st.integers(min_value=4, max_value=16))
    running, used = [], 0
    for i in range(draw(st.integers(min_value=0, max_value=10))):
        size = draw(job_sizes)
        if used + size > capacity:
            break
        used += size
        running.append(
            RunningJob(
                f"r{i}",
                draw(st.sampled_from(["A", "B"])),
                draw(st.sampled_from(list(Tier))),
                P4,
                size,
                NOW - draw(st.integers(min_value=0, max_value=20_000)),
                checkpoints=draw(st.booleans()),
                last_checkpoint_at=draw(
                    st.none() | st.integers(min_value=0, max_value=3000).map(lambda a: NOW - a)
                ),
                last_stopped_at=draw(st.none() | st.just(NOW - 100.0)),
            )
        )
    waiting = [
        WaitingJob(
            f"w{i}",
            draw(st.sampled_from(["A", "B"])),
            draw(st.sampled_from(list(Tier))),
            P4,
            draw(job_sizes),
            NOW - draw(st.integers(min_value=0, max_value=5000)),
            displaced_by=frozenset(draw(st.sets(st.sampled_from([r.job_id for r in running] or ["none"])))),
        )
        for i in range(draw(st.integers(min_value=1, max_value=3)))
    ]
    return ReclaimSnapshot(NOW, {P4: capacity}, ENTITLED, tuple(waiting), tuple(running))


def _eligible(snapshot: ReclaimSnapshot, rules: ReclaimConfig) -> list[RunningJob]:
    return [
        j
        for j in snapshot.running
        if j.checkpoints
        and j.last_checkpoint_at is not None
        and NOW - j.dispatched_at >= rules.min_runtime_seconds
        and (j.last_stopped_at is None or NOW - j.last_stopped_at >= rules.cooldown_seconds)
    ]


@settings(max_examples=examples(300), deadline=None)
@given(clusters())
def test_property_every_victim_is_allowed_and_none_is_taken_twice(snapshot):
    plan = plan_reclaim(snapshot, TIERS, RULES)
    borrowed = borrowed_jobs(snapshot.running, snapshot.entitlements)
    by_id = {j.job_id: j for j in snapshot.running}
    waiters = {w.job_id: w for w in snapshot.waiting}
    assert len(plan.victim_ids) == len(set(plan.victim_ids))
    assert len(plan.victim_ids) <= RULES.max_victims_per_window
    eligible = {j.job_id for j in _eligible(snapshot, RULES)}
    for reclaim in plan.reclaims:
        w = waiters[reclaim.job_id]
        assert TIERS[w.tier].reclaim_after_seconds is not None
        for v in reclaim.victims:
            job = by_id[v.job_id]
            assert v.job_id in eligible, "cannot resume, too young or stopped recently"
            assert list(Tier).index(job.tier) > list(Tier).index(w.tier), "only lower tiers"
            assert job.team == w.team or v.job_id in borrowed, "other teams lose only borrowed capacity"
            assert v.job_id not in w.displaced_by and w.job_id not in job.displaced_by, "no thrash"


@settings(max_examples=examples(300), deadline=None)
@given(clusters())
def test_property_no_over_reclaim_and_least_work_lost_within_the_class_order(snapshot):
    plan = plan_reclaim(snapshot, TIERS, RULES)
    for reclaim in plan.reclaims:
        sizes = [v.instances for v in reclaim.victims]
        assert sum(sizes) >= reclaim.short_instances
        # No over-reclaim: without any one victim the shortfall would not be covered.
        assert all(sum(sizes) - s < reclaim.short_instances for s in sizes)
    if len(plan.reclaims) == 1 and len(snapshot.waiting) == 1:
        # Least work lost: no set within the budgets from the planner's pool (the smallest run of
        # classes, lowest tier and borrowed first, that covers the shortfall) covers it losing less
        # (brute force).
        (reclaim,) = plan.reclaims
        (waiter,) = snapshot.waiting
        borrowed = borrowed_jobs(snapshot.running, snapshot.entitlements)
        rank = list(Tier).index
        eligible = [
            j
            for j in _eligible(snapshot, RULES)
            if rank(j.tier) > rank(waiter.tier)
            and (j.team == waiter.team or j.job_id in borrowed)
            and j.job_id not in waiter.displaced_by
            and waiter.job_id not in j.displaced_by
        ]

        def klass(j: RunningJob) -> tuple[int, int]:
            return (-rank(j.tier), 0 if j.job_id in borrowed else 1)

        pool: list[RunningJob] = []
        for each in sorted({klass(j) for j in eligible}):
            pool += [j for j in eligible if klass(j) == each]
            if sum(j.instances for j in pool) >= reclaim.short_instances:
                break
        assert {v.job_id for v in reclaim.victims} <= {j.job_id for j in pool}, "the class order"
        lost = sum(v.lost_instance_seconds for v in reclaim.victims)
        limit = min(RULES.max_victims_per_job - waiter.victims_so_far, RULES.max_victims_per_window)
        for k in range(1, limit + 1):
            for combo in combinations(pool, k):
                if sum(j.instances for j in combo) >= reclaim.short_instances:
                    loses = sum(j.instances * j.work_since_checkpoint(NOW) for j in combo)
                    assert loses >= lost, "a set losing less work would do"


@settings(max_examples=examples(200), deadline=None)
@given(clusters(), st.randoms(use_true_random=False))
def test_property_plans_ignore_input_order_and_never_modify_it(snapshot, rnd):
    before = copy.deepcopy(snapshot)
    plan = plan_reclaim(snapshot, TIERS, RULES)
    assert snapshot == before
    waiting, running = list(snapshot.waiting), list(snapshot.running)
    rnd.shuffle(waiting)
    rnd.shuffle(running)
    shuffled = replace(snapshot, waiting=tuple(waiting), running=tuple(running))
    assert plan_reclaim(shuffled, TIERS, RULES) == plan


@settings(max_examples=examples(200), deadline=None)
@given(clusters())
def test_property_a_replanned_decision_adds_no_victims(snapshot):
    # Re-delivery after the plan was applied: victims are stopping, beneficiaries counted them.
    plan = plan_reclaim(snapshot, TIERS, RULES)
    stopped = set(plan.victim_ids)
    owner = {v.job_id: r.job_id for r in plan.reclaims for v in r.victims}
    served = {r.job_id: len(r.victims) for r in plan.reclaims}
    after = replace(
        snapshot,
        running=tuple(replace(j, stopping_for=owner.get(j.job_id)) for j in snapshot.running),
        waiting=tuple(replace(w, victims_so_far=served.get(w.job_id, 0)) for w in snapshot.waiting),
        victims_today=len(stopped),
    )
    again = plan_reclaim(after, TIERS, RULES)
    assert not set(again.victim_ids) & stopped
    assert not {r.job_id for r in again.reclaims} & set(served)
