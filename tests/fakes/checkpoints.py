"""CheckpointReader (adapters/s3_checkpoints.py S3Checkpoints) in memory."""

from __future__ import annotations

from dataclasses import dataclass, field

from shareplane.adapters.s3_checkpoints import split_s3_uri


@dataclass
class FakeCheckpoints:
    """Checkpoint objects (``s3://bucket/key`` -> when written, epoch seconds), and every prefix read.

    Read as S3Checkpoints reads a bucket: the URI is a folder (a "/" is added when it has none), every
    object under it counts, at any depth, and the newest one written by the bound wins.
    """

    objects: dict[str, float] = field(default_factory=dict)
    reads: list[str] = field(default_factory=list)

    def write(self, s3_uri: str, at: float) -> None:
        """Put one checkpoint object, written at ``at``."""
        self.objects[s3_uri] = at

    def newest(self, s3_uri: str, at_or_before: float | None = None) -> float | None:
        self.reads.append(s3_uri)
        try:
            bucket, prefix = split_s3_uri(s3_uri)
        except ValueError:
            return None
        if prefix and not prefix.endswith("/"):
            prefix += "/"
        times = [
            at
            for uri, at in self.objects.items()
            if split_s3_uri(uri)[0] == bucket
            and split_s3_uri(uri)[1].startswith(prefix)
            and (at_or_before is None or at <= at_or_before)
        ]
        return max(times, default=None)
