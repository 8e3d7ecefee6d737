"""The signature of a delivery: ``X-Arena-Signature: sha256=<hex>``, the HMAC-SHA256 of the
request's body under the webhook's secret, so a receiver knows the arena sent it."""

from __future__ import annotations

import hashlib
import hmac

HEADER = "X-Arena-Signature"


def signature(secret: str, body: bytes) -> str:
    """The header's value for ``body``."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def verify(secret: str, body: bytes, header: str) -> bool:
    """Whether ``header`` is ``body``'s signature under ``secret`` (as docs/notifications.md's snippet)."""
    return hmac.compare_digest(signature(secret, body), header)
