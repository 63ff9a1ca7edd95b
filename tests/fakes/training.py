"""TrainingJobs (adapters/sagemaker_training.py) in memory: DescribeTrainingJob answers, read as the adapter reads them."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from shareplane.adapters.sagemaker_training import training_job_facts
from shareplane.domain.training import TrainingJobFacts


@dataclass
class FakeTraining:
    """SageMaker DescribeTrainingJob: None for a job it does not hold."""

    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)

    def describe(self, name: str) -> TrainingJobFacts | None:
        job = self.jobs.get(name)
        return training_job_facts(copy.deepcopy(job)) if job is not None else None
