"""`shareplane validate`: exit codes, both output formats, --team and --config."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from shareplane_cli.main import app
from typer.testing import CliRunner

REPO = Path(__file__).resolve().parents[3]
CONFIG = REPO / "config" / "shares.yaml"
VALID = REPO / "config" / "jobs" / "prodexp1-bert.yaml"
INVALID = REPO / "config" / "jobs" / "prodexp2-invalid.yaml"

runner = CliRunner()


def run(*args: str | Path):
    return runner.invoke(app, ["validate", *map(str, args), "--config", str(CONFIG)])


def run_json(*args: str | Path) -> tuple[int, dict]:
    result = run(*args, "--output", "json")
    return result.exit_code, json.loads(result.stdout)


def job(name: str = "ranker-ft", **fields: object) -> dict[str, object]:
    """A job ProdExp1 may submit under the repository's config."""
    return {
        "name": name,
        "instance_type": "ml.p4d.24xlarge",
        "framework": "pytorch",
        "framework_version": "2.6.0",
        "output_path": "s3://search-ml-training/prodexp1/output/",
        **fields,
    }


def write(tmp_path: Path, document: object, name: str = "spec.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(document))
    return path


def test_the_valid_example_passes_with_exit_0_and_lists_each_request() -> None:
    code, out = run_json(VALID)
    assert code == 0 and out["valid"] is True
    assert out["key"] == "submit/ProdExp1/prodexp1-bert.yaml"
    assert [j["valid"] for j in out["jobs"]] == [True, True, True]
    queues = [j["request"]["jobQueue"] for j in out["jobs"]]
    assert queues == ["search-p4d-queue", "search-p4d-queue", "search-cpu-fifo-queue"]
    assert all(len(j["payload_digest"]) == 64 and j["errors"] == [] for j in out["jobs"])


def test_the_invalid_example_fails_with_exit_1_and_each_error_has_path_message_and_fix() -> None:
    code, out = run_json(INVALID)
    assert code == 1 and out["valid"] is False
    assert [j["valid"] for j in out["jobs"]] == [False, False, False]
    errors = [e for j in out["jobs"] for e in j["errors"]]
    assert all(e.keys() == {"path", "message", "fix"} and all(e.values()) for e in errors)
    paths = {e["path"] for e in errors}
    assert {"jobs[0].role", "jobs[1].instance_type", "jobs[2].instance_count", "jobs[2].team"} <= paths
    assert all("request" not in j for j in out["jobs"])


@pytest.mark.parametrize(
    ("spec", "code", "shown"),
    [(VALID, 0, "3 of 3 job(s) valid"), (INVALID, 1, "0 of 3 job(s) valid")],
    ids=["the table shows a valid spec as valid", "the table shows each rejection with its fix"],
)
def test_table_output(spec: Path, code: int, shown: str) -> None:
    result = runner.invoke(app, ["validate", str(spec), "--config", str(CONFIG)], env={"COLUMNS": "300"})
    assert result.exit_code == code
    assert shown in result.stdout
    if code:
        assert "rejected" in result.stdout and "did you mean hyperparameters?" in result.stdout
    else:
        assert "search-p4d-queue" in result.stdout and "rejected" not in result.stdout


def test_a_mix_of_good_and_bad_jobs_exits_1_but_keeps_the_good_request(tmp_path: Path) -> None:
    spec = write(tmp_path, [job(team="ProdExp1"), job("second", instance_count=0)])
    code, out = run_json(spec)
    assert code == 1
    assert out["jobs"][0]["valid"] and "request" in out["jobs"][0]
    assert out["jobs"][1]["errors"][0]["path"] == "jobs[1].instance_count"


def test_without_team_in_spec_or_option_the_spec_is_rejected(tmp_path: Path) -> None:
    code, out = run_json(write(tmp_path, job()))
    assert code == 1 and out["problems"][0]["path"] == "team"


def test_the_team_option_supplies_the_team(tmp_path: Path) -> None:
    code, out = run_json(write(tmp_path, job()), "--team", "ProdExp1")
    assert code == 0 and out["team"] == "ProdExp1"


def test_the_team_option_checks_the_spec_as_that_team(tmp_path: Path) -> None:
    # GIVEN ProdExp1's job WHEN checked as ProdExp2 THEN refused: the team and its prefixes differ
    code, out = run_json(write(tmp_path, job(team="ProdExp1")), "--team", "ProdExp2")
    assert code == 1
    paths = {e["path"] for e in out["jobs"][0]["errors"]}
    assert {"jobs[0].team", "jobs[0].output_path"} <= paths


def test_an_unknown_team_is_rejected(tmp_path: Path) -> None:
    code, out = run_json(write(tmp_path, job()), "--team", "Nobody")
    assert code == 1 and "not in the shares config" in out["problems"][0]["message"]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"\x00\x01\x02", "NUL bytes"),
        (b"name: &a x\nteam: *a\n", "anchors and aliases"),
        (b"#" * (256 * 1024 + 10), "over the 256 KB limit"),
    ],
    ids=["a binary file is rejected", "an alias is rejected", "a file over 256 KB is rejected"],
)
def test_unreadable_files_exit_1_with_a_file_problem(tmp_path: Path, content: bytes, expected: str) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_bytes(content)
    code, out = run_json(spec, "--team", "ProdExp1")
    assert code == 1 and out["jobs"] == []
    assert out["problems"][0]["path"] == "file" and expected in out["problems"][0]["message"]


def test_a_json_spec_is_read_as_json(tmp_path: Path) -> None:
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps([job(team="ProdExp1")]))
    code, out = run_json(spec)
    assert code == 0 and out["key"] == "submit/ProdExp1/spec.json"


def test_a_missing_spec_file_exits_2(tmp_path: Path) -> None:
    result = run(tmp_path / "nope.yaml")
    assert result.exit_code == 2 and "cannot read" in result.stderr


def test_a_broken_config_exits_2_naming_the_file_and_field(tmp_path: Path) -> None:
    raw = yaml.safe_load(CONFIG.read_text())
    raw["teams"]["ProdExp1"]["max_retry_attempts"] = 0
    bad = tmp_path / "shares.yaml"
    bad.write_text(yaml.safe_dump(raw))
    result = runner.invoke(app, ["validate", str(VALID), "--config", str(bad)])
    assert result.exit_code == 2
    assert "shares.yaml" in result.stderr and "max_retry_attempts" in result.stderr
