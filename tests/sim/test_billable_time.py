"""The emulator's BillableTimeInSeconds, as DescribeTrainingJob reports it.

https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_DescribeTrainingJob.html: billed from
TrainingStartTime to TrainingEndTime (provisioning before the start is not billed); with managed
spot training BillableTimeInSeconds is below TrainingTimeInSeconds by the saving.
"""

from __future__ import annotations

from typing import Any

from gpusim import Faults

from tests.sim.conftest import FAST, payload


def submit(sim: Any, name: str, duration: float, **payload_fields: Any) -> str:
    return sim.batch.submit_service_job(
        jobName=name,
        jobQueue="q",
        serviceJobType="SAGEMAKER_TRAINING",
        serviceRequestPayload=payload(name, 2, **payload_fields),
        tags={"gpusim:duration-seconds": str(duration)},
    )["jobId"]


def final_detail(sim: Any, name: str) -> dict[str, Any]:
    (detail,) = [
        e["detail"]
        for e in sim.events
        if e["detail-type"] == "SageMaker Training Job State Change"
        and e["detail"]["TrainingJobName"].startswith(f"AWSBatch{name}")
        and e["detail"]["TrainingJobStatus"] in ("Completed", "Failed", "Stopped")
    ]
    return detail


def test_an_on_demand_job_is_billed_its_training_time_not_its_provisioning(make_sim: Any) -> None:
    sim = make_sim()
    sim.env()
    sim.queue()
    submit(sim, "ondemand", 1000)
    sim.run()
    detail = final_detail(sim, "ondemand")
    training = (detail["TrainingEndTime"] - detail["TrainingStartTime"]) // 1000
    assert detail["TrainingTimeInSeconds"] == detail["BillableTimeInSeconds"] == training
    # the provisioning before TrainingStartTime (SCHEDULED -> STARTING) is not in it
    assert detail["TrainingStartTime"] - detail["CreationTime"] >= FAST.scheduled_to_starting * 1000
    assert training == FAST.starting_to_running + 1000
    # DescribeTrainingJob answers the same as the event
    described = sim.sagemaker.describe_training_job(TrainingJobName=detail["TrainingJobName"])
    assert described["BillableTimeInSeconds"] == training


def test_a_managed_spot_job_is_billed_less_than_its_training_time(make_sim: Any) -> None:
    sim = make_sim(spot_billable_fraction=0.25)
    sim.env()
    sim.queue()
    submit(sim, "spot", 1000, EnableManagedSpotTraining=True)
    sim.run()
    detail = final_detail(sim, "spot")
    assert detail["BillableTimeInSeconds"] == round(detail["TrainingTimeInSeconds"] * 0.25)
    assert detail["BillableTimeInSeconds"] < detail["TrainingTimeInSeconds"]


def test_a_job_that_never_started_training_reports_no_billable_time(make_sim: Any) -> None:
    sim = make_sim(faults=Faults(scripted={"nocap": ("capacity", "ok")}))
    sim.env()
    sim.queue()
    submit(sim, "nocap", 100)
    sim.run()
    failed = [
        e["detail"]
        for e in sim.events
        if e["detail-type"] == "SageMaker Training Job State Change"
        and e["detail"]["TrainingJobStatus"] == "Failed"
    ]
    assert failed and all("BillableTimeInSeconds" not in d for d in failed)
    in_progress = [
        e["detail"]
        for e in sim.events
        if e["detail-type"] == "SageMaker Training Job State Change"
        and e["detail"]["TrainingJobStatus"] == "InProgress"
    ]
    assert in_progress and all("BillableTimeInSeconds" not in d for d in in_progress)
