"""What shareplane costs to run on AWS, from the AWS calls the local stack records for jobs' whole lives.

Run with `make bench`. Two local-stack runs are metered call by call (the calls the functions make,
as the IAM replay records them, with their requests and answers; each invocation's records, time and
log output):

- the demo's workload (the blog's 39 jobs on 100 ml.p4d.24xlarge, fair-share, with its failures,
  reclaim and idle job) played whole, every event through the real handlers: what record_state,
  handle_failure and reclaim_capacity do per job, and what the 5-minute schedules do per hour;
- spec drops through the submit path (submit_job, then record_uploader with CloudTrail's event): what
  submitting costs per job (the demo submits to Batch directly).

``shareplane_cli.run_cost`` turns the calls into billable units and prices them with
config/prices/aws-services-us-east-1.yaml at 1,000, 10,000 and 100,000 jobs a day. The figures are
printed and written to reports/bench/run-cost.json; docs/operate/cost-to-run.md quotes them.
Asserted: every unit has a price, every item is counted, and the largest item is named.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from shareplane.domain.config.shares import SharesConfig
from shareplane_cli import run_cost
from shareplane_cli.demo.run import run_live
from shareplane_cli.demo.workload import blog_workload
from shareplane_cli.local import aws_calls
from shareplane_cli.local.aws_calls import AwsCall
from shareplane_cli.local.runner import FunctionRunner

from tests.conftest import REPO
from tests.template import function_ids, raw_template, resources

pytestmark = pytest.mark.bench

PRICES = REPO / "config" / "prices" / "aws-services-us-east-1.yaml"
VOLUMES = (1_000, 10_000, 100_000)
SCHEDULED = "Scheduled Event"
#: The Lambda runtime's own lines per invocation (START, END, REPORT with its X-Ray segment ids):
#: about 350 bytes (assumed: the runtime writes them on AWS only).
PLATFORM_LOG_BYTES = 350
#: Lambda's SQS event source long-polls each queue while it is empty: assumed 5 pollers, each a
#: 20-second ReceiveMessage, so 15 requests a minute per function queue (not measured on AWS).
EMPTY_RECEIVES_PER_MINUTE = 15


class Meter:
    """Counts the billable units of every invocation and call, split into jobs' work and ticks."""

    def __init__(self, memory_gb: float) -> None:
        self.memory_gb = memory_gb
        self.jobs: Counter[str] = Counter()
        self.ticks: Counter[str] = Counter()
        self.series: set[Any] = set()
        self.seconds: Counter[str] = Counter()
        self.invocations: Counter[str] = Counter()
        self.functions: set[str] = set()
        self._tick = False
        self._only: set[str] | None = None

    def counting(self, function: str) -> bool:
        return self._only is None or function in self._only

    def units(self) -> Counter[str]:
        return self.ticks if self._tick else self.jobs

    def invoke(self, original: Any, runner: FunctionRunner, function: Any, event: dict[str, Any]) -> Any:
        records = event.get("Records", [])
        self._tick = any(SCHEDULED in r.get("body", "") for r in records)
        started = time.perf_counter()
        response, output = original(runner, function, event)
        elapsed = time.perf_counter() - started
        name = function.logical_id
        if self.counting(name):
            units = self.units()
            self.functions.add(name)
            self.invocations[name] += 1
            self.seconds[name] += elapsed
            units["lambda_requests"] += 1
            units["lambda_gb_seconds"] += elapsed * self.memory_gb
            units["xray_traces"] += 1
            gb, _ = run_cost.log_units(output, PLATFORM_LOG_BYTES)
            units["logs_ingested_gb"] += gb
            # the event source's receive and delete, and each record's delivery into the queue
            units["sqs_requests"] += 2 + len(records)
            self.series |= run_cost.emf_series(output)
        self._tick = False
        return response, output

    def call(self, function: str, service: str, operation: str, params: Any, parsed: Any) -> None:
        if self.counting(function):
            units = run_cost.units_of_call(service, operation, params, parsed)
            # every alert also reaches the one email subscription (the template's AlertEmail), assumed
            units["sns_email_deliveries"] += units["sns_publishes"]
            self.units().update(units)

    def observe(self, call: AwsCall) -> None:
        if self.counting(call.function):
            kms = sum(1 for a in call.authorizations if a.action.startswith("kms:"))
            self.units()["kms_requests"] += kms


