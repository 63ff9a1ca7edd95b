"""The failure path: classifier over the real failure strings, retry policy, guards, escalation."""

from __future__ import annotations

import copy
import random
import typing
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shareplane.domain.config.failure_rules import (
    DEFAULT_RULES,
    BackoffConfig,
    FailuresConfig,
    StormGuardConfig,
    TierName,
)
from shareplane.domain.config.shares import SharesConfig, Tier
from shareplane.domain.errors import ConfigError, InvalidInputError
from shareplane.domain.failures.decision import (
    SQS_MAX_DELAY_SECONDS,
    Action,
    FailureClass,
    FailureContext,
    FailureSignal,
    Severity,
    backoff_delay,
    classify,
    decide,
    escalation_ceiling,
    next_larger_instance_type,
    priority_escalation,
    repeated_preemption_alert,
    storm_guard,
)

from tests.properties import examples

# The exact strings of the SageMaker failure taxonomy and the AWS Batch service-job reasons.
CAPACITY_FR = (
    "CapacityError: Unable to provision requested ML compute capacity. "
    "Please retry using a different ML instance type."
)
BATCH_CAPACITY = "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY - Unable to provision requested compute resources"
TIME_LIMIT = "Terminated by JobStateTimeLimit action due to reason: CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY"
INTERNAL = "InternalServerError: We encountered an internal error. Please try again."
HOST_OOM_1 = (
    "ClientError: Please use an instance type with more memory, or reduce the size of job data processed "
    "on an instance."
)
HOST_OOM_2 = "ClientError: Artifact upload failed:ClientError: Out of Memory. Please use a larger instance"
QUOTA = (
    "ResourceLimitExceeded: The account-level service limit 'ml.p5.48xlarge for training job usage' is 10 "
    "Instances, with current utilization of 8 Instances and a request delta of 4 Instances."
)
VALIDATION = "ValidationException: Instance type ml.p9.48xlarge is not supported for training jobs."
PREEMPTION_STARTED = "PREEMPTION_IN_PROGRESS: Cross-share preemption triggered to reclaim borrowed capacity"
PREEMPTION_DONE = "Cross-share preemption triggered to reclaim borrowed capacity"
OOM_MESSAGE = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.22 GiB. GPU 0 has a total capacity of "
    "79.1 GiB"
)


def algorithm_error(message: str, exit_code: int = 1) -> str:
    """A FailureReason in SageMaker's ExecuteUserScriptError format."""
    return (
        f'AlgorithmError: ExecuteUserScriptError:\nExitCode {exit_code}\nErrorMessage "{message}"\n'
        'Command "/opt/conda/bin/torchrun --nnodes 2 --nproc_per_node 8 train.py"'
    )


USER_ERROR = algorithm_error("ValueError: could not convert string to float: 'lr'")
GPU_OOM = algorithm_error(OOM_MESSAGE)
# A long traceback puts the OOM line near the end of ErrorMessage, and SageMaker cuts at 1024.
TRACEBACK = "".join(
    f'  File "/opt/ml/code/model.py", line {n}, in forward\n    x = self.block{n}(x)\n' for n in range(40)
)
LONG_GPU_OOM = algorithm_error("Traceback (most recent call last):\n" + TRACEBACK[:800] + "\n" + OOM_MESSAGE)[
    :1024
]


def cut_after(text: str, marker: str) -> str:
    """``text`` truncated right after the first ``marker``, as a 1024-character limit would."""
    return text[: text.index(marker) + len(marker)]


def sm(text: str, space: bool = True) -> str:
    """A SageMaker text as Batch forwards it in statusReason (the SDK omits the space)."""
    return f"Received status from SageMaker:{' ' if space else ''}{text}"


