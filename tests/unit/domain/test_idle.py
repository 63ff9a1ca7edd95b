"""Idle and hung GPU jobs: per-GPU normalisation, the window after the grace, warnings, and no stop while busy."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shareplane.domain.config.shares import HungAction, IdleAction, IdleConfig, SharesConfig, Tier
from shareplane.domain.errors import ConfigError
from shareplane.domain.idle.policy import (
    Act,
    GpuSample,
    IdleDecision,
    IdlePolicy,
    Notice,
    Signal,
    Verdict,
    decide,
    host_dimension,
    hosts_of,
    lookback_seconds,
    policy_for,
)

from tests.properties import examples

P4 = "ml.p4d.24xlarge"  # 8 GPUs per host
START = 1_760_000_000.0
POLICY = IdlePolicy(
    threshold_percent_of_one_gpu=5, window_seconds=1800, grace_seconds=900, warning_grace_seconds=600
)
STOPPING = IdlePolicy(
    threshold_percent_of_one_gpu=5,
    window_seconds=1800,
    grace_seconds=900,
    action=IdleAction.STOP_AFTER_WARNING,
    warning_grace_seconds=600,
)


def minutes(first: float, last: float, value: float, host: str = "algo-1") -> list[GpuSample]:
    """One sample a minute from ``first`` to ``last`` seconds after the start, all of ``value``."""
    return [GpuSample(host, START + t, value) for t in range(int(first), int(last) + 1, 60)]


def judge(samples, now_after_start: float, policy: IdlePolicy = POLICY, **kw) -> IdleDecision:
    kw.setdefault("instance_type", P4)
    kw.setdefault("instance_count", 1)
    return decide(policy, started_at=START, samples=samples, now=START + now_after_start, **kw)


def test_hosts_are_named_as_sagemaker_names_them() -> None:
    assert hosts_of(3) == ("algo-1", "algo-2", "algo-3")
    assert host_dimension("train-42", "algo-2") == "train-42/algo-2"


@pytest.mark.parametrize(
    ("case", "samples", "now", "verdict", "act"),
    [
        ("inside the grace nothing is judged", minutes(0, 600, 0), 800, Verdict.GRACE, Act.NONE),
        ("no samples after the grace: undecided", minutes(0, 800, 0), 2000, Verdict.NO_DATA, Act.NONE),
        (
            "samples stopped long ago: undecided",
            minutes(900, 3000, 0),
            3000 + 901,
            Verdict.NO_DATA,
            Act.NONE,
        ),
        ("busy GPUs", minutes(900, 4000, 320), 4000, Verdict.BUSY, Act.NONE),
        ("idle for less than the window", minutes(900, 2400, 0), 2400, Verdict.IDLING, Act.NONE),
        ("idle for the window is flagged", minutes(900, 2700, 0), 2700, Verdict.IDLE, Act.ALERT),
        (
            "idle time during the grace does not count",
            minutes(0, 2600, 0),
            2600,
            Verdict.IDLING,
            Act.NONE,
        ),
        (
            "one GPU of eight at 100%: busy",
            minutes(900, 2700, 100),
            2700,
            Verdict.BUSY,
            Act.NONE,
        ),
        (
            "one GPU of eight at 39%, seven at 0 (a host total of 39, 4.9 per GPU): busy",
            minutes(900, 2700, 39),
            2700,
            Verdict.BUSY,
            Act.NONE,
        ),
        (
            "8 GPUs at 4% report 32, more than one GPU at 5%: busy",
            minutes(900, 2700, 32),
            2700,
            Verdict.BUSY,
            Act.NONE,
        ),
        (
            "a host total of 4.9, under one GPU at 5%: idle",
            minutes(900, 2700, 4.9),
            2700,
            Verdict.IDLE,
            Act.ALERT,
        ),
        (
            "samples at +15, +45 and +60 minutes: the gaps are not idle time",
            minutes(900, 900, 0) + minutes(2700, 2700, 0) + minutes(3600, 3600, 0),
            3600,
            Verdict.IDLING,
            Act.NONE,
        ),
        (
            "a gap within the allowance is idle time",
            minutes(900, 1500, 0) + minutes(1800, 2700, 0),
            2700,
            Verdict.IDLE,
            Act.ALERT,
        ),
        (
            "a busy minute restarts the window",
            minutes(900, 2000, 0) + minutes(2040, 2040, 400) + minutes(2100, 2700, 0),
            2700,
            Verdict.IDLING,
            Act.NONE,
        ),
        (
            "samples after now are not seen (a late tick decides on its own time)",
            minutes(900, 2400, 0) + minutes(2460, 4000, 0),
            2400,
            Verdict.IDLING,
            Act.NONE,
        ),
    ],
    ids=lambda v: v if isinstance(v, str) and " " in v else "",
)
def test_a_single_host_job(case, samples, now, verdict, act) -> None:
    decision = judge(samples, now)
    assert (decision.verdict, decision.act) == (verdict, act), decision.reason


def test_a_cpu_job_is_never_judged() -> None:
    decision = judge(minutes(900, 4000, 0), 4000, instance_type="ml.c5.xlarge")
    assert decision.verdict is Verdict.NOT_GPU and decision.act is Act.NONE


def test_a_multi_host_job_is_idle_only_when_every_host_is() -> None:
    idle_both = minutes(900, 2700, 0, "algo-1") + minutes(900, 2700, 0, "algo-2")
    assert judge(idle_both, 2700, instance_count=2).verdict is Verdict.IDLE
    one_busy = minutes(900, 2700, 0, "algo-1") + minutes(900, 2700, 300, "algo-2")
    assert judge(one_busy, 2700, instance_count=2).verdict is Verdict.BUSY
    one_silent = minutes(900, 2700, 0, "algo-1")
    assert judge(one_silent, 2700, instance_count=2).verdict is Verdict.NO_DATA


def test_the_idle_period_runs_from_the_latest_host_to_go_idle() -> None:
    samples = (
        minutes(900, 4000, 0, "algo-1") + minutes(900, 1500, 300, "algo-2") + minutes(1560, 4000, 0, "algo-2")
    )
    decision = judge(samples, 4000, instance_count=2)
    assert decision.since == START + 1560 and decision.until == START + 3960
    assert decision.idle_seconds == 3960 - 1560


def test_an_alert_is_given_once_per_idle_period() -> None:
    samples = minutes(900, 2700, 0)
    first = judge(samples, 2700)
    assert first.act is Act.ALERT
    notice = first.notice(START + 2700)
    assert notice == Notice(Signal.IDLE, Act.ALERT, START + 2700, START + 900)
    later = minutes(900, 3600, 0)
    assert judge(later, 3600, previous=notice).act is Act.NONE
    # Busy for a while after the alert, then idle for a window again: a new period, a new alert.
    again = later + minutes(3660, 3900, 400) + minutes(3960, 5800, 0)
    assert judge(again, 5800, previous=notice).act is Act.ALERT


def test_stop_after_warning_warns_first_then_stops_when_still_idle_after_the_grace() -> None:
    warned = judge(minutes(900, 2700, 0), 2700, STOPPING)
    assert warned.act is Act.WARN and warned.stop_at == START + 2700 + 600
    notice = warned.notice(START + 2700)
    assert notice is not None
    assert judge(minutes(900, 3000, 0), 3000, STOPPING, previous=notice).act is Act.NONE
    stopped = judge(minutes(900, 3300, 0), 3300, STOPPING, previous=notice)
    assert stopped.act is Act.STOP
    # After the stop, a duplicate tick does not stop it again.
    assert judge(minutes(900, 3400, 0), 3400, STOPPING, previous=stopped.notice(START + 3300)).act is Act.NONE


def test_a_job_that_wakes_up_after_its_warning_is_not_stopped() -> None:
    warned = judge(minutes(900, 2700, 0), 2700, STOPPING)
    notice = warned.notice(START + 2700)
    woke = minutes(900, 2700, 0) + minutes(2760, 3300, 500)
    assert judge(woke, 3300, STOPPING, previous=notice).act is Act.NONE
    # Idle again for a whole window later: warned again, not stopped on the old warning.
    again = woke + minutes(3360, 5200, 0)
    assert judge(again, 5200, STOPPING, previous=notice).act is Act.WARN


def test_a_stop_needs_evidence_through_the_warning_grace() -> None:
    warned = judge(minutes(900, 2700, 0), 2700, STOPPING)
    notice = warned.notice(START + 2700)
    # The tick comes after the grace, but the newest sample predates its end: not yet.
    assert judge(minutes(900, 3000, 0), 3400, STOPPING, previous=notice).act is Act.NONE


CHECKPOINTED = IdlePolicy(
    grace_seconds=900,
    hung_checkpoint_intervals=2,
    hung_checkpoint_interval_seconds=1200,
    hung_action=HungAction.ALERT,
)


@pytest.mark.parametrize(
    ("case", "checkpointing", "last_checkpoint", "now", "verdict"),
    [
        ("busy without a CheckpointConfig is just busy", False, None, 9000, Verdict.BUSY),
        ("busy and checkpointing recently", True, 8000, 9000, Verdict.BUSY),
        ("busy, no checkpoint for 2 x 1200 s", True, 6600, 9000, Verdict.HUNG),
        ("never checkpointed: counted from the grace's end", True, None, 900 + 2400, Verdict.HUNG),
        ("never checkpointed, not long enough", True, None, 900 + 2300, Verdict.BUSY),
    ],
    ids=lambda v: v if isinstance(v, str) and " " in v else "",
)
def test_hung_jobs_are_busy_without_new_checkpoints(
    case, checkpointing, last_checkpoint, now, verdict
) -> None:
    decision = judge(
        minutes(900, now, 400),
        now,
        CHECKPOINTED,
        checkpointing=checkpointing,
        last_checkpoint_at=START + last_checkpoint if last_checkpoint is not None else None,
    )
    assert decision.verdict is verdict, decision.reason


def test_a_hung_job_is_alerted_once_per_checkpoint_gap_and_stopped_only_by_its_policy() -> None:
    samples = minutes(900, 9000, 400)
    alert = judge(samples, 9000, CHECKPOINTED, checkpointing=True, last_checkpoint_at=START + 6000)
    assert alert.act is Act.ALERT and alert.signal is Signal.HUNG
    notice = alert.notice(START + 9000)
    kw = {"checkpointing": True, "last_checkpoint_at": START + 6000, "previous": notice}
    assert judge(samples + minutes(9060, 9300, 400), 9300, CHECKPOINTED, **kw).act is Act.NONE
    requeue = IdlePolicy(**{**CHECKPOINTED.__dict__, "hung_action": HungAction.STOP_AND_REQUEUE})
    stop = judge(samples, 9000, requeue, checkpointing=True, last_checkpoint_at=START + 6000)
    assert stop.act is Act.STOP_AND_REQUEUE


def test_an_idle_job_with_a_checkpoint_config_is_idle_not_hung() -> None:
    decision = judge(minutes(900, 9000, 0), 9000, CHECKPOINTED, checkpointing=True)
    assert decision.verdict is Verdict.IDLE


def test_the_lookback_covers_the_window_the_warning_and_the_sample_age() -> None:
    assert lookback_seconds(POLICY) == 1800 + 600 + 900


# ---------- policy per team and tier ----------

BASE = {
    "cluster": "c",
    "instance_types": {P4: {"capacity": 10}},
    "tiers": {
        "HIGHPRI": {"scheduling_priority": 90, "wait_slo_seconds": 900},
        "MIDPRI": {"scheduling_priority": 50, "wait_slo_seconds": 3600},
        "LOWPRI": {"scheduling_priority": 10, "wait_slo_seconds": 14400},
    },
    "teams": {"A": {"share": "A", "entitlement": {P4: 5}}, "B": {"share": "B", "entitlement": {P4: 5}}},
}


def test_defaults_need_no_config_text() -> None:
    config = SharesConfig.model_validate(BASE)
    policy = policy_for(config.idle, "A", Tier.LOWPRI)
    assert policy == IdlePolicy()
    assert policy.action is IdleAction.ALERT and policy.hung_action is HungAction.ALERT


def test_a_kill_switch_in_the_config_is_refused_naming_the_template_parameter() -> None:
    # The detector's one kill switch is the template's IdleEnabled (a deployment switch, not policy).
    with pytest.raises(ValueError, match="deploy with IdleEnabled=false"):
        SharesConfig.model_validate({**BASE, "idle": {"enabled": False}})


def test_team_and_tier_overrides_resolve_narrowest_first() -> None:
    idle = IdleConfig.model_validate(
        {
            "window_seconds": 3600,
            "tiers": {"LOWPRI": {"action": "stop_after_warning", "threshold_percent_of_one_gpu": 10}},
            "teams": {
                "A": {"warning_grace_seconds": 300, "tiers": {"LOWPRI": {"threshold_percent_of_one_gpu": 2}}},
                "B": {"action": "alert", "hung_action": "stop_and_requeue"},
            },
        }
    )
    a_low = policy_for(idle, "A", Tier.LOWPRI)
    assert (
        a_low.window_seconds,
        a_low.action,
        a_low.threshold_percent_of_one_gpu,
        a_low.warning_grace_seconds,
    ) == (
        3600,
        IdleAction.STOP_AFTER_WARNING,
        2,
        300,
    )
    b_low = policy_for(idle, "B", Tier.LOWPRI)
    assert (b_low.action, b_low.threshold_percent_of_one_gpu, b_low.hung_action) == (
        IdleAction.ALERT,
        10,
        HungAction.STOP_AND_REQUEUE,
    )
    assert policy_for(idle, "A", Tier.HIGHPRI).action is IdleAction.ALERT
    assert policy_for(idle, None, None).window_seconds == 3600


def test_an_unknown_tier_or_team_takes_the_most_lenient_policy_it_could_have() -> None:
    idle = IdleConfig.model_validate(
        {
            "tiers": {"LOWPRI": {"action": "stop_after_warning", "threshold_percent_of_one_gpu": 10}},
            "teams": {"A": {"window_seconds": 7200, "hung_action": "stop_and_requeue"}},
        }
    )
    # A's tier unknown: alert only (HIGHPRI's), A's window, and the lowest threshold of its tiers
    a_any = policy_for(idle, "A", None)
    assert (a_any.action, a_any.window_seconds, a_any.threshold_percent_of_one_gpu) == (
        IdleAction.ALERT,
        7200,
        5,
    )
    # team unknown: B's hung alert beats A's requeue, A's window is the longest
    lowpri_any_team = policy_for(idle, None, Tier.LOWPRI)
    assert (lowpri_any_team.action, lowpri_any_team.hung_action) == (
        IdleAction.STOP_AFTER_WARNING,
        HungAction.ALERT,
    )
    assert lowpri_any_team.window_seconds == 7200
    assert policy_for(idle, None, None).action is IdleAction.ALERT


def test_the_old_threshold_key_is_refused_naming_the_new_one() -> None:
    with pytest.raises(ValueError, match="threshold_percent_per_gpu is now threshold_percent_of_one_gpu"):
        IdleConfig.model_validate({"teams": {"A": {"threshold_percent_per_gpu": 2}}})


def test_an_override_for_an_unknown_team_names_the_field() -> None:
    with pytest.raises(ConfigError, match=r"idle\.teams\.Nobody"):
        SharesConfig.model_validate({**BASE, "idle": {"teams": {"Nobody": {"action": "alert"}}}})


def test_an_unknown_action_is_refused_by_the_model() -> None:
    with pytest.raises(ValueError, match="action"):
        IdleConfig.model_validate({"action": "shoot"})


# ---------- properties ----------

host_samples = st.lists(
    st.builds(
        GpuSample,
        host=st.sampled_from(["algo-1", "algo-2"]),
        at=st.integers(min_value=0, max_value=120).map(lambda m: START + 600 + 60 * m),
        gpu_utilization=st.sampled_from([0.0, 4.9, 5.0, 8.0, 39.0, 40.0, 41.0, 200.0, 800.0]),
    ),
    max_size=160,
)
notices = st.none() | st.builds(
    Notice,
    signal=st.sampled_from(list(Signal)),
    act=st.sampled_from([Act.ALERT, Act.WARN, Act.STOP]),
    at=st.integers(min_value=0, max_value=130).map(lambda m: START + 600 + 60 * m),
    since=st.integers(min_value=0, max_value=130).map(lambda m: START + 600 + 60 * m),
)
policies = st.sampled_from([POLICY, STOPPING, CHECKPOINTED])
times = st.integers(min_value=10, max_value=130).map(lambda m: 600.0 + 60 * m)


@settings(max_examples=examples(300), deadline=None)
@given(samples=host_samples, now=times, policy=policies, count=st.sampled_from([1, 2]))
def test_an_idle_period_is_evidence_without_gaps_on_every_host(samples, now, policy, count) -> None:
    decision = judge(samples, now, policy, instance_count=count)
    if decision.verdict not in (Verdict.IDLE, Verdict.IDLING):
        return
    assert decision.since is not None and decision.until is not None
    for host in hosts_of(count):
        # THEN over the idle period every host was seen idle, with no gap longer than the allowance
        seen = sorted(s.at for s in samples if s.host == host and decision.since <= s.at <= decision.until)
        assert all(b - a <= policy.max_sample_gap_seconds for a, b in zip(seen, seen[1:], strict=False))
        assert all(
            s.gpu_utilization < policy.threshold_percent_of_one_gpu
            for s in samples
            if s.host == host and decision.since <= s.at <= decision.until
        )


@settings(max_examples=examples(300), deadline=None)
@given(samples=host_samples, now=times, previous=notices, policy=policies, count=st.sampled_from([1, 2]))
def test_never_stopped_for_idleness_while_any_host_is_busy_in_the_window(
    samples, now, previous, policy, count
) -> None:
    decision = judge(samples, now, policy, instance_count=count, previous=previous, checkpointing=True)
    window_start = START + now - policy.window_seconds
    busy_in_window = any(
        s.gpu_utilization >= policy.threshold_percent_of_one_gpu
        and window_start <= s.at <= START + now
        and s.at >= START + policy.grace_seconds
        and s.host in hosts_of(count)
        for s in samples
    )
    if busy_in_window:
        assert decision.act is not Act.STOP
        assert decision.verdict is not Verdict.IDLE
    if decision.act is Act.STOP_AND_REQUEUE:
        assert decision.verdict is Verdict.HUNG and policy.hung_action is HungAction.STOP_AND_REQUEUE


@settings(max_examples=examples(200), deadline=None)
@given(samples=host_samples, now=times, previous=notices, policy=policies, seed=st.integers(0, 2**16))
def test_the_order_and_duplicates_of_samples_do_not_matter(samples, now, previous, policy, seed) -> None:
    shuffled = list(samples) + list(samples[: len(samples) // 2])
    random.Random(seed).shuffle(shuffled)
    kw = {"instance_count": 2, "previous": previous, "checkpointing": True}
    assert judge(shuffled, now, policy, **kw) == judge(samples, now, policy, **kw)


@settings(max_examples=examples(200), deadline=None)
@given(samples=host_samples, now=times, policy=policies)
def test_a_repeated_tick_after_acting_does_not_act_again(samples, now, policy) -> None:
    kw = {"instance_count": 1, "checkpointing": True}
    first = judge(samples, now, policy, **kw)
    notice = first.notice(START + now)
    again = judge(samples, now, policy, previous=notice, **kw)
    if first.act in (Act.ALERT, Act.STOP, Act.STOP_AND_REQUEUE):
        assert again.act is Act.NONE
    if first.act is Act.WARN:
        assert again.act is not Act.WARN
