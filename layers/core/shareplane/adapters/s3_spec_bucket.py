"""The drop bucket on S3: exact-version reads, copies, JSON answers and version deletes."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict

from botocore.exceptions import ClientError

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_s3.type_defs import CopySourceTypeDef

#: Error codes that mean "this object or version does not exist" (HEAD has no body, hence the numbers).
_MISSING = {"404", "NoSuchKey", "NoSuchVersion", "NotFound", "NoSuchBucket"}
#: A version id that is syntactically wrong is answered with 400 InvalidArgument: it cannot exist.
_BAD_VERSION = {"InvalidArgument", "400"}


class _VersionArgument(TypedDict, total=False):
    """An S3 call's VersionId keyword: absent (latest version) rather than None, which boto3 refuses."""

    VersionId: str


@dataclass(frozen=True)
class S3ObjectHead:
    """HEAD of one object version."""

    size: int
    version_id: str | None
    etag: str | None
    last_modified_ms: int


def _missing(exc: ClientError, version_id: str | None) -> bool:
    code = str(exc.response.get("Error", {}).get("Code"))
    return code in _MISSING or (version_id is not None and code in _BAD_VERSION)


class S3SpecBucket:
    """SpecBucket on S3 with an injected client."""

    def __init__(self, client: S3Client) -> None:
        self._client = client

    @staticmethod
    def _version(version_id: str | None) -> _VersionArgument:
        return {"VersionId": version_id} if version_id else {}

    def head(self, bucket: str, key: str, version_id: str | None) -> S3ObjectHead | None:
        """HEAD the version; None when it does not exist (or is a delete marker)."""
        try:
            response = self._client.head_object(Bucket=bucket, Key=key, **self._version(version_id))
        except ClientError as exc:
            if _missing(exc, version_id) or exc.response.get("Error", {}).get("Code") == "405":
                return None  # 405: the version is a delete marker
            raise
        if response.get("DeleteMarker"):
            return None
        return S3ObjectHead(
            size=int(response.get("ContentLength", 0)),
            version_id=response.get("VersionId"),
            etag=(response.get("ETag") or "").strip('"') or None,
            last_modified_ms=int(response["LastModified"].timestamp() * 1000),
        )

    def read(self, bucket: str, key: str, version_id: str | None) -> bytes | None:
        """The version's bytes; None when it vanished since HEAD."""
        try:
            response = self._client.get_object(Bucket=bucket, Key=key, **self._version(version_id))
        except ClientError as exc:
            if _missing(exc, version_id):
                return None
            raise
        return response["Body"].read()

    def copy(self, bucket: str, key: str, version_id: str | None, dest_key: str) -> None:
        """Server-side copy of exactly this version (metadata and content type kept)."""
        source: CopySourceTypeDef = {"Bucket": bucket, "Key": key, **self._version(version_id)}
        self._client.copy_object(Bucket=bucket, Key=dest_key, CopySource=source, MetadataDirective="COPY")

    def put_json(self, bucket: str, key: str, document: Mapping[str, object]) -> None:
        """Write a JSON document (UTF-8, indented for people reading it in the console)."""
        body = json.dumps(document, indent=2, sort_keys=False, default=str).encode("utf-8")
        self._client.put_object(Bucket=bucket, Key=key, Body=body, ContentType="application/json")

    def get_json(self, bucket: str, key: str) -> object | None:
        """A JSON document, or None when absent or not JSON."""
        try:
            response = self._client.get_object(Bucket=bucket, Key=key)
        except ClientError as exc:
            if _missing(exc, None):
                return None
            raise
        try:
            document: object = json.loads(response["Body"].read())
        except ValueError:
            return None
        return document

    def delete(self, bucket: str, key: str, version_id: str | None) -> None:
        """Delete exactly the version that was read, so a newer upload of the same key is untouched."""
        self._client.delete_object(Bucket=bucket, Key=key, **self._version(version_id))
