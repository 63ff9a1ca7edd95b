"""Command groups of the `shareplane` CLI; each module registers itself on the shared app."""

from importlib import import_module

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
    "idle",
)

for _name in _MODULES:
    import_module(f"{__name__}.{_name}")
