"""A seeded run's exact event trace, the event shapes, and the duplicate/reorder delivery option."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime

from gpusim import Faults

EXPECTED = [
    (0.0, "Batch Service Job State Change", "RUNNABLE"),
    (0.0, "Batch Service Job State Change", "RUNNABLE"),
    (0.0, "Batch Service Job State Change", "SCHEDULED"),
    (0.0, "SageMaker Training Job State Change", "InProgress/Pending"),
    (10.0, "SageMaker Training Job State Change", "InProgress/Downloading"),
    (10.0, "Batch Service Job State Change", "STARTING"),
    (15.0, "SageMaker Training Job State Change", "InProgress/Training"),
    (15.0, "Batch Service Job State Change", "RUNNING"),
    (50.0, "SageMaker Training Job State Change", "Failed/Failed"),
    (50.0, "Batch Service Job State Change", "RUNNABLE"),
    (50.0, "Batch Service Job State Change", "SCHEDULED"),
    (50.0, "SageMaker Training Job State Change", "InProgress/Pending"),
    (60.0, "SageMaker Training Job State Change", "InProgress/Downloading"),
    (60.0, "Batch Service Job State Change", "STARTING"),
    (65.0, "SageMaker Training Job State Change", "InProgress/Training"),
    (65.0, "Batch Service Job State Change", "RUNNING"),
    (165.0, "SageMaker Training Job State Change", "Completed/Completed"),
    (165.0, "Batch Service Job State Change", "SUCCEEDED"),
    (165.0, "Batch Service Job State Change", "SCHEDULED"),
    (165.0, "SageMaker Training Job State Change", "InProgress/Pending"),
    (195.0, "SageMaker Training Job State Change", "Failed/Failed"),
    (195.0, "Batch Service Job State Change", "RUNNABLE"),
    (195.0, "Batch Service Job State Change", "SCHEDULED"),
    (195.0, "SageMaker Training Job State Change", "InProgress/Pending"),
    (205.0, "SageMaker Training Job State Change", "InProgress/Downloading"),
    (205.0, "Batch Service Job State Change", "STARTING"),
    (210.0, "SageMaker Training Job State Change", "InProgress/Training"),
    (210.0, "Batch Service Job State Change", "RUNNING"),
    (310.0, "SageMaker Training Job State Change", "Completed/Completed"),
    (310.0, "Batch Service Job State Change", "SUCCEEDED"),
]


def run(make_sim, **options):
    from gpusim import Timings

    sim = make_sim(
        seed=42,
        timings=Timings(
            scheduled_to_starting=10, starting_to_running=5, capacity_error_after=30, failure_after=35
        ),
        faults=Faults(scripted={"a": ("cuda_oom", "ok"), "b": ("capacity", "ok")}),
        **options,
    )
    sim.env(limits={"NUM_INSTANCES": 1})
    sim.queue()
    sim.submit("a", duration=100, retryStrategy={"attempts": 2})
    sim.submit("b", duration=100)
    sim.run()
    return sim


def signature(sim) -> list[tuple[float, str, str]]:
    """(seconds since start, detail-type, status) of every delivered event; times from the envelope."""
    start = datetime(2026, 3, 16, tzinfo=UTC)
    out = []
    for e in sim.events:
        d = e["detail"]
        when = (
            datetime.strptime(e["time"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC) - start
        ).total_seconds()
        status = (
            d["status"] if e["source"] == "aws.batch" else f"{d['TrainingJobStatus']}/{d['SecondaryStatus']}"
        )
        out.append((when, e["detail-type"], status))
    return out


def test_seeded_run_emits_the_exact_trace(make_sim) -> None:
    sim = run(make_sim)
    assert signature(sim) == EXPECTED
    assert sim.events == run(make_sim).events  # same seed, same ids, same everything


def test_event_envelope_and_detail_shapes(make_sim) -> None:
    sim = run(make_sim)
    first = sim.events[0]
    assert set(first) == {
        "version",
        "id",
        "detail-type",
        "source",
        "account",
        "time",
        "region",
        "resources",
        "detail",
    }
    assert first["time"] == "2026-03-16T00:00:00Z" and first["account"] == "123456789012"
    batch = [e["detail"] for e in sim.events if e["source"] == "aws.batch"]
    assert all("tags" not in d and "serviceRequestPayload" not in d for d in batch)
    final = batch[-1]
    assert final["latestAttempt"]["serviceResourceId"]["name"] == "TrainingJobArn"
    assert isinstance(final["scheduledAt"], int) and final["statusReason"].startswith(
        "Received status from SageMaker: "
    )
    failed_a = next(d for d in batch if d["jobName"] == "a" and d["status"] == "RUNNABLE" and d["attempts"])
    assert failed_a["attempts"][0]["statusReason"].startswith(
        "Received status from SageMaker: AlgorithmError"
    )
    sm = [e["detail"] for e in sim.events if e["source"] == "aws.sagemaker"]
    assert all(isinstance(d["Tags"], dict) and isinstance(d["CreationTime"], int) for d in sm)
    assert all(("FailureReason" in d) == (d["TrainingJobStatus"] == "Failed") for d in sm)


def test_duplicates_carry_fresh_ids_and_the_same_content(make_sim) -> None:
    plain = run(make_sim)
    noisy = run(make_sim, duplicate_rate=0.5, reorder_window=4)
    ids = [e["id"] for e in noisy.events]
    assert len(ids) == len(set(ids))
    assert len(noisy.events) > len(plain.events)

    def content(events):
        return Counter((e["detail-type"], repr(sorted(e["detail"].items()))) for e in events)

    assert set(content(noisy.events)) == set(content(plain.events))
    assert [e["detail-type"] for e in noisy.events] != [e["detail-type"] for e in plain.events]
    # the schedule itself is unchanged by delivery chaos
    assert sorted(signature(noisy)) != [] and set(signature(noisy)) == set(signature(plain))
