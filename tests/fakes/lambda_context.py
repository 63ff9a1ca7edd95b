"""A Lambda context, as the handlers' Powertools batch processor and logger read it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class FakeLambdaContext:
    """The attributes Powertools reads from a Lambda context."""

    function_name: str = "shareplane-test"
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:shareplane-test"
    aws_request_id: str = "00000000-0000-4000-8000-000000000000"

    def get_remaining_time_in_millis(self) -> int:
        return 30_000
