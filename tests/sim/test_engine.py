"""The clock owner: ordering, ties, run(until), and the scaled wall clock of the emulator."""

from __future__ import annotations

import math

import pytest
from gpusim import Engine, RealtimeEngine
from gpusim.engine import LATE, URGENT, HoldableClock
from hypothesis import given
from hypothesis import strategies as st

from tests.fakes.clock import Clock


def test_events_run_in_time_then_priority_then_fifo_order() -> None:
    engine, log = Engine(), []
    engine.schedule(5, log.append, "late-5")
    engine.schedule(1, log.append, "normal-1a")
    engine.schedule(1, log.append, "late-1", priority=LATE)
    engine.schedule(1, log.append, "normal-1b")
    engine.schedule(1, log.append, "urgent-1", priority=URGENT)
    engine.run()
    assert log == ["urgent-1", "normal-1a", "normal-1b", "late-1", "late-5"]
    assert engine.now == 5


def test_run_until_stops_the_clock_there_and_leaves_later_events() -> None:
    engine, log = Engine(), []
    engine.schedule(3, log.append, "a")
    engine.schedule(8, log.append, "b")
    engine.run(until=5)
    assert (log, engine.now, engine.peek()) == (["a"], 5, 8)
    engine.step()
    assert (log, engine.now, engine.peek()) == (["a", "b"], 8, float("inf"))


def test_events_scheduled_in_the_past_run_now() -> None:
    engine, log = Engine(start=10), []
    engine.schedule_at(3, lambda _: log.append(engine.now))
    engine.run()
    assert log == [10]


def test_realtime_engine_maps_wall_seconds_to_scaled_virtual_time() -> None:
    wall = Clock(1000.0)
    engine, log = RealtimeEngine(speed=60, wall_clock=wall), []
    engine.schedule(120, log.append, "two-virtual-minutes")
    assert engine.wall_seconds_to_next() == pytest.approx(2.0)
    wall.now += 1
    assert engine.advance_to_now() == pytest.approx(60) and log == []
    wall.now += 1.5
    engine.advance_to_now()
    assert log == ["two-virtual-minutes"] and engine.now == pytest.approx(150)


def test_realtime_engine_drives_the_same_model() -> None:
    from gpusim import BatchApi, BatchModel
    from gpusim.model import ModelOptions

    wall = Clock(1000.0)
    model = BatchModel(RealtimeEngine(speed=3600, wall_clock=wall), ModelOptions())
    api = BatchApi(model)
    api.create_service_environment(
        serviceEnvironmentName="se",
        serviceEnvironmentType="SAGEMAKER_TRAINING",
        capacityLimits=[{"maxCapacity": 1, "capacityUnit": "NUM_INSTANCES"}],
    )
    api.create_job_queue(
        jobQueueName="q",
        jobQueueType="SAGEMAKER_TRAINING",
        priority=1,
        serviceEnvironmentOrder=[{"order": 1, "serviceEnvironment": "se"}],
    )
    import json

    body = {
        "AlgorithmSpecification": {"TrainingImage": "t:1", "TrainingInputMode": "File"},
        "RoleArn": "arn:aws:iam::123456789012:role/r",
        "OutputDataConfig": {"S3OutputPath": "s3://artifacts/"},
        "StoppingCondition": {"MaxRuntimeInSeconds": 3600},
        "ResourceConfig": {"InstanceType": "ml.p5.48xlarge", "InstanceCount": 1, "VolumeSizeInGB": 100},
    }
    job = api.submit_service_job(
        jobName="j",
        jobQueue="q",
        serviceJobType="SAGEMAKER_TRAINING",
        serviceRequestPayload=json.dumps(body),
        tags={"gpusim:duration-seconds": "600"},
    )
    with model.engine.lock:
        model.engine.advance_to_now()
    assert api.describe_service_job(jobId=job["jobId"])["status"] == "SCHEDULED"
    wall.now += 1  # one wall second = one virtual hour
    assert model.sync() == pytest.approx(3600)
    assert api.describe_service_job(jobId=job["jobId"])["status"] == "SUCCEEDED"


def test_realtime_engine_refuses_a_non_positive_speed() -> None:
    with pytest.raises(ValueError):
        RealtimeEngine(speed=0)


def test_a_held_clock_stands_still_and_goes_on_from_where_it_stood() -> None:
    wall = Clock(now=100.0)
    clock = HoldableClock(wall)
    with clock.held():
        wall.now = 160.0
        assert clock() == 100.0
    wall.now = 170.0
    assert clock() == 110.0


def test_a_bounded_clock_runs_no_further_than_its_bound_then_on_from_there() -> None:
    wall = Clock(now=100.0)
    clock = HoldableClock(wall)
    clock.run_at_most(5.0)
    wall.now = 103.0
    assert clock() == 103.0
    wall.now = 190.0  # a stall: the driver's next turn comes late
    assert clock() == 105.0
    clock.run_at_most(5.0)
    assert clock() == 105.0  # the stall passed as no time
    wall.now = 192.0
    assert clock() == 107.0
    with clock.held():
        wall.now = 300.0
        clock.run_at_most(5.0)
        assert clock() == 107.0
    wall.now = 301.0
    assert clock() == 108.0


#: One driver move: ("wait", wall seconds), ("bound", seconds) or ("hold", wall seconds inside).
CLOCK_MOVES = st.lists(
    st.tuples(
        st.sampled_from(["wait", "bound", "hold"]),
        st.floats(min_value=0, max_value=1e4, allow_nan=False, allow_infinity=False),
    ),
    max_size=40,
)


@given(CLOCK_MOVES)
def test_a_clock_bounded_and_held_in_any_order_runs_as_the_wall_until_its_bound_and_never_back(
    moves,
) -> None:
    wall = Clock(now=1000.0)
    clock = HoldableClock(wall)
    readings, expected, bound = [clock()], clock(), math.inf
    for move, seconds in moves:
        if move == "wait":
            wall.now += seconds
            expected = min(expected + seconds, bound)
        elif move == "bound":
            clock.run_at_most(seconds)
            bound = clock() + seconds
        else:
            with clock.held():
                wall.now += seconds
                assert clock() == pytest.approx(expected, abs=1e-6)
        readings.append(clock())
        assert readings[-1] == pytest.approx(expected, abs=1e-6) and readings[-1] <= bound
    assert readings == sorted(readings)
