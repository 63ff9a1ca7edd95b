"""Load the shares config file for CLI commands, naming the file and the field on any error."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml
from pydantic import ValidationError
from shareplane.domain.config.shares import SharesConfig
from shareplane.domain.errors import ConfigError

from .files import find_upward, given_or_found

#: The largest shares config the CLI reads. The deployed config is an SSM parameter of at most 8 KB
#: (template.yaml's SharesConfigParameter), so a real one is far smaller; this only stops runaway reads.
MAX_CONFIG_BYTES = 1024 * 1024
#: Where the commands look for the shares config unless --config names another: here or in a folder above.
DEFAULT_CONFIG = Path("config/shares.yaml")
#: Names the shares config file for every command that reads it, wherever it runs.
CONFIG_VARIABLE = "SHAREPLANE_CONFIG"
#: What ``--help`` says of the found default.
FOUND_CONFIG = f"${CONFIG_VARIABLE}, else {DEFAULT_CONFIG} here or in the nearest folder above"


def find_config(environ: Mapping[str, str] | None = None, start: Path | None = None) -> Path:
    """The shares config a command reads when --config is not given: the file $SHAREPLANE_CONFIG names,
    else config/shares.yaml in ``start`` (the current folder) or the nearest folder above it (up to the
    repository's root); when there is none, config/shares.yaml, for load_config to name as missing."""
    named = (os.environ if environ is None else environ).get(CONFIG_VARIABLE, "").strip()
    if named:
        return Path(named)
    return find_upward(DEFAULT_CONFIG, start) or DEFAULT_CONFIG


def config_option(what: str) -> Any:
    """The ``--config`` option of the shares config, described as ``what``: the file given, else the one
    found (``find_config``)."""
    return typer.Option(
        "--config", help=what, show_default=FOUND_CONFIG, callback=given_or_found(find_config)
    )


#: The ``--config`` option of a command that reads the shares config and says no more of it.
ConfigPath = Annotated[Path, config_option("The shares config file.")]


def _loc(parts: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in parts) or "(root)"


def load_config(path: str | Path) -> SharesConfig:
    """Read and validate a shares config; raise ConfigError naming the file and the field."""
    path = Path(path)
    try:
        # Read with a bound: --config may name an endless stream (/dev/zero, a pipe) or a huge file.
        with path.open("rb") as handle:
            data = handle.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigError(
            str(path), f"cannot be read ({exc.strerror or exc})", "pass --config with a readable YAML file"
        ) from exc
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(
            str(path),
            f"is larger than {MAX_CONFIG_BYTES} bytes (or an endless stream)",
            "pass --config with the shares config file (config/shares.yaml is a few KB)",
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            str(path), f"is not UTF-8 text ({exc.reason} at byte {exc.start})", "save the file as UTF-8"
        ) from exc
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(str(path), f"is not valid YAML ({exc})", "fix the YAML syntax") from exc
    if not isinstance(raw, dict):
        raise ConfigError(str(path), "is not a mapping", "start from config/shares.yaml in the repository")
    try:
        return SharesConfig.model_validate(raw)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc.field}", exc.problem, exc.fix) from exc
    except ValidationError as exc:
        first = exc.errors()[0]
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise ConfigError(
            f"{path}: {_loc(first['loc'])}", f"{first['msg']}{more}", "correct the value in the config file"
        ) from exc
