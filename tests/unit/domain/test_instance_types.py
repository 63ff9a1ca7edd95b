"""The instance type catalog against the pinned botocore's enum and the SageMaker SDK's GPU table."""

from __future__ import annotations

import importlib.util
import json
from functools import cache
from pathlib import Path
from typing import Any

import botocore.session
import pytest
import yaml
from shareplane.domain.config.failure_rules import DEFAULT_GPU_MEMORY_LADDERS, DEFAULT_HOST_MEMORY_LADDERS
from shareplane.domain.config.shares import SharesConfig
from shareplane.domain.errors import ConfigError
from shareplane.domain.instance_types.catalog import CATALOG, family_of, gpus_per_instance

from tests.conftest import REPO

#: NVIDIA GPU families are ``p`` and ``g``; Trainium (``trn``) and CPU types are not GPU types.
GPU_FAMILY_PREFIXES = ("p", "g")


@cache
def training_instance_types() -> tuple[str, ...]:
    """botocore's ``TrainingInstanceType`` enum (the version the project pins), read from its model."""
    model = botocore.session.get_session().get_service_model("sagemaker")
    return tuple(model.shape_for("TrainingInstanceType").enum)


@cache
def sdk_gpu_table() -> dict[str, dict[str, int]]:
    """The SageMaker SDK's ``instance_gpu_info.json`` for us-east-1: type -> Count, TotalGpuMemoryInMiB."""
    # Located, not imported: importing the SDK takes seconds.
    spec = importlib.util.find_spec("sagemaker")
    assert spec is not None and spec.submodule_search_locations, "the sagemaker SDK is a dev dependency"
    root = Path(next(iter(spec.submodule_search_locations)))
    return json.loads((root / "core" / "image_uri_config" / "instance_gpu_info.json").read_text())[
        "us-east-1"
    ]


def gpu_types() -> list[str]:
    return [t for t in training_instance_types() if (family_of(t) or "").startswith(GPU_FAMILY_PREFIXES)]


def test_the_catalog_holds_every_gpu_type_of_the_pinned_botocore_enum() -> None:
    missing = sorted(set(gpu_types()) - set(CATALOG))
    assert not missing, f"add these to domain/instance_types/catalog.py: {missing}"
    assert len(gpu_types()) >= 50  # the enum was read: g4dn, p2..p6, g5..g7e


@pytest.mark.parametrize(
    "name", sorted(CATALOG), ids=lambda n: f"{n} agrees with the SDK or says where it is from"
)
def test_each_row_matches_the_sdks_gpu_table_or_names_its_source(name: str) -> None:
    row = CATALOG[name]
    assert row.gpus > 0 and row.vcpus > 0 and row.family == family_of(name)
    listed = sdk_gpu_table().get(name)
    # Every row says where its figures come from unless the SDK's table lists it (and checks it here).
    assert listed is not None or row.source, (
        f"{name}: not in the SDK's table, so the row must name its source"
    )
    if listed is None:
        return
    assert row.gpus == listed["Count"]
    expected = row.sdk_total_gpu_memory_mib
    if expected is None:
        assert row.total_gpu_memory_gib is not None
        expected = round(row.total_gpu_memory_gib * 1024)
    assert listed["TotalGpuMemoryInMiB"] == expected


@pytest.mark.parametrize(
    ("name", "gpus"),
    [
        ("ml.g4dn.xlarge", 1),
        ("ml.p5.4xlarge", 1),
        ("ml.g6e.2xlarge", 1),
        ("ml.p4d.24xlarge", 8),
        ("ml.c5.xlarge", 0),
    ],
    ids=[
        "g4dn (missing before) has one GPU",
        "p5.4xlarge (missing before) has one GPU",
        "a small g6e (missing before) has one GPU",
        "p4d has eight",
        "a CPU type has none",
    ],
)
def test_gpu_counts_come_from_the_catalog(name: str, gpus: int) -> None:
    assert gpus_per_instance(name) == gpus


def shipped_config() -> dict[str, Any]:
    return yaml.safe_load((REPO / "config" / "shares.yaml").read_text())


@pytest.mark.parametrize(
    "unknown",
    ["ml.p9.48xlarge", "ml.g4ad.xlarge"],
    ids=["a GPU type AWS does not have", "an AMD GPU type SageMaker does not train on"],
)
def test_the_shares_config_refuses_an_instance_type_the_catalog_does_not_know(unknown: str) -> None:
    raw = shipped_config()
    raw["instance_types"][unknown] = {"capacity": 4}
    with pytest.raises(ConfigError) as refused:
        SharesConfig.model_validate(raw)
    assert refused.value.field == f"instance_types.{unknown}"
    assert "domain/instance_types/catalog.py" in refused.value.fix


def test_the_shipped_config_and_a_newly_catalogued_type_are_accepted() -> None:
    raw = shipped_config()
    raw["instance_types"]["ml.g4dn.xlarge"] = {"capacity": 4}
    assert "ml.g4dn.xlarge" in SharesConfig.model_validate(raw).instance_types


@pytest.mark.parametrize(
    ("ladders", "grows"),
    [(DEFAULT_HOST_MEMORY_LADDERS, "vcpus"), (DEFAULT_GPU_MEMORY_LADDERS, "gpu_memory_gib")],
    ids=["host memory ladders grow the host", "GPU memory ladders grow memory per GPU"],
)
def test_the_failure_ladders_climb_the_catalog_at_a_fixed_gpu_count(ladders: Any, grows: str) -> None:
    for name, ladder in ladders.items():
        rows = [CATALOG[t] for t in ladder]  # a KeyError names a rung the catalog lacks
        assert len({r.gpus for r in rows}) == 1, name
        sizes = [getattr(r, grows) for r in rows]
        assert all(a < b for a, b in zip(sizes, sizes[1:], strict=False)), (name, sizes)
