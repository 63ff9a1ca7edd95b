"""The cost-to-run arithmetic: AWS calls -> billable units -> USD (shareplane_cli.run_cost)."""

from __future__ import annotations

from collections import Counter

import pytest
from shareplane_cli import run_cost

from tests.conftest import REPO

PRICES = REPO / "config" / "prices" / "aws-services-us-east-1.yaml"


@pytest.mark.parametrize(
    ("item", "size"),
    [
        ({"pk": {"S": "JOB#1"}}, 2 + 5),
        ({"n": {"N": "12345"}}, 1 + 4),
        ({"flag": {"BOOL": True}, "gone": {"NULL": True}}, 4 + 1 + 4 + 1),
        ({"m": {"M": {"a": {"S": "xy"}}}}, 1 + 3 + 1 + 1 + 2),
        ({"l": {"L": [{"S": "ab"}, {"N": "7"}]}}, 1 + 3 + (1 + 2) + (1 + 2)),
    ],
    ids=[
        "a string is its name and its UTF-8 bytes",
        "a number is about one byte per two digits, plus one",
        "booleans and nulls are one byte",
        "a map adds 3 bytes and one per entry",
        "a list adds 3 bytes and one per element",
    ],
)
def test_item_sizes_follow_dynamodbs_rules(item: dict, size: int) -> None:
    assert run_cost.dynamodb_item_bytes(item) == size


def test_reads_round_up_to_4_kb_and_eventual_reads_cost_half() -> None:
    small = {"Item": {"pk": {"S": "x" * 100}}}
    big = {"Items": [{"pk": {"S": "x" * 3000}}, {"pk": {"S": "y" * 3000}}]}
    assert run_cost.units_of_call("dynamodb", "GetItem", {"ConsistentRead": True}, small) == Counter(
        dynamodb_read_units=1
    )
    assert run_cost.units_of_call("dynamodb", "GetItem", {}, small) == Counter(dynamodb_read_units=0.5)
    # a query's items are summed, then rounded up: 6 KB is two 4 KB units
    assert run_cost.units_of_call("dynamodb", "Query", {"ConsistentRead": True}, big) == Counter(
        dynamodb_read_units=2
    )


def test_a_transaction_costs_two_write_units_per_item_and_kb() -> None:
    params = {
        "TransactItems": [
            {"Put": {"Item": {"pk": {"S": "x" * 1500}}}},
            {"Update": {"Key": {"pk": {"S": "a"}}, "ExpressionAttributeValues": {":v": {"N": "1"}}}},
        ]
    }
    units = run_cost.units_of_call("dynamodb", "TransactWriteItems", params, {})
    assert units == Counter(dynamodb_write_units=2 * 2 + 2 * 1)


@pytest.mark.parametrize(
    ("service", "operation", "params", "expected"),
    [
        ("s3", "PutObject", {}, {"s3_tier1_requests": 1}),
        ("s3", "ListObjectsV2", {}, {"s3_tier1_requests": 1}),
        ("s3", "GetObject", {}, {"s3_tier2_requests": 1}),
        ("s3", "DeleteObject", {}, {}),
        ("sns", "Publish", {}, {"sns_publishes": 1}),
        ("sqs", "SendMessage", {}, {"sqs_requests": 1}),
        ("sqs", "SendMessageBatch", {"Entries": [{}] * 10}, {"sqs_requests": 1}),
        ("scheduler", "CreateSchedule", {}, {"scheduler_invocations": 1}),
        ("cloudwatch", "GetMetricData", {"MetricDataQueries": [{}] * 6}, {"getmetricdata_metrics": 6}),
        ("batch", "SubmitServiceJob", {}, {}),
    ],
    ids=[
        "a PUT is a tier-1 request",
        "a LIST is a tier-1 request",
        "a GET is a tier-2 request",
        "a DELETE is free",
        "an SNS publish",
        "an SQS send",
        "an SQS batch of ten is one request",
        "a one-time schedule",
        "GetMetricData bills each metric requested",
        "Batch and SageMaker calls are not billed per request",
    ],
)
def test_each_call_is_counted_in_the_unit_its_service_bills(
    service: str, operation: str, params: dict, expected: dict
) -> None:
    assert run_cost.units_of_call(service, operation, params, {}) == Counter(expected)


def test_emf_documents_name_their_series_and_logs_count_their_bytes() -> None:
    emf = (
        '{"_aws": {"Timestamp": 1, "CloudWatchMetrics": [{"Namespace": "shareplane", "Dimensions": '
        '[["Queue", "Team"]], "Metrics": [{"Name": "Requeues"}, {"Name": "RequeuesRefused"}]}]}, '
        '"Queue": "q", "Team": "ProdExp1", "Requeues": 1, "RequeuesRefused": 0}'
    )
    output = "\n".join([emf, emf, '{"level": "INFO", "message": "done"}'])
    series = run_cost.emf_series(output)
    dims = (("Queue", "q"), ("Team", "ProdExp1"))
    assert series == {("shareplane", "Requeues", dims), ("shareplane", "RequeuesRefused", dims)}
    gb, events = run_cost.log_units(output, platform_bytes=350)
    assert events == 3
    assert gb == (len(output.replace("\n", "").encode()) + 3 * run_cost.LOG_EVENT_OVERHEAD_BYTES + 350) / 1e9


def measured() -> run_cost.Measured:
    return run_cost.Measured(
        job_units=Counter(lambda_requests=40, dynamodb_write_units=100),
        tick_units=Counter(lambda_requests=48, getmetricdata_metrics=960),
        jobs=10,
        hours=4.0,
        mean_running_jobs=5.0,
        mean_job_hours=2.0,
        fixed=Counter(dashboards=1, kms_keys=1),
    )


def test_a_volume_scales_the_jobs_work_and_the_ticks_with_concurrency() -> None:
    m = measured()
    assert m.per_job() == {"lambda_requests": 4, "dynamodb_write_units": 10}
    assert m.per_hour() == {"lambda_requests": 12, "getmetricdata_metrics": 240}
    # 120 jobs a day of 2 hours: 10 running at once, twice the run's 5, so ticks cost twice as much
    daily = m.daily(120)
    assert daily["lambda_requests"] == 4 * 120 + 12 * 24 * 2
    assert daily["getmetricdata_metrics"] == 240 * 24 * 2
    # below the run's concurrency the ticks are never scaled down
    assert m.daily(12)["getmetricdata_metrics"] == 240 * 24


def test_a_month_is_priced_from_the_dated_table_and_names_its_largest_item() -> None:
    prices = run_cost.Prices.load(PRICES)
    assert prices.checked_against_price_list_api is False
    assert prices.as_of and all(s.startswith("https://aws.amazon.com/") for s in prices.sources.values())
    costs = run_cost.monthly(measured(), 120, prices)
    assert costs["dashboards"] == pytest.approx(3.00)
    assert costs["kms_keys"] == pytest.approx(1.00)
    assert costs["getmetricdata_metrics"] == pytest.approx(240 * 24 * 2 * 30 * 0.01 / 1000)
    name, share = run_cost.largest(costs)
    # 3.456 USD of metrics against the 3.00 USD dashboard
    assert name == "getmetricdata_metrics" and 0 < share < 1


def test_an_item_without_a_price_is_refused() -> None:
    prices = run_cost.Prices.load(PRICES)
    m = measured()
    m.job_units["carrier_pigeons"] = 1
    with pytest.raises(KeyError, match="carrier_pigeons"):
        run_cost.monthly(m, 100, prices)
