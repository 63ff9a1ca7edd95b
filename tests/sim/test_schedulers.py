"""The seams of the model: one scheduler per queue kind, AWS shapes in one place, the realtime sync."""

from __future__ import annotations

import pytest
from gpusim import BatchModel
from gpusim.schedulers import FairShareScheduler, FifoScheduler, QuotaShareScheduler

from tests.sim.conftest import G5


def test_each_queue_gets_the_scheduler_of_its_policy_kind(make_sim) -> None:
    # GIVEN a queue without a policy, one with a fair-share policy and one with a quota-share policy
    sim = make_sim()
    sim.env()
    sim.env("se-types", limits={G5: 8})
    sim.queue("fifo")
    sim.fair_queue("fair")
    arn = sim.batch.create_scheduling_policy(
        name="qsp", quotaSharePolicy={"idleResourceAssignmentStrategy": "FIFO"}
    )["arn"]
    sim.queue("quota", "se-types", schedulingPolicyArn=arn)
    # THEN each is scheduled by the class of its kind
    queues = sim.model.queues
    assert type(queues["fifo"].scheduler) is FifoScheduler
    assert type(queues["fair"].scheduler) is FairShareScheduler
    assert type(queues["quota"].scheduler) is QuotaShareScheduler
    assert [queues[n].kind for n in ("fifo", "fair", "quota")] == ["FIFO", "FAIRSHARE", "QUOTA"]


def test_a_replaced_fair_share_policy_keeps_the_scheduler_and_gives_it_new_parameters(make_sim) -> None:
    # GIVEN a fair-share queue with a one-hour decay window
    sim = make_sim()
    sim.env()
    sim.fair_queue("fair")
    queue = sim.model.queues["fair"]
    scheduler = queue.scheduler
    # WHEN its policy is replaced by another fair-share policy with a two-hour window
    arn = sim.batch.create_scheduling_policy(name="slow", fairsharePolicy={"shareDecaySeconds": 7200})["arn"]
    sim.batch.update_job_queue(jobQueue="fair", schedulingPolicyArn=arn)
    # THEN the same scheduler runs the queue, under the new window
    assert queue.scheduler is scheduler
    assert scheduler.window == 7200


def test_reweigh_refuses_a_queue_that_is_not_fair_share(make_sim) -> None:
    sim = make_sim()
    sim.env()
    sim.queue("fifo")
    with pytest.raises(TypeError, match="fifo is FIFO"):
        sim.model.reweigh(sim.model.queues["fifo"], {"A": 0.5})


def test_sync_refuses_a_model_on_a_virtual_time_engine() -> None:
    with pytest.raises(TypeError, match="RealtimeEngine"):
        BatchModel().sync()


def test_a_state_change_event_carries_what_describe_service_job_answers(make_sim) -> None:
    # GIVEN a job that ran to the end on a fair-share queue
    sim = make_sim()
    sim.env()
    sim.fair_queue()
    job_id = sim.submit("one", shareIdentifier="A", duration=100)
    sim.run()
    # WHEN its last Batch state-change event is compared with DescribeServiceJob
    (last,) = [
        e["detail"]
        for e in sim.events
        if e["detail-type"] == "Batch Service Job State Change" and e["detail"]["jobId"] == job_id
    ][-1:]
    described = sim.job(job_id)
    # THEN they are the same shape and values; the event leaves out only the payload and the tags
    assert last["status"] == "SUCCEEDED"
    assert last == {k: v for k, v in described.items() if k not in ("serviceRequestPayload", "tags")}