CLASSIFY_CASES = [
    (FailureSignal(failure_reason=CAPACITY_FR), FailureClass.CAPACITY, "capacity"),
    (FailureSignal(status_reason=BATCH_CAPACITY), FailureClass.CAPACITY, "capacity"),
    (
        FailureSignal(status_reason=TIME_LIMIT, was_terminated=True),
        FailureClass.CAPACITY,
        "batch-runnable-time-limit",
    ),
    (FailureSignal(status_reason=sm(CAPACITY_FR)), FailureClass.CAPACITY, "capacity"),
    (
        FailureSignal(
            failure_reason="Insufficient capacity error from EC2 while launching instances, retrying!"
        ),
        FailureClass.CAPACITY,
        "capacity",
    ),
    (
        FailureSignal(failure_reason="Launched instance was unhealthy, replacing it!"),
        FailureClass.CAPACITY,
        "capacity",
    ),
    (FailureSignal(failure_reason=INTERNAL), FailureClass.INTERNAL_ERROR, "internal-error"),
    (FailureSignal(status_reason=sm(INTERNAL)), FailureClass.INTERNAL_ERROR, "internal-error"),
    (FailureSignal(status_reason=sm(INTERNAL, space=False)), FailureClass.INTERNAL_ERROR, "internal-error"),
    (
        FailureSignal(secondary_status="Interrupted", training_job_status="Stopped"),
        FailureClass.SPOT_INTERRUPTION,
        "spot-interrupted",
    ),
    (
        FailureSignal(secondary_status="MaxWaitTimeExceeded", training_job_status="Stopped"),
        FailureClass.SPOT_INTERRUPTION,
        "spot-interrupted",
    ),
    (FailureSignal(status_reason=PREEMPTION_STARTED), FailureClass.PREEMPTED, "batch-preemption"),
    (FailureSignal(status_reason=PREEMPTION_DONE), FailureClass.PREEMPTED, "batch-preemption"),
    (FailureSignal(failure_reason=GPU_OOM), FailureClass.GPU_OOM, "gpu-oom"),
    (FailureSignal(status_reason=sm(GPU_OOM, space=False)), FailureClass.GPU_OOM, "gpu-oom"),
    (FailureSignal(failure_reason=LONG_GPU_OOM), FailureClass.GPU_OOM, "gpu-oom"),
    (FailureSignal(failure_reason=cut_after(GPU_OOM, "CUDA out of memory")), FailureClass.GPU_OOM, "gpu-oom"),
    (
        FailureSignal(failure_reason=cut_after(GPU_OOM, "torch.OutOfMemoryError")),
        FailureClass.GPU_OOM,
        "gpu-oom",
    ),
    (
        FailureSignal(failure_reason=cut_after(GPU_OOM, "torch.OutOfMem")),
        FailureClass.USER_CODE_ERROR,
        "user-code",
    ),
    (FailureSignal(failure_reason=HOST_OOM_1), FailureClass.HOST_OOM, "host-oom"),
    (FailureSignal(failure_reason=HOST_OOM_2), FailureClass.HOST_OOM, "host-oom"),
    (
        FailureSignal(failure_reason=algorithm_error("Killed", exit_code=137)),
        FailureClass.HOST_OOM,
        "host-oom-killed",
    ),
    (FailureSignal(failure_reason=USER_ERROR), FailureClass.USER_CODE_ERROR, "user-code"),
    (FailureSignal(status_reason=sm(USER_ERROR, space=False)), FailureClass.USER_CODE_ERROR, "user-code"),
    (FailureSignal(status_reason=sm(QUOTA)), FailureClass.ACCOUNT_QUOTA, "account-quota"),
    (FailureSignal(failure_reason=QUOTA), FailureClass.ACCOUNT_QUOTA, "account-quota"),
    (FailureSignal(status_reason=sm(VALIDATION)), FailureClass.BAD_REQUEST, "validation"),
    (
        FailureSignal(secondary_status="MaxRuntimeExceeded", training_job_status="Stopped"),
        FailureClass.MAX_RUNTIME_EXCEEDED,
        "max-runtime",
    ),
    (
        FailureSignal(secondary_status="Stopped", training_job_status="Stopped"),
        FailureClass.STOPPED_BY_USER,
        "stopped",
    ),
    (
        FailureSignal(status_reason="Cancelled by the ProdExp1 on-call", was_terminated=True),
        FailureClass.STOPPED_BY_USER,
        "terminated",
    ),
    (
        FailureSignal(failure_reason="Something nobody has seen before"),
        FailureClass.UNKNOWN,
        "no-rule-matched",
    ),
    (FailureSignal(), FailureClass.UNKNOWN, "no-rule-matched"),
]
CLASSIFY_IDS = [
    "a SageMaker CapacityError is capacity",
    "Batch's CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY statusReason is capacity",
    "a JobStateTimeLimit termination is capacity from its own rule",
    "a CapacityError forwarded by Batch is capacity",
    "EC2 insufficient capacity while launching is capacity",
    "an unhealthy launched instance is capacity",
    "InternalServerError is an internal error",
    "InternalServerError behind the prefix with a space is an internal error",
    "InternalServerError behind the prefix without a space is an internal error",
    "SecondaryStatus Interrupted is a spot interruption",
    "SecondaryStatus MaxWaitTimeExceeded is a spot interruption",
    "PREEMPTION_IN_PROGRESS is a preemption",
    "cross-share reclaim is a preemption",
    "a CUDA OOM inside ExecuteUserScriptError is a GPU OOM, not a user code error",
    "a CUDA OOM behind the prefix without a space is a GPU OOM",
    "a CUDA OOM at the end of a reason cut at 1024 characters is a GPU OOM",
    "a reason cut right after CUDA out of memory is a GPU OOM",
    "a reason cut right after torch.OutOfMemoryError is a GPU OOM",
    "a reason cut in the middle of the marker is only a user code error",
    "please use an instance type with more memory is a host OOM",
    "artifact upload out of memory is a host OOM",
    "exit code 137 (SIGKILL by the OOM killer) is a host OOM",
    "ExecuteUserScriptError without an OOM marker is a user code error",
    "a user code error behind the prefix without a space is a user code error",
    "ResourceLimitExceeded via Batch is an account quota",
    "ResourceLimitExceeded from SageMaker is an account quota",
    "ValidationException is a bad request",
    "SecondaryStatus MaxRuntimeExceeded is a runtime limit",
    "SecondaryStatus Stopped is stopped by user",
    "a TerminateServiceJob with a free-text reason is stopped by user",
    "an unseen text is unknown",
    "an empty signal is unknown",
]


@pytest.mark.parametrize(("signal", "expected", "rule"), CLASSIFY_CASES, ids=CLASSIFY_IDS)
def test_classify_real_failure_strings(signal: FailureSignal, expected: FailureClass, rule: str) -> None:
    found = classify(signal, DEFAULT_RULES)
    assert (found.failure_class, found.rule_id) == (expected, rule)
    assert len(found.excerpt) <= 200


