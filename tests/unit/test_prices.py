"""Prices in the shares config: validated, taken from the cached copy of AWS's prices in config/prices/, and
present for every instance type a team under a budget may use."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from shareplane.domain.config.shares import SharesConfig
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
    # ... and the copy says it was not checked against the Price List API
    assert "NOT checked against" in CACHE.read_text() and "Price List API" in CACHE.read_text()


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


def test_an_instance_type_a_budgeted_team_may_use_without_a_price_is_refused_naming_the_fix() -> None:
    # GIVEN ProdExp1 under a budget, allowed ml.c5.xlarge, which has no price
    prices = {"ml.p4d.24xlarge": {"on_demand_usd_per_hour": 37.688}}
    with pytest.raises(ConfigError) as caught:
        SharesConfig.model_validate(raw_config(prices=prices))
    assert caught.value.field == "prices.ml.c5.xlarge"
    assert "ProdExp1" in caught.value.problem and "budget" in caught.value.problem
    assert "on_demand_usd_per_hour" in caught.value.fix
    assert "teams.ProdExp1.allowed_instance_types" in caught.value.fix


def test_a_budgeted_team_with_no_allowlist_needs_every_cluster_type_priced() -> None:
    raw = raw_config(prices={"ml.p4d.24xlarge": {"on_demand_usd_per_hour": 37.688}})
    raw["teams"]["ProdExp2"] = {**raw["teams"]["ProdExp2"], "allowed_instance_types": []}
    raw["teams"]["ProdExp1"] = {**raw["teams"]["ProdExp1"], "allowed_instance_types": ["ml.p4d.24xlarge"]}
    with pytest.raises(ConfigError) as caught:
        SharesConfig.model_validate(raw)
    assert caught.value.field == "prices.ml.c5.xlarge" and "ProdExp2" in caught.value.problem


def test_a_team_without_a_budget_may_use_an_unpriced_type() -> None:
    prices = {"ml.p4d.24xlarge": {"on_demand_usd_per_hour": 37.688}}
    config = SharesConfig.model_validate(raw_config(prices=prices, budgets={"ProdExp2": {"monthly_usd": 10}}))
    assert config.on_demand_price("ml.c5.xlarge") is None
