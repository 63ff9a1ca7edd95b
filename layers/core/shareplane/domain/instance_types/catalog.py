"""The one catalog of SageMaker training instance types the control plane knows: GPUs, GPU memory,
vCPUs and family. Every path reads it (GPU counts for metrics, idle detection, reclaim and the
rebalancer; vCPUs for the emulator's CPU metric; families for the Batch service environments; the
shares config's check); prices stay in the config.

It holds every GPU type (the ``p`` and ``g`` families) of botocore's ``TrainingInstanceType`` enum;
``tests/unit/domain/test_instance_types.py`` fails when the pinned botocore gains one the catalog
lacks, and checks GPU count and GPU memory against the SageMaker SDK's ``instance_gpu_info.json``
wherever that file lists the type. A row the SDK does not list says where its figures come from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["CATALOG", "InstanceType", "family_of", "gpus_per_instance", "instance_type"]

#: Where the figures of a row the SDK's table does not list come from.
AWS_PAGE = "AWS's instance type page"
UNVERIFIED = "not in the SageMaker SDK's table; GPU memory not confirmed here"


@dataclass(frozen=True)
class InstanceType:
    """One training instance type: its family (``ml.<family>.<size>``), GPUs, memory per GPU, vCPUs."""

    name: str
    gpus: int
    #: GiB of memory on each GPU; None where no source at hand confirms it.
    gpu_memory_gib: float | None
    vcpus: int
    #: None: the SDK's table lists the type and the test checks it; else where the figures come from.
    source: str | None = None
    #: A figure the SDK's table gives that differs from the instance page, with the reason kept.
    sdk_total_gpu_memory_mib: int | None = None

    @property
    def family(self) -> str:
        """``ml.p4d.24xlarge`` -> ``p4d``."""
        return self.name.split(".")[1]

    @property
    def total_gpu_memory_gib(self) -> float | None:
        """GPU memory of the whole instance."""
        return None if self.gpu_memory_gib is None else self.gpu_memory_gib * self.gpus


def _rows(
    family: str, gpu_memory_gib: float | None, sizes: Mapping[str, tuple[int, int]], source: str | None = None
) -> list[InstanceType]:
    return [
        InstanceType(f"ml.{family}.{size}", gpus, gpu_memory_gib, vcpus, source)
        for size, (gpus, vcpus) in sizes.items()
    ]


#: size -> (GPUs, vCPUs) of the single-GPU-per-size G families (g5, g6, g6e share one layout).
_G_LAYOUT = {
    "xlarge": (1, 4),
    "2xlarge": (1, 8),
    "4xlarge": (1, 16),
    "8xlarge": (1, 32),
    "16xlarge": (1, 64),
    "12xlarge": (4, 48),
    "24xlarge": (4, 96),
    "48xlarge": (8, 192),
}

_ALL: list[InstanceType] = [
    *_rows("p2", 12, {"xlarge": (1, 4), "8xlarge": (8, 32), "16xlarge": (16, 64)}),
    *_rows("p3", 16, {"2xlarge": (1, 8), "8xlarge": (4, 32), "16xlarge": (8, 64)}),
    InstanceType("ml.p3dn.24xlarge", 8, 32, 96),
    InstanceType("ml.p4d.24xlarge", 8, 40, 96),
    InstanceType("ml.p4de.24xlarge", 8, 80, 96),
    InstanceType("ml.p5.48xlarge", 8, 80, 192),
    InstanceType("ml.p5.4xlarge", 1, 80, 16, AWS_PAGE + " (P5: one H100, 80 GB)"),
    InstanceType("ml.p5e.48xlarge", 8, 141, 192, AWS_PAGE + " (P5e: eight H200, 141 GB each)"),
    InstanceType("ml.p5en.48xlarge", 8, 141, 192, AWS_PAGE + " (P5en: eight H200, 141 GB each)"),
    InstanceType("ml.p6-b200.48xlarge", 8, 180, 192, AWS_PAGE + " (P6-B200: eight B200, 1,440 GB in all)"),
    InstanceType("ml.p6-b300.48xlarge", 8, None, 192, UNVERIFIED),
    InstanceType("ml.p6e-gb200.36xlarge", 4, None, 144, UNVERIFIED),
    *_rows("g4dn", 16, {k: v for k, v in _G_LAYOUT.items() if k != "24xlarge" and k != "48xlarge"}),
    *[
        InstanceType(
            t.name,
            t.gpus,
            t.gpu_memory_gib,
            t.vcpus,
            t.source,
            # The SDK's table gives 183,104 MiB for ml.g5.48xlarge, not 8 x 24 GiB (196,608 MiB); kept.
            183104 if t.name == "ml.g5.48xlarge" else None,
        )
        for t in _rows("g5", 24, _G_LAYOUT, AWS_PAGE + " (G5: NVIDIA A10G, 24 GB each)")
    ],
    *_rows("g6", 24, _G_LAYOUT, AWS_PAGE + " (G6: NVIDIA L4, 24 GB each)"),
    *_rows("g6e", 48, _G_LAYOUT, AWS_PAGE + " (G6e: NVIDIA L40S, 48 GB each)"),
    *_rows(
        "g7e",
        96,
        {
            "2xlarge": (1, 8),
            "4xlarge": (1, 16),
            "8xlarge": (1, 32),
            "12xlarge": (2, 48),
            "24xlarge": (4, 96),
            "48xlarge": (8, 192),
        },
        AWS_PAGE + " (G7e: RTX PRO 6000 Blackwell, 96 GB each)",
    ),
    *_rows(
        "g7",
        None,
        {
            "2xlarge": (1, 8),
            "4xlarge": (1, 16),
            "8xlarge": (2, 32),
            "12xlarge": (4, 48),
            "24xlarge": (4, 96),
            "48xlarge": (8, 192),
        },
        UNVERIFIED + " (G7: RTX PRO 4500 Blackwell)",
    ),
]

#: Instance type name -> its row: every GPU training instance type the control plane knows.
CATALOG: Mapping[str, InstanceType] = {t.name: t for t in _ALL}


def instance_type(name: str | None) -> InstanceType | None:
    """The catalog's row of ``name``; None for a CPU type or a name the catalog does not know."""
    return CATALOG.get(name or "")


def gpus_per_instance(name: str | None) -> int:
    """GPUs in one instance of ``name`` (0 for CPU types and names the catalog does not know)."""
    row = CATALOG.get(name or "")
    return row.gpus if row else 0


def family_of(name: str) -> str | None:
    """``ml.p4d.24xlarge`` -> ``p4d``; None when ``name`` is not of the form ``ml.<family>.<size>``."""
    parts = name.split(".")
    return parts[1] if len(parts) == 3 and parts[0] == "ml" and parts[1] and parts[2] else None
