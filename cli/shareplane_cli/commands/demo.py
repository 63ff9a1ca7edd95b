"""`shareplane demo`: the blog's cluster on a laptop, through the real handlers, against hard partitions."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.live import Live
from shareplane.domain.config.shares import SchedulingMode
from shareplane.domain.jobs.lifecycle import gpus_per_instance

from ..config_file import DEFAULT_CONFIG, config_option, load_config
from ..demo.baseline import run_static_partitions
from ..demo.report import instance_hours, write_report
from ..demo.run import DEMO_SPEED, run_live
from ..demo.summary import CHECK_LABELS, summarize
from ..demo.view import LiveView, ProgressLines
from ..demo.workload import INSTANCE_TYPE, blog_workload
from ..local.noise_log import noise_to_log
from ..main import app
from ..output import Output, print_json, print_table, stderr_console, stdout_console


@app.command("demo")
def demo_command(
    mode: Annotated[
        SchedulingMode, typer.Option(help="fairshare (attrition) or quota (preemption).")
    ] = SchedulingMode.FAIRSHARE,
    output: Annotated[Output, typer.Option("--output", "-o")] = Output.TABLE,
    report: Annotated[Path, typer.Option(help="Where to write the HTML report.")] = Path("reports/demo"),
    config_path: Annotated[Path, config_option("The shares config.")] = DEFAULT_CONFIG,
    template: Annotated[Path, typer.Option(help="The SAM template the local stack is built from.")] = Path(
        "template.yaml"
    ),
    speed: Annotated[float, typer.Option(min=1, help="Virtual seconds per wall second.")] = DEMO_SPEED,
) -> None:
    """Run the blog's workload on a fresh local stack and compare it with hard 60/40 partitions."""
    config = load_config(config_path)
    jobs = blog_workload()
    capacity = config.instance_types[INSTANCE_TYPE].capacity
    entitlements = {name: team.entitlement[INSTANCE_TYPE] for name, team in config.teams.items()}
    console = stderr_console()
    live_view = console.is_terminal and output is Output.TABLE
    with noise_to_log(report / "demo.log") as noise:
        console.print(noise.where())
        with Live(console=console, refresh_per_second=4) if live_view else contextlib.nullcontext() as live:
            view = (
                LiveView(entitlements, capacity, len(jobs), live)
                if live is not None
                else ProgressLines(console, entitlements, capacity, len(jobs))
            )
            run = run_live(jobs, config, mode, template, speed=speed, on_tick=view, log=noise)
    static = run_static_partitions(jobs, config)
    summary = summarize(mode, run, static, jobs, config)
    path = write_report(
        report,
        summary,
        run.tracker,
        static,
        run.records,
        capacity,
        gpus_per_instance(INSTANCE_TYPE),
        entitlements,
    )
    if output is Output.JSON:
        print_json(summary)
        return
    out = stdout_console()
    for line in summary["verdict"]:
        out.print(line, highlight=False, markup=False)
    out.print()
    print_table(
        f"shareplane demo ({mode.value}) vs hard 60/40 partitions",
        ["", "soft quotas", "hard partitions"],
        [
            *_headline_rows(summary),
            *_cost_rows(summary),
            *_ledger_rows(summary["ledger"]),
            *_reclaim_rows(summary),
            *_idle_rows(summary),
        ]
        + [
            (CHECK_LABELS.get(check, check), "yes" if ok else "NO", "")
            for check, ok in summary["checks"].items()
        ],
    )
    out.print(summary["cost"]["note"])
    out.print(f"report: {path}")
    out.print(f"log: {noise.path} ({noise.summary()})")


#: The demo's instances' GPUs: the table counts instances, GPU figures follow in parentheses.
GPUS_PER_INSTANCE = gpus_per_instance(INSTANCE_TYPE)
#: A row of the comparison: what, the soft quotas' figure, the hard partitions' (or "").
_Row = tuple[str, object, object]


