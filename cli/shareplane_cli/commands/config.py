"""`shareplane config render [--check]`: write the shares config's Batch queues into template.yaml."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
import yaml
from rich.console import Console
from shareplane.domain.config.shares import SchedulingMode
from shareplane.domain.errors import ShareplaneError

from .. import drop_policy, queue_template
from ..config_file import DEFAULT_CONFIG, config_option, load_config
from ..main import app
from ..output import print_error

config_app = typer.Typer(
    help="The shares config: render what it defines into template.yaml.", no_args_is_help=True
)
app.add_typer(config_app, name="config")


def _fail(message: str) -> typer.Exit:
    print_error(message)
    return typer.Exit(2)


@config_app.command("render")
def render_command(
    config_path: Annotated[Path, config_option("The shares config file.")] = DEFAULT_CONFIG,
    template_path: Annotated[Path, typer.Option("--template", help="The SAM template to update.")] = Path(
        "template.yaml"
    ),
    check: Annotated[
        bool, typer.Option("--check", help="Change nothing; exit 1 with a diff when the template is stale.")
    ] = False,
    mode: Annotated[
        SchedulingMode | None,
        typer.Option(help="Render the config as if in this mode (a preview: needs --output)."),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(help="Write the rendered template here and leave the template as it is."),
    ] = None,
) -> None:
    """Rewrite the template's generated Batch queue blocks and shares config parameter from the config."""
    try:
        config = load_config(config_path)
        # The default is the file itself as JSON (what the Lambdas read), not the model's dump.
        raw = yaml.safe_load(config_path.read_text(encoding="utf-8"))
        if mode is not None and mode is not config.mode:
            if output is None:
                raise _fail(f"--mode {mode.value} renders a preview: name the file it goes to with --output")
            config, raw = config.model_copy(update={"mode": mode}), {**raw, "mode": mode.value}
        shares_json = queue_template.shares_config_json(raw)
        blocks = queue_template.render(config)
        team_folders = drop_policy.render_statements(config)
    except ShareplaneError as exc:
        raise _fail(str(exc)) from exc
    try:
        before = template_path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise _fail(f"cannot read {template_path}: {exc}") from exc
    try:
        if output is None:  # a switch in place would replace the deployed queues (a preview is no switch)
            queue_template.refuse_mode_switch(before, config)
        after = drop_policy.apply_statements(queue_template.apply(before, blocks, shares_json), team_folders)
    except ShareplaneError as exc:
        raise _fail(f"{template_path}: {exc}") from exc

    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(after, encoding="utf-8")
        typer.echo(f"{output}: {template_path} with {config_path}'s Batch queues in {config.mode.value} mode")
        return

    if after == before:
        typer.echo(f"{template_path} is up to date with {config_path}")
        return
    if check:
        typer.echo(queue_template.diff(before, after, str(template_path)), nl=False)
        Console(stderr=True).print(
            f"{template_path} is out of date with {config_path}; run `shareplane config render`",
            markup=False,
            highlight=False,
        )
        raise typer.Exit(1)
    template_path.write_text(after, encoding="utf-8")
    typer.echo(f"{template_path}: generated Batch queue blocks rendered from {config_path}")
