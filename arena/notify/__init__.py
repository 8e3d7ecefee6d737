"""PLACEHOLDER, replaced by branch n28 (issue 28, notifications): ``notify`` durably enqueues a
webhook event there. Here it does nothing, so challenges can call it where n28's will be."""

from __future__ import annotations

from typing import Any


def notify(store: Any, event: str, user_id: int | None, payload: dict[str, Any]) -> None:
    """Enqueue ``event`` for ``user_id`` (None: the operator's) with ``payload``: a no-op until n28."""

