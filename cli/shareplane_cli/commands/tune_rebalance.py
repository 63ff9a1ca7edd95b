"""`shareplane tune-rebalance`: choose rebalancer settings on a trace's first half, judge on the rest."""

from __future__ import annotations

from typing import Annotated

import typer
import yaml
from gpusim.trace import load_trace
from gpusim.tuning import (
    DEFAULT_GRID_SIZE,
    DEFAULT_MAX_UTILIZATION_LOSS,
    TuningReport,
    describe,
    tune_rebalance,
)
from gpusim.whatif.config import TIERS, load_whatif_config
from gpusim.whatif.run import PolicyResult
from rich.console import Console
from rich.table import Table

from ..main import app
from ..output import Output, OutputOption, print_fitted, print_json, stderr_console, stdout_console
from ..whatif_options import TraceOption, WhatIfConfigOption, bad_input_exits


def _rows(result: PolicyResult) -> list[str]:
    rows = [f"{result.utilization:.4f}", f"{result.worst_team_entitlement_ratio:.4f}"]
    rows += [f"{result.wait_seconds[t.value]['p95'] / 3600:.2f} h" for t in TIERS]
    return rows


def print_tuning(report: TuningReport, console: Console | None = None) -> None:
    """Both halves side by side (fixed weights and the chosen settings), then the chosen settings."""
    out = console or stdout_console()
    halves = (("tuning", report.tuning), ("held-out", report.held_out))
    table = Table(
        title=(
            f"split at day {report.split.split_at / 86400:.1f} by job count: "
            + ", ".join(
                f"{name} {len(h.scenario.jobs)} jobs on {h.scenario.capacity_gpus} GPUs "
                f"(load {h.scenario.offered_load:.2f})"
                for name, h in halves
            )
        )
    )
    table.add_column("metric")
    columns = []
    for name, h in halves:
        for label, result in (("fairshare", h.fixed), ("+rebalance", h.rebalanced)):
            table.add_column(f"{name} {label}", justify="right")
            columns.append(_rows(result))
    labels = ["utilization", "worst team ratio", *(f"wait {t.value} p95" for t in TIERS)]
    for i, label in enumerate(labels):
        table.add_row(label, *(column[i] for column in columns))
    print_fitted(table, out)
    chosen = report.choice.chosen
    if chosen is None:
        out.print("no candidate kept utilization within bounds on every tuning window; replayed the config's")
    else:
        out.print(f"chosen on the tuning half (worst-window gain {chosen.score:+.4f}):")
        out.print(yaml.safe_dump(describe(chosen.run), sort_keys=False), highlight=False)
    verdict = "met" if report.target_met else "NOT met"
    out.print(f"held-out target (worst team ratio with rebalancing >= fixed weights): {verdict}")


@app.command("tune-rebalance")
def tune_rebalance_command(
    trace: TraceOption,
    config: WhatIfConfigOption = None,
    split: Annotated[
        float, typer.Option("--split", help="Fraction of the jobs (by submit time) to tune on.")
    ] = 0.5,
    grid: Annotated[
        int, typer.Option("--grid", min=1, help="Candidate settings drawn from the grid.")
    ] = DEFAULT_GRID_SIZE,
    max_utilization_loss: Annotated[
        float,
        typer.Option("--max-utilization-loss", help="Most utilization a candidate may cost in any window."),
    ] = DEFAULT_MAX_UTILIZATION_LOSS,
    capacity: Annotated[
        int | None,
        typer.Option(
            "--capacity", min=1, help="Cluster GPUs for both halves (default: each half's own load)."
        ),
    ] = None,
    seed: Annotated[
        int, typer.Option("--seed", help="Seed for the grid, tiers, failures and the model.")
    ] = 0,
    output: OutputOption = Output.TABLE,
) -> None:
    """Choose rebalancer settings on the first part of a trace and report them on the rest."""
    err = stderr_console()
    with bad_input_exits(err):
        report = tune_rebalance(
            load_trace(trace),
            load_whatif_config(config),
            fraction=split,
            grid_size=grid,
            seed=seed,
            capacity_gpus=capacity,
            max_utilization_loss=max_utilization_loss,
            progress=lambda text: err.print(text, highlight=False),
        )
    if output is Output.JSON:
        print_json(report.to_json())
    else:
        print_tuning(report)
