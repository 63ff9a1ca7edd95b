"""The shares config as the stack stores it: the SSM parameter template.yaml's SharesConfigParameter makes.

Read once a cold start (``bootstrap.Root.config``). The parameter holds config/shares.yaml as JSON,
so no YAML parser runs in Lambda; it is validated here, where it enters, as every adapter reads what
AWS answers into a domain value.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from ..domain.config.shares import SharesConfig
from ..domain.errors import ConfigError

if TYPE_CHECKING:
    from mypy_boto3_ssm import SSMClient

#: The environment variable that names the parameter (set by the template on every function).
PARAMETER_SETTING = "SHAREPLANE_CONFIG_PARAMETER"


def read_shares_config(ssm: SSMClient, name: str) -> SharesConfig:
    """The config the parameter ``name`` holds; ConfigError naming the setting when it does not exist.

    Any other refusal (AccessDenied above all) propagates: the permission guard reports it.
    """
    try:
        answer = ssm.get_parameter(Name=name)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") != "ParameterNotFound":
            raise
        raise ConfigError(
            PARAMETER_SETTING,
            f"names the SSM parameter {name}, which does not exist",
            "deploy the stack: its SharesConfigParameter holds config/shares.yaml",
        ) from None
    return SharesConfig.model_validate_json(answer["Parameter"]["Value"])
