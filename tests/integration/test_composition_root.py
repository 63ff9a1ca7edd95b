"""The composition root: settings from the mapping it is given, parts built once on first use, overrides."""

from __future__ import annotations

import pytest
from shareplane import bootstrap
from shareplane.bootstrap import Root
from shareplane.domain.errors import ConfigError

from tests.aws import store_shares_config
from tests.fakes.failure_world import World, shares_config


def test_an_override_is_the_part_itself_and_nothing_unused_is_built() -> None:
    client = object()
    root = Root({"TABLE_NAME": "jobs"}, dynamodb=client)
    # WHEN the job store is asked for
    store = root.store
    # THEN it is built on the client given, in the table of the mapping, and no other client exists
    assert store._client is client and store._table == "jobs"  # noqa: SLF001 - what the adapter was given
    assert not {"session", "batch", "s3", "sns", "sqs", "sagemaker", "scheduler"} & set(vars(root))


def test_each_part_is_built_once_and_the_watch_shares_the_failure_paths_ports() -> None:
    ports = World().ports
    root = Root({}, failure_ports=ports, dynamodb=object(), table_name="t")
    assert root.store is root.store
    assert root.watch_ports is root.failure_ports is ports


def test_an_unknown_part_is_refused_naming_the_parts_there_are() -> None:
    with pytest.raises(TypeError) as refused:
        Root({}, failure_portz=object())
    assert "failure_portz" in str(refused.value) and "failure_ports" in str(refused.value)


def test_settings_come_from_the_mapping_not_the_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TABLE_NAME", "the-process-table")
    monkeypatch.setenv("RECLAIM_DRY_RUN", "true")
    root = Root({"TABLE_NAME": "given", "RECLAIM_DRY_RUN": "no"})
    assert root.table_name == "given" and root.flag("RECLAIM_DRY_RUN", True) is False
    assert root.flag("RECLAIM_ENABLED", True) is True  # unset: the default


def test_a_use_case_that_needs_the_config_names_the_setting_when_it_is_missing() -> None:
    root = Root({"TABLE_NAME": "t"}, dynamodb=object(), s3=object(), batch=object(), sns=object())
    with pytest.raises(ConfigError) as missing:
        root.submit_ports  # noqa: B018 - building the bundle is the act under test
    assert (
        missing.value.field == "SHAREPLANE_CONFIG_PARAMETER" and "SharesConfigParameter" in missing.value.fix
    )


def test_the_config_is_read_from_the_ssm_parameter_the_setting_names(aws_credentials: None) -> None:
    import boto3
    from moto import mock_aws

    with mock_aws():
        setting = store_shares_config(
            boto3.client("ssm", region_name="us-east-1"), shares_config().model_dump_json()
        )
        configured = Root(
            {"TABLE_NAME": "t", **setting, "ALERTS_TOPIC_ARN": "a"},
            dynamodb=object(),
            s3=object(),
            batch=object(),
            sns=object(),
        )
        assert configured.submit_ports.config.teams == shares_config().teams


def test_a_parameter_that_does_not_exist_is_a_config_error_naming_it(aws_credentials: None) -> None:
    from moto import mock_aws

    with mock_aws():
        root = Root({"TABLE_NAME": "t", "SHAREPLANE_CONFIG_PARAMETER": "/gone/shares-config"})
        with pytest.raises(ConfigError) as missing:
            root.require_config()
    assert missing.value.field == "SHAREPLANE_CONFIG_PARAMETER" and "/gone/shares-config" in str(
        missing.value
    )


def test_an_endpoint_override_yields_to_the_services_own_variable(aws_credentials: None) -> None:
    environ = {"AWS_ENDPOINT_URL_BATCH": "http://127.0.0.1:9001"}
    root = Root(environ, endpoint_url="http://127.0.0.1:4566")
    # The emulator's variable wins for Batch, as it wins over AWS_ENDPOINT_URL in boto3 ...
    assert root.batch.meta.endpoint_url == "http://127.0.0.1:9001"
    # ... and every other service goes to the endpoint given
    assert root.dynamodb.meta.endpoint_url == "http://127.0.0.1:4566"
    # Without an endpoint boto3 resolves its own (the variable still applies, through boto3)
    assert Root(environ).endpoint_for("dynamodb") is None


def test_installed_roots_nest_and_the_previous_one_comes_back() -> None:
    outer, inner = Root({}), Root({})
    with bootstrap.installed(outer):
        assert bootstrap.root() is outer
        with bootstrap.installed(inner):
            assert bootstrap.root() is inner
        assert bootstrap.root() is outer


def test_the_clis_root_is_the_functions_root_with_the_commands_options(aws_credentials: None) -> None:
    from shareplane_cli.aws import Target

    # WHEN a command names a region, an endpoint and a table
    root = Target(region="eu-west-1", endpoint="http://127.0.0.1:4566").root(table_name="jobs")
    # THEN the adapters the functions use are built on a client of that region, at that endpoint
    store = root.store
    client = store._client  # noqa: SLF001 - what the adapter was given
    assert (client.meta.region_name, client.meta.endpoint_url) == ("eu-west-1", "http://127.0.0.1:4566")
    assert store._table == "jobs"  # noqa: SLF001


def test_the_roots_clients_read_timestamps_in_utc_as_the_same_instants(aws_credentials: None) -> None:
    from datetime import UTC, datetime, timedelta

    from moto import mock_aws

    stamps = [datetime(2026, 1, 31, 23, 59, tzinfo=UTC) + timedelta(minutes=m) for m in range(3)]
    with mock_aws():
        root = Root({})
        metric = {
            "Namespace": "Test",
            "MetricName": "GPUUtilization",
            "Dimensions": [{"Name": "Host", "Value": "h"}],
        }
        root.cloudwatch.put_metric_data(
            Namespace="Test",
            MetricData=[
                {
                    "MetricName": "GPUUtilization",
                    "Dimensions": metric["Dimensions"],
                    "Timestamp": at,
                    "Value": 1.0,
                }
                for at in stamps
            ],
        )
        # WHEN the root's CloudWatch client reads them back (JSON protocol: epoch seconds on the wire)
        result = root.cloudwatch.get_metric_data(
            MetricDataQueries=[
                {"Id": "g", "MetricStat": {"Metric": metric, "Period": 60, "Stat": "Average"}}
            ],
            StartTime=stamps[0],
            EndTime=stamps[-1] + timedelta(minutes=1),
            ScanBy="TimestampAscending",
        )["MetricDataResults"][0]["Timestamps"]
        # THEN each is the instant written, dated in UTC (not botocore's costly local zone)
        assert result == stamps and all(at.tzinfo is UTC for at in result)
        # ... and a client any other root builds on the same session does too
        assert (
            Root({}, session=root.session)
            .client("cloudwatch")
            .get_metric_data(
                MetricDataQueries=[
                    {"Id": "g", "MetricStat": {"Metric": metric, "Period": 60, "Stat": "Average"}}
                ],
                StartTime=stamps[0],
                EndTime=stamps[-1] + timedelta(minutes=1),
            )["MetricDataResults"][0]["Timestamps"][0]
            .tzinfo
            is UTC
        )


def test_a_timestamp_in_words_is_read_as_botocore_reads_it() -> None:
    from datetime import UTC, datetime

    assert bootstrap.utc_timestamp("2026-02-01T00:00:00Z") == datetime(2026, 2, 1, tzinfo=UTC)
    assert bootstrap.utc_timestamp(1769904000) == datetime(2026, 2, 1, tzinfo=UTC)
