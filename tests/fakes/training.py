"""TrainingJobs (adapters/sagemaker_training.py) in memory."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any


@dataclass
class FakeTraining:
    """SageMaker DescribeTrainingJob: None for a job it does not hold."""

    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)

    def describe(self, name: str) -> dict[str, Any] | None:
        return copy.deepcopy(self.jobs.get(name))
