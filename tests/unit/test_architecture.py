"""Dependency rules: the domain and service layers never import boto3, botocore or Powertools."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import REPO

CORE = REPO / "layers" / "core" / "shareplane"
FORBIDDEN = ("boto3", "botocore", "aws_lambda_powertools")
PURE_FILES = sorted([*(CORE / "domain").rglob("*.py"), *(CORE / "service").rglob("*.py")])


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


@pytest.mark.parametrize("path", PURE_FILES, ids=lambda p: f"{p.parent.name}/{p.name} stays pure")
def test_pure_layers_import_no_aws_sdk(path: Path) -> None:
    bad = {m for m in imported_modules(path) if m.split(".")[0] in FORBIDDEN}
    assert not bad, f"{path.relative_to(REPO)} imports {sorted(bad)}"


@pytest.mark.parametrize(
    "path", PURE_FILES, ids=lambda p: f"{p.parent.name}/{p.name} reads no environment or clock"
)
def test_pure_layers_read_no_environment_or_clock(path: Path) -> None:
    source = path.read_text()
    for needle in ("os.environ", "time.time(", "datetime.now(", "datetime.utcnow("):
        assert needle not in source, f"{path.relative_to(REPO)} uses {needle}"


def test_the_lambda_code_never_imports_the_simulator_the_cli_or_the_sagemaker_sdk() -> None:
    lambda_files = [*CORE.rglob("*.py"), *(REPO / "functions").rglob("*.py")]
    for path in lambda_files:
        bad = {
            m for m in imported_modules(path) if m.split(".")[0] in ("gpusim", "shareplane_cli", "sagemaker")
        }
        assert not bad, f"{path.relative_to(REPO)} imports {sorted(bad)}"


def test_the_rule_is_checked_on_real_files() -> None:
    assert len(PURE_FILES) >= 5
