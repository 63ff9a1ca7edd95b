"""Quota shares: limits, lending and borrowing, cross-share and in-share preemption."""

from __future__ import annotations

import pytest

G5 = "ml.g5.xlarge"


def quota_queue(sim, se_capacity: int, shares: dict[str, dict]) -> str:
    sim.env(limits={G5: se_capacity})
    arn = sim.batch.create_scheduling_policy(
        name="qsp", quotaSharePolicy={"idleResourceAssignmentStrategy": "FIFO"}
    )["arn"]
    sim.queue("qq", schedulingPolicyArn=arn)
    for name, spec in shares.items():
        sharing = {"strategy": spec.get("strategy", "RESERVE")}
        if "borrow" in spec:
            sharing["borrowLimit"] = spec["borrow"]
        sim.batch.create_quota_share(
            quotaShareName=name,
            jobQueue="qq",
            capacityLimits=[{"maxCapacity": spec.get("limit", 1), "capacityUnit": G5}],
            resourceSharingConfiguration=sharing,
            preemptionConfiguration={"inSharePreemption": spec.get("in_share", "DISABLED")},
        )
    return "qq"


def qsubmit(sim, name: str, share: str, priority: int = 0, **extra) -> str:
    return sim.submit(
        name,
        queue="qq",
        quotaShareName=share,
        schedulingPriority=priority,
        instance_type=G5,
        duration=10**5,
        **extra,
    )


SDK_SHARES = {
    "QS1": {"strategy": "LEND_AND_BORROW", "borrow": 200, "in_share": "ENABLED"},
    "QS2": {"strategy": "LEND"},
    "QS3": {"strategy": "RESERVE"},
}


def test_the_sdk_notebook_flow_borrow_reclaim_and_in_share_preemption(make_sim) -> None:
    sim = make_sim()
    quota_queue(sim, 3, SDK_SHARES)
    # GIVEN qs1 jobs at priorities 3, 2 and 1
    high, med, low = (qsubmit(sim, n, "QS1", p) for n, p in (("high", 3), ("med", 2), ("low", 1)))
    sim.run(until=100)
    # THEN high runs on QS1's own instance, med borrows QS2's, low waits (QS3 reserves its own)
    assert [sim.status(j) for j in (high, med, low)] == ["RUNNING", "RUNNING", "RUNNABLE"]
    # WHEN QS2 gets a job THEN it preempts the borrowing med job, which goes back to RUNNABLE
    qs2 = qsubmit(sim, "qs2", "QS2")
    sim.run(until=200)
    assert sim.status(qs2) == "RUNNING"
    assert sim.status(med) == "RUNNABLE"
    summary = sim.job(med)["preemptionSummary"]
    assert summary["preemptedAttemptCount"] == 1
    assert summary["recentPreemptedAttempts"][0]["statusReason"] == (
        "Cross-share preemption triggered to reclaim borrowed capacity"
    )
    # WHEN low is raised to priority 4 THEN it preempts high inside QS1
    sim.batch.update_service_job(jobId=low, schedulingPriority=4)
    sim.run(until=300)
    assert [sim.status(j) for j in (high, med, low)] == ["RUNNABLE", "RUNNABLE", "RUNNING"]
    kinds = [e["detail-type"] for e in sim.events if "Preemption" in e["detail-type"]]
    assert kinds == ["Batch Service Job Preemption Started", "Batch Service Job Preemption Completed"] * 2


@pytest.mark.parametrize(
    ("strategy", "borrow", "running"),
    [("RESERVE", None, 1), ("LEND", None, 1), ("LEND_AND_BORROW", -1, 4), ("LEND_AND_BORROW", 100, 2)],
    ids=[
        "a RESERVE share never borrows",
        "a LEND share never borrows",
        "LEND_AND_BORROW with borrowLimit -1 borrows all idle capacity",
        "borrowLimit 100 caps borrowing at the share's own limit",
    ],
)
def test_borrowing_follows_strategy_and_borrow_limit(make_sim, strategy, borrow, running) -> None:
    sim = make_sim()
    spec = {"strategy": strategy}
    if borrow is not None:
        spec["borrow"] = borrow
    quota_queue(sim, 4, {"A": spec, "B": {"strategy": "LEND", "limit": 3}})
    jobs = [qsubmit(sim, f"a{i}", "A") for i in range(4)]
    sim.run(until=100)
    assert sum(sim.status(j) == "RUNNING" for j in jobs) == running


def test_reserve_share_idle_capacity_is_never_lent(make_sim) -> None:
    sim = make_sim()
    quota_queue(sim, 2, {"A": {"strategy": "LEND_AND_BORROW"}, "R": {"strategy": "RESERVE"}})
    jobs = [qsubmit(sim, f"a{i}", "A") for i in range(2)]
    sim.run(until=100)
    assert [sim.status(j) for j in jobs] == ["RUNNING", "RUNNABLE"]


def test_in_share_preemption_needs_the_share_to_enable_it(make_sim) -> None:
    sim = make_sim()
    quota_queue(sim, 1, {"A": {"strategy": "RESERVE", "in_share": "DISABLED"}})
    low = qsubmit(sim, "low", "A", 1)
    sim.run(until=100)
    high = qsubmit(sim, "high", "A", 9)
    sim.run(until=200)
    assert [sim.status(low), sim.status(high)] == ["RUNNING", "RUNNABLE"]


