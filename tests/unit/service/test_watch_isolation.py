"""The scheduled watch isolates each item: one poison queue or job never stops the work for the others."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shareplane.domain.jobs.described_job import DescribedJob, ListedJob
from shareplane.domain.jobs.lifecycle import JobState, JobStatus, Transition
from shareplane.service.watch_jobs import watch

from tests.fakes.failure_world import QUEUE_ARN, World
from tests.fakes.job_store import FakeJobStore
from tests.fakes.service_jobs import FakeServiceJobs
from tests.properties import examples

NOW = 1773720000.0
GONE_QUEUE = QUEUE_ARN.replace("search-p4d-queue", "deleted-queue")
ARN = "arn:aws:batch:us-east-1:123456789012:service-job/"


@dataclass
class RecordingStore(FakeJobStore):
    """The fake table, whose listed states stay as seeded: what the watch writes is kept apart in ``saved``."""

    saved: dict[str, JobState] = field(default_factory=dict)

    def load_job(self, job_arn: str) -> JobState | None:
        return self.saved.get(job_arn)

    def save_job(self, transition: Transition) -> bool:
        self.saved[transition.state.job_arn] = transition.state
        return True


@dataclass
class PoisonBatch(FakeServiceJobs):
    """Batch where some queues are gone and some jobs cannot be described."""

    gone_queues: set[str] = field(default_factory=set)
    broken_jobs: set[str] = field(default_factory=set)

    def list_jobs(self, job_queue: str, status: str) -> list[ListedJob]:
        if job_queue.rsplit("/", 1)[-1] in {q.rsplit("/", 1)[-1] for q in self.gone_queues}:
            raise ClientError(
                {"Error": {"Code": "ClientException", "Message": f"jobQueue {job_queue} does not exist"}},
                "ListServiceJobs",
            )
        return super().list_jobs(job_queue, status)

    def describe(self, job_id: str) -> DescribedJob | None:
        if job_id.rsplit("/", 1)[-1] in self.broken_jobs:
            raise ClientError({"Error": {"Code": "ServerException", "Message": "boom"}}, "DescribeServiceJob")
        return super().describe(job_id)


def waiting_job(job_id: str, queue: str, waited: float) -> tuple[JobState, dict[str, Any]]:
    """A RUNNABLE MIDPRI job of ProdExp2 as the table holds it and as Batch describes it."""
    created = int((NOW - waited) * 1000)
    state = JobState(
        job_arn=ARN + job_id,
        status=JobStatus.RUNNABLE,
        seq="a",
        job_id=job_id,
        job_queue=queue,
        share_identifier="ProdExp2",
        scheduling_priority=50,
        created_at=created,
    )
    described = {
        "jobArn": ARN + job_id,
        "jobId": job_id,
        "jobName": job_id,
        "jobQueue": queue,
        "status": "RUNNABLE",
        "shareIdentifier": "ProdExp2",
        "schedulingPriority": 50,
        "createdAt": created,
    }
    return state, described


def build(healthy: int, poisoned_queue: bool, broken: set[int]) -> tuple[World, list[str]]:
    """``healthy`` waiting jobs on the live queue (some of them undescribable), one on a deleted queue."""
    batch = PoisonBatch()
    store = RecordingStore()
    runnable: list[JobState] = []
    ids = []
    for i in range(healthy):
        state, described = waiting_job(f"ok-{i}", QUEUE_ARN, waited=4000)
        batch.add(described)
        batch.listed.setdefault((QUEUE_ARN, "RUNNABLE"), []).append(
            {"jobArn": state.job_arn, "jobId": state.job_id}
        )
        runnable.append(state)
        ids.append(state.job_id or "")
        if i in broken:
            batch.broken_jobs.add(state.job_id or "")
    if poisoned_queue:
        state, described = waiting_job("orphan", GONE_QUEUE, waited=4000)
        batch.add(described)
        batch.gone_queues.add(GONE_QUEUE)
        runnable.append(state)
    store.put_states(*runnable)
    world = World(batch=batch, store=store)
    world.clock.now = NOW
    return world, ids


def test_a_job_row_whose_queue_was_deleted_does_not_stop_the_watch_for_the_others() -> None:
    # GIVEN a waiting job on the live queue and one active row on a queue that no longer exists
    world, ids = build(healthy=1, poisoned_queue=True, broken=set())
    # WHEN the watch runs
    report = watch(world.ports, NOW)
    # THEN the healthy job is reconciled and escalated, and the gauges are published
    assert report.reconciled >= 1 and ARN + ids[0] in report.escalated
    assert any(n == "Utilization" for n, _, _ in world.metrics.emitted)
    # AND the deleted queue is logged and counted as failed items, not raised
    assert report.failed and all(f.startswith("list:deleted-queue/") for f in report.failed)
    assert world.metrics.count("WatchItemsFailed") == len(report.failed)


def test_a_job_batch_cannot_describe_fails_alone() -> None:
    world, ids = build(healthy=3, poisoned_queue=False, broken={1})
    report = watch(world.ports, NOW)
    assert report.failed == [f"reconcile:{ARN}{ids[1]}"]
    assert {ARN + ids[0], ARN + ids[2]} <= set(report.escalated)


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    healthy=st.integers(1, 6),
    poisoned_queue=st.booleans(),
    broken=st.sets(st.integers(0, 5), max_size=3),
)
def test_poison_items_never_change_what_happens_to_the_healthy_ones(
    healthy: int, poisoned_queue: bool, broken: set[int]
) -> None:
    # GIVEN any mix of healthy jobs, undescribable jobs and a row on a deleted queue
    world, ids = build(healthy, poisoned_queue, broken)
    clean, _ = build(healthy, False, set())
    report = watch(world.ports, NOW)
    baseline = watch(clean.ports, NOW)
    # THEN every job that is not itself poisoned is escalated exactly as in a run without poison
    healthy_arns = {ARN + ids[i] for i in range(healthy) if i not in broken}
    assert {a: p for a, p in report.escalated.items() if a in healthy_arns} == {
        a: p for a, p in baseline.escalated.items() if a in healthy_arns
    }
    # AND each poisoned item is named once per step that failed on it, and counted
    assert world.metrics.count("WatchItemsFailed") == len(report.failed)
    assert sum(f.startswith("reconcile:") for f in report.failed) == len({i for i in broken if i < healthy})


def test_a_cpu_fifo_jobs_wait_alert_carries_its_team_from_the_tag() -> None:
    # GIVEN a CPU FIFO job of ProdExp2 (no share) waiting three LOWPRI SLOs at its escalation ceiling
    world, _ = build(healthy=0, poisoned_queue=False, broken=set())
    fifo = QUEUE_ARN.replace("search-p4d-queue", "search-cpu-fifo")
    state, described = waiting_job("cpu-1", fifo, waited=3 * 14400 + 60)
    state = JobState(**{**state.__dict__, "share_identifier": None, "scheduling_priority": 49})
    described |= {"shareIdentifier": None, "schedulingPriority": 49, "tags": {"shareplane:team": "ProdExp2"}}
    world.batch.add(described)
    world.batch.listed[(fifo, "RUNNABLE")] = [{"jobArn": state.job_arn, "jobId": state.job_id}]
    world.store.put_states(state)
    # WHEN the watch runs
    report = watch(world.ports, NOW)
    # THEN its wait alert is filed under ProdExp2
    ((_, body, attributes),) = world.alerts.sent
    assert report.alerts == 1 and attributes["kind"] == "wait_slo"
    assert attributes["team"] == "ProdExp2" and body["team"] == "ProdExp2"


def test_a_cpu_job_batch_no_longer_knows_is_alerted_to_the_team_that_submitted_it() -> None:
    # GIVEN a CPU FIFO job (no share, so no team in its row) the table has RUNNABLE, that AWS Batch
    # neither lists nor describes, and whose payload the submit path stored with its team
    cpu_queue = QUEUE_ARN.replace("search-p4d-queue", "search-cpu-fifo-queue")
    store = RecordingStore()
    state = JobState(
        job_arn=ARN + "cpu-1",
        status=JobStatus.RUNNABLE,
        seq="a",
        job_id="cpu-1",
        job_queue=cpu_queue,
        created_at=int((NOW - 600) * 1000),
    )
    store.put_states(state)
    store.payloads[state.job_arn] = {"team": "ProdExp2", "jobName": "tokenize"}
    world = World(batch=PoisonBatch(), store=store)
    world.clock.now = NOW
    # WHEN the watch runs
    report = watch(world.ports, NOW)
    # THEN the unknown-to-Batch alert names ProdExp2, so its subscription filter matches
    assert report.unknown_to_batch == [state.job_arn]
    ((_, body, attributes),) = world.alerts.sent
    assert attributes["team"] == "ProdExp2" and body["team"] == "ProdExp2"


def test_the_gpu_queue_is_listed_once_per_status_by_its_name_and_its_arn_alike() -> None:
    # GIVEN the config naming the GPU queue and a table row holding the same queue's ARN
    job, described = waiting_job("j-1", QUEUE_ARN, 60)
    store = RecordingStore()
    store.put_states(job)
    world = World(store=store)
    world.batch.add(described)
    # WHEN the watch runs
    watch(world.ports, NOW)
    assert world.batch.list_calls
    # THEN each status of the queue is listed once (by name), not once per spelling
    assert sorted(world.batch.list_calls) == sorted({(q, st) for q, st in world.batch.list_calls})
    assert {q for q, _ in world.batch.list_calls} == {"search-p4d-queue"}
