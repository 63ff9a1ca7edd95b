"""What SageMaker's CreateTrainingJob would say about the request a service job carries.

AWS Batch does not read ``serviceRequestPayload`` beyond queueing it ("a JSON-encoded string that
contains the complete request that would normally be sent directly to the target service",
https://docs.aws.amazon.com/batch/latest/userguide/service-job-payload.html); SageMaker judges it
when Batch calls CreateTrainingJob at dispatch, and a rejected request ends the job FAILED.
The checks are botocore's CreateTrainingJob input shape (required members and types) plus the
TrainingJobName constraint of the API reference: 1-63 characters, ``^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}``
(https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CreateTrainingJob.html).
"""

from __future__ import annotations

import json
import re
from functools import cache
from typing import Any

from botocore.model import OperationModel, StructureShape
from botocore.session import get_session
from botocore.validate import ParamValidator

MAX_TRAINING_JOB_NAME = 63
TRAINING_JOB_NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")
#: Batch names the training job ``AWSBatch<payload TrainingJobName><32 hex>`` (the sample in
#: service-job-events.html).
BATCH_NAME_PREFIX = "AWSBatch"
ATTEMPT_ID_CHARS = 32


@cache
def _operation() -> OperationModel:
    return get_session().get_service_model("sagemaker").operation_model("CreateTrainingJob")


@cache
def _input_shape() -> StructureShape:
    shape = _operation().input_shape
    if shape is None:
        raise TypeError("botocore's CreateTrainingJob has no input shape")
    return shape


def parse(text: str) -> tuple[dict[str, Any], str | None]:
    """The payload as a dict and, when it is not a JSON object, why (the dict is then empty)."""
    try:
        payload = json.loads(text)
    except json.JSONDecodeError as exc:
        return {}, f"serviceRequestPayload is not valid JSON: {exc.msg}"
    if not isinstance(payload, dict):
        return {}, "serviceRequestPayload is not a JSON object"
    return payload, None


def resources(payload: dict[str, Any]) -> tuple[str, int]:
    """(instance type, instance count) the job asks for; CHOSEN: one instance of no type when unreadable."""
    rc = payload.get("ResourceConfig")
    if not isinstance(rc, dict):
        return "", 1
    named = rc.get("InstanceType")
    instance_type = named if isinstance(named, str) else ""
    count = rc.get("InstanceCount")
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        count = 1
    return instance_type, count


def training_job_name(payload: dict[str, Any], job_name: str, attempt_hex: str) -> str:
    """The name Batch gives the training job of one attempt."""
    base = payload.get("TrainingJobName", job_name)
    return f"{BATCH_NAME_PREFIX}{base}{attempt_hex}"


def create_training_job_error(payload: dict[str, Any], name: str) -> str | None:
    """The ValidationException text SageMaker returns for this request, or None when it is accepted."""
    if len(name) > MAX_TRAINING_JOB_NAME or not TRAINING_JOB_NAME.match(name):
        # AWS's usual constraint message (wording CHOSEN after the documented constraint).
        return (
            f"1 validation error detected: Value '{name}' at 'trainingJobName' failed to satisfy constraint: "
            f"Member must have length less than or equal to {MAX_TRAINING_JOB_NAME} and match "
            "^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}"
        )
    report = ParamValidator().validate({**payload, "TrainingJobName": name}, _input_shape())
    if report.has_errors():
        return " ".join(report.generate_report().split())
    return None