def test_every_class_but_unknown_has_a_default_rule() -> None:
    covered = {r.failure_class for r in DEFAULT_RULES}
    assert covered == set(FailureClass) - {FailureClass.UNKNOWN}


def test_the_long_oom_reason_really_is_1024_characters_and_the_excerpt_shows_the_marker() -> None:
    # GIVEN a reason whose OOM line sits past the first 200 characters
    assert len(LONG_GPU_OOM) == 1024 and LONG_GPU_OOM.index("torch.OutOfMemoryError") > 200
    # THEN the excerpt still starts at the marker, so an alert reader sees why
    excerpt = classify(FailureSignal(failure_reason=LONG_GPU_OOM), DEFAULT_RULES).excerpt
    assert "torch.OutOfMemoryError" in excerpt and len(excerpt) <= 200


def test_excerpt_drops_the_batch_prefix_and_newlines() -> None:
    excerpt = classify(FailureSignal(status_reason=sm(USER_ERROR, space=False)), DEFAULT_RULES).excerpt
    assert excerpt.startswith("AlgorithmError: ExecuteUserScriptError: ExitCode 1") and "\n" not in excerpt


def test_secondary_status_words_only_match_whole_values() -> None:
    # A free-text reason mentioning "stopped" must not be read as SecondaryStatus Stopped.
    signal = FailureSignal(
        status_reason="Stopped", failure_reason="training Stopped early", secondary_status="Failed"
    )
    assert classify(signal, DEFAULT_RULES).failure_class is FailureClass.UNKNOWN


def test_extra_rules_from_config_run_before_the_defaults() -> None:
    failures = FailuresConfig.model_validate(
        {
            "extra_rules": [
                {"id": "nccl-timeout", "failure_class": "internal_error", "contains": ["NCCL watchdog"]}
            ]
        }
    )
    signal = FailureSignal(failure_reason=algorithm_error("RuntimeError: NCCL watchdog thread terminated"))
    assert classify(signal, failures.ordered_rules).rule_id == "nccl-timeout"
    assert classify(signal, DEFAULT_RULES).failure_class is FailureClass.USER_CODE_ERROR


# --- hypothesis: classifier -----------------------------------------------------------------

maybe_text = st.none() | st.text(max_size=1200)


@settings(max_examples=examples(300), deadline=None)
@given(
    status=maybe_text,
    failure=maybe_text,
    secondary=maybe_text,
    training=maybe_text,
    terminated=st.booleans(),
    exit_code=st.none() | st.integers(-(2**31), 2**31),
)
def test_any_signal_classifies_to_exactly_one_class_without_raising(
    status: str | None,
    failure: str | None,
    secondary: str | None,
    training: str | None,
    terminated: bool,
    exit_code: int | None,
) -> None:
    signal = FailureSignal(status, failure, secondary, training, terminated, exit_code)
    found = classify(signal, DEFAULT_RULES)
    assert isinstance(found.failure_class, FailureClass)
    assert found.rule_id in {r.id for r in DEFAULT_RULES} | {"no-rule-matched"}
    assert len(found.excerpt) <= 200
    # and the whole decision path accepts it too
    decision = decide(ctx(signal), CONFIG)
    assert (decision.failure_class, decision.rule_id) == (found.failure_class, found.rule_id)
    assert decision.action in set(Action)


TRUNCATION_CASES = [
    (CAPACITY_FR, "CapacityError"),
    (BATCH_CAPACITY, "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY"),
    (sm(INTERNAL, space=False), "InternalServerError"),
    (GPU_OOM, "torch.OutOfMemoryError"),
    (LONG_GPU_OOM, "CUDA out of memory"),
    (HOST_OOM_1, "Please use an instance type with more memory"),
    (sm(QUOTA), "ResourceLimitExceeded"),
    (sm(VALIDATION), "ValidationException"),
    (USER_ERROR, "ExecuteUserScriptError"),
    (PREEMPTION_STARTED, "PREEMPTION_IN_PROGRESS"),
]


@settings(max_examples=examples(300), deadline=None)
@given(case=st.sampled_from(TRUNCATION_CASES), data=st.data())
def test_classification_is_stable_under_truncation_past_the_marker(
    case: tuple[str, str], data: st.DataObject
) -> None:
    text, marker = case
    suffix = data.draw(st.text(alphabet=st.characters(codec="ascii"), max_size=400))
    full = text + suffix
    cut = data.draw(st.integers(full.index(marker) + len(marker), len(full)))
    for make in (lambda t: FailureSignal(failure_reason=t), lambda t: FailureSignal(status_reason=t)):
        assert (
            classify(make(full[:cut]), DEFAULT_RULES).failure_class
            == classify(make(text), DEFAULT_RULES).failure_class
        )


# --- retry policy ---------------------------------------------------------------------------

