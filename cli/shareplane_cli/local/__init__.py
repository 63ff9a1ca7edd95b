"""The local stack: embedded AWS (moto server) built from template.yaml, plus an in-process function runner."""

from .stack import LocalStack, StackSpec

__all__ = ["LocalStack", "StackSpec"]
