"""Procrastinate's log records in the arena's log keys: the job queue logs each job it runs (and
how it ended) with a ``job`` dict of its own in ``extra``; ``--log-format json`` lines carry only
the documented keys (referee/logs.py), so this gives them the job's id and, for the arena's tasks,
the game and tournament the job is about (docs/operations.md, "Logs")."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any


def job_fields(record: logging.LogRecord) -> Mapping[str, Any]:
    """``job_id``, ``tournament``, ``game`` and ``game_id`` of a procrastinate record's ``job`` extra
    (a play_game job's arguments are queue.GameJob.to_args'); nothing for any other record."""
    job = getattr(record, "job", None)
    if not isinstance(job, Mapping):
        return {}
    fields: dict[str, Any] = {}
    if job.get("id") is not None:
        fields["job_id"] = job["id"]
    kwargs = job.get("task_kwargs")
    if isinstance(kwargs, Mapping):
        if "tournament_id" in kwargs:
            fields["tournament"] = kwargs["tournament_id"]
        if "number" in kwargs:
            fields["game"] = kwargs["number"]
        setup = kwargs.get("setup")
        if isinstance(setup, Mapping) and isinstance(setup.get("game_id"), str):
            fields["game_id"] = setup["game_id"]  # the protocol's game id (kwargs' game_id is the row's)
    return fields


__all__ = ["job_fields"]