BASE_CONFIG = {
    "cluster": "search",
    "instance_types": {
        "ml.p4d.24xlarge": {"capacity": 100},
        "ml.g5.xlarge": {"capacity": 8},
        "ml.g5.2xlarge": {"capacity": 8},
        "ml.g5.8xlarge": {"capacity": 8},
    },
    "tiers": {
        "HIGHPRI": {"scheduling_priority": 90, "wait_slo_seconds": 900},
        "MIDPRI": {"scheduling_priority": 50, "wait_slo_seconds": 3600},
        "LOWPRI": {"scheduling_priority": 10, "wait_slo_seconds": 14400},
    },
    "teams": {
        "ProdExp1": {"share": "ProdExp1", "entitlement": {"ml.p4d.24xlarge": 60}},
        "ProdExp2": {"share": "ProdExp2", "entitlement": {"ml.p4d.24xlarge": 40}},
    },
}


def make_config(**failures: object) -> SharesConfig:
    """The blog's cluster plus a few g5 sizes, with ``failures`` overrides."""
    return SharesConfig.model_validate(BASE_CONFIG | ({"failures": failures} if failures else {}))


CONFIG = make_config()
NO_JITTER = make_config(backoff={"base_seconds": 60, "factor": 2, "cap_seconds": 3600, "jitter": 0})


def ctx(signal: FailureSignal, tier: Tier = Tier.MIDPRI, **fields: object) -> FailureContext:
    """A failure context for job j-1 of ProdExp1 on ml.p4d.24xlarge at t=10000 s."""
    values: dict[str, object] = {
        "signal": signal,
        "job_id": "j-1",
        "share": "ProdExp1",
        "tier": tier,
        "now": 10_000.0,
        "instance_type": "ml.p4d.24xlarge",
    }
    return FailureContext(**(values | fields))  # type: ignore[arg-type]


INTERNAL_SIGNAL = FailureSignal(status_reason=sm(INTERNAL, space=False))


def test_backoff_doubles_from_the_base_up_to_the_cap() -> None:
    backoff = BackoffConfig(base_seconds=60, factor=2, cap_seconds=3600, jitter=0)
    assert [backoff_delay(n, backoff) for n in range(1, 10)] == [
        60,
        120,
        240,
        480,
        960,
        1920,
        3600,
        3600,
        3600,
    ]
    assert backoff_delay(10_000, backoff) == 3600


def test_backoff_jitter_stays_within_its_fraction_and_spreads() -> None:
    backoff = BackoffConfig(base_seconds=100, factor=2, cap_seconds=3600, jitter=0.2)
    rng = random.Random(7)
    delays = [backoff_delay(1, backoff, rng=rng) for _ in range(500)]
    assert min(delays) >= 80 and max(delays) <= 120
    assert len(set(delays)) > 20  # the jitter is really drawn, not constant


def test_seeded_jitter_repeats_for_a_redelivery_and_differs_between_jobs() -> None:
    backoff = BackoffConfig(jitter=0.5)
    assert backoff_delay(2, backoff, seed="j-1:internal_error:2") == backoff_delay(
        2, backoff, seed="j-1:internal_error:2"
    )
    assert len({backoff_delay(2, backoff, seed=f"j-{n}:x:2") for n in range(50)}) > 10


def test_backoff_rejects_attempt_zero_naming_the_field() -> None:
    with pytest.raises(InvalidInputError) as err:
        backoff_delay(0, BackoffConfig())
    assert err.value.field == "attempt"


@settings(max_examples=examples(300), deadline=None)
@given(
    attempt=st.integers(1, 10_000),
    base=st.floats(1, 1000),
    factor=st.floats(1, 10),
    extra=st.floats(0, 100_000),
    jitter=st.floats(0, 0.99),
    seed=st.integers(),
)
def test_delay_never_exceeds_cap_times_one_plus_jitter(
    attempt: int, base: float, factor: float, extra: float, jitter: float, seed: int
) -> None:
    backoff = BackoffConfig(base_seconds=base, factor=factor, cap_seconds=base + extra, jitter=jitter)
    delay = backoff_delay(attempt, backoff, rng=random.Random(seed))
    assert 0 <= delay <= backoff.cap_seconds * (1 + jitter)


def test_a_decision_leaves_its_inputs_untouched() -> None:
    context = ctx(INTERNAL_SIGNAL, share_recent_failures=(9_990.0, 9_995.0))
    before_ctx, before_config = copy.deepcopy(context), CONFIG.model_dump()
    decide(context, CONFIG, rng=random.Random(1))
    assert context == before_ctx and CONFIG.model_dump() == before_config


def test_a_redelivered_failure_gets_the_same_decision() -> None:
    assert decide(ctx(INTERNAL_SIGNAL), CONFIG) == decide(ctx(INTERNAL_SIGNAL), CONFIG)


