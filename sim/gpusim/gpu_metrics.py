"""What a running training job's hosts show in CloudWatch: GPU, GPU memory and CPU utilization.

SageMaker publishes instance metrics of every training job in the namespace
``/aws/sagemaker/TrainingJobs`` with the dimension ``Host`` = ``<training job name>/algo-<N>``
(N counts the job's instances from 1): ``GPUUtilization`` and ``GPUMemoryUtilization`` from 0 to
100 x the host's GPUs, ``CPUUtilization`` from 0 to 100 x its vCPUs
(https://docs.aws.amazon.com/sagemaker/latest/dg/monitoring-cloudwatch.html, "Training job,
batch transform job, and endpoint instance metrics"). The model publishes them for every job in
RUNNING (SageMaker's ``Training`` phase), at ``Timings.metrics_interval`` (CHOSEN: 60 s, the
period of the page's instance metrics).

What a trainer does with its GPUs is scripted per job, the way its run time is (tags of the
SubmitServiceJob request, read by gpusim only; the handlers never read them):

- ``gpusim:idle-after-seconds`` = S: after S seconds of training every GPU of every host idles
  (0: the whole run, as a job stuck loading data; later: a notebook-style job left running). It writes
  no checkpoint once idle (it makes no progress) and still ends at its scripted duration.
- ``gpusim:hung-after-seconds`` = S: after S seconds of training the GPUs stay busy (a hung NCCL
  collective spins them) but the trainer writes no checkpoint and never finishes: only
  MaxRuntimeInSeconds, the attempt timeout or a stop end it.

CHOSEN (undocumented; what a busy trainer looks like): a busy job's GPUs run at 70-98% each, with a
data-loading phase of 2-12 minutes at the start and an evaluation pause of 1-8 minutes every 20-90
minutes, both under 5% per GPU; the lengths are drawn per job, the values per host and minute, from
a hash of the job's name and id, so they are the same in every run and cost no draw from the model's
random stream. An idle GPU shows 0-2%.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from shareplane.domain.errors import InvalidInputError
from shareplane.domain.instance_types.catalog import CATALOG
from shareplane.domain.jobs.lifecycle import gpus_per_instance

NAMESPACE = "/aws/sagemaker/TrainingJobs"
GPU_UTILIZATION = "GPUUtilization"
GPU_MEMORY_UTILIZATION = "GPUMemoryUtilization"
CPU_UTILIZATION = "CPUUtilization"

IDLE_AFTER_TAG = "gpusim:idle-after-seconds"
HUNG_AFTER_TAG = "gpusim:hung-after-seconds"

#: vCPUs of the GPU instance types, from the control plane's one catalog; CHOSEN: 8 per GPU for a type
#: it does not list.
VCPUS_PER_INSTANCE: Mapping[str, int] = {name: row.vcpus for name, row in CATALOG.items()}


@dataclass(frozen=True)
class GpuScript:
    """What a job's trainer does with its GPUs, in seconds of training (None: never)."""

    idle_after: float | None = None
    hung_after: float | None = None

    @property
    def scripted(self) -> bool:
        """Whether the job does anything but train busily to its end."""
        return self.idle_after is not None or self.hung_after is not None

    def idle_at(self, progress: float) -> bool:
        """Whether every GPU idles at ``progress`` seconds of training."""
        return self.idle_after is not None and progress >= self.idle_after

    def hung_at(self, progress: float) -> bool:
        """Whether the trainer is hung (busy, no checkpoints) at ``progress`` seconds of training."""
        return self.hung_after is not None and progress >= self.hung_after


BUSY = GpuScript()


def _seconds_tag(tags: Mapping[str, str], key: str) -> float | None:
    text = tags.get(key)
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise InvalidInputError(
            f"tags.{key}", f"{text!r} is not a number of seconds", "give training seconds >= 0, e.g. 600"
        )
    return value


def script_from_tags(tags: Mapping[str, str] | None) -> GpuScript:
    """The GPU script a SubmitServiceJob request's tags ask for (``BUSY`` when none)."""
    if not tags:
        return BUSY
    idle, hung = _seconds_tag(tags, IDLE_AFTER_TAG), _seconds_tag(tags, HUNG_AFTER_TAG)
    return BUSY if idle is None and hung is None else GpuScript(idle, hung)


# ------------------------------------------------------------------------------ the trainer
_MASK = (1 << 64) - 1


