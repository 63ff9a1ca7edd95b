"""Command groups of the `shareplane` CLI; each module registers itself on the shared app."""

from importlib import import_module

from typer.models import CommandInfo, TyperInfo

from ..main import app

# One line per command module; a module registers its commands on `shareplane_cli.main.app`.
_MODULES: tuple[str, ...] = (
    "demo",
    "jobs",
    "local",
    "submit",
    "validate",
    "failures",
    "alerts",
    "shares",
    "simulate",
    "tune_rebalance",
    "config",
    "usage",
    "why",
    "top",
    "idle",
)

#: `shareplane --help` groups the commands by task, in this order (panels, then commands within one).
#: Written once here, not on each command, so the order of the whole listing reads in one place.
HELP_PANELS: dict[str, tuple[str, ...]] = {
    "Local": ("up", "down", "replay", "demo"),
    "Jobs": ("submit", "validate", "jobs", "why", "cancel", "cleanup", "alerts", "export", "failures"),
    "Capacity": ("shares", "top", "idle", "config"),
    "Cost": ("usage", "budgets"),
    "What-if": ("simulate", "tune-rebalance"),
}

for _name in _MODULES:
    import_module(f"{__name__}.{_name}")


def _group_by_task() -> None:
    """Put every command and group in its panel, in the order of HELP_PANELS; a command missing from
    it is a mistake caught here, at import, rather than a command listed under no task."""
    order = [name for names in HELP_PANELS.values() for name in names]
    panel_of = {name: panel for panel, names in HELP_PANELS.items() for name in names}
    listed: list[CommandInfo | TyperInfo] = [*app.registered_commands, *app.registered_groups]
    names = {str(info.name) for info in listed}
    if names != set(order):
        raise RuntimeError(f"HELP_PANELS does not match the commands: {sorted(names ^ set(order))}")
    for info in listed:
        info.rich_help_panel = panel_of[str(info.name)]
    app.registered_commands.sort(key=lambda info: order.index(str(info.name)))
    app.registered_groups.sort(key=lambda info: order.index(str(info.name)))


_group_by_task()
