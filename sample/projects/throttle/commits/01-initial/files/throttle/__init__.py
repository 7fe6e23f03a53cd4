"""Rate limiting helpers."""

from .bucket import TokenBucket

__all__ = ["TokenBucket"]
