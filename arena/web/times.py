"""Times as people read them: "3 min ago", with the exact UTC time on hover. Pages show every time
through the ``ago`` filter (a ``<time datetime=ISO title=EXACT>`` element), computed on the server
against the answer's own ``generated_at``, so it is right without script and the same for every
reader of one answer; the JSON keeps the ISO times. Times are never in the future here (a clock a
little ahead on a player's machine says "just now")."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from jinja2 import pass_context
from markupsafe import Markup, escape

JUST_NOW_S = 10  # closer than this is "just now"
MINUTE, HOUR, DAY = 60, 3600, 86400


def parse_time(value: Any) -> datetime | None:
    """An ISO 8601 time (a naive one is UTC, as the store writes them) or a datetime, as an aware
    datetime; None for anything else."""
    if isinstance(value, datetime):
        found = value
    elif isinstance(value, str) and value:
        try:
            found = datetime.fromisoformat(value)
        except ValueError:
            return None
    else:
        return None
    return found if found.tzinfo is not None else found.replace(tzinfo=UTC)


def _count(n: int, unit: str) -> str:
    return f"{n} {unit}{'' if n == 1 else 's'} ago"


def ago(then: datetime, now: datetime) -> str:
    """How long before ``now`` ``then`` was, in the largest unit that fits: ``just now``, ``42 s
    ago``, ``3 min ago``, ``5 h ago``, ``2 days ago``, ``4 months ago``, ``1 year ago`` (whole units,
    rounded down)."""
    seconds = int((now - then).total_seconds())
    if seconds < JUST_NOW_S:
        return "just now"
    if seconds < MINUTE:
        return f"{seconds} s ago"
    if seconds < HOUR:
        return f"{seconds // MINUTE} min ago"
    if seconds < DAY:
        return f"{seconds // HOUR} h ago"
    days = seconds // DAY
    if days < 30:
        return _count(days, "day")
    if days < 365:
        return _count(days // 30, "month")
    return _count(days // 365, "year")


def exact(then: datetime) -> str:
    """``2025-03-01 14:03:07 UTC``: the hover text."""
    return then.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def time_element(value: Any, now: datetime | None) -> Markup:
    """``<time datetime="ISO" title="EXACT">3 min ago</time>`` for ``value`` (an ISO time, as the
    pages' data holds them), or ``—`` when there is no time; without ``now``, the exact time."""
    then = parse_time(value)
    if then is None:
        return Markup("—")
    shown = ago(then, now) if now is not None else exact(then)
    iso = value if isinstance(value, str) else then.isoformat()
    return Markup('<time datetime="{}" title="{}">{}</time>').format(escape(iso), exact(then), shown)


@pass_context
def ago_filter(context: Any, value: Any) -> Markup:
    """The templates' ``|ago``: ``value`` relative to the page's ``data.generated_at``."""
    data = context.get("data")
    now = parse_time(data.get("generated_at")) if isinstance(data, dict) else None
    return time_element(value, now)


def utc_filter(value: Any) -> Markup:
    """The templates' ``|utc``: the exact time (the footer's "page made")."""
    return time_element(value, None)
