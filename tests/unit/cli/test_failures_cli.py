"""`shareplane failures classify`: class, rule and per-tier decisions, as JSON and as a table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from shareplane_cli.main import app
from typer.testing import CliRunner

REPO = Path(__file__).resolve().parents[3]
SHARES = REPO / "config" / "shares.yaml"
OOM = (
    'AlgorithmError: ExecuteUserScriptError:\nExitCode 1\nErrorMessage "torch.OutOfMemoryError: CUDA out of '
    'memory. Tried to allocate 1.22 GiB."'
)
INTERNAL = (
    "Received status from SageMaker:InternalServerError: We encountered an internal error. Please try again."
)

runner = CliRunner()


def classify(*args: str, cwd: Path = REPO) -> tuple[int, str, str]:
    """Run `shareplane failures classify ARGS` from ``cwd``: exit code, stdout, stderr."""
    import os

    old = Path.cwd()
    os.chdir(cwd)
    try:
        result = runner.invoke(app, ["failures", "classify", *args])
    finally:
        os.chdir(old)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        (
            INTERNAL,
            {
                "class": "internal_error",
                "rule": "internal-error",
                "retryable": True,
                "decisions": {
                    "HIGHPRI": "requeue after {d}s (budget left 4)",
                    "MIDPRI": "requeue after {d}s (budget left 2)",
                    "LOWPRI": "requeue after {d}s (budget left 1)",
                },
            },
        ),
        (
            OOM,
            {
                "class": "gpu_oom",
                "rule": "gpu-oom",
                "retryable": False,
                "decisions": {
                    "HIGHPRI": "alert: warning",
                    "MIDPRI": "alert: warning",
                    "LOWPRI": "alert: warning",
                },
            },
        ),
        (
            "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY - Unable to provision requested compute resources",
            {
                "class": "capacity",
                "rule": "capacity",
                "retryable": True,
                "decisions": {
                    "HIGHPRI": "left to batch",
                    "MIDPRI": "left to batch",
                    "LOWPRI": "left to batch",
                },
            },
        ),
        (
            "a failure text no rule knows",
            {
                "class": "unknown",
                "rule": "no-rule-matched",
                "retryable": False,
                "decisions": {
                    "HIGHPRI": "alert: critical",
                    "MIDPRI": "alert: critical",
                    "LOWPRI": "alert: critical",
                },
            },
        ),
        (
            "MaxRuntimeExceeded",
            {
                "class": "max_runtime_exceeded",
                "rule": "max-runtime",
                "retryable": False,
                "decisions": {
                    "HIGHPRI": "alert: warning",
                    "MIDPRI": "alert: warning",
                    "LOWPRI": "alert: warning",
                },
            },
        ),
    ],
    ids=[
        "an internal error is requeued in every tier with the tier's budget",
        "a GPU OOM alerts in every tier",
        "a capacity error is left to Batch",
        "an unknown text alerts critically",
        "a bare SecondaryStatus is understood",
    ],
)
def test_classify_json_prints_class_rule_and_tier_decisions(reason: str, expected: dict[str, object]) -> None:
    code, out, _ = classify(reason, "--output", "json")
    assert code == 0
    got = json.loads(out)
    assert list(got) == ["class", "rule", "retryable", "decisions"]
    # The delay carries +/-10% jitter around the 60 s base; everything else is exact.
    delays = {
        t: text.split("after ")[1].split("s ")[0] for t, text in got["decisions"].items() if "after" in text
    }
    assert all(54 <= int(d) <= 66 for d in delays.values())
    want = {t: v.format(d=delays.get(t, "")) for t, v in expected["decisions"].items()}  # type: ignore[union-attr]
    assert got == expected | {"decisions": want}


def test_classify_json_for_one_tier_has_only_that_tier() -> None:
    code, out, _ = classify(INTERNAL, "--tier", "LOWPRI", "--output", "json")
    assert code == 0
    assert list(json.loads(out)["decisions"]) == ["LOWPRI"]


def test_classify_json_is_stable_between_runs() -> None:
    assert classify(INTERNAL, "--output", "json") == classify(INTERNAL, "--output", "json")


def test_classify_table_shows_class_rule_every_tier_and_the_fix() -> None:
    code, out, _ = classify(OOM)
    assert code == 0
    assert "class: gpu_oom" in out and "rule: gpu-oom" in out
    assert all(tier in out for tier in ("HIGHPRI", "MIDPRI", "LOWPRI"))
    assert "reduce per-GPU batch size" in out


def test_host_oom_upsizes_to_the_instance_type_the_team_is_allowed(tmp_path: Path) -> None:
    # GIVEN a cluster with two g5 sizes
    config = yaml.safe_load(SHARES.read_text())
    config["instance_types"] |= {"ml.g5.xlarge": {"capacity": 4}, "ml.g5.4xlarge": {"capacity": 4}}
    config["teams"]["ProdExp1"]["allowed_instance_types"] += ["ml.g5.xlarge", "ml.g5.4xlarge"]
    # ProdExp1 has a budget: every type it may use needs a price
    config["prices"] |= {
        "ml.g5.xlarge": {"on_demand_usd_per_hour": 1.4},
        "ml.g5.4xlarge": {"on_demand_usd_per_hour": 2.0},
    }
    path = tmp_path / "shares.yaml"
    path.write_text(yaml.safe_dump(config))

    def decision(*team: str) -> str:
        code, out, _ = classify(
            "ClientError: Please use an instance type with more memory, or reduce the size of job data "
            "processed on an instance.",
            *(
                "--config",
                str(path),
                "--instance-type",
                "ml.g5.xlarge",
                "--tier",
                "MIDPRI",
                "--output",
                "json",
            ),
            *team,
        )
        assert code == 0
        return json.loads(out)["decisions"]["MIDPRI"]

    # WHEN a host OOM on g5.xlarge of ProdExp1 is classified
    # THEN the retry goes to the next size the team may use, skipping 2xlarge which the cluster lacks
    assert decision("--team", "ProdExp1").endswith("ResourceConfig.InstanceType=ml.g5.4xlarge)")
    # AND a job of ProdExp2 (not allowed g5) or of no known team is not upsized at all
    assert decision("--team", "ProdExp2").startswith("alert")
    assert decision().startswith("alert")


def test_config_defaults_to_config_shares_yaml_in_the_current_directory(tmp_path: Path) -> None:
    code, _, err = classify(INTERNAL, "--output", "json", cwd=tmp_path)
    assert code == 2
    assert "config/shares.yaml" in err and "cannot be read" in err


def test_a_bad_config_names_the_file_and_the_field(tmp_path: Path) -> None:
    config = yaml.safe_load(SHARES.read_text())
    config["failures"] = {"backoff": {"jitter": 2}}
    path = tmp_path / "shares.yaml"
    path.write_text(yaml.safe_dump(config))
    code, out, err = classify(INTERNAL, "--config", str(path))
    assert code == 2 and out == ""
    assert str(path) in err and "failures.backoff.jitter" in err
