"""Each adapter's stored layout gives back the value it stored: decision records, the rebalancer's state, audits.

DynamoDB keeps no None member of a map (``dynamodb_items.to_ddb`` drops them), so each item is read
back as the table returns it: without its None members.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from shareplane.adapters.alert_items import alert_item, sent_alert_of, sent_item
from shareplane.adapters.arrival_items import count_update, counts_from_item, hour_sk
from shareplane.adapters.dynamodb_store import prediction_from_item, prediction_item
from shareplane.adapters.failure_items import (
    applied_attributes,
    decision_from_item,
    decision_item,
    storm_failure_from_item,
    storm_failure_item,
)
from shareplane.adapters.payload_items import payload_of
from shareplane.adapters.share_items import audit_from_item, audit_item, state_from_item, state_item
from shareplane.adapters.upload_attributions import principal_from_item, principal_item
from shareplane.domain.alerts.alert import AlertKind, job_alert
from shareplane.domain.config.failure_rules import FailureClass, Severity
from shareplane.domain.config.shares import SchedulingMode
from shareplane.domain.failures.decision import EXCERPT_MAX_CHARS, Action, FailureDecision
from shareplane.domain.failures.record import Applied, DecisionRecord, StormFailure
from shareplane.domain.failures.requeue import ChainState
from shareplane.domain.forecast.arrivals import ArrivalKey
from shareplane.domain.forecast.prediction import StartPrediction, prediction_from_record
from shareplane.domain.jobs.service_job_request import ServiceJobRequest
from shareplane.domain.shares.rebalance import (
    UNLIMITED_BORROW,
    LedgerEntry,
    QuotaSettings,
    RebalancePlan,
    ShareChange,
    SharingStrategy,
)
from shareplane.domain.shares.state import LatestRun, PlanAudit, PlanRef, ShareAccount, SharesState
from shareplane.domain.shares.tier_charge import TeamTierUsage
from shareplane.domain.submit.attribution import PrincipalCheck, UploaderPrincipal


def as_the_table_returns(value: Any) -> Any:
    """``value`` without the None members of its maps, as DynamoDB stores it."""
    if isinstance(value, dict):
        return {k: as_the_table_returns(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [as_the_table_returns(v) for v in value]
    return value


names = st.text(st.characters(codec="ascii", categories=("L", "N")), min_size=1, max_size=12)
maybe_names = st.none() | names
times = st.floats(min_value=0, max_value=4e9, allow_nan=False)
counts = st.integers(min_value=0, max_value=50)
amounts = st.floats(min_value=0, max_value=1e6, allow_nan=False)
mutations = st.dictionaries(
    st.sampled_from(
        ["EnableManagedSpotTraining", "ResourceConfig.InstanceType", "StoppingCondition.MaxWaitTimeInSeconds"]
    ),
    st.none() | st.booleans() | names | counts,
    max_size=3,
)
decisions = st.builds(
    FailureDecision,
    action=st.sampled_from(Action),
    failure_class=st.sampled_from(FailureClass),
    rule_id=names,
    reason_excerpt=st.text(max_size=EXCERPT_MAX_CHARS),
    severity=st.sampled_from(Severity),
    fix=st.text(max_size=40),
    attempt=counts,
    budget_left=counts,
    delay_seconds=counts,
    mutations=mutations,
    storm=st.booleans(),
    why=st.text(max_size=40),
)
chains = st.builds(
    ChainState,
    origin_job_id=maybe_names,
    failures=counts,
    # A stored chain belongs to a requeue: it has been requeued at least once.
    requeues=st.integers(min_value=1, max_value=50),
    spot_interruptions=counts,
    displaced_by=st.lists(names, max_size=3).map(tuple),
    reclaimed_at=st.none() | st.integers(min_value=1, max_value=4_000_000_000),
)


@st.composite
def records(draw: st.DrawFn) -> DecisionRecord:
    decided = draw(times)
    return DecisionRecord(
        job_arn=draw(names),
        decision=draw(decisions),
        chain=draw(chains),
        decided_at=decided,
        due_at=decided + draw(counts),
        job_id=draw(maybe_names),
        job_name=draw(maybe_names),
        job_queue=draw(maybe_names),
        share=draw(names),
        training_job_name=draw(maybe_names),
        tier=draw(maybe_names),
        team=draw(maybe_names),
        storm_scope=draw(maybe_names),
    )


@given(
    record=records(),
    applied=st.builds(Applied, maybe_names, maybe_names, maybe_names, st.none() | st.booleans()),
)
def test_a_decision_record_reads_back_as_it_was_written_and_applied(
    record: DecisionRecord, applied: Applied
) -> None:
    item = {**decision_item(record), "applied": False}
    assert decision_from_item(as_the_table_returns(item)) == record
    item.update(applied=True, **applied_attributes(applied))
    read = decision_from_item(as_the_table_returns(item))
    assert read.applied and read.result == applied and read.decision == record.decision


@given(
    failure=st.builds(
        StormFailure,
        scope=names,
        at=times,
        job_arn=names,
        job_name=maybe_names,
        failure_class=maybe_names,
        reason=maybe_names,
    )
)
def test_a_storm_failure_reads_back_as_it_was_written(failure: StormFailure) -> None:
    assert storm_failure_from_item(as_the_table_returns(storm_failure_item(failure))) == failure


weights = st.floats(min_value=0.0001, max_value=999.9999, allow_nan=False)
accounts = st.builds(
    ShareAccount,
    balance=st.floats(min_value=-1e6, max_value=1e6, allow_nan=False),
    usage=amounts,
    tier_usage=st.none() | st.builds(TeamTierUsage, amounts, amounts),
)
runs = st.builds(
    LatestRun,
    at=times,
    tick_id=names,
    plan_id=names,
    reason=st.text(max_size=30),
    applied=st.booleans(),
    dry_run=st.booleans(),
    targets=st.dictionaries(names, amounts, max_size=3),
    actual=st.dictionaries(names, amounts, max_size=3),
    waiting=st.dictionaries(names, amounts, max_size=3),
    why=st.dictionaries(names, st.text(max_size=20), max_size=3),
)
states = st.builds(
    SharesState,
    version=st.integers(min_value=1, max_value=10_000),
    queue=maybe_names,
    mode=st.none() | st.sampled_from(SchedulingMode),
    ledger_as_of=st.none() | times,
    usage_as_of=st.none() | times,
    shares=st.dictionaries(names, accounts, max_size=3),
    last_tick=maybe_names,
    latest=st.none() | runs,
    last_applied_at=st.none() | times,
    last_plan=st.none() | st.builds(PlanRef, times, names),
    overrides=st.none()
    | st.dictionaries(names, st.fixed_dictionaries({"setting": weights, "baseline": weights}), max_size=2),
)


@given(state=states)
def test_the_rebalancers_state_reads_back_as_it_was_written(state: SharesState) -> None:
    assert state_from_item(as_the_table_returns(state_item(state))) == state


@st.composite
def quota_settings(draw: st.DrawFn) -> QuotaSettings:
    strategy = draw(st.sampled_from(SharingStrategy))
    limits = st.dictionaries(
        st.sampled_from(["ml.p4d.24xlarge", "ml.p5.48xlarge"]), st.integers(1, 64), min_size=1
    )
    # Only a LEND_AND_BORROW share has a borrowLimit (the API takes it on no other): the rest hold the default.
    borrow = draw(st.integers(-1, 200)) if strategy is SharingStrategy.LEND_AND_BORROW else UNLIMITED_BORROW
    return QuotaSettings(capacity_limits=draw(limits), strategy=strategy, borrow_limit=borrow)


@st.composite
def audits(draw: st.DrawFn) -> PlanAudit:
    mode = draw(st.sampled_from(SchedulingMode))
    setting = quota_settings() if mode is SchedulingMode.QUOTA else weights
    shares = draw(st.lists(names, max_size=3, unique=True))
    changes = tuple(
        ShareChange(share, draw(setting), draw(setting), draw(st.text(max_size=20)), draw(maybe_names))
        for share in shares
    )
    plan = RebalancePlan(
        created_at=draw(times),
        mode=mode,
        changes=changes,
        reason=draw(st.text(max_size=20)),
        targets=draw(st.dictionaries(names, amounts, max_size=3)),
        ledger=draw(st.dictionaries(names, st.builds(LedgerEntry, amounts, amounts, amounts), max_size=3)),
        ledger_as_of=draw(st.none() | times),
    )
    observed = draw(st.booleans())
    return PlanAudit(
        plan_id=draw(names),
        tick_id=draw(names),
        kind=draw(st.sampled_from(["plan", "restore", "rollback"])),
        status=draw(st.sampled_from(["PENDING", "APPLIED", "DRY_RUN"])),
        queue=draw(names),
        plan=plan,
        actual=draw(st.dictionaries(names, amounts, max_size=3)) if observed else None,
        waiting=draw(st.dictionaries(names, amounts, max_size=3)) if observed else None,
        rollback_of=draw(maybe_names),
        applied_at=draw(st.none() | times),
    )


@given(audit=audits())
def test_a_plans_audit_record_reads_back_as_it_was_written(audit: PlanAudit) -> None:
    assert audit_from_item(as_the_table_returns(audit_item(audit))) == audit


epoch_ms = st.integers(min_value=0, max_value=4_000_000_000_000)
predictions = st.builds(
    StartPrediction,
    predicted_at=epoch_ms,
    p10=st.none() | epoch_ms,
    p50=st.none() | epoch_ms,
    p90=st.none() | epoch_ms,
    started_fraction=st.floats(min_value=0, max_value=1, allow_nan=False),
    samples=st.integers(min_value=1, max_value=10000),
)


@given(predictions)
def test_a_prediction_item_gives_back_its_prediction(prediction: StartPrediction) -> None:
    item = as_the_table_returns(prediction_item("arn:aws:batch:us-east-1:1:service-job/j", prediction))
    assert prediction_from_item(item) == prediction
    assert prediction_from_record(prediction.as_record()) == prediction  # the record's field, read back


@given(
    share=st.text(min_size=0, max_size=12),
    instances=st.integers(1, 64),
    priority=st.integers(0, 9999),
    count=st.integers(1, 10**6),
)
def test_an_hours_arrival_count_reads_back_under_its_key(
    share: str, instances: int, priority: int, count: int
) -> None:
    # GIVEN one kind of job counted in an hour's item (any share name, a "|" in it too)
    key = ArrivalKey("gpu", 7 * 3_600_000, share, instances, priority)
    update = count_update("jobs", "gpu", key.hour_ms, {key: count}, 1)["Update"]
    (name,) = update["ExpressionAttributeNames"].values()
    item = {
        "pk": "ARRIVALS#gpu",
        "sk": hour_sk(key.hour_ms),
        "entity": "arrivals",
        "expiresAt": 1,
        name: count,
    }
    # THEN the item reads back as that count, and a count moved down to 0 as none
    assert counts_from_item("gpu", item) == [(key, count)]
    assert counts_from_item("gpu", {**item, name: 0}) == []


principals = st.builds(
    UploaderPrincipal,
    arn=names,
    event_name=names,
    check=st.sampled_from(PrincipalCheck),
    type=maybe_names,
    principal_id=maybe_names,
    account_id=maybe_names,
    session_issuer_arn=maybe_names,
)


@given(principals)
def test_an_uploaders_principal_reads_back_as_it_was_written(principal: UploaderPrincipal) -> None:
    assert principal_from_item(principal_item(principal)) == principal


def test_an_uploaders_principal_keeps_the_layout_its_jobs_have_carried() -> None:
    # GIVEN a principal as an earlier release wrote it on a job's PAYLOAD item (absent members left out)
    stored = {
        "arn": "arn:aws:sts::111122223333:assumed-role/prodexp1-ml-engineers/alice",
        "type": "AssumedRole",
        "accountId": "111122223333",
        "sessionIssuerArn": "arn:aws:iam::111122223333:role/prodexp1-ml-engineers",
        "eventName": "PutObject",
        "check": "submitter",
    }
    # THEN it reads as the same principal and is written back key for key
    principal = principal_from_item(stored)
    assert principal is not None and principal.check is PrincipalCheck.SUBMITTER
    assert principal_item(principal) == stored
    # and one that lost its check reads as unknown, not as some check it never had
    assert principal_from_item({k: v for k, v in stored.items() if k != "check"}) is None


service_job_requests = st.builds(
    ServiceJobRequest,
    job_name=names,
    job_queue=names,
    service_job_type=st.just("SAGEMAKER_TRAINING"),
    service_request_payload=st.dictionaries(names, names, max_size=3).map(json.dumps),
    client_token=maybe_names,
    tags=st.none() | st.dictionaries(names, names, max_size=4),
    share_identifier=maybe_names,
    quota_share_name=maybe_names,
    scheduling_priority=st.none() | st.integers(min_value=0, max_value=9999),
    retry_strategy=st.none()
    | st.fixed_dictionaries(
        {
            "attempts": counts,
            "evaluateOnExit": st.lists(
                st.fixed_dictionaries(
                    {"action": st.sampled_from(["RETRY", "EXIT"]), "onStatusReason": names}
                ),
                max_size=3,
            ),
        }
    ),
    timeout_config=st.none() | st.fixed_dictionaries({"attemptDurationSeconds": counts}),
    preemption_configuration=st.none()
    | st.fixed_dictionaries({"preemptionRetriesBeforeTermination": counts}),
)


@given(service_job_requests)
def test_a_service_job_request_reads_back_as_it_was_written(request: ServiceJobRequest) -> None:
    # on the PAYLOAD item, through the job store's reader
    item = as_the_table_returns({"entity": "payload", "jobArn": "arn", "request": request.aws_fields()})
    assert payload_of("arn", item).request == request
    # and as the S3 document a request too large for its item is kept in
    document = json.loads(json.dumps({"request": request.aws_fields()}))
    assert ServiceJobRequest.from_aws_fields(document["request"]) == request


def test_a_service_job_request_keeps_the_layout_its_jobs_have_carried() -> None:
    # GIVEN a request as an earlier release stored it on a job's PAYLOAD item (a quota-share GPU job)
    stored = {
        "jobName": "bert-ft-01",
        "jobQueue": "search-gpu",
        "serviceJobType": "SAGEMAKER_TRAINING",
        "serviceRequestPayload": '{"RoleArn":"arn:aws:iam::111122223333:role/t","TrainingJobName":"bert-ft-01"}',
        "retryStrategy": {
            "attempts": 3,
            "evaluateOnExit": [
                {"action": "RETRY", "onStatusReason": "Received status from SageMaker: InternalServerError*"},
                {"action": "EXIT", "onStatusReason": "*"},
            ],
        },
        "timeoutConfig": {"attemptDurationSeconds": 10800},
        "tags": {
            "shareplane:team": "ProdExp1",
            "shareplane:tier": "HIGHPRI",
            "shareplane:submission": "ab12",
        },
        "clientToken": "ab12",
        "quotaShareName": "ProdExp1",
        "schedulingPriority": 90,
        "preemptionConfiguration": {"preemptionRetriesBeforeTermination": 5},
    }
    # THEN it reads as the same request and is written back key for key, in the same order
    request = payload_of("arn", {"request": stored}).request
    assert request is not None and request.job_queue == "search-gpu" and request.scheduling_priority == 90
    assert request.share == "ProdExp1" and request.share_identifier is None
    assert request.aws_fields() == stored and list(request.aws_fields()) == list(stored)
    # and one that lost its queue, or holds a priority of the wrong type, reads as absent: the listing goes on
    lost_queue = {k: v for k, v in stored.items() if k != "jobQueue"}
    assert payload_of("arn", {"request": lost_queue, "team": "ProdExp1"}).request is None
    assert payload_of("arn", {"request": {**stored, "schedulingPriority": "high"}}).request is None


def test_an_alerts_dedupe_item_keeps_its_layout_and_each_send_lists_as_it_does() -> None:
    # GIVEN an alert claimed at 1000 and sent at 1000.5
    alert = job_alert(
        AlertKind.QUEUE_BLOCKED, share="ProdExp1", queue="q", job_arn="arn:job/j", job_name="j", reason="r"
    )
    claimed = alert_item(alert, 1000.0, 600.0, 1000.0)
    sent = sent_item(alert, 1000.5)
    # THEN the dedupe item is the one a deployed table holds, and the send's item sits beside it
    assert (claimed["pk"], claimed["sk"], claimed["gsi1sk"]) == (
        "ALERT#arn:job/j#queue_blocked",
        "ALERT",
        "0000001000000#ALERT#arn:job/j#queue_blocked",
    )
    assert (claimed["quietUntil"], claimed["claimedAt"], claimed["expiresAt"]) == (1600.0, 1000.0, 2593000)
    assert (sent["pk"], sent["sk"], sent["gsi1pk"], sent["gsi1sk"], sent["expiresAt"]) == (
        claimed["pk"],
        "SENT#0000001000500",
        "ALERTS",
        "0000001000500#ALERT#arn:job/j#queue_blocked",
        2593000,
    )
    # AND the send's item lists as its confirmed dedupe item does
    confirmed = {**claimed, "sentAt": 1000.5}
    assert sent_alert_of(as_the_table_returns(sent)) == sent_alert_of(as_the_table_returns(confirmed))
