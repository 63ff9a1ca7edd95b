"""find_team_jobs: a team's queued and running jobs, by share on the GPU queue and by tag on the CPU queue."""

from __future__ import annotations

from collections.abc import Iterator

import yaml
from shareplane.adapters.batch_service_jobs import listed_job
from shareplane.domain.config.shares import SharesConfig
from shareplane.domain.jobs.described_job import ListedJob
from shareplane.service.team_jobs import ACTIVE_STATUSES, find_team_jobs

from tests.conftest import REPO
from tests.fakes.service_jobs import SUMMARY_KEYS, FakeServiceJobs

CONFIG = SharesConfig.model_validate(yaml.safe_load((REPO / "config" / "shares.yaml").read_text()))
GPU, CPU = CONFIG.gpu_queue_name(), str(CONFIG.queues.cpu_fifo)


class TeamBatch(FakeServiceJobs):
    """The fake's jobs, also listed by share as ListServiceJobs' SHARE_IDENTIFIER filter lists them."""

    def active_jobs(self, queue: str, share: str, quota: bool = False) -> Iterator[ListedJob]:
        member = "quotaShareName" if quota else "shareIdentifier"
        for status in ACTIVE_STATUSES:
            for job in self.jobs.values():
                if (job["jobQueue"], job.get(member), job["status"]) == (queue, share, status):
                    yield listed_job({k: job[k] for k in SUMMARY_KEYS if k in job})


def job(job_id: str, queue: str, status: str, share: str | None = None, team: str | None = None) -> dict:
    return {
        "jobId": job_id,
        "jobArn": f"arn:aws:batch:us-east-1:123456789012:service-job/{job_id}",
        "jobName": f"n-{job_id}",
        "jobQueue": queue,
        "status": status,
        "serviceJobType": "SAGEMAKER_TRAINING",
        **({"shareIdentifier": share} if share else {}),
        "tags": {"shareplane:team": team} if team else {},
    }


def test_a_teams_jobs_are_found_under_each_of_its_identifiers_and_by_tag_on_the_cpu_queue() -> None:
    batch = TeamBatch()
    batch.add(
        job("g1", GPU, "RUNNABLE", share="ProdExp1"),
        job("g2", GPU, "RUNNING", share="ProdExp1HIGHPRI"),
        job("g3", GPU, "SUCCEEDED", share="ProdExp1"),  # finished: not the team's to clean up
        job("g4", GPU, "RUNNABLE", share="ProdExp2"),  # another team's
        job("c1", CPU, "RUNNING", team="ProdExp1"),
        job("c2", CPU, "RUNNING", team="ProdExp2"),
        job("c3", CPU, "RUNNABLE"),  # untagged: nobody's
    )
    found = find_team_jobs(batch, CONFIG, ["ProdExp1"])
    assert [(f.team, f.queue, f.job.job_id) for f in found] == [
        ("ProdExp1", GPU, "g1"),
        ("ProdExp1", GPU, "g2"),
        ("ProdExp1", CPU, "c1"),
    ]


def test_every_team_asked_for_is_searched_and_named_on_its_jobs() -> None:
    batch = TeamBatch()
    batch.add(job("g4", GPU, "RUNNABLE", share="ProdExp2"), job("c1", CPU, "RUNNING", team="ProdExp1"))
    found = find_team_jobs(batch, CONFIG, ["ProdExp1", "ProdExp2"])
    assert sorted((f.team, f.job.job_id) for f in found) == [("ProdExp1", "c1"), ("ProdExp2", "g4")]
