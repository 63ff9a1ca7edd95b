"""When a trainer last checkpointed: the newest LastModified under its CheckpointConfig.S3Uri (S3)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from botocore.exceptions import ClientError

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

logger = logging.getLogger(__name__)

#: Answers that mean "no checkpoint can be read here": reclaim then counts the work lost since dispatch.
_UNREADABLE = frozenset({"NoSuchBucket", "AccessDenied", "AllAccessDisabled"})


def split_s3_uri(uri: str) -> tuple[str, str]:
    """``s3://bucket/some/prefix/`` -> (bucket, prefix)."""
    parsed = urlparse(uri)
    if parsed.scheme != "s3" or not parsed.netloc:
        raise ValueError(f"{uri!r} is not an s3:// URI")
    return parsed.netloc, parsed.path.lstrip("/")


class S3Checkpoints:
    """CheckpointReader on an injected S3 client: ListObjectsV2 under the folder, newest LastModified."""

    def __init__(self, client: S3Client) -> None:
        self._client = client

    def newest(self, s3_uri: str, at_or_before: float | None = None) -> float | None:
        """Epoch seconds of the newest object under ``s3_uri`` written by ``at_or_before`` (None: any).

        None when there is none or the bucket is unreadable.
        """
        try:
            bucket, prefix = split_s3_uri(s3_uri)
        except ValueError:
            return None
        # Listed as a folder: ".../run-1" must not see ".../run-10/"'s files (a key prefix would).
        if prefix and not prefix.endswith("/"):
            prefix += "/"
        newest: float | None = None
        try:
            pages = self._client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
            for page in pages:
                for item in page.get("Contents", []):
                    at = item["LastModified"].timestamp()
                    if at_or_before is not None and at > at_or_before:
                        continue  # written after the decision's time: not part of the state it decides on
                    newest = at if newest is None or at > newest else newest
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code")
            if code not in _UNREADABLE:
                raise
            logger.warning("checkpoints unreadable", extra={"uri": s3_uri, "error": code})
            return None
        return newest
