"""`shareplane tune-rebalance`: choose the rebalancer's design and settings on a trace's first half,
judge them on the rest."""

from __future__ import annotations

from typing import Annotated

import typer
import yaml
from gpusim.trace import load_trace
from gpusim.tuning import (
    BASELINE,
    DEFAULT_GRID_SIZE,
    DEFAULT_MAX_UTILIZATION_LOSS,
    DEFAULT_REPORT_SEEDS,
    HalfResult,
    TuningReport,
    describe,
    tune_rebalance,
)
from gpusim.whatif.config import TIERS, load_whatif_config
from gpusim.whatif.run import PolicyResult
from rich.console import Console
from rich.table import Table
from shareplane.domain.config.shares import Tier

from ..main import app
from ..output import Output, OutputOption, print_fitted, print_json, stderr_console, stdout_console
from ..whatif_options import TraceOption, WhatIfConfigOption, bad_input_exits


def _rows(result: PolicyResult) -> list[str]:
    disparity = "-" if result.disparity is None else f"{result.disparity:.4f}"
    attained = result.slo_attainment.get(Tier.HIGHPRI.value)
    rows = [f"{result.utilization:.4f}", f"{result.worst_team_entitlement_ratio:.4f}", disparity]
    rows.append("-" if attained is None else f"{attained:.1%}")
    rows += [f"{result.wait_seconds[t.value]['p95'] / 3600:.2f} h" for t in TIERS]
    return rows


def _half_table(title: str, half: HalfResult) -> Table:
    sc = half.scenario
    table = Table(
        title=(
            f"{title}: {len(sc.jobs)} jobs on {sc.capacity_gpus} GPUs "
            f"(load {sc.offered_load:.2f}), seed {half.seed}"
        )
    )
    table.add_column("metric")
    columns = [(BASELINE.value, half.baseline)]
    columns += [(f"+rebalance ({design.value})", result) for design, result in half.designs.items()]
    for label, _ in columns:
        table.add_column(label, justify="right")
    values = [_rows(result) for _, result in columns]
    labels = ["utilization", "worst team ratio", "disparity", "HIGHPRI within SLO"]
    labels += [f"wait {t.value} p95" for t in TIERS]
    for i, label in enumerate(labels):
        table.add_row(label, *(column[i] for column in values))
    return table


def print_tuning(report: TuningReport, console: Console | None = None) -> None:
    """Each half: the baseline beside each design's choice; then the choice, the verdict, the mode."""
    out = console or stdout_console()
    out.print(f"split at day {report.split.split_at / 86400:.1f} by job count", highlight=False)
    halves = [("tuning", report.tuning), ("held-out", report.held_out)]
    halves += [("held-out", h) for h in report.other_seeds]
    for title, half in halves:
        print_fitted(_half_table(title, half), out)
    chosen = report.choice.chosen
    if chosen is None:
        out.print("no candidate kept utilization and HIGHPRI within bounds on every tuning window")
    else:
        out.print(f"chosen on the tuning half (worst-window gain {chosen.score:+.4f}):")
        out.print(yaml.safe_dump(describe(chosen.run), sort_keys=False), highlight=False)
    verdict = "met" if report.target_met else "NOT met"
    out.print(
        f"held-out target (at least as fair as {BASELINE.value} on worst ratio and disparity, utilization "
        f"and HIGHPRI kept): {verdict}; the measurements support rebalance mode {report.default_mode!r}",
        highlight=False,
    )


@app.command("tune-rebalance")
def tune_rebalance_command(
    trace: TraceOption,
    config: WhatIfConfigOption = None,
    split: Annotated[
        float, typer.Option("--split", help="Fraction of the jobs (by submit time) to tune on.")
    ] = 0.5,
    grid: Annotated[
        int, typer.Option("--grid", min=1, help="Candidate settings drawn from each design's grid.")
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
    report_seeds: Annotated[
        list[int] | None,
        typer.Option(
            "--report-seed",
            help="A seed the held-out half is replayed under too (repeat it; default 1 and 2).",
        ),
    ] = None,
    output: OutputOption = Output.TABLE,
) -> None:
    """Choose the rebalancer's design and settings on the first part of a trace; report them on the rest."""
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
            report_seeds=DEFAULT_REPORT_SEEDS if report_seeds is None else report_seeds,
            progress=lambda text: err.print(text, highlight=False),
        )
    if output is Output.JSON:
        print_json(report.to_json())
    else:
        print_tuning(report)
