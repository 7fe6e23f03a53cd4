"""Rate limiting helpers."""

from .bucket import TokenBucket
from .keyed import KeyedLimiter

__all__ = ["TokenBucket", "KeyedLimiter"]
