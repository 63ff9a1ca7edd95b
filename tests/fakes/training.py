"""TrainingJobs (adapters/sagemaker_training.py) in memory: DescribeTrainingJob answers, read as the adapter reads them."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from shareplane.adapters.sagemaker_training import training_job_facts, training_job_observation
from shareplane.domain.jobs.training import TrainingJobFacts, TrainingJobObservation


@dataclass
class FakeTraining:
    """SageMaker DescribeTrainingJob: None for a job it does not hold."""

    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: The names asked for, in order (DescribeTrainingJob calls).
    asked: list[str] = field(default_factory=list)

    def describe(self, name: str) -> TrainingJobFacts | None:
        self.asked.append(name)
        job = self.jobs.get(name)
        return training_job_facts(copy.deepcopy(job)) if job is not None else None

    def observe(self, name: str) -> TrainingJobObservation | None:
        self.asked.append(name)
        job = self.jobs.get(name)
        return training_job_observation(copy.deepcopy(job)) if job is not None else None