@pytest.mark.parametrize(
    ("tier", "budget_used", "action", "budget_left", "delay"),
    [
        (Tier.MIDPRI, 0, Action.REQUEUE, 2, 60),
        (Tier.MIDPRI, 1, Action.REQUEUE, 1, 120),
        (Tier.MIDPRI, 2, Action.REQUEUE, 0, 240),
        (Tier.MIDPRI, 3, Action.ALERT, 0, 0),
        (Tier.HIGHPRI, 4, Action.REQUEUE, 0, 960),
        (Tier.HIGHPRI, 5, Action.ALERT, 0, 0),
        (Tier.LOWPRI, 2, Action.ALERT, 0, 0),
    ],
    ids=[
        "a MIDPRI first internal error is requeued after the base delay",
        "a MIDPRI second internal error waits twice as long",
        "a MIDPRI third internal error spends the last of the budget",
        "a MIDPRI fourth internal error finds the budget exhausted and alerts",
        "a HIGHPRI job has a budget of five",
        "a HIGHPRI sixth internal error alerts",
        "a LOWPRI job has a budget of two",
    ],
)
def test_budget_per_tier(tier: Tier, budget_used: int, action: Action, budget_left: int, delay: int) -> None:
    decision = decide(ctx(INTERNAL_SIGNAL, tier=tier, budget_used=budget_used), NO_JITTER)
    assert (decision.action, decision.budget_left, decision.delay_seconds) == (action, budget_left, delay)
    assert decision.attempt == budget_used + 1
    if action is Action.ALERT:
        assert decision.severity is Severity.CRITICAL and "budget" in decision.why


def test_waits_past_the_sqs_limit_need_the_scheduler() -> None:
    short = decide(ctx(INTERNAL_SIGNAL, tier=Tier.HIGHPRI, budget_used=3), NO_JITTER)
    long = decide(ctx(INTERNAL_SIGNAL, tier=Tier.HIGHPRI, budget_used=4), NO_JITTER)
    assert (short.delay_seconds, short.needs_scheduler) == (480, False)
    assert long.delay_seconds > SQS_MAX_DELAY_SECONDS and long.needs_scheduler


@pytest.mark.parametrize(
    ("signal", "fields", "action"),
    [
        (FailureSignal(status_reason=BATCH_CAPACITY), {}, Action.LEFT_TO_BATCH),
        (FailureSignal(failure_reason=CAPACITY_FR), {"budget_used": 3}, Action.LEFT_TO_BATCH),
        (FailureSignal(status_reason=TIME_LIMIT, was_terminated=True), {}, Action.ALERT),
        (FailureSignal(status_reason=PREEMPTION_DONE), {"preemption_count": 40}, Action.LEFT_TO_BATCH),
        (
            FailureSignal(status_reason=PREEMPTION_DONE),
            {"preemption_count": 2, "preemption_retries_before_termination": 2},
            Action.LEFT_TO_BATCH,
        ),
        (
            FailureSignal(status_reason=PREEMPTION_DONE),
            {"preemption_count": 3, "preemption_retries_before_termination": 2, "budget_used": 3},
            Action.REQUEUE,
        ),
        (
            FailureSignal(status_reason=PREEMPTION_DONE),
            {"preemption_count": 1, "preemption_retries_before_termination": 0},
            Action.REQUEUE,
        ),
    ],
    ids=[
        "a Batch capacity requeue is left to Batch",
        "a capacity error is left to Batch even with the budget spent",
        "a job Batch ended at the RUNNABLE time limit alerts",
        "a preempted job is left to Batch however often it was preempted",
        "a preempted job within preemptionRetriesBeforeTermination is left to Batch",
        "a preempted job past preemptionRetriesBeforeTermination is requeued even with the budget spent",
        "preemptionRetriesBeforeTermination of zero means the first preemption is ours to requeue",
    ],
)
def test_capacity_and_preemption_never_spend_the_budget(
    signal: FailureSignal, fields: dict[str, object], action: Action
) -> None:
    context = ctx(signal, **fields)
    decision = decide(context, CONFIG)
    assert decision.action is action
    assert decision.attempt == 0
    assert decision.budget_left == max(0, 3 - context.budget_used)  # nothing spent by this failure
    assert not decision.counts_toward_storm


def test_spot_interruptions_keep_the_checkpoint_and_fall_back_to_on_demand() -> None:
    signal = FailureSignal(secondary_status="Interrupted", training_job_status="Stopped")
    first = decide(ctx(signal, spot_interruptions=1, budget_used=3), CONFIG)
    third = decide(ctx(signal, spot_interruptions=3, budget_used=3), CONFIG)
    assert first.action is Action.REQUEUE and dict(first.mutations) == {}
    assert third.action is Action.REQUEUE
    assert dict(third.mutations) == {
        "EnableManagedSpotTraining": False,
        "StoppingCondition.MaxWaitTimeInSeconds": None,
    }
    assert all(not k.startswith("CheckpointConfig") for k in third.mutations)
    assert first.budget_left == third.budget_left == 0 and first.attempt == third.attempt == 0


def test_spot_fallback_can_be_turned_off() -> None:
    signal = FailureSignal(secondary_status="Interrupted", training_job_status="Stopped")
    decision = decide(ctx(signal, spot_interruptions=9), make_config(spot_on_demand_after=None))
    assert decision.action is Action.REQUEUE and dict(decision.mutations) == {}


def test_an_interruption_sagemaker_is_still_resuming_is_not_resubmitted() -> None:
    signal = FailureSignal(secondary_status="Interrupted", training_job_status="InProgress")
    assert decide(ctx(signal, spot_interruptions=1), CONFIG).action is Action.IGNORE