def _headline_rows(summary: Mapping[str, Any]) -> list[_Row]:
    """Utilization, makespan and each tier's waits, beside the hard partitions'."""
    return [
        (
            "utilization (instances busy)",
            f"{summary['utilization']:.1%}",
            f"{summary['static_partition_utilization']:.1%}",
        ),
        ("makespan (h)", summary["makespan_hours"], summary["static_partition_makespan_hours"]),
        *[
            (
                f"{tier} wait p50 / p95 (min)",
                _minutes(w),
                _minutes(summary["static_partition_wait_seconds"][tier]),
            )
            for tier, w in summary["wait_seconds"].items()
        ],
    ]


def _cost_rows(summary: Mapping[str, Any]) -> list[_Row]:
    """Each team's instance-hours (and GPU-hours) and cost, then the jobs' outcomes and the preemptions."""
    billable = summary["cost"]["by_team_billable_instance_hours"]
    return [
        *[
            (f"instance-hours {team}", instance_hours(hours, GPUS_PER_INSTANCE), "")
            for team, hours in summary["gpu_hours"].items()
        ],
        *[
            (f"cost {team} (USD)", f"{usd:,.2f} ({billable[team]} billable instance-h)", "")
            for team, usd in summary["cost"]["by_team_usd"].items()
        ],
        ("jobs", ", ".join(f"{k} {v}" for k, v in summary["jobs"].items()), ""),
        ("preemptions / capacity requeues", f"{summary['preemptions']} / {summary['capacity_requeues']}", ""),
    ]


def _ledger_rows(ledger: Mapping[str, Any]) -> list[_Row]:
    """Each team's lend/payback ledger: instance-hours lent and paid back in all, then its balance (lent
    minus paid back) at every virtual hour and at the end. Hard partitions lend nothing."""
    hours = ledger["hours"]
    marks = [k for k, h in enumerate(hours) if h == round(h) or k == len(hours) - 1]
    rows: list[_Row] = []
    for team, lent in ledger["lent_instance_hours"].items():
        paid = ledger["paid_back_instance_hours"][team]
        balance = ", ".join(
            f"{lent[k] - paid[k]:+.1f} at {hours[k]:g} h"
            if hours[k] == round(hours[k])
            else f"{lent[k] - paid[k]:+.1f} at the end ({hours[k]:.2f} h)"
            for k in marks
        )
        rows += [
            (
                f"instance-hours lent / paid back or borrowed {team}",
                f"{lent[-1]:.1f} / {paid[-1]:.1f}",
                "0 / 0",
            ),
            (f"balance {team} (lent - paid back)", balance, ""),
        ]
    return rows


def _reclaim_rows(summary: Mapping[str, Any]) -> list[_Row]:
    """Each job stopped to reclaim capacity: for whom, its checkpoint's age and the work lost."""
    return [
        (
            f"reclaim for {r['job']} (waited {r['waited_seconds'] / 60:.1f} min)",
            f"stopped {v['job']}: checkpoint {_age(v['checkpoint_age_seconds'])} old, "
            f"{v['minutes_lost']:.1f} min lost",
            "",
        )
        for r in summary["reclaims"]
        for v in r["victims"]
    ]


def _idle_rows(summary: Mapping[str, Any]) -> list[_Row]:
    """What the idle detector flagged and stopped, and who took the instances it freed."""
    idle = summary["idle"]
    return [
        ("idle jobs flagged", f"{idle['jobs_flagged']} ({', '.join(idle['flagged']) or 'none'})", ""),
        ("idle jobs stopped", idle["jobs_stopped"], ""),
        ("busy jobs flagged as idle", idle["busy_jobs_flagged"], ""),
        ("idle instance-hours reclaimed", instance_hours(idle["reclaimed_gpu_hours"], GPUS_PER_INSTANCE), ""),
        *[
            (
                f"idle stop of {stop['job']} ({stop['gpus'] // GPUS_PER_INSTANCE} instances)",
                f"taken by {', '.join(stop['taken_by'])}, {stop['taken_after_seconds']:.0f} s later"
                if stop["taken_by"]
                else "no waiting job took its instances",
                "",
            )
            for stop in idle["stops"]
        ],
    ]


def _age(seconds: float | None) -> str:
    return "none" if seconds is None else f"{seconds / 60:.1f} min"


def _minutes(wait: dict[str, float | None]) -> str:
    return " / ".join("-" if v is None else f"{v / 60:.1f}" for v in (wait["p50"], wait["p95"]))