def mix(*values: int) -> int:
    """A 64-bit hash of integers (splitmix64 steps): stable across runs and processes."""
    h = 0x9E3779B97F4A7C15
    for v in values:
        h = (h ^ (v & _MASK)) * 0xBF58476D1CE4E5B9 & _MASK
        h = (h ^ (h >> 27)) * 0x94D049BB133111EB & _MASK
        h ^= h >> 31
    return h


def _unit(*values: int) -> float:
    """A number in [0, 1) from ``mix``."""
    return mix(*values) / 2.0**64


def job_key(name: str, job_id: str = "") -> int:
    """The integer every draw of one job derives from."""
    return mix(*(ord(c) for c in f"{name}/{job_id}"))


@dataclass(frozen=True)
class TrainerShape:
    """When a busy trainer's GPUs dip (seconds of training): data loading, then evaluation pauses."""

    loading: float
    eval_every: float
    eval_length: float

    @classmethod
    def of(cls, key: int) -> TrainerShape:
        """The shape drawn for one job."""
        return cls(
            loading=60.0 * (2 + 10 * _unit(key, 1)),
            eval_every=60.0 * (20 + 70 * _unit(key, 2)),
            eval_length=60.0 * (1 + 7 * _unit(key, 3)),
        )

    def dipping(self, progress: float) -> bool:
        """Whether a busy trainer's GPUs are in a low phase at ``progress`` seconds of training."""
        if progress < self.loading:
            return True
        return (progress - self.loading) % self.eval_every >= self.eval_every - self.eval_length


@dataclass(frozen=True)
class HostReading:
    """One host's three instance metrics at one time, as published (0..100 x GPUs or vCPUs)."""

    host: int  # N of algo-N
    gpu: float
    gpu_memory: float
    cpu: float


def per_gpu_percent(
    key: int, host: int, minute: int, script: GpuScript, shape: TrainerShape, progress: float
) -> float:
    """Percent per GPU one host shows at ``progress`` seconds of training (``minute`` varies the value)."""
    u = _unit(key, host, minute, 7)
    if script.hung_at(progress):
        return 97.0 + 3.0 * u
    if script.idle_at(progress):
        # An idle GPU runs no kernel, and NVML's utilization (the share of time one ran) reads 0; a
        # little noise keeps an 8-GPU host's sum under one GPU's 5% (an emulator choice, not AWS's).
        return 0.5 * u
    if shape.dipping(progress):
        return 1.0 + 3.0 * u
    return 70.0 + 28.0 * u


def reading(
    key: int,
    host: int,
    at: float,
    progress: float,
    instance_type: str,
    script: GpuScript,
    shape: TrainerShape,
) -> HostReading:
    """What host ``algo-<host>`` of a job publishes at virtual time ``at`` (``progress`` s into training)."""
    gpus = max(1, gpus_per_instance(instance_type))
    vcpus = VCPUS_PER_INSTANCE.get(instance_type, 8 * gpus)
    minute = int(at // 60)
    gpu = per_gpu_percent(key, host, minute, script, shape, progress)
    u = _unit(key, host, minute, 11)
    if script.idle_at(progress):
        # Stuck before training holds little GPU memory; a job left idle later keeps its model loaded.
        memory = 1.0 + 4.0 * u if script.idle_after == 0 else 40.0 + 40.0 * u
        cpu = 3.0 * u
    elif script.hung_at(progress):
        memory, cpu = 55.0 + 35.0 * u, 1.0 + 2.0 * u
    else:
        memory, cpu = 55.0 + 35.0 * u, 15.0 + 25.0 * u
    return HostReading(host, round(gpu * gpus, 3), round(memory * gpus, 3), round(cpu * vcpus, 3))


def host_name(training_job_name: str, host: int) -> str:
    """The ``Host`` dimension value of one host of a training job."""
    return f"{training_job_name}/algo-{host}"


def metric_data(
    training_job_name: str, readings: list[HostReading], timestamp: float
) -> list[dict[str, object]]:
    """PutMetricData ``MetricData`` entries for one job's hosts at ``timestamp`` (epoch seconds)."""
    out: list[dict[str, object]] = []
    for r in readings:
        dimensions = [{"Name": "Host", "Value": host_name(training_job_name, r.host)}]
        for name, value in (
            (GPU_UTILIZATION, r.gpu),
            (GPU_MEMORY_UTILIZATION, r.gpu_memory),
            (CPU_UTILIZATION, r.cpu),
        ):
            out.append(
                {
                    "MetricName": name,
                    "Dimensions": dimensions,
                    "Timestamp": timestamp,
                    "Value": value,
                    "Unit": "Percent",
                }
            )
    return out