@pytest.mark.parametrize(
    ("instance_type", "action", "larger"),
    [
        ("ml.g5.xlarge", Action.REQUEUE, "ml.g5.2xlarge"),
        ("ml.g5.2xlarge", Action.REQUEUE, "ml.g5.8xlarge"),
        ("ml.g5.8xlarge", Action.ALERT, None),
        ("ml.p4d.24xlarge", Action.ALERT, None),
        (None, Action.ALERT, None),
    ],
    ids=[
        "a host OOM on g5.xlarge retries on g5.2xlarge",
        "a host OOM skips sizes the cluster does not allow",
        "a host OOM on the largest allowed size alerts",
        "a host OOM on a type with no host-memory ladder alerts",
        "a host OOM of a job whose instance type is unknown alerts",
    ],
)
def test_host_oom_upsizes_within_the_family(
    instance_type: str | None, action: Action, larger: str | None
) -> None:
    decision = decide(ctx(FailureSignal(failure_reason=HOST_OOM_1), instance_type=instance_type), CONFIG)
    assert decision.action is action
    assert dict(decision.mutations) == ({"ResourceConfig.InstanceType": larger} if larger else {})
    if action is Action.ALERT:
        assert "not requeued: no larger instance type" in decision.why
        assert decision.severity is Severity.WARNING
    else:
        assert decision.budget_left == 2


def with_allowed(**allowed: list[str]) -> SharesConfig:
    """CONFIG with teams' allowed_instance_types set."""
    teams = {
        name: team | {"allowed_instance_types": allowed.get(name, [])}
        for name, team in BASE_CONFIG["teams"].items()
    }  # type: ignore[attr-defined]
    return SharesConfig.model_validate(BASE_CONFIG | {"teams": teams})


def test_a_host_oom_upsizes_to_the_next_type_the_team_is_allowed() -> None:
    # GIVEN ProdExp1 may use g5.xlarge and g5.8xlarge, not the g5.2xlarge the cluster has between them
    config = with_allowed(ProdExp1=["ml.g5.xlarge", "ml.g5.8xlarge"])
    signal = FailureSignal(failure_reason=HOST_OOM_1)
    decision = decide(ctx(signal, instance_type="ml.g5.xlarge", team="ProdExp1"), config)
    assert decision.action is Action.REQUEUE
    assert dict(decision.mutations) == {"ResourceConfig.InstanceType": "ml.g5.8xlarge"}


def test_a_host_oom_is_not_mutated_past_the_teams_allowlist_and_the_alert_says_so() -> None:
    config = with_allowed(ProdExp1=["ml.g5.xlarge"])
    signal = FailureSignal(failure_reason=HOST_OOM_1)
    decision = decide(ctx(signal, instance_type="ml.g5.xlarge", team="ProdExp1"), config)
    assert decision.action is Action.ALERT and dict(decision.mutations) == {}
    assert "not requeued: no larger instance type team ProdExp1 is allowed than ml.g5.xlarge" in decision.why


def test_a_job_of_unknown_team_is_only_upsized_to_what_every_team_may_use() -> None:
    config = with_allowed(
        ProdExp1=["ml.g5.xlarge", "ml.g5.2xlarge"], ProdExp2=["ml.g5.xlarge", "ml.g5.8xlarge"]
    )
    decision = decide(ctx(FailureSignal(failure_reason=HOST_OOM_1), instance_type="ml.g5.xlarge"), config)
    assert decision.action is Action.ALERT and "every team is allowed" in decision.why


G5 = ["ml.g5.xlarge", "ml.g5.2xlarge", "ml.g5.8xlarge"]


@settings(max_examples=examples(200), deadline=None)
@given(
    allowed=st.lists(st.sampled_from([*G5, "ml.p4d.24xlarge"]), unique=True),
    current=st.sampled_from(G5),
    team=st.sampled_from(["ProdExp1", "ProdExp2", None]),
)
def test_an_upsize_never_leaves_the_teams_allowlist(
    allowed: list[str], current: str, team: str | None
) -> None:
    # GIVEN any allowlist for ProdExp1 (empty: every cluster type) and a host OOM on a g5 size
    config = with_allowed(ProdExp1=allowed)
    decision = decide(ctx(FailureSignal(failure_reason=HOST_OOM_1), instance_type=current, team=team), config)
    target = decision.mutations.get("ResourceConfig.InstanceType")
    # A job of unknown team may use only what every team may (ProdExp2 may use every type).
    bound = team in ("ProdExp1", None) and allowed
    permitted = [t for t in G5 if t in allowed] if bound else G5
    larger = [t for t in G5[G5.index(current) + 1 :] if t in permitted]
    # THEN the job moves to the smallest larger type its team may use, else it is not mutated and alerts
    if larger:
        assert decision.action is Action.REQUEUE and target == larger[0]
    else:
        assert decision.action is Action.ALERT and target is None and "not requeued" in decision.why


def test_gpu_oom_alerts_with_the_fix_by_default() -> None:
    decision = decide(ctx(FailureSignal(failure_reason=GPU_OOM)), CONFIG)
    assert decision.action is Action.ALERT and decision.severity is Severity.WARNING
    assert "reduce per-GPU batch size" in decision.fix


