"""The what-if simulator: seeded summaries, metric invariants, trace formats, the CLI and the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gpusim.report import write_report
from gpusim.trace import NAMED_TRACES, TraceJob, load_trace
from gpusim.whatif.config import Policy, SharesMapping, WhatIfConfig, load_whatif_config, parse_policies
from gpusim.whatif.run import PolicyRun, initial_weights, jain, run_policy, run_whatif
from gpusim.whatif.scenario import ScenarioJob, build_scenario, scenario_of
from hypothesis import given, settings
from hypothesis import strategies as st
from shareplane.domain.errors import ConfigError, InvalidInputError
from shareplane_cli.main import app
from typer.testing import CliRunner

from tests.properties import examples
from tests.sim.traces import synthetic_trace, write_csv

REPO = Path(__file__).resolve().parents[2]
PHILLY = NAMED_TRACES["philly"]
CONFIG = REPO / "config" / "whatif.yaml"
ALL = list(Policy)
SUMMARY_KEYS = {
    "cost_usd",
    "utilization",
    "work_conserving_bound",
    "wait_seconds",
    "team_entitlement_ratio",
    "worst_team_entitlement_ratio",
    "jain_index",
    "disparity",
    "lent_gpu_hours",
    "paid_back_share",
    "ledger",
    "preemption_gpu_hours_lost",
    "gpu_hours_used",
    "slo_attainment",
    "reclaims",
    "reclaim_victims",
    "reclaim_gpu_hours_lost",
    "idle",
    "jobs",
}
IDLE_KEYS = {
    "idle_gpu_hours",
    "reclaimed_gpu_hours",
    "busy_jobs_stopped",
    "idle_jobs",
    "idle_jobs_stopped",
    "warnings",
}


# The defaults: HIGHPRI has its own identifier per team and reclaims after 300 s (fairshare+tiers,
# fairshare+reclaim), as config/whatif.yaml has it.
SMALL_CONFIG = WhatIfConfig(shares=SharesMapping(top_k=3))


@pytest.fixture(scope="module")
def small_result():
    """Every policy on the synthetic trace, seed 3."""
    scenario = build_scenario(synthetic_trace(), SMALL_CONFIG, seed=3)
    return run_whatif(scenario, ALL, seed=3)


@pytest.fixture(scope="module")
def philly_result():
    """Every policy on the first 2,000 Philly jobs with the shipped config, seed 0."""
    scenario = build_scenario(load_trace(PHILLY)[:2000], load_whatif_config(CONFIG), seed=0)
    return run_whatif(scenario, ALL, seed=0)


def headline(result) -> dict[str, tuple[float, ...]]:
    """Per policy, rounded for exact comparison: (utilization, bound, worst ratio, GPU-hours lost to
    preemption, HIGHPRI wait p95, victims of reclaim)."""
    return {
        name: (
            round(r.utilization, 4),
            round(r.work_conserving_bound, 4),
            round(r.worst_team_entitlement_ratio, 4),
            round(r.preemption_gpu_hours_lost, 1),
            round(r.wait_seconds["HIGHPRI"]["p95"]),
            r.reclaim_victims,
        )
        for name, r in result.results.items()
    }


def test_the_seeded_synthetic_run_has_the_exact_summary(small_result) -> None:
    # GIVEN a fixed trace and seed WHEN every policy replays it THEN the numbers are reproducible
    assert small_result.scenario.capacity_gpus == EXPECTED_SMALL_CAPACITY
    assert small_result.scenario.shares == ("alpha", "beta", "gamma", "other")
    assert headline(small_result) == EXPECTED_SMALL


def test_the_seeded_philly_prefix_has_the_exact_summary(philly_result) -> None:
    assert headline(philly_result) == EXPECTED_PHILLY


def test_a_rerun_with_the_same_seed_is_identical(small_result) -> None:
    scenario = build_scenario(synthetic_trace(), SMALL_CONFIG, seed=3)
    again = run_whatif(scenario, ALL, seed=3)
    assert again.to_json() == small_result.to_json()


@pytest.mark.parametrize(
    "which", ["small_result", "philly_result"], ids=["on the synthetic trace", "on Philly"]
)
def test_the_metrics_keep_their_invariants(which, request) -> None:
    result = request.getfixturevalue(which)
    sc = result.scenario
    for name, r in result.results.items():
        assert 0 <= r.utilization <= r.work_conserving_bound + 1e-9 <= 1 + 1e-9, name
        assert r.finished == r.jobs == len(sc.jobs), name
        for i, share in enumerate(sc.shares):
            assert 0 <= r.team_entitlement_ratio[share] <= sc.capacity_units / sc.entitlements[i] + 1e-9
        assert r.worst_team_entitlement_ratio == min(r.team_entitlement_ratio.values())
        assert 1 / len(sc.shares) - 1e-9 <= r.jain_index <= 1 + 1e-9
        assert r.disparity is None or r.disparity >= 1.0
        for share, lent in r.lent_gpu_hours.items():
            assert lent >= 0 and (r.paid_back_share[share] is None) == (lent == 0), name
        for tier in r.wait_seconds.values():
            assert 0 <= tier["p50"] <= tier["p95"] <= tier["p99"]
        assert all(0 <= v <= 1 for v in r.slo_attainment.values())
        # GPU-hours used are the utilization's numerator, over the same window.
        assert r.gpu_hours_used == pytest.approx(
            r.utilization * sc.capacity_gpus * sc.window / 3600.0, rel=1e-9
        ), name
        assert 0 <= r.reclaim_gpu_hours_lost <= r.gpu_hours_used
    res = result.results
    assert res["static"].utilization <= res["fairshare"].utilization
    # Only quota shares reclaim lent capacity by preemption; fair-share never preempts.
    assert res["static"].preemption_gpu_hours_lost == 0
    fair = [p for p in ALL if p.fair]
    assert all(res[p.value].preemption_gpu_hours_lost == 0 for p in fair)
    # Only the reclaiming policies stop jobs for others.
    assert all(res[p.value].reclaims == 0 for p in ALL if not p.reclaims)
    assert sum(sc.entitlements) == sc.capacity_units


def test_the_rebalancer_changes_weights_during_the_run(small_result) -> None:
    r = small_result.results["fairshare+rebalance"]
    assert r.plans > 0 and r.applied_plans > 0
    assert r.final_weights != initial_weights(small_result.scenario)
    assert small_result.results["fairshare"].applied_plans == 0


def test_reweigh_mid_run_updates_the_models_share_weights() -> None:
    scenario = build_scenario(synthetic_trace(count=50), SMALL_CONFIG, seed=1)
    run = PolicyRun(scenario, Policy.REBALANCE, seed=1)
    run.start()
    run.model.run(until=scenario.window / 2)
    run.model.reweigh(run.queue, {"alpha": 0.5})
    assert run.queue.shares["alpha"].weight == 0.5
    assert {w.share_identifier: w.weight_factor for w in run.queue.policy.weights}["alpha"] == 0.5


def test_the_json_shape_is_exactly_the_documented_one(small_result) -> None:
    out = small_result.to_json()
    assert set(out) == {"policies"}
    assert list(out["policies"]) == [p.value for p in ALL]
    for summary in out["policies"].values():
        assert set(summary) == SUMMARY_KEYS
        assert set(summary["wait_seconds"]) == {"HIGHPRI", "MIDPRI", "LOWPRI"}
        assert all(set(v) == {"p50", "p95", "p99"} for v in summary["wait_seconds"].values())
        assert set(summary["slo_attainment"]) == {"HIGHPRI", "MIDPRI", "LOWPRI"}
        assert set(summary["team_entitlement_ratio"]) == set(small_result.scenario.shares)
        assert set(summary["cost_usd"]) == set(small_result.scenario.shares)
    json.dumps(out)  # JSON-ready


def test_the_report_is_written_and_names_every_policy(small_result, tmp_path) -> None:
    path = write_report(small_result, tmp_path / "report")
    text = path.read_text()
    assert path.name == "index.html"
    # five charts, drawn by the one plotly.js inlined in the head; nothing is loaded from elsewhere
    head, body = text.split("</head>")
    assert body.count('class="plotly-graph-div"') == 5 and "<script src" not in text
    assert head.count("<script") == 1 and "Plotly" in head
    assert "http://" not in body and "https://" not in body
    for policy in ALL:
        assert policy.value in text


def test_the_philly_csv_loader_round_trips(tmp_path) -> None:
    jobs = synthetic_trace(count=40)
    loaded = load_trace(write_csv(tmp_path / "t.csv", jobs))
    assert [(j.submit - jobs[0].submit, j.duration, j.gpus, j.team) for j in jobs] == [
        (j.submit, j.duration, j.gpus, j.team) for j in loaded
    ]


def record(name: str, created: int, started: int | None, stopped: int | None, share: str = "teamA", **extra):
    """A `shareplane jobs --output json` record (epoch milliseconds)."""
    return {
        "jobName": name,
        "status": "SUCCEEDED" if stopped else "FAILED",
        "shareIdentifier": share,
        "schedulingPriority": extra.pop("priority", None),
        "createdAt": created,
        "startedAt": started,
        "stoppedAt": stopped,
        **extra,
    }


def test_exported_job_records_replay_as_a_trace(tmp_path) -> None:
    # GIVEN three exported jobs, one with two instances, one that never started
    records = [
        record("a", 1_000_000, 1_060_000, 1_660_000, priority=90),
        record("b", 1_030_000, 1_100_000, 4_700_000, share="teamB", instanceCount=2),
        record("c", 1_050_000, None, 1_200_000),
    ]
    path = tmp_path / "jobs.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    # WHEN loaded THEN times are seconds from the first arrival and GPUs are 8 per instance
    assert load_trace(path) == [
        TraceJob(0.0, 600.0, 8, "teamA", 90),
        TraceJob(30.0, 3600.0, 16, "teamB", None),
        TraceJob(50.0, 1.0, 8, "teamA", None),
    ]
    # AND the trace replays under every policy, the recorded priority choosing the tier
    result = run_whatif(build_scenario(load_trace(path), WhatIfConfig(), seed=0), ALL)
    assert all(r.finished == 3 for r in result.results.values())
    # The cluster is empty, so the HIGHPRI job is dispatched at once (start-up counts as use, not wait).
    assert result.results["fairshare"].wait_seconds["HIGHPRI"] == {"p50": 0.0, "p95": 0.0, "p99": 0.0}


@settings(max_examples=examples(30), deadline=None)
@given(st.permutations(range(6)))
def test_exported_records_load_the_same_in_any_order(tmp_path_factory, order) -> None:
    records = [
        record(f"j{i}", 1_000_000 + 1000 * (i // 2), 1_000_000 + 1000 * i, 2_000_000 + i, share=f"t{i % 3}")
        for i in range(6)
    ]
    path = tmp_path_factory.mktemp("perm") / "jobs.jsonl"
    path.write_text("\n".join(json.dumps(records[i]) for i in order))
    base = tmp_path_factory.mktemp("base") / "jobs.jsonl"
    base.write_text("\n".join(json.dumps(r) for r in records))
    assert load_trace(path) == load_trace(base)


@pytest.mark.parametrize(
    ("lines", "field"),
    [
        (['{"createdAt": 1, "startedAt": 2}'], "trace"),
        (['{"shareIdentifier": "a", "startedAt": 2, "stoppedAt": 3}'], "createdAt"),
        (['{"shareIdentifier": "a", "createdAt": 1, "startedAt": 2}'], "stoppedAt"),
        (["not json"], "trace line 1"),
    ],
    ids=[
        "a file whose only job has no share is refused",
        "a record without createdAt is refused",
        "a job still running is refused",
        "a line that is not JSON is refused",
    ],
)
def test_bad_exported_records_name_the_line_and_field(tmp_path, lines, field) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines))
    with pytest.raises(InvalidInputError) as info:
        load_trace(path)
    assert field in info.value.field


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("static", [Policy.STATIC]),
        ("fairshare, fairshare+rebalance,fairshare", [Policy.FAIRSHARE, Policy.REBALANCE]),
        ("quota,static", [Policy.QUOTA, Policy.STATIC]),
    ],
    ids=["one policy", "duplicates are dropped and spaces ignored", "the order given is kept"],
)
def test_policy_lists_parse(text, expected) -> None:
    assert parse_policies(text) == expected


def test_an_unknown_policy_names_the_option_and_the_choices() -> None:
    with pytest.raises(InvalidInputError) as info:
        parse_policies("static,wfq")
    assert info.value.field == "--policy" and "fairshare+rebalance" in info.value.fix


@given(
    st.lists(
        st.tuples(st.sampled_from("abcdefgh"), st.integers(1, 16), st.integers(60, 10**5)),
        min_size=1,
        max_size=40,
    ),
    st.integers(0, 3),
)
@settings(max_examples=examples(60), deadline=None)
def test_entitlements_add_up_to_the_capacity_and_hold_each_largest_job(jobs, top_k) -> None:
    trace = [TraceJob(float(i * 10), float(d), g, team) for i, (team, g, d) in enumerate(jobs)]
    config = WhatIfConfig(shares=SharesMapping(top_k=top_k + 1), target_load=0.5)
    sc = build_scenario(trace, config, seed=0)
    assert sum(sc.entitlements) == sc.capacity_units
    for i, share in enumerate(sc.shares):
        largest = max(j.gpus for j in trace if sc.team_share[j.team] == share)
        assert sc.entitlements[i] >= largest


def crafted_job(name: str, submit: float, units: int = 1, share: int = 0, tier: int = 0) -> ScenarioJob:
    return ScenarioJob(name, submit, 600.0, units, share, tier, 50)


@pytest.mark.parametrize(
    ("jobs", "shares", "entitlements", "field"),
    [
        ([crafted_job("a", 10.0), crafted_job("b", 5.0)], ("A",), (4,), "jobs[1] (b)"),
        ([crafted_job("a", 0.0, share=1)], ("A",), (4,), "jobs[0] (a).share"),
        ([crafted_job("a", 0.0, tier=3)], ("A",), (4,), "jobs[0] (a).tier"),
        ([crafted_job("a", 0.0, units=5)], ("A",), (4,), "jobs[0] (a).units"),
        ([crafted_job("a", 0.0)], ("A", "B"), (4,), "entitlements"),
        ([crafted_job("a", 0.0)], ("A", "A"), (2, 2), "shares"),
        ([], ("A",), (4,), "jobs"),
    ],
    ids=[
        "jobs out of arrival order are refused",
        "a job in no share is refused",
        "a job in no tier is refused",
        "a job larger than the capacity is refused",
        "a share without an entitlement is refused",
        "a share named twice is refused",
        "no jobs are refused",
    ],
)
def test_a_crafted_scenario_names_what_is_wrong(jobs, shares, entitlements, field) -> None:
    with pytest.raises(InvalidInputError) as info:
        scenario_of(jobs, WhatIfConfig(), shares=shares, entitlements=entitlements)
    assert info.value.field == field


def test_a_crafted_scenario_holds_what_its_shares_are_entitled_to() -> None:
    jobs = [crafted_job("a", 0.0, units=2), crafted_job("b", 600.0, share=1)]
    sc = scenario_of(jobs, WhatIfConfig(gpus_per_unit=8), shares=("A", "B"), entitlements=(3, 1))
    assert (sc.capacity_units, sc.capacity_gpus, sc.window) == (4, 32, 600.0)
    assert sc.team_share == {"A": "A", "B": "B"}
    assert sc.offered_gpus == (2 + 1) * 8 * 600.0 / 600.0
    assert run_policy(sc, Policy.STATIC).finished == 2


def test_each_policys_cost_is_billable_time_x_instances_x_the_on_demand_price() -> None:
    # GIVEN whole p4d instances (8 GPUs a unit): share A's job on 2 instances, B's on 1, same length
    jobs = [crafted_job("a", 0.0, units=2), crafted_job("b", 0.0, share=1)]
    sc = scenario_of(jobs, WhatIfConfig(gpus_per_unit=8), shares=("A", "B"), entitlements=(3, 1))
    run = PolicyRun(sc, Policy.STATIC, 0)
    result = run.replay()
    # THEN each share pays its training jobs' billable seconds at 37.688 USD per instance-hour
    (b,) = [tj for tj in run.model.training_jobs.values() if tj.job.name == "b"]
    billable = round(b.ended - b.started)
    assert billable >= 600 and b.ended - b.created > billable  # provisioning is not billed
    assert result.cost_usd["B"] == pytest.approx(billable / 3600 * 37.688)
    assert result.cost_usd["A"] == pytest.approx(2 * result.cost_usd["B"])
    assert result.summary()["cost_usd"] == {k: round(v, 2) for k, v in result.cost_usd.items()}


def test_a_trace_out_of_arrival_order_replays_in_arrival_order() -> None:
    trace = synthetic_trace(count=40)
    shuffled = build_scenario(trace[::-1], SMALL_CONFIG, seed=3)
    assert [j.submit for j in shuffled.jobs] == sorted(j.submit for j in trace)
    assert sorted((j.submit, j.duration) for j in shuffled.jobs) == sorted(
        (j.submit, j.duration) for j in trace
    )
    assert run_policy(shuffled, Policy.STATIC).finished == len(trace)


def test_a_capacity_below_the_largest_job_is_refused() -> None:
    with pytest.raises(InvalidInputError) as info:
        build_scenario([TraceJob(0.0, 100.0, 16, "a")], WhatIfConfig(), capacity_gpus=8)
    assert info.value.field == "capacity"


def test_a_bad_config_names_the_file_and_field(tmp_path) -> None:
    path = tmp_path / "w.yaml"
    path.write_text("tiers: {HIGHPRI: {fraction: 2, scheduling_priority: 1, wait_slo_seconds: 1}}\n")
    with pytest.raises(ConfigError) as info:
        load_whatif_config(path)
    assert "w.yaml" in info.value.field and "fraction" in info.value.field


def test_jain_index_is_one_for_equal_ratios_and_one_over_n_for_one_winner() -> None:
    assert jain([0.8, 0.8, 0.8]) == pytest.approx(1.0)
    assert jain([1.0, 0.0, 0.0, 0.0]) == pytest.approx(0.25)


def test_an_idle_share_has_ratio_one_and_the_run_still_measures() -> None:
    # GIVEN one job only WHEN replayed THEN its share got all it asked for
    r = run_policy(build_scenario([TraceJob(0.0, 3600.0, 1, "solo")], WhatIfConfig()), Policy.STATIC)
    assert r.team_entitlement_ratio == {"solo": pytest.approx(1.0)}


@pytest.fixture
def small_csv(tmp_path) -> Path:
    """The synthetic trace as a Philly-format CSV."""
    return write_csv(tmp_path / "small.csv", synthetic_trace(count=120))


def test_the_cli_prints_json_with_every_policy_asked(small_csv, tmp_path) -> None:
    result = CliRunner().invoke(
        app,
        ["simulate", "--trace", str(small_csv), "--config", str(CONFIG), "--policy", "static,fairshare",
         "--seed", "2", "--output", "json", "--report", str(tmp_path / "r")],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert list(data["policies"]) == ["static", "fairshare"]
    assert set(data["policies"]["static"]) == SUMMARY_KEYS
    assert "fairshare" in (tmp_path / "r" / "index.html").read_text()


def test_the_cli_seeds_idle_jobs_and_every_policy_reports_what_the_detector_reclaimed(small_csv) -> None:
    args = [
        "simulate",
        "--trace",
        str(small_csv),
        "--capacity",
        "64",
        "--policy",
        "static,fairshare",
        "--seed",
        "4",
    ]
    plain = json.loads(CliRunner().invoke(app, [*args, "--output", "json"]).stdout)
    result = CliRunner().invoke(app, [*args, "--idle-fraction", "0.2", "--output", "json"])
    assert result.exit_code == 0, result.output
    for name, summary in json.loads(result.stdout)["policies"].items():
        idle = summary["idle"]
        assert set(idle) == IDLE_KEYS
        assert idle["idle_jobs"] > 0 and idle["idle_gpu_hours"] > 0
        assert 0 < idle["reclaimed_gpu_hours"] <= idle["idle_gpu_hours"] and idle["busy_jobs_stopped"] == 0
        assert plain["policies"][name]["idle"] == dict.fromkeys(IDLE_KEYS, 0) | {
            "idle_gpu_hours": 0.0,
            "reclaimed_gpu_hours": 0.0,
        }
    table = CliRunner().invoke(app, [*args, "--idle-fraction", "0.2"])
    assert "idle GPU-h reclaimed" in table.stdout and "busy jobs stopped as idle" in table.stdout
    refused = CliRunner().invoke(app, [*args, "--idle-fraction", "1.5"])
    assert refused.exit_code == 2 and "--idle-fraction" in refused.output


def test_the_cli_prints_one_table_with_policies_as_columns(small_csv) -> None:
    result = CliRunner().invoke(
        app,
        ["simulate", "--trace", str(small_csv), "--capacity", "64", "--policy", "quota,fairshare+rebalance"],
    )
    assert result.exit_code == 0, result.output
    assert "64 GPUs" in result.stdout
    header = next(line for line in result.stdout.splitlines() if "metric" in line)
    assert "quota" in header and "fairshare+rebalance" in header
    assert "worst team ratio" in result.stdout


def test_the_cli_replays_each_rebalancing_policy_once_per_design_asked_for(small_csv) -> None:
    policies = "fairshare+reclaim,fairshare+reclaim+rebalance"
    args = ["simulate", "--trace", str(small_csv), "--capacity", "64", "--policy", policies, "-o", "json"]
    both = CliRunner().invoke(
        app, [*args, "--rebalance-design", "demand_targets", "--rebalance-design", "credits"]
    )
    assert both.exit_code == 0, both.output
    results = json.loads(both.stdout)["policies"]
    assert list(results) == [
        "fairshare+reclaim",
        "fairshare+reclaim+rebalance (demand_targets)",
        "fairshare+reclaim+rebalance (credits)",
    ]
    assert all("disparity" in r and "paid_back_share" in r for r in results.values())
    one = CliRunner().invoke(app, [*args, "--rebalance-design", "credits"])
    assert one.exit_code == 0, one.output
    # One design runs under the policy's own name, and measures what the labelled run measured.
    only = json.loads(one.stdout)["policies"]
    assert only["fairshare+reclaim+rebalance"] == results["fairshare+reclaim+rebalance (credits)"]
    refused = CliRunner().invoke(app, [*args, "--rebalance-design", "karma"])
    assert refused.exit_code == 2 and "--rebalance-design" in refused.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--policy", "lottery"], "--policy"),
        (["--config", "missing.yaml"], "missing.yaml"),
    ],
    ids=["an unknown policy exits 2 naming the option", "a missing config exits 2 naming the file"],
)
def test_the_cli_rejects_bad_input(small_csv, args, message) -> None:
    result = CliRunner().invoke(app, ["simulate", "--trace", str(small_csv), *args])
    assert result.exit_code == 2
    assert message in result.output


def test_the_cli_names_a_missing_trace(tmp_path) -> None:
    result = CliRunner().invoke(app, ["simulate", "--trace", str(tmp_path / "nope.csv")])
    assert result.exit_code == 2 and "nope.csv" in result.output


EXPECTED_SMALL_CAPACITY = 120
# (utilization, work-conserving bound, worst team entitlement ratio, GPU-hours lost to preemption)
EXPECTED_SMALL = {
    "static": (0.6356, 0.7664, 0.7414, 0.0, 576, 0),
    "fairshare": (0.6929, 0.6956, 0.9775, 0.0, 199, 0),
    "quota": (0.6933, 0.6965, 0.9753, 9.7, 0, 0),
    "fairshare+rebalance": (0.6929, 0.6956, 0.972, 0.0, 80, 0),
    "fairshare+tiers": (0.6928, 0.6956, 0.9775, 0.0, 0, 0),
    "fairshare+reclaim": (0.6928, 0.6956, 0.9775, 0.0, 0, 0),
    "fairshare+reclaim+rebalance": (0.6931, 0.6956, 0.9736, 0.0, 0, 0),
}
# The prefix is the trace's sparse first weeks: a HIGHPRI identifier whose head job does not fit
# blocks the queue (head-of-line blocking) until capacity drains, which starves the other teams
# under fairshare+tiers; reclaim frees capacity for it instead.
EXPECTED_PHILLY = {
    "static": (0.2404, 0.2614, 0.5386, 0.0, 533333, 0),
    "fairshare": (0.2602, 0.2614, 0.176, 0.0, 482422, 0),
    "quota": (0.2607, 0.2614, 0.5386, 944.9, 0, 0),
    "fairshare+rebalance": (0.2602, 0.2614, 0.176, 0.0, 485552, 0),
    "fairshare+tiers": (0.2588, 0.2614, 0.0061, 0.0, 381971, 0),
    "fairshare+reclaim": (0.2601, 0.2614, 0.5532, 0.0, 1470, 47),
    "fairshare+reclaim+rebalance": (0.2601, 0.2614, 0.5566, 0.0, 975, 46),
}


def test_tiered_policies_charge_each_teams_highpri_usage_to_its_plain_identifier(small_result) -> None:
    # Teams that ran HIGHPRI work end with a plain identifier heavier than their team weight, by the
    # Lambda's rule (shareplane.domain.shares.tier_charge); fixed-weight fairshare keeps the team weights.
    initial = initial_weights(small_result.scenario)
    for policy in ("fairshare+tiers", "fairshare+reclaim"):
        final = small_result.results[policy].final_weights
        assert all(final[s] >= initial[s] for s in initial), policy
        assert any(final[s] > initial[s] for s in initial), policy
    assert small_result.results["fairshare"].final_weights == initial


def test_the_cli_says_each_policy_as_it_finishes_and_keeps_stdout_for_the_result(small_csv) -> None:
    # WHEN two policies are replayed with stderr going to a log, not a terminal
    result = CliRunner().invoke(
        app,
        [
            "simulate",
            "--trace",
            str(small_csv),
            "--capacity",
            "64",
            "--policy",
            "static,fairshare",
            "-o",
            "json",
        ],
    )
    # THEN stdout holds the result alone, and stderr says how far each replay got, then its figures, in order
    assert result.exit_code == 0, result.output
    assert list(json.loads(result.stdout)["policies"]) == ["static", "fairshare"]
    lines = result.stderr.splitlines()
    finished = [line.split()[0] for line in lines if " done: utilization " in line]
    assert finished == ["static", "fairshare"]
    first = [line for line in lines if line.startswith("simulate: policy 1 of 2, static: ")]
    assert first and first[-1].startswith("simulate: policy 1 of 2, static: 100% (")
    assert lines.index(first[-1]) < next(i for i, line in enumerate(lines) if line.startswith("static done"))


def test_the_cli_leads_with_the_load_and_a_verdict_per_policy(small_csv) -> None:
    args = ["simulate", "--trace", str(small_csv), "--capacity", "64", "--policy", "static,fairshare"]
    lines = CliRunner().invoke(app, args).stdout.splitlines()
    assert lines[0].startswith("Replays ") and "of capacity" in lines[0] and "'other'" in lines[0]
    assert lines[1].startswith("Highest utilization: ") and "Fairest" in lines[1]
    assert [line.split(":")[0] for line in lines[2:4]] == ["static", "fairshare"]
    assert "worst share received" in lines[2] and "HIGHPRI p95 wait" in lines[2]
    data = json.loads(CliRunner().invoke(app, [*args, "-o", "json"]).stdout)
    assert data["verdict"][2:] == lines[2:4]
