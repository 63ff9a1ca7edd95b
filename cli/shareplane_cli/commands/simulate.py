"""`shareplane simulate`: replay a job trace under share policies and compare them side by side."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated

import typer
from gpusim.forecast.backtest import EtaResult, backtest, evaluate, predictions_json
from gpusim.report import ratio_text, write_report
from gpusim.trace import load_trace
from gpusim.whatif.config import TIERS, Policy, load_whatif_config, parse_policies
from gpusim.whatif.run import PolicyResult, WhatIfResult, run_policy
from gpusim.whatif.scenario import Scenario, build_scenario, seed_idle, with_design
from gpusim.whatif.verdict import verdict
from rich.console import Console, Group
from rich.progress import BarColumn, Progress, TaskID, TaskProgressColumn, TextColumn, TimeElapsedColumn
from rich.table import Table
from shareplane.domain.config.shares import RebalanceDesign
from shareplane.domain.explain.durations import duration_text

from ..main import app
from ..output import Output, OutputOption, print_fitted, print_json, stderr_console, stdout_console
from ..whatif_options import TraceOption, WhatIfConfigOption, bad_input_exits

ALL_POLICIES = ",".join(p.value for p in Policy)


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.2f} h"


def print_comparison(result: WhatIfResult, console: Console | None = None) -> None:
    """One rich table: metrics as rows, policies as columns."""
    names = list(result.results)
    sc = result.scenario
    table = Table(
        title=(
            f"{len(sc.jobs)} jobs, {sc.capacity_gpus} GPUs, offered load {sc.offered_load:.2f}, "
            f"window {sc.window / 86400:.1f} days"
        )
    )
    table.add_column("metric")
    for name in names:
        table.add_column(name, justify="right")
    rs = [result.results[n] for n in names]
    table.add_row("utilization", *(f"{r.utilization:.3f}" for r in rs))
    table.add_row("work-conserving bound", *(f"{r.work_conserving_bound:.3f}" for r in rs))
    table.add_row(
        "utilization / bound",
        *(f"{r.utilization / r.work_conserving_bound:.3f}" if r.work_conserving_bound else "-" for r in rs),
    )
    for tier in TIERS:
        for q in ("p50", "p95", "p99"):
            table.add_row(f"wait {tier.value} {q}", *(_hours(r.wait_seconds[tier.value][q]) for r in rs))
        table.add_row(f"SLO met {tier.value}", *(f"{r.slo_attainment[tier.value]:.3f}" for r in rs))
    for share in sc.shares:
        table.add_row(f"ratio {share}", *(f"{r.team_entitlement_ratio[share]:.3f}" for r in rs))
    table.add_row("worst team ratio", *(f"{r.worst_team_entitlement_ratio:.3f}" for r in rs))
    table.add_row("disparity (max / min ratio)", *(ratio_text(r.disparity) for r in rs))
    table.add_row("Jain index", *(f"{r.jain_index:.3f}" for r in rs))
    for share in sc.shares:
        table.add_row(
            f"paid back {share} (lent GPU-h)",
            *(f"{ratio_text(r.paid_back_share[share])} ({r.lent_gpu_hours[share]:,.0f})" for r in rs),
        )
    table.add_row("GPU-h used", *(f"{r.gpu_hours_used:.1f}" for r in rs))
    table.add_row("GPU-h lost to preemption", *(f"{r.preemption_gpu_hours_lost:.1f}" for r in rs))
    table.add_row("reclaims (victims)", *(f"{r.reclaims} ({r.reclaim_victims})" for r in rs))
    table.add_row("GPU-h lost to reclaim", *(f"{r.reclaim_gpu_hours_lost:.1f}" for r in rs))
    table.add_row("rebalance plans applied", *(str(r.applied_plans) for r in rs))
    if any(r.idle.idle_jobs for r in rs):
        table.add_row("idle GPU-h (seeded)", *(f"{r.idle.idle_gpu_hours:.1f}" for r in rs))
        table.add_row(
            "idle GPU-h reclaimed",
            *(f"{r.idle.reclaimed_gpu_hours:.1f} ({r.idle.reclaimed_fraction:.1%})" for r in rs),
        )
        table.add_row("busy jobs stopped as idle", *(str(r.idle.busy_jobs_stopped) for r in rs))
    for share in sc.shares:
        table.add_row(f"cost {share} (USD)", *(f"{r.cost_usd.get(share, 0.0):,.0f}" for r in rs))
    table.add_row("cost total (USD)", *(f"{sum(r.cost_usd.values()):,.0f}" for r in rs))
    table.add_row("jobs", *(str(r.jobs) for r in rs))
    print_fitted(table, console)


PolicyOption = Annotated[str, typer.Option("--policy", help=f"Comma-separated policies: {ALL_POLICIES}.")]
CapacityOption = Annotated[
    int | None, typer.Option("--capacity", min=1, help="Cluster GPUs (default: from the config or the load).")
]
ReportOption = Annotated[
    Path | None, typer.Option("--report", help="Write a self-contained HTML report (index.html) here.")
]
EtaOption = Annotated[
    bool,
    typer.Option(
        "--eta",
        help="Backtest the start forecast: replay the trace followed by copies of itself, predict at "
        "submission for a seeded sample of the trace's jobs, add each policy's error and p10-p90 "
        "coverage and the copies appended (an `eta` object in JSON).",
    ),
]
EtaSampleOption = Annotated[
    int, typer.Option("--eta-sample", min=1, help="With --eta: how many jobs get a prediction.")
]
EtaWorkersOption = Annotated[
    int,
    typer.Option(
        "--eta-workers",
        min=1,
        help="With --eta: forecast in this many processes beside the replay (same predictions, "
        "less wall time).",
    ),
]
EtaPredictionsOption = Annotated[
    Path | None,
    typer.Option(
        "--eta-predictions",
        help="With --eta: write every raw prediction (each run's start, the actual start) as JSON "
        "here, to re-measure or re-tune the calibration without replaying.",
    ),
]
RebalanceDesignOption = Annotated[
    list[RebalanceDesign] | None,
    typer.Option(
        "--rebalance-design",
        help="The rebalancer design the rebalancing policies run (default: the config's). Repeat it to "
        "replay each rebalancing policy once per design, side by side.",
    ),
]
IdleFractionOption = Annotated[
    float | None,
    typer.Option(
        "--idle-fraction",
        min=0.0,
        max=1.0,
        help="Seed this fraction of jobs to hold their GPUs idle (some whole run, some after a point) "
        "and run the idle detector on its schedule (an `idle` object per policy in JSON).",
    ),
]


@app.command("simulate")
def simulate_command(
    trace: TraceOption,
    config: WhatIfConfigOption = None,
    policy: PolicyOption = ALL_POLICIES,
    capacity: CapacityOption = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed for tiers, failures and the model.")] = 0,
    output: OutputOption = Output.TABLE,
    report: ReportOption = None,
    eta: EtaOption = False,
    eta_sample: EtaSampleOption = 1000,
    eta_workers: EtaWorkersOption = 1,
    eta_predictions: EtaPredictionsOption = None,
    idle_fraction: IdleFractionOption = None,
    rebalance_design: RebalanceDesignOption = None,
) -> None:
    """Replay a trace under each share policy and print utilization, waits and fairness side by side."""
    err = stderr_console()
    etas: dict[str, EtaResult] = {}
    with bad_input_exits(err):
        policies = parse_policies(policy)
        settings = load_whatif_config(config)
        scenario = seed_idle(build_scenario(load_trace(trace), settings, capacity, seed), idle_fraction, seed)
        if eta:
            for p in policies:
                etas[p.value] = evaluate(
                    backtest(scenario, p, seed=seed, sample=eta_sample, workers=eta_workers)
                )
        # The comparison is of the trace as given: the backtest replayed it extended by copies.
        result = _replay(scenario, planned_runs(scenario, policies, rebalance_design or []), seed, err)
    if report is not None:
        path = write_report(result, report)
        err.print(f"report: {path}", highlight=False)
    if eta_predictions is not None and etas:
        eta_predictions.write_text(json.dumps(predictions_json(etas)))
        err.print(f"predictions: {eta_predictions}", highlight=False)
    _print_result(result, etas, output)


def planned_runs(
    scenario: Scenario, policies: list[Policy], designs: list[RebalanceDesign]
) -> list[tuple[str, Policy, Scenario]]:
    """(label, policy, scenario) per replay: with several designs, a rebalancing policy once per design,
    labelled ``policy (design)``; with one, every policy runs it under the policy's own name."""
    if len(designs) <= 1:
        chosen = scenario if not designs else with_design(scenario, designs[0])
        return [(p.value, p, chosen) for p in policies]
    runs = []
    for policy in policies:
        if policy.rebalances:
            runs += [(f"{policy.value} ({d.value})", policy, with_design(scenario, d)) for d in designs]
        else:
            runs.append((policy.value, policy, scenario))
    return runs