def test_a_tier_can_retry_gpu_oom_on_a_type_with_more_gpu_memory() -> None:
    # GIVEN HIGHPRI retries GPU OOM with upsizing and the cluster allows p4de
    config = SharesConfig.model_validate(
        BASE_CONFIG
        | {"instance_types": BASE_CONFIG["instance_types"] | {"ml.p4de.24xlarge": {"capacity": 4}}}  # type: ignore[operator]
        | {"failures": {"tiers": {"HIGHPRI": {"classes": {"gpu_oom": {"retry": True, "upsize": True}}}}}}
    )
    signal = FailureSignal(failure_reason=GPU_OOM)
    high = decide(ctx(signal, tier=Tier.HIGHPRI), config)
    mid = decide(ctx(signal, tier=Tier.MIDPRI), config)
    assert high.action is Action.REQUEUE
    assert dict(high.mutations) == {"ResourceConfig.InstanceType": "ml.p4de.24xlarge"}
    assert mid.action is Action.ALERT


def test_user_code_errors_and_bad_requests_are_not_retried() -> None:
    for signal in (FailureSignal(failure_reason=USER_ERROR), FailureSignal(status_reason=sm(VALIDATION))):
        decision = decide(ctx(signal), CONFIG)
        assert decision.action is Action.ALERT and decision.delay_seconds == 0


def test_stopped_by_user_is_recorded_without_an_alert() -> None:
    decision = decide(ctx(FailureSignal(secondary_status="Stopped", training_job_status="Stopped")), CONFIG)
    assert decision.action is Action.IGNORE and decision.severity is Severity.INFO


def test_unknown_alerts_once_and_is_never_retried() -> None:
    # GIVEN a generous budget that would retry anything retryable
    config = make_config(budget=50)
    signal = FailureSignal(failure_reason="Segmentation fault in libfoo.so")
    first = decide(ctx(signal), config)
    again = decide(ctx(signal, alerted_classes=frozenset({FailureClass.UNKNOWN})), config)
    assert (first.action, first.severity) == (Action.ALERT, Severity.CRITICAL)
    assert again.action is Action.IGNORE
    assert Action.REQUEUE not in {decide(ctx(signal, budget_used=n), config).action for n in range(50)}


def test_storm_guard_stops_requeueing_and_alerts_once() -> None:
    # GIVEN a share whose jobs fail every 10 s and a guard of 10 failures per 600 s
    config = make_config(storm={"max_failures": 10, "window_seconds": 600})
    history: list[float] = []
    alerted_at: float | None = None
    decisions = []
    for n in range(30):
        now = 10_000.0 + 10 * n
        decision = decide(
            ctx(
                INTERNAL_SIGNAL,
                job_id=f"j-{n}",
                now=now,
                share_recent_failures=tuple(history),
                share_storm_alerted_at=alerted_at,
            ),
            config,
        )
        decisions.append(decision)
        if decision.counts_toward_storm:
            history.append(now)
        if decision.storm and decision.action is Action.ALERT:
            alerted_at = now
    actions = [d.action for d in decisions]
    # THEN the first ten are requeued, the eleventh sends the one storm alert, the rest are held
    assert actions[:10] == [Action.REQUEUE] * 10
    assert actions[10] is Action.ALERT and decisions[10].storm and decisions[10].severity is Severity.CRITICAL
    assert actions[11:] == [Action.IGNORE] * 19 and all(d.storm for d in decisions[11:])
    assert sum(d.action is Action.ALERT for d in decisions) == 1


def test_storm_guard_forgets_failures_outside_the_window() -> None:
    guard = StormGuardConfig(max_failures=2, window_seconds=60)
    assert storm_guard([10.0, 20.0], now=100.0, config=guard).tripped is False
    assert storm_guard([50.0, 90.0], now=100.0, config=guard) == storm_guard([90.0, 50.0], 100.0, guard)
    assert storm_guard([50.0, 90.0], now=100.0, config=guard).alert is True
    assert storm_guard([50.0, 90.0], now=100.0, config=guard, last_alert_at=80.0).alert is False
    assert storm_guard([50.0, 90.0], now=100.0, config=guard, last_alert_at=20.0).alert is True


def test_storm_guard_ignores_capacity_and_preemption() -> None:
    config = make_config(storm={"max_failures": 1, "window_seconds": 600})
    many = tuple(9_000.0 + n for n in range(100))
    for signal in (FailureSignal(status_reason=BATCH_CAPACITY), FailureSignal(status_reason=PREEMPTION_DONE)):
        assert decide(ctx(signal, share_recent_failures=many), config).action is Action.LEFT_TO_BATCH


def test_next_larger_instance_type_without_an_allow_list_takes_the_next_size() -> None:
    ladders = {"g5": ("ml.g5.xlarge", "ml.g5.2xlarge")}
    assert next_larger_instance_type("ml.g5.xlarge", ladders) == "ml.g5.2xlarge"
    assert next_larger_instance_type("ml.g5.2xlarge", ladders) is None


def test_failure_context_rejects_negative_counts_naming_the_field() -> None:
    with pytest.raises(InvalidInputError) as err:
        ctx(INTERNAL_SIGNAL, budget_used=-1)
    assert err.value.field == "budget_used"


def test_decision_mutations_cannot_be_changed_after_the_fact() -> None:
    decision = decide(ctx(FailureSignal(failure_reason=HOST_OOM_1), instance_type="ml.g5.xlarge"), CONFIG)
    with pytest.raises(TypeError):
        decision.mutations["ResourceConfig.InstanceType"] = "ml.g5.48xlarge"  # type: ignore[index]
    assert replace(decision, delay_seconds=1).mutations == decision.mutations


