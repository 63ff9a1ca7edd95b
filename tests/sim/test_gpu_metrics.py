"""GPU metrics: every host of a RUNNING job publishes SageMaker's instance metrics; scripts make it idle or hung."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest
from gpusim import ApiError, Timings
from gpusim.gpu_metrics import (
    CPU_UTILIZATION,
    GPU_MEMORY_UTILIZATION,
    GPU_UTILIZATION,
    HUNG_AFTER_TAG,
    IDLE_AFTER_TAG,
    TrainerShape,
    job_key,
)

from tests.sim.conftest import P5, payload

CKPT = {"CheckpointConfig": {"S3Uri": "s3://ckpt/run-1/", "LocalPath": "/opt/ml/checkpoints"}}
TIMINGS = Timings(scheduled_to_starting=10, starting_to_running=20, checkpoint_interval=300)
GPUS_P5 = 8


def submit(sim: Any, name: str, duration: float, count: int = 1, **tags: str) -> str:
    return sim.batch.submit_service_job(
        jobName=name,
        jobQueue="q",
        serviceJobType="SAGEMAKER_TRAINING",
        serviceRequestPayload=payload(name, count, P5, **CKPT),
        tags={"gpusim:duration-seconds": str(duration), **tags},
    )["jobId"]


def collect(sim: Any) -> list[dict[str, Any]]:
    published: list[dict[str, Any]] = []
    sim.model.metrics_writer = published.extend
    return published


def per_gpu(
    data: list[dict[str, Any]], metric: str = GPU_UTILIZATION
) -> dict[str, list[tuple[float, float]]]:
    """Host -> [(timestamp, percent per GPU)] of one metric."""
    out: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for d in data:
        if d["MetricName"] == metric:
            out[d["Dimensions"][0]["Value"]].append((d["Timestamp"], d["Value"] / GPUS_P5))
    return out


def test_every_host_of_a_running_job_publishes_the_three_metrics_each_minute_while_it_trains(
    make_sim,
) -> None:
    sim = make_sim(timings=TIMINGS)
    sim.env(), sim.queue()
    published = collect(sim)
    job_id = submit(sim, "busy", duration=1800, count=2)
    sim.run(until=10_000)
    tj = sim.model.jobs[job_id].training
    assert {d["MetricName"] for d in published} == {GPU_UTILIZATION, GPU_MEMORY_UTILIZATION, CPU_UTILIZATION}
    hosts = per_gpu(published)
    assert set(hosts) == {f"{tj.name}/algo-1", f"{tj.name}/algo-2"}
    epoch = sim.model.options.epoch_ms / 1000
    stamps = [t - epoch for t, _ in hosts[f"{tj.name}/algo-1"]]
    # training from 30 s to 1830 s: a sample at every whole minute in between, none outside
    assert stamps == [60.0 * m for m in range(1, 31)]
    assert all(d["Unit"] == "Percent" for d in published)
    assert all(0 <= v <= 100 for samples in hosts.values() for _, v in samples)
    assert all(0 <= d["Value"] <= 100 * 192 for d in published if d["MetricName"] == CPU_UTILIZATION)


def test_a_busy_trainer_dips_only_while_loading_data_and_in_short_evaluations(make_sim) -> None:
    sim = make_sim(timings=TIMINGS)
    sim.env(), sim.queue()
    published = collect(sim)
    job_id = submit(sim, "busy", duration=6 * 3600)
    sim.run(until=7 * 3600)
    shape = TrainerShape.of(sim.model.jobs[job_id].gpu_key)
    (samples,) = per_gpu(published).values()
    low = [v for _, v in samples if v < 5]
    assert low and len(low) < len(samples) / 4
    # The longest run of low minutes after loading is one evaluation pause, well under 30 minutes.
    epoch = sim.model.options.epoch_ms / 1000
    longest = run = 0
    for t, v in samples:
        if t - epoch - 30 > shape.loading:
            run = run + 1 if v < 5 else 0
            longest = max(longest, run)
    assert 0 < longest <= 9


def test_a_job_scripted_idle_after_a_point_shows_every_gpu_under_two_percent_from_then_to_its_end(
    make_sim,
) -> None:
    sim = make_sim(timings=TIMINGS)
    sim.env(), sim.queue()
    published = collect(sim)
    job_id = submit(sim, "idler", duration=3600, count=2, **{IDLE_AFTER_TAG: "1200"})
    sim.run(until=10_000)
    epoch = sim.model.options.epoch_ms / 1000
    for samples in per_gpu(published).values():
        after = [v for t, v in samples if t - epoch - 30 >= 1200]
        assert after and max(after) < 2
    assert sim.job(job_id)["status"] == "SUCCEEDED"  # it still ends at its scripted duration


def test_a_hung_job_keeps_its_gpus_busy_writes_no_more_checkpoints_and_never_completes(make_sim) -> None:
    sim = make_sim(timings=TIMINGS)
    sim.env(), sim.queue()
    published = collect(sim)
    written: list[float] = []
    sim.model.checkpoint_writer = lambda uri, at, progress: written.append(progress)
    job_id = submit(sim, "hung", duration=1800, **{HUNG_AFTER_TAG: "700"})
    sim.run(until=6000)
    assert written == [300.0, 600.0]
    epoch = sim.model.options.epoch_ms / 1000
    (samples,) = per_gpu(published).values()
    assert min(v for t, v in samples if t - epoch - 30 >= 700) >= 97
    job = sim.model.jobs[job_id]
    assert sim.job(job_id)["status"] == "RUNNING" and sim.model.last_checkpoint_at(job) == 30 + 600


def test_a_bad_script_tag_is_refused_at_submission_naming_the_tag() -> None:
    from gpusim.gpu_metrics import script_from_tags
    from shareplane.domain.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match=IDLE_AFTER_TAG):
        script_from_tags({IDLE_AFTER_TAG: "soon"})


def test_submit_service_job_answers_a_client_error_for_a_negative_script(make_sim) -> None:
    sim = make_sim(timings=TIMINGS)
    sim.env(), sim.queue()
    with pytest.raises(ApiError, match=HUNG_AFTER_TAG):
        submit(sim, "bad", duration=60, **{HUNG_AFTER_TAG: "-5"})


def test_metric_values_are_the_same_in_every_run_and_publishing_stops_when_nothing_runs(make_sim) -> None:
    runs = []
    for _ in range(2):
        sim = make_sim(timings=TIMINGS)
        sim.env(), sim.queue()
        published = collect(sim)
        submit(sim, "a", duration=900)
        sim.run()  # returns: no metrics tick keeps the engine alive after the job ended
        runs.append([(d["MetricName"], d["Value"]) for d in published])
    assert runs[0] == runs[1] and runs[0]
    assert job_key("a", "x") != job_key("a", "y")


def test_an_idle_trainer_writes_no_checkpoint_once_idle_so_a_stop_keeps_only_its_busy_progress(
    make_sim,
) -> None:
    sim = make_sim(timings=TIMINGS)
    sim.env(), sim.queue()
    written: list[float] = []
    sim.model.checkpoint_writer = lambda uri, at, progress: written.append(progress)
    job_id = submit(sim, "idler", duration=3600, **{IDLE_AFTER_TAG: "700"})
    sim.run(until=2000)
    assert written == [300.0, 600.0]
    job = sim.model.jobs[job_id]
    assert sim.model.last_checkpoint_at(job) == 30 + 600
    sim.model.requeue_from_checkpoint(job, "stopped")
    assert job.saved == 600
