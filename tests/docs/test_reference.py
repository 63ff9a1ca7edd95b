"""The generated reference pages are current and miss nothing the code has.

GIVEN the code (pydantic config models, the typer app, alert kinds, metric tables, template.yaml, the
exit codes) WHEN the reference pages under docs/reference/ are read THEN each names every field,
command, option, alert kind, metric, widget, alarm, rule, sample event and exit code, every config
field has a description of its own in its model (a `#:` comment) that its row shows, and each page
is exactly what `python -m shareplane_cli.reference` writes now (a stale page fails with the command
that refreshes it).
"""

from __future__ import annotations

import re

import pytest
from shareplane.domain.alerts.alert import AlertKind
from shareplane.domain.config.shares import SharesConfig
from shareplane_cli import reference
from shareplane_cli.errors import ExitCode
from shareplane_cli.reference import alerts, cli, config, events, metrics
from shareplane_cli.reference.markdown import cell

from tests.conftest import REPO

PAGES = REPO / "docs" / "reference"


def text(name: str) -> str:
    return (PAGES / name).read_text()


def rows(name: str) -> dict[str, str]:
    """A page's table rows by their first cell (code spans unwrapped)."""
    found = {}
    for line in text(name).splitlines():
        if line.startswith("| `"):
            first = line.split(" | ")[0][2:].strip().strip("`")
            found[first] = line
    return found


@pytest.fixture(scope="module")
def generated() -> dict[str, str]:
    return reference.generate(REPO)


@pytest.mark.parametrize("name", list(reference.PAGES), ids=lambda n: f"docs/reference/{n} is current")
def test_every_reference_page_is_what_the_code_generates_now(name: str, generated: dict[str, str]) -> None:
    assert (PAGES / name).is_file(), (
        f"docs/reference/{name} is missing: run `python -m shareplane_cli.reference`"
    )
    assert text(name) == generated[name], (
        f"docs/reference/{name} is stale: run `python -m shareplane_cli.reference`"
    )


def test_the_config_page_lists_every_field_with_its_type_default_and_bounds() -> None:
    listed = rows("config.md")
    top = set(SharesConfig.model_fields)
    assert top <= set(listed), f"top-level fields missing: {top - set(listed)}"
    every = config.fields()
    for field in every:
        row = listed.get(field.path)
        assert row is not None, f"config.md misses {field.path}"
        cells = row.split(" | ")
        assert field.type_name.replace("|", "\\|") in row, f"{field.path}: type {field.type_name} not shown"
        assert field.default in cells[2].strip("`") or field.default in row, f"{field.path}: default"
        for bound in re.findall(r"[<>]=? [-\d.]+", field.bounds):
            assert bound in row, f"{field.path}: bound {bound} not shown"
    # every nested model's every field is reached (the walk is complete: count the models' fields)
    nested = {f.model for f in every}
    for model in nested:
        for name in model.model_fields:
            assert any(f.model is model and f.path.endswith(name) for f in every), (model, name)


def test_every_config_field_has_a_description_of_its_own_and_the_page_shows_it() -> None:
    every = config.fields()
    # A model reached along several paths (IdleOverride, BackoffConfig) is named once per field.
    undescribed = sorted(
        {f"{f.model.__name__}.{f.path.rsplit('.', 1)[-1]}" for f in every if not f.description}
    )
    assert not undescribed, (
        f"{len(undescribed)} config fields have no description: write a `#:` comment right above each "
        f"in its model, then run `python -m shareplane_cli.reference`: {', '.join(undescribed)}"
    )
    listed = rows("config.md")
    for field in every:
        assert cell(field.description) in listed[field.path], f"config.md: {field.path} lacks its description"


def test_the_cli_page_lists_every_command_and_option() -> None:
    page = text("cli.md")
    for command in cli.commands():
        heading = f"## `{command.name}`"
        assert heading in page, f"cli.md misses {command.name}"
        section = page.split(heading, 1)[1].split("\n## ", 1)[0]
        for param in command.params:
            spelled = cli.flags(param)
            assert f"`{spelled}`" in section, f"cli.md: {command.name} misses {spelled}"
    assert {"demo", "jobs", "why", "top", "submit", "simulate", "usage", "budgets", "idle"} <= {
        c.path[1] for c in cli.commands() if len(c.path) > 1
    }


def test_the_alerts_page_lists_every_kind_and_attribute() -> None:
    listed = rows("alerts.md")
    for kind in [k.value for k in AlertKind] + alerts.kinds():
        assert kind in listed, f"alerts.md misses kind {kind}"
    for attribute in ("severity", "team", "tier", "share", "kind", "queue"):
        assert attribute in listed, f"alerts.md misses attribute {attribute}"


def test_the_metrics_page_lists_every_metric_widget_and_alarm() -> None:
    listed = rows("metrics.md")
    page = text("metrics.md")
    for metric, dims in metrics.emitted().items():
        assert metric in listed and ", ".join(dims) in listed[metric], f"metrics.md: {metric} {dims}"
    for title, _names in metrics.widgets(REPO):
        assert title in page, f"metrics.md misses the widget {title!r}"
    for alarm, _ in metrics.alarms(REPO):
        assert alarm in listed, f"metrics.md misses the alarm {alarm}"


def test_the_events_page_lists_every_rule_and_every_sample() -> None:
    page = text("events.md")
    for rule in events.rules(REPO):
        assert f"`{rule.logical_id}`" in page and f"`{rule.function}`" in page
    for sample in events.samples(REPO):
        assert f"events/{sample}" in page, f"events.md misses events/{sample}"
    functions = {r.function for r in events.rules(REPO)}
    assert len(functions) == 8, functions


def test_the_exit_codes_page_lists_every_code() -> None:
    listed = rows("exit-codes.md")
    for code in ExitCode:
        assert str(code.value) in listed and code.name in listed[str(code.value)]