@pytest.fixture
def metered(monkeypatch: pytest.MonkeyPatch) -> Iterator[Meter]:
    """A meter on every invocation the local runner makes and every call a function makes."""
    (memory,) = {raw_template()["Globals"]["Function"]["MemorySize"]}
    meter = Meter(memory / 1024)
    invoke = FunctionRunner.invoke
    monkeypatch.setattr(
        FunctionRunner, "invoke", lambda self, function, event: meter.invoke(invoke, self, function, event)
    )
    after_call = aws_calls.AwsCallRecorder._after_call

    def spy(self: Any, model: Any, context: Any, parsed: Any, **kwargs: Any) -> None:
        after_call(self, model, context, parsed, **kwargs)
        acting = self._acting
        if acting is not None and threading.get_ident() == self._thread:
            params = context.get(aws_calls._PARAMS_KEY, {})
            meter.call(acting[0], model.service_model.service_name, model.name, params, parsed or {})

    monkeypatch.setattr(aws_calls.AwsCallRecorder, "_after_call", spy)
    aws_calls.observers.append(meter.observe)
    yield meter
    aws_calls.observers.remove(meter.observe)


def _submit_path(meter: Meter, drops: int) -> int:
    """Drops of the example spec through submit_job and record_uploader; returns the jobs submitted."""
    from shareplane_cli.local import LocalStack, StackSpec

    spec = (REPO / "config" / "jobs" / "prodexp1-bert.yaml").read_bytes()
    meter._only = {"SubmitJobFunction", "RecordUploaderFunction"}
    submitted = Counter[str]()
    aws_calls.observers.append(
        lambda c: submitted.update([c.function]) if c.operation == "SubmitServiceJob" else None
    )
    try:
        with LocalStack(StackSpec(REPO / "template.yaml")) as stack:
            s3, bucket = stack.client("s3"), stack.outputs["DropBucketName"]
            for i in range(drops):
                s3.put_object(Bucket=bucket, Key=f"submit/ProdExp1/sweep-{i}.yaml", Body=spec)
            runner = FunctionRunner(stack)
            uploader = next(f for f in stack.functions if f.logical_id == "RecordUploaderFunction")
            while runner.poll_once(uploader):
                pass
            submit = next(f for f in stack.functions if f.logical_id == "SubmitJobFunction")
            while runner.poll_once(submit):
                pass
    finally:
        aws_calls.observers.pop()
        meter._only = None
    return submitted["SubmitJobFunction"]


def _fixed(series: int) -> Counter[str]:
    """The monthly items the template fixes: its dashboard, alarm metrics, keys, and the idle polls."""
    template = raw_template()
    alarm_metrics = 0
    for alarm in resources(template, "AWS::CloudWatch::Alarm").values():
        props = alarm["Properties"]
        stats = [m for m in props.get("Metrics", []) if "MetricStat" in m]
        alarm_metrics += len(stats) if stats else 1
    queues = sum(
        1
        for f in resources(template, "AWS::Serverless::Function").values()
        if any(e.get("Type") == "SQS" for e in f["Properties"].get("Events", {}).values())
    )
    return Counter(
        {
            "custom_metric_series": series,
            "dashboards": len(resources(template, "AWS::CloudWatch::Dashboard")),
            "alarm_metrics": alarm_metrics,
            "kms_keys": len(resources(template, "AWS::KMS::Key")),
            "sqs_empty_receives": queues * EMPTY_RECEIVES_PER_MINUTE * 60 * 24 * run_cost.DAYS_PER_MONTH,
        }
    )


