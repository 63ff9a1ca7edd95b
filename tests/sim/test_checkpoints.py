"""Checkpoints: a running trainer writes one every interval, and a job started on a URI resumes from it."""

from __future__ import annotations

from typing import Any

from gpusim import Timings

from tests.sim.conftest import P5, payload

CKPT = {"CheckpointConfig": {"S3Uri": "s3://ckpt/run-1/", "LocalPath": "/opt/ml/checkpoints"}}
TIMINGS = Timings(scheduled_to_starting=10, starting_to_running=20, checkpoint_interval=300)


def submit(sim: Any, name: str, duration: float, checkpointed: bool = True) -> str:
    return sim.batch.submit_service_job(
        jobName=name,
        jobQueue="q",
        serviceJobType="SAGEMAKER_TRAINING",
        serviceRequestPayload=payload("run-1", 1, P5, **(CKPT if checkpointed else {})),
        tags={"gpusim:duration-seconds": str(duration)},
    )["jobId"]


def test_a_running_trainer_writes_a_checkpoint_every_interval_through_the_writer(make_sim) -> None:
    sim = make_sim(timings=TIMINGS)
    sim.env(), sim.queue()
    written: list[tuple[str, float, float]] = []
    sim.model.checkpoint_writer = lambda uri, at, progress: written.append((uri, at, progress))
    submit(sim, "a", duration=1000)
    sim.run(until=5000)
    # training starts at 30 s; checkpoints at 300, 600, 900 s of training (none at the end: it finished)
    epoch = sim.model.options.epoch_ms / 1000
    assert written == [("s3://ckpt/run-1/", epoch + 30 + p, p) for p in (300.0, 600.0, 900.0)]
    assert sim.model.checkpoints == {"s3://ckpt/run-1/": 900.0}


def test_a_terminated_job_resubmitted_on_its_uri_resumes_from_its_newest_checkpoint(make_sim) -> None:
    # GIVEN a 1000 s job terminated after 700 s of training (two checkpoints: 300 and 600 s)
    sim = make_sim(timings=TIMINGS)
    sim.env(), sim.queue()
    first = submit(sim, "a", duration=1000)
    sim.run(until=730)
    sim.batch.terminate_service_job(jobId=first, reason="shareplane reclaim: stopped for x")
    # WHEN the same payload is submitted again (what the failure path's requeue does)
    again = submit(sim, "a-rq1", duration=1000)
    sim.run(until=10_000)
    # THEN it trains only the 400 s its newest checkpoint did not hold
    job = sim.job(again)
    running = job["startedAt"] / 1000 + TIMINGS.starting_to_running
    assert job["status"] == "SUCCEEDED" and job["stoppedAt"] / 1000 - running == 400
    assert sim.model.jobs[again].saved == 600


def test_a_job_without_a_checkpoint_config_starts_from_zero_and_writes_nothing(make_sim) -> None:
    sim = make_sim(timings=TIMINGS)
    sim.env(), sim.queue()
    sim.model.checkpoint_writer = lambda *a: (_ for _ in ()).throw(AssertionError("wrote a checkpoint"))
    first = submit(sim, "a", duration=1000, checkpointed=False)
    sim.run(until=730)
    sim.batch.terminate_service_job(jobId=first, reason="stop")
    again = submit(sim, "b", duration=1000, checkpointed=False)
    sim.run(until=10_000)
    job = sim.job(again)
    assert job["stoppedAt"] / 1000 - (job["startedAt"] / 1000 + TIMINGS.starting_to_running) == 1000
    assert sim.model.checkpoints == {}