def test_preemption_retries_zero_fails_the_job_on_its_first_preemption(make_sim) -> None:
    sim = make_sim()
    quota_queue(sim, 1, {"A": {"strategy": "RESERVE", "in_share": "ENABLED"}})
    low = qsubmit(sim, "low", "A", 1, preemptionConfiguration={"preemptionRetriesBeforeTermination": 0})
    sim.run(until=100)
    qsubmit(sim, "high", "A", 9)
    sim.run(until=200)
    job = sim.job(low)
    assert job["status"] == "FAILED"
    assert job["attempts"] == []  # a preemption does not use the retry budget
    assert job["preemptionSummary"]["preemptedAttemptCount"] == 1
    assert job["statusReason"] == "In-share preemption triggered by a higher priority job"


def test_preempted_jobs_are_requeued_until_the_retry_cap(make_sim) -> None:
    sim = make_sim()
    quota_queue(sim, 1, {"A": {"strategy": "RESERVE", "in_share": "ENABLED"}})
    victim = qsubmit(sim, "victim", "A", 1, preemptionConfiguration={"preemptionRetriesBeforeTermination": 1})
    for i, prio in enumerate((5, 6)):
        sim.run(until=100 * (i + 1))
        blocker = qsubmit(sim, f"hi{i}", "A", prio)
        sim.run(until=100 * (i + 1) + 50)
        sim.batch.terminate_service_job(jobId=blocker, reason="make room")
    sim.run(until=400)
    assert sim.job(victim)["status"] == "FAILED"
    assert sim.job(victim)["preemptionSummary"]["preemptedAttemptCount"] == 2


def test_lowering_a_share_limit_makes_its_excess_reclaimable(make_sim) -> None:
    sim = make_sim()
    quota_queue(sim, 2, {"A": {"strategy": "LEND", "limit": 2}, "B": {"strategy": "RESERVE", "limit": 1}})
    # GIVEN B's limit overcommits the environment and A fills it within its own limit
    a = [qsubmit(sim, f"a{i}", "A") for i in range(2)]
    sim.run(until=100)
    assert [sim.status(j) for j in a] == ["RUNNING", "RUNNING"]
    blocked = qsubmit(sim, "b-early", "B")
    sim.run(until=150)
    assert sim.status(blocked) == "RUNNABLE"  # nothing is borrowed, so nothing is preempted
    sim.batch.terminate_service_job(jobId=blocked, reason="clear")
    # WHEN A's limit drops to 1 THEN its second instance counts as borrowed and B reclaims it
    share_arn = sim.batch.list_quota_shares(jobQueue="qq")["quotaShares"][0]["quotaShareArn"]
    sim.batch.update_quota_share(
        quotaShareArn=share_arn, capacityLimits=[{"maxCapacity": 1, "capacityUnit": G5}]
    )
    b = qsubmit(sim, "b0", "B")
    sim.run(until=300)
    assert sim.status(b) == "RUNNING"
    assert sorted(sim.status(j) for j in a) == ["RUNNABLE", "RUNNING"]


def _preempted_borrower_finish(make_sim, checkpointed: bool) -> tuple[dict, float]:
    from gpusim import Timings

    from tests.sim.conftest import payload

    sim = make_sim(timings=Timings(scheduled_to_starting=10, starting_to_running=20, checkpoint_interval=900))
    quota_queue(sim, 2, {"QS1": {"strategy": "LEND_AND_BORROW", "borrow": 100}, "QS2": {"strategy": "LEND"}})
    qsubmit(sim, "own", "QS1")  # QS1's own instance stays busy
    extra = {"CheckpointConfig": {"S3Uri": "s3://ckpt/borrower/"}} if checkpointed else {}
    borrower = sim.batch.submit_service_job(
        jobName="borrower",
        jobQueue="qq",
        serviceJobType="SAGEMAKER_TRAINING",
        serviceRequestPayload=payload("borrower", 1, G5, **extra),
        quotaShareName="QS1",
        tags={"gpusim:duration-seconds": "2000"},
    )["jobId"]
    sim.run(until=1030)  # the borrower has trained for 1000 s on QS2's instance
    sim.submit("lender", queue="qq", quotaShareName="QS2", instance_type=G5, duration=1)
    sim.run(until=10**4)
    job = sim.job(borrower)
    return job, (job["stoppedAt"] - job["createdAt"]) / 1000


def test_a_checkpointing_job_resumes_from_its_last_checkpoint_after_preemption(make_sim) -> None:
    # GIVEN a 2000 s job borrowing the lender's instance, preempted after 1000 s of training
    with_ckpt, with_end = _preempted_borrower_finish(make_sim, checkpointed=True)
    without, without_end = _preempted_borrower_finish(make_sim, checkpointed=False)
    # THEN both were preempted once and finished; the checkpointing one redid only the 100 s past its
    # last checkpoint (interval 900 s) instead of all 1000 s
    for job in (with_ckpt, without):
        assert job["status"] == "SUCCEEDED" and job["preemptionSummary"]["preemptedAttemptCount"] == 1
    assert without_end - with_end == pytest.approx(900)
