"""The idle detector end to end over fakes: flag, warn, stop, hung requeue, switches, audit, re-delivery."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shareplane.domain.config.failure_rules import FailureClass
from shareplane.domain.idle.policy import HUNG_REASON_PREFIX, IDLE_REASON_PREFIX
from shareplane.schemas.idle import MANUAL_RUN
from shareplane.service.detect_idle import handle_message
from shareplane.service.handle_failure import handle_message as handle_failure

from tests.fakes.failure_world import World, failed_event, failed_job
from tests.fakes.idle_world import IdleWorld, idle_config
from tests.fakes.reclaim_world import T0, tick
from tests.properties import examples

STOPPING = {"action": "stop_after_warning", "warning_grace_seconds": 600}
# Started at T0; grace 900 s, window 1800 s: idle from T0 + 900 is flagged at T0 + 2700.
FLAG = T0 + 900 + 1800


def world(**idle: Any) -> IdleWorld:
    return IdleWorld(config=idle_config(**idle))


def idle_job(w: IdleWorld, job_id: str = "idle-1", until: float = FLAG + 3600, **kw: Any) -> None:
    w.run_job(job_id, started=T0, **kw)
    w.gpu_minutes(job_id, T0, until, 0.0)


def busy_job(w: IdleWorld, job_id: str = "busy-1", until: float = FLAG + 3600, **kw: Any) -> None:
    w.run_job(job_id, started=T0, **kw)
    w.gpu_minutes(job_id, T0, until, 640.0)  # 8 GPUs at 80%


def test_an_idle_job_is_alerted_once_with_routing_attributes_and_links() -> None:
    # GIVEN the default policy (alert only), one idle job and one busy job
    w = world()
    idle_job(w)
    busy_job(w)
    # WHEN the schedule ticks once the idle job has been idle for its window
    outcome = handle_message(tick(FLAG), w.ports)
    # THEN only the idle job is flagged, and its team is alerted
    assert outcome.verdicts == {"idle-1": "idle", "busy-1": "busy"}
    assert outcome.acted == {"idle-1": "alert"} and not w.batch.terminated
    ((subject, body, attributes),) = w.alerts.sent
    assert attributes == {
        "severity": "info",
        "team": "ProdExp2",
        "tier": "LOWPRI",
        "share": "ProdExp2",
        "kind": "idle",
        "queue": "search-p4d-queue",
    }
    assert "GPUs idle" in subject
    assert (
        "/aws/sagemaker/TrainingJobs" in body["metrics"].replace("%2F", "/") and "idle-1" in body["metrics"]
    )
    assert "logsV2" in body["logs"] and body["gpus"] == 8
    # AND the decision is audited once; the same tick re-delivered alerts and records nothing new
    assert len(w.ledger.decisions("idle-1")) == 1
    again = handle_message(tick(FLAG), w.ports)
    assert again.acted == {} and len(w.alerts.sent) == 1 and len(w.ledger.decisions("idle-1")) == 1
    assert w.metrics.count("IdleJobsFlagged") == 1


def test_stop_after_warning_warns_then_stops_and_the_failure_path_does_not_retry() -> None:
    w = world(**STOPPING)
    idle_job(w)
    busy_job(w)
    warned = handle_message(tick(FLAG), w.ports)
    assert warned.acted == {"idle-1": "warn"} and not w.batch.terminated
    assert handle_message(tick(FLAG + 300), w.ports).acted == {}
    stopped = handle_message(tick(FLAG + 600), w.ports)
    assert stopped.stopped == ["idle-1"]
    ((job_id, reason),) = w.batch.terminated
    assert job_id == "idle-1" and reason.startswith(IDLE_REASON_PREFIX)
    kinds = [
        (body["act"], attributes["kind"], attributes["severity"]) for _, body, attributes in w.alerts.sent
    ]
    assert kinds == [("warn", "idle", "warning"), ("stop", "idle", "warning")]
    assert w.metrics.count("IdleJobsStopped") == 1 and w.metrics.count("ReclaimedGpuHours") > 0
    # The stop's FAILED event: classified idle_stopped, not requeued, no second alert.
    fw = World()
    fw.batch.add(failed_job("idle-1", reason=reason, terminated=True, share="ProdExp2", priority=10))
    handle_failure(failed_event(fw.batch.jobs["idle-1"]), fw.ports)
    (decision,) = fw.ledger.items.values()
    assert decision["class"] == FailureClass.IDLE_STOPPED.value and not fw.batch.submits
    assert not fw.alerts.sent


def test_a_quota_share_job_gets_its_teams_policy_from_its_quota_share() -> None:
    # GIVEN a stop policy for ProdExp2's LOWPRI jobs only, and its idle job on a quota-share queue
    # (no share identifier: its quota share names the team)
    w = world(teams={"ProdExp2": {"tiers": {"LOWPRI": STOPPING}}})
    idle_job(w, quota=True)
    # WHEN it has been idle for the window THEN it is warned under its team's policy, not just alerted
    assert handle_message(tick(FLAG), w.ports).acted == {"idle-1": "warn"}
    (record,) = w.ledger.decisions("idle-1")
    assert (record.team, record.share, record.tier) == ("ProdExp2", "ProdExp2", "LOWPRI")
    assert handle_message(tick(FLAG + 600), w.ports).stopped == ["idle-1"]


def test_a_job_whose_tier_is_unknown_is_judged_by_the_most_lenient_policy() -> None:
    # GIVEN LOWPRI jobs stopped when idle, MIDPRI ones only alerted, and an idle quota-share job
    # whose record has no schedulingPriority (so neither its share nor its priority names its tier)
    w = world(tiers={"LOWPRI": STOPPING})
    idle_job(w, tier="MIDPRI", quota=True, recorded_priority=False)
    # WHEN the detector runs past the window and past a warning's grace
    flagged = handle_message(tick(FLAG), w.ports)
    later = handle_message(tick(FLAG + 1200), w.ports)
    # THEN it is alerted, never warned or stopped, and the alert says why
    assert flagged.acted == {"idle-1": "alert"} and later.acted == {} and not w.batch.terminated
    ((_, body, attributes),) = w.alerts.sent
    assert "most lenient policy: tier unknown" in body["reason"] and attributes["tier"] == "none"


def test_a_busy_job_is_never_warned_or_stopped() -> None:
    w = world(**STOPPING)
    busy_job(w)
    for at in range(int(FLAG), int(FLAG + 3600), 300):
        assert handle_message(tick(at), w.ports).acted == {}
    assert not w.batch.terminated and not w.alerts.sent


def test_a_job_that_wakes_up_after_its_warning_is_not_stopped() -> None:
    w = world(**STOPPING)
    w.run_job("wakes", started=T0)
    w.gpu_minutes("wakes", T0, FLAG, 0.0)
    w.gpu_minutes("wakes", FLAG + 60, FLAG + 3600, 400.0)
    assert handle_message(tick(FLAG), w.ports).acted == {"wakes": "warn"}
    assert handle_message(tick(FLAG + 600), w.ports).acted == {}
    assert not w.batch.terminated


def test_a_hung_job_is_alerted_by_default_and_requeued_where_its_team_says() -> None:
    # GIVEN GPUs busy for hours but the newest checkpoint 2 hours old (3 x 1800 s = 1.5 h allowed)
    now = T0 + 6 * 3600
    w = world()
    busy_job(w, "hung-1", until=now)
    w.checkpoints.write("s3://search-ml-training/prodexp2/ckpt/hung-1/step-1.pt", now - 7200)
    outcome = handle_message(tick(now), w.ports)
    assert outcome.verdicts == {"hung-1": "hung"} and outcome.acted == {"hung-1": "alert"}
    assert w.alerts.sent[0][2]["kind"] == "hung" and not w.batch.terminated
    # AND with ProdExp2's hung policy set to stop and requeue
    w2 = world(teams={"ProdExp2": {"hung_action": "stop_and_requeue"}})
    busy_job(w2, "hung-1", until=now)
    w2.checkpoints.write("s3://search-ml-training/prodexp2/ckpt/hung-1/step-1.pt", now - 7200)
    assert handle_message(tick(now), w2.ports).stopped == ["hung-1"]
    ((_, reason),) = w2.batch.terminated
    assert reason.startswith(HUNG_REASON_PREFIX)
    assert w2.metrics.count("HungJobsRequeued") == 1 and w2.metrics.count("IdleJobsStopped") == 0
    # The failure path requeues it (the same payload, CheckpointConfig included)
    fw = World()
    fw.batch.add(failed_job("hung-1", reason=reason, terminated=True, share="ProdExp2", priority=10))
    outcome = handle_failure(failed_event(fw.batch.jobs["hung-1"]), fw.ports)
    (decision,) = fw.ledger.items.values()
    # requeued after the backoff, spending one attempt of the failure budget
    assert decision["class"] == FailureClass.HUNG.value and outcome.decision == "requeue"


def test_a_job_without_checkpoint_config_is_never_hung() -> None:
    now = T0 + 6 * 3600
    w = world(teams={"ProdExp2": {"hung_action": "stop_and_requeue"}})
    busy_job(w, "nockpt", until=now, checkpoint=False)
    assert handle_message(tick(now), w.ports).verdicts == {"nockpt": "busy"}


def test_the_kill_switch_stops_every_read() -> None:
    w = world()
    w.enabled = False  # the template's IdleEnabled=false
    idle_job(w)
    assert handle_message(tick(FLAG), w.ports).result == "disabled (IdleEnabled=false)"
    assert not w.gpu.reads and not w.alerts.sent


def test_a_manual_run_decides_at_the_clock_and_anything_else_is_refused_by_name() -> None:
    w = world()
    idle_job(w)
    w.clock.now = FLAG
    assert handle_message(MANUAL_RUN, w.ports).acted == {"idle-1": "alert"}
    with pytest.raises(Exception, match="detail-type"):
        handle_message({"detail-type": "Batch Service Job State Change"}, w.ports)


def test_idle_gpu_hours_are_counted_once_per_hour_of_evidence() -> None:
    w = world()
    idle_job(w)
    for at in (FLAG, FLAG, FLAG + 300, FLAG - 300, FLAG + 600):
        handle_message(tick(at), w.ports)
    # Idle from T0 + 900 (after the grace) to the newest sample at FLAG + 600: 8 GPUs.
    assert w.metrics.count("IdleGpuHours") == pytest.approx((FLAG + 600 - (T0 + 900)) * 8 / 3600, abs=1e-3)
    assert {d["Team"] for _, d in w.metrics.named("IdleGpuHours")} == {"ProdExp2"}


def test_metrics_are_read_in_one_batch_over_the_longest_lookback() -> None:
    w = world()
    idle_job(w, "a")
    idle_job(w, "b", instances=2)
    w.gpu_minutes("b", T0, FLAG + 3600, 0.0, host="algo-2")
    handle_message(tick(FLAG), w.ports)
    ((dimensions, start, end),) = w.gpu.reads
    assert sorted(dimensions) == ["a/algo-1", "b/algo-1", "b/algo-2"] and end == FLAG
    assert start == T0 + 900  # the grace's end: younger than the lookback


ticks = st.lists(st.sampled_from([FLAG + 300 * k for k in range(0, 8)]), min_size=1, max_size=12)


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(order=ticks, wakes=st.booleans())
def test_ticks_in_any_order_and_repeated_converge_and_never_stop_a_busy_job(order, wakes) -> None:
    # GIVEN an idle job (that may wake up within its warning grace) and a busy job, under
    # stop_after_warning
    w = world(**STOPPING)
    w.run_job("idle-1", started=T0)
    if wakes:
        w.gpu_minutes("idle-1", T0, FLAG + 300, 0.0)
        w.gpu_minutes("idle-1", FLAG + 360, FLAG + 3600, 500.0)
    else:
        w.gpu_minutes("idle-1", T0, FLAG + 3600, 0.0)
    busy_job(w, checkpoint=False)  # (not a hung candidate: this is about idleness)
    # WHEN ticks arrive in this order, with repeats, and then the regular ticks that follow
    for at in [*order, FLAG + 3000, FLAG + 3600]:
        handle_message(tick(at), w.ports)
    # THEN the busy job is never touched, each act happens once per idle period, and each decision
    # is recorded once; the idle job is stopped exactly when it stayed idle
    stopped = [job for job, _ in w.batch.terminated]
    assert "busy-1" not in stopped and not w.ledger.decisions("busy-1")
    assert stopped == ([] if wakes else ["idle-1"])
    acts = [r.act.value for r in w.ledger.decisions("idle-1")]
    assert acts.count("stop") <= 1
    stop_alerts = [b for _, b, _ in w.alerts.sent if b["act"] == "stop"]
    assert len(stop_alerts) == (0 if wakes else 1)
    assert len({(b["act"], b["since"]) for _, b, _ in w.alerts.sent}) == len(w.alerts.sent)


def test_true_gpu_utilization_is_published_per_share_gpu_weighted() -> None:
    w = world()
    idle_job(w)  # ProdExp2 LOWPRI, 8 GPUs at 0%
    w.run_job("busy-2", started=T0, instances=3)  # ProdExp2 LOWPRI, 24 GPUs at 80%
    for host in ("algo-1", "algo-2", "algo-3"):
        w.gpu_minutes("busy-2", T0, FLAG + 3600, 640.0, host=host)
    w.run_job("p1", "ProdExp1", "MIDPRI", started=T0)
    w.gpu_minutes("p1", T0, FLAG + 3600, 400.0)
    handle_message(tick(FLAG), w.ports)
    by_share = {(d["Team"], d["Tier"]): v for v, d in w.metrics.named("TrueGpuUtilization")}
    assert by_share == {("ProdExp2", "LOWPRI"): 60.0, ("ProdExp1", "MIDPRI"): 50.0}
