"""`shareplane validate SPEC`: check a job spec locally with exactly the rules the submit path applies."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text
from shareplane.domain.errors import ShareplaneError
from shareplane.domain.submit.jobspec import MAX_SPEC_BYTES, SpecResult, parse_local_spec

from ..config_file import DEFAULT_CONFIG, config_option, load_config
from ..files import read_head
from ..main import app
from ..output import Output, print_error, print_fitted, stdout_console


def _read(spec: Path) -> bytes:
    # One byte past the limit is enough to report the file as too large without reading all of it.
    return read_head(spec, MAX_SPEC_BYTES)


def _table(spec: Path, result: SpecResult) -> Table:
    table = Table(title=f"{spec} (team {result.team or '?'})")
    for column in ("job", "result", "path", "problem", "fix"):
        # Fold rather than truncate: URIs and ARNs are single long words and the tail is the point.
        table.add_column(column, overflow="fold")
    for problem in result.problems:
        table.add_row("(file)", Text("rejected", style="red"), problem.path, problem.message, problem.fix)
    for job in result.jobs:
        label = f"{job.index}: {job.name or '?'}"
        if job.request is not None:
            share = job.request.share or "-"
            where = f"queue {job.request.job_queue}, share {share}"
            if job.request.scheduling_priority is not None:
                where += f", priority {job.request.scheduling_priority}"
            table.add_row(label, Text("valid", style="green"), "", where, "")
            continue
        for problem in job.problems:
            table.add_row(label, Text("rejected", style="red"), problem.path, problem.message, problem.fix)
    return table


@app.command("validate")
def validate_command(
    spec: Annotated[Path, typer.Argument(metavar="SPEC", help="The job spec file (.yaml, .yml or .json).")],
    team: Annotated[
        str | None,
        typer.Option("--team", help="Check as if dropped under submit/TEAM/ (default: the spec's team)."),
    ] = None,
    config_path: Annotated[Path, config_option("The shares config file.")] = DEFAULT_CONFIG,
    output: Annotated[
        Output, typer.Option("--output", help="json (machine-readable) or table.")
    ] = Output.TABLE,
) -> None:
    """Validate SPEC; exit 0 when every job would be submitted, 1 when any is rejected."""
    try:
        config = load_config(config_path)
    except ShareplaneError as exc:
        print_error(exc)
        raise typer.Exit(2) from exc
    try:
        data = _read(spec)
    except OSError as exc:
        print_error(f"cannot read {spec}: {exc.strerror or exc}")
        raise typer.Exit(2) from exc
    result = parse_local_spec(data, spec.name, config, team)
    if output is Output.JSON:
        typer.echo(json.dumps({"file": str(spec), **result.as_dict()}, indent=2))
    else:
        console = stdout_console()
        print_fitted(_table(spec, result), console)
        accepted = sum(job.ok for job in result.jobs)
        console.print(
            f"{accepted} of {len(result.jobs)} job(s) valid" if result.jobs else "no job could be read",
            markup=False,
            highlight=False,
        )
    raise typer.Exit(0 if result.ok else 1)
