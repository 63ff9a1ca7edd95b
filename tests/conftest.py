"""Shared fixtures: event samples, a Lambda context, handler loading by path, AWS test credentials."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.browser.chromium import browser  # noqa: F401 - one session's browser for every folder
from tests.fakes.lambda_context import FakeLambdaContext

REPO = Path(__file__).resolve().parents[1]
EVENTS = REPO / "events"
SCENARIOS = EVENTS / "scenarios"


def load_event(name: str) -> dict[str, Any]:
    """One sample event from events/ (name without .json)."""
    return json.loads((EVENTS / f"{name}.json").read_text())


def load_scenario(name: str) -> list[dict[str, Any]]:
    """A scenario stream from events/scenarios/ (name without .jsonl), in the order it happened."""
    return [json.loads(line) for line in (SCENARIOS / f"{name}.jsonl").read_text().splitlines() if line]


def scenario_names() -> list[str]:
    """Every scenario in events/scenarios/."""
    return sorted(p.stem for p in SCENARIOS.glob("*.jsonl"))


def load_handler(function: str) -> ModuleType:
    """Import functions/<function>/app.py under a unique module name (every handler file is app.py)."""
    name = f"shareplane_function_{function}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, REPO / "functions" / function / "app.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def lambda_context() -> FakeLambdaContext:
    return FakeLambdaContext()


@pytest.fixture
def aws_credentials() -> Iterator[None]:
    """Fake credentials and a region, so no test can reach a real account."""
    from tests.aws import test_credentials

    with test_credentials():
        yield