def _running_hours(records: list[dict[str, Any]]) -> float:
    """Job-hours run: each job from its first RUNNING to its stop."""
    total = 0.0
    for record in records:
        starts = [h["at"] for h in record.get("history", []) if h.get("status") == "RUNNING"]
        if starts and record.get("stoppedAt"):
            total += max(0.0, (record["stoppedAt"] - min(starts)) / 3_600_000)
    return total


def test_what_shareplane_costs_to_run(metered: Meter) -> None:
    config = SharesConfig.model_validate(yaml.safe_load((REPO / "config" / "shares.yaml").read_text()))
    jobs = blog_workload()
    started = time.monotonic()
    live = run_live(jobs, config, config.mode, REPO / "template.yaml")
    demo_seconds = time.monotonic() - started
    hours = live.end / 3600
    job_hours = _running_hours(live.records)
    before = Counter(metered.jobs)
    submitted = _submit_path(metered, drops=4)
    submit_units = metered.jobs - before
    measured = run_cost.Measured(
        job_units=Counter(before),
        tick_units=Counter(metered.ticks),
        jobs=len(live.records),
        hours=hours,
        mean_running_jobs=job_hours / hours,
        mean_job_hours=job_hours / len(live.records),
    )
    # the submit path's units per submitted job, added to every job of the demo
    for name, value in submit_units.items():
        measured.job_units[name] += value / submitted * measured.jobs
    # each job is one drop: the user's PutObject and the upload trail's data event (an upper bound:
    # a drop may hold several jobs)
    measured.job_units["s3_tier1_requests"] += measured.jobs
    measured.job_units["cloudtrail_data_events"] += measured.jobs
    measured.fixed = _fixed(len(metered.series))
    prices = run_cost.Prices.load(PRICES)
    assert prices.checked_against_price_list_api is False
    results: dict[str, Any] = {
        "measured": {
            "jobs": measured.jobs,
            "virtual_hours": round(hours, 3),
            "mean_running_jobs": round(measured.mean_running_jobs, 2),
            "mean_job_hours": round(measured.mean_job_hours, 3),
            "submitted_through_drops": submitted,
            "invocations": dict(metered.invocations),
            "mean_invocation_seconds": {
                f: round(metered.seconds[f] / n, 4) for f, n in metered.invocations.items()
            },
            "custom_metric_series": len(metered.series),
            "per_job": {k: round(v, 6) for k, v in sorted(measured.per_job().items())},
            "per_hour": {k: round(v, 6) for k, v in sorted(measured.per_hour().items())},
            "fixed_per_month": dict(measured.fixed),
            "demo_wall_seconds": round(demo_seconds, 1),
        },
        "prices_as_of": prices.as_of,
        "volumes": {},
    }
    print(
        f"\nwhat shareplane costs to run (prices of {prices.as_of}, not checked against the Price List API)"
    )
    print(json.dumps(results["measured"], indent=1))
    for volume in VOLUMES:
        costs = run_cost.monthly(measured, volume, prices)
        name, share = run_cost.largest(costs)
        month = sum(costs.values())
        results["volumes"][str(volume)] = {
            "usd_per_month": round(month, 2),
            "usd_per_1000_jobs": round(month / (volume * run_cost.DAYS_PER_MONTH) * 1000, 4),
            "largest": name,
            "largest_share": round(share, 4),
            "items": {k: round(v, 2) for k, v in sorted(costs.items(), key=lambda kv: -kv[1])},
        }
        print(f"{volume:>7,} jobs/day: {month:,.2f} USD a month; largest {name} ({share:.1%})")
        for item, usd in sorted(costs.items(), key=lambda kv: -kv[1]):
            print(f"    {item:<24} {usd:>12,.2f}")
        assert month > 0 and costs[name] > 0
    out = REPO / "reports" / "bench" / "run-cost.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1) + "\n")
    # every function of the stack was metered, and the counted items are the priced ones
    assert metered.functions >= function_ids()
    for item in ("dynamodb_write_units", "dynamodb_read_units", "sqs_requests", "getmetricdata_metrics"):
        assert measured.job_units[item] + measured.tick_units[item] > 0, item