def _replay(
    scenario: Scenario, runs: list[tuple[str, Policy, Scenario]], seed: int, err: Console
) -> WhatIfResult:
    """Each replay, said on ``err`` as it goes: a bar per replay on a terminal, a line at every tenth
    elsewhere (a log, a CI job), and each replay's headline figures the moment it finishes."""
    results: dict[str, PolicyResult] = {}
    if err.is_terminal:
        columns = (TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(), TimeElapsedColumn())
        with Progress(*columns, console=err) as bar:
            for label, policy, replayed in runs:
                task = bar.add_task(label, total=1.0)

                def advance(_: Policy, done: float, task: TaskID = task) -> None:
                    bar.update(task, completed=done)

                result = run_policy(replayed, policy, seed, advance)
                results[label] = result
                bar.console.print(_finished_line(label, result), highlight=False)
        return WhatIfResult(scenario, results, seed)
    for index, (label, policy, replayed) in enumerate(runs, 1):
        lines = _ProgressLines(err, f"simulate: policy {index} of {len(runs)}, {label}")
        result = run_policy(replayed, policy, seed, lines)
        results[label] = result
        err.print(_finished_line(label, result), highlight=False)
    return WhatIfResult(scenario, results, seed)


def _finished_line(label: str, result: PolicyResult) -> str:
    return (
        f"{label} done: utilization {result.utilization:.3f}, worst team ratio "
        f"{result.worst_team_entitlement_ratio:.3f}, HIGHPRI SLO met {result.slo_attainment['HIGHPRI']:.3f}"
    )


