"""The local stack: embedded AWS (moto server) built from template.yaml, and an in-process runner."""

from .stack import LocalStack, StackSpec

__all__ = ["LocalStack", "StackSpec"]
