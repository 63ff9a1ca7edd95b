"""Prices in the shares config: validated, and taken from the cached copy of AWS's prices in config/prices/."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from shareplane.domain.config import SharesConfig
from shareplane.domain.errors import ConfigError

from tests.conftest import REPO

CONFIG = REPO / "config" / "shares.yaml"
CACHE = REPO / "config" / "prices" / "sagemaker-training-us-east-1.yaml"


def raw_config(**changes: Any) -> dict[str, Any]:
    return {**yaml.safe_load(CONFIG.read_text()), **changes}


def test_the_shares_config_prices_every_instance_type_as_the_cached_copy_lists_it() -> None:
    cache = yaml.safe_load(CACHE.read_text())
    config = SharesConfig.model_validate(raw_config())
    cluster_types = set(config.instance_types) | set(config.queues.cpu_instance_types)
    assert set(config.prices) == cluster_types
    for instance_type, price in config.prices.items():
        assert price.on_demand_usd_per_hour == cache["on_demand_usd_per_hour"][instance_type]
    assert cache["source"].startswith("https://aws.amazon.com/sagemaker/pricing")


def test_on_demand_price_is_none_for_an_unpriced_type() -> None:
    config = SharesConfig.model_validate(raw_config())
    assert config.on_demand_price("ml.p4d.24xlarge") == 37.688
    assert config.on_demand_price("ml.g5.xlarge") is None
    assert config.on_demand_price(None) is None


def test_a_spot_price_above_on_demand_is_refused() -> None:
    prices = {"ml.p4d.24xlarge": {"on_demand_usd_per_hour": 10.0, "spot_usd_per_hour": 12.0}}
    with pytest.raises(ConfigError) as caught:
        SharesConfig.model_validate(raw_config(prices=prices))
    assert caught.value.field == "prices.spot_usd_per_hour"