class _ProgressLines:
    """Progress as plain lines, one per tenth done, with the time spent and an estimate of what is left."""

    def __init__(self, console: Console, what: str) -> None:
        self._console, self._what = console, what
        self._started = time.monotonic()
        self._said = 0

    def __call__(self, policy: Policy, done: float) -> None:
        """``run_policy``'s progress callback: ``done`` is the fraction of ``policy``'s replay done."""
        tenth = int(done * 10 + 1e-9)
        if tenth <= self._said or done <= 0:
            return
        self._said = tenth
        spent = time.monotonic() - self._started
        left = "" if done >= 1 else f", about {duration_text(spent / done - spent)} left"
        self._console.print(f"{self._what}: {done:.0%} ({duration_text(spent)} spent{left})", highlight=False)


def _print_result(result: WhatIfResult, etas: dict[str, EtaResult], output: Output) -> None:
    if output is Output.JSON:
        data = {"verdict": verdict(result), **result.to_json()}
        for name, measured in etas.items():
            data["policies"][name]["eta"] = measured.summary()
        print_json(data)
        return
    out = stdout_console()
    for line in verdict(result):
        out.print(line, highlight=False, markup=False)
    out.print()
    print_comparison(result, out)
    if etas:
        print_eta(etas)


def print_eta(etas: dict[str, EtaResult], console: Console | None = None) -> None:
    """The backtest's measures per policy (jobs that waited at least 10 minutes)."""
    table = Table(title="start forecast backtest (jobs that waited >= 10 min; later half: tuned interval)")
    for column in (
        "policy",
        "predictions",
        "measured",
        "median |error| h",
        "baseline h",
        "p10-p90 coverage",
        "later half: error h",
        "baseline h",
        "coverage",
        "tuned: error h / coverage",
        "online coverage",
        "copies appended",
        "starts in appended copies",
        "started after last arrival",
    ):
        table.add_column(column, justify="right")
    for name, e in etas.items():
        m = e.summary()
        late = m["later_half"]
        tuned = late["tuned_on_earlier_half"]

        def count(v: int | None) -> str:
            return "-" if v is None else str(v)

        table.add_row(
            name,
            str(m["predictions"]),
            str(m["measured"]),
            _hours_or_dash(m["median_abs_error_seconds"]),
            _hours_or_dash(m["baseline_median_abs_error_seconds"]),
            str(m["coverage_p10_p90"]),
            _hours_or_dash(late["median_abs_error_seconds"]),
            _hours_or_dash(late["baseline_median_abs_error_seconds"]),
            str(late["coverage_p10_p90"]),
            f"{_hours_or_dash(tuned['median_abs_error_seconds'])} / {tuned['coverage']}",
            str(late["online"]["coverage"]),
            f"{m['copies_appended']}{' (bound hit)' if m['extension_bound_hit'] else ''}",
            count(late["starts_in_appended_copies"]),
            count(late["started_after_last_arrival"]),
        )
    print_fitted(Group(table, _eta_by_tier(etas)), console)


def _eta_by_tier(etas: dict[str, EtaResult]) -> Table:
    """Each tier's measures: the earlier half untuned, the later half with the earlier half's calibration."""
    table = Table(title="by tier (earlier half untuned; later half: tuned interval)")
    for column in (
        "policy",
        "half",
        "tier",
        "measured",
        "median |error| h",
        "baseline h",
        "ratio",
        "coverage",
    ):
        table.add_column(column, justify="right")
    for name, e in etas.items():
        m = e.summary()
        halves = (
            ("earlier", m["earlier_half"]["by_tier"]),
            ("later", m["later_half"]["tuned_on_earlier_half"]["by_tier"]),
        )
        for half, tiers in halves:
            for tier, t in tiers.items():
                table.add_row(
                    name,
                    half,
                    tier,
                    str(t["measured"]),
                    _hours_or_dash(t["median_abs_error_seconds"]),
                    _hours_or_dash(t["baseline_median_abs_error_seconds"]),
                    "-" if t["error_to_baseline"] is None else f"{t['error_to_baseline']:.3f}",
                    "-" if t["coverage_p10_p90"] is None else str(t["coverage_p10_p90"]),
                )
    return table


def _hours_or_dash(seconds: float | None) -> str:
    """Seconds as hours without a unit (the column names it); "-" when unknown."""
    return "-" if seconds is None else f"{seconds / 3600:.2f}"
