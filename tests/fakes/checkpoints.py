"""CheckpointReader (adapters/s3_checkpoints.py) in memory."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class FakeCheckpoints:
    """Newest checkpoint time per S3 prefix, and every prefix read."""

    newest_at: dict[str, float] = field(default_factory=dict)
    reads: list[str] = field(default_factory=list)

    def newest(self, s3_uri: str, at_or_before: float | None = None) -> float | None:
        self.reads.append(s3_uri)
        found = self.newest_at.get(s3_uri)
        return found if found is None or at_or_before is None or found <= at_or_before else None
