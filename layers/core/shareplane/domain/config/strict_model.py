"""The base of every config model: a field the model does not have is an error, and a value never changes.

A misspelt setting refused at load, rather than silently ignored, is what lets ``ConfigError`` name it.
"""

from pydantic import BaseModel, ConfigDict


class StrictModel(BaseModel):
    """A config model: unknown fields refused, instances frozen (hashable, shareable between runs)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