@pytest.mark.parametrize(
    ("failures", "field"),
    [
        ({"classes": {"capacity": {"uses_budget": True}}}, "failures.classes.capacity.uses_budget"),
        (
            {"tiers": {"LOWPRI": {"classes": {"preempted": {"uses_budget": True}}}}},
            "failures.tiers.LOWPRI.classes.preempted.uses_budget",
        ),
        (
            {"extra_rules": [{"id": "internal-error", "failure_class": "unknown", "contains": ["x"]}]},
            "failures.rules",
        ),
        ({"extra_rules": [{"id": "catch-all", "failure_class": "unknown"}]}, "failures.rules.catch-all"),
        ({"backoff": {"base_seconds": 600, "cap_seconds": 60}}, "failures.backoff.cap_seconds"),
    ],
    ids=[
        "capacity errors may not spend the budget",
        "preemptions may not spend a tier's budget",
        "a rule id may not be used twice",
        "a rule without a condition is refused",
        "a cap below the base is refused",
    ],
)
def test_bad_failure_config_names_the_field(failures: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigError) as err:
        make_config(**failures)
    assert err.value.field == field


def test_tier_names_in_failure_config_match_the_tier_enum() -> None:
    assert set(typing.get_args(TierName)) == {t.value for t in Tier}


def test_shares_config_without_a_failures_section_gets_the_defaults() -> None:
    assert CONFIG.failures == FailuresConfig()


# --- jobs in trouble ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tier", "current", "waited", "expected"),
    [
        (Tier.LOWPRI, 10, 14_400, 10),
        (Tier.LOWPRI, 10, 14_401, 15),
        (Tier.LOWPRI, 10, 2 * 14_400 + 1, 20),
        (Tier.LOWPRI, 10, 10**9, 49),
        (Tier.MIDPRI, 50, 10**9, 89),
        (Tier.HIGHPRI, 90, 10**9, 9999),
        (Tier.LOWPRI, 30, 14_401, 30),
        (Tier.LOWPRI, 70, 10**9, 70),
    ],
    ids=[
        "a LOWPRI job within its wait SLO keeps its priority",
        "a LOWPRI job just past its SLO gets one step",
        "a LOWPRI job past two SLOs gets two steps",
        "a LOWPRI job never reaches MIDPRI's priority",
        "a MIDPRI job never reaches HIGHPRI's priority",
        "a HIGHPRI job is capped at 9999",
        "escalation never lowers a priority already above the target",
        "a job already above its ceiling keeps its priority",
    ],
)
def test_priority_escalation(tier: Tier, current: int, waited: float, expected: int) -> None:
    assert priority_escalation(current, tier, waited, CONFIG) == expected


@settings(max_examples=examples(300), deadline=None)
@given(
    tier=st.sampled_from(list(Tier)),
    current=st.integers(0, 9999),
    waited=st.floats(0, 1e8),
    more=st.floats(0, 1e8),
)
def test_escalation_is_bounded_and_monotone_in_wait(
    tier: Tier, current: int, waited: float, more: float
) -> None:
    ceiling = {Tier.LOWPRI: 49, Tier.MIDPRI: 89, Tier.HIGHPRI: 9999}[tier]
    assert escalation_ceiling(tier, CONFIG) == ceiling
    now = priority_escalation(current, tier, waited, CONFIG)
    later = priority_escalation(current, tier, waited + more, CONFIG)
    assert current <= now <= later
    assert later <= max(current, ceiling)
    # re-evaluating from the raised priority does not compound
    assert priority_escalation(now, tier, waited, CONFIG) == now


def test_escalation_rejects_a_priority_out_of_range() -> None:
    with pytest.raises(InvalidInputError) as err:
        priority_escalation(10_000, Tier.LOWPRI, 0, CONFIG)
    assert err.value.field == "current_priority"


@pytest.mark.parametrize(
    ("count", "already", "alerts"),
    [(2, False, False), (3, False, True), (7, False, True), (7, True, False)],
    ids=[
        "two preemptions are below the threshold",
        "the third preemption alerts",
        "later preemptions alert if none was sent",
        "no second alert once one was sent",
    ],
)
def test_repeated_preemption_detector(count: int, already: bool, alerts: bool) -> None:
    text = repeated_preemption_alert(count, CONFIG, already_alerted=already)
    assert (text is not None) is alerts
    if text:
        assert f"preempted {count} times" in text


def test_on_a_quota_queue_an_upsize_skips_types_the_teams_quota_share_has_no_capacity_for() -> None:
    # GIVEN quota mode where ProdExp1 is entitled to g5.xlarge and g5.8xlarge, not g5.2xlarge
    entitled = {"ml.p4d.24xlarge": 60, "ml.g5.xlarge": 4, "ml.g5.8xlarge": 4}
    teams = {**BASE_CONFIG["teams"], "ProdExp1": {"share": "ProdExp1", "entitlement": entitled}}  # type: ignore[dict-item]
    config = SharesConfig.model_validate(BASE_CONFIG | {"mode": "quota", "teams": teams})
    signal = FailureSignal(failure_reason=HOST_OOM_1)
    decision = decide(ctx(signal, instance_type="ml.g5.xlarge", team="ProdExp1"), config)
    assert dict(decision.mutations) == {"ResourceConfig.InstanceType": "ml.g5.8xlarge"}
