"""What reading the shares config from its SSM parameter adds to a cold start (docs/design/cold-start.md).

Each sample is a fresh interpreter, as a cold start is: it imports the composition root, builds the
DynamoDB client every handler builds first, then times what ``Root.config`` adds on top: the SSM
client, the first GetParameter (moto in server mode on loopback, as the local stack serves it) and
the validation. Beside it, the validation alone of the same JSON, which is what the config cost when
it came in an environment variable. The figures are this machine's; SSM's own latency in a region is
not measured here and comes on top.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import textwrap

import pytest
import yaml

from tests.conftest import REPO

SAMPLES = 15
PARAMETER = "/shareplane-bench/shares-config"
#: Set before the first run: the median cold start pays at most this much more for the config, in seconds.
TARGET_SECONDS = 0.25

_CHILD = textwrap.dedent(
    """
    import json, sys, time
    from shareplane.bootstrap import Root
    from shareplane.domain.config.shares import SharesConfig

    endpoint, name, raw = sys.argv[1], sys.argv[2], sys.argv[3]
    a = time.perf_counter()
    SharesConfig.model_validate(json.loads(raw))  # the former path: the config in a variable
    b = time.perf_counter()
    root = Root({"SHAREPLANE_CONFIG_PARAMETER": name, "TABLE_NAME": "t"}, endpoint_url=endpoint)
    root.dynamodb  # every handler's first client
    c = time.perf_counter()
    root.ssm
    d = time.perf_counter()
    assert root.config is not None and root.config.teams
    e = time.perf_counter()
    print(json.dumps({"variable": b - a, "client": d - c, "read": e - d, "parameter": e - c}))
    """
)


@pytest.mark.bench
def test_reading_the_config_from_ssm_adds_little_to_a_cold_start() -> None:
    from moto.server import ThreadedMotoServer

    raw = json.dumps(yaml.safe_load((REPO / "config" / "shares.yaml").read_text()), separators=(",", ":"))
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        env = {
            **os.environ,
            "AWS_ACCESS_KEY_ID": "bench",
            "AWS_SECRET_ACCESS_KEY": "bench",
            "AWS_DEFAULT_REGION": "us-east-1",
            "PYDANTIC_DISABLE_PLUGINS": "__all__",  # as the template's functions run
        }
        import boto3

        boto3.client(
            "ssm",
            endpoint_url=endpoint,
            region_name="us-east-1",
            aws_access_key_id="bench",
            aws_secret_access_key="bench",
        ).put_parameter(Name=PARAMETER, Value=raw, Type="String", Tier="Advanced", Overwrite=True)
        samples = [
            json.loads(
                subprocess.run(
                    [sys.executable, "-c", _CHILD, endpoint, PARAMETER, raw],
                    env=env,
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout
            )
            for _ in range(SAMPLES)
        ]
    finally:
        server.stop()
    medians = {k: statistics.median(s[k] for s in samples) for k in samples[0]}
    spread = {k: (min(s[k] for s in samples), max(s[k] for s in samples)) for k in samples[0]}
    print(
        f"\n{len(raw.encode())} bytes of config, {SAMPLES} cold starts: "
        + ", ".join(
            f"{k} median {v * 1000:.1f} ms ({spread[k][0] * 1000:.1f}-{spread[k][1] * 1000:.1f})"
            for k, v in medians.items()
        )
    )
    assert medians["parameter"] <= TARGET_SECONDS
