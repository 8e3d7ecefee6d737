"""Whose private pages a reader may see (docs/web.md, "Security model"): an operator's, every
bot's; a participant's, the bots they submitted; nobody else's. One place decides it for every
page that shows a bot's logs, errors or notes."""

from __future__ import annotations

from starlette.requests import Request

from ..store.models import Tournament
from ..store.submissions import owned_positions
from .auth import session_of
from .pages.common import store_of

EVERY_BOT = frozenset(range(1 << 16))  # an operator's: any position there can be


def readers_bots(request: Request, tournament: Tournament) -> frozenset[int]:
    """The positions of the tournament's bots whose private side the reader may see."""
    user = session_of(request).user
    if user is None:
        return frozenset()
    if user.operator:
        return EVERY_BOT
    return frozenset(owned_positions(store_of(request), tournament.id, user.id))


def public_notes(tournament: Tournament) -> bool:
    """Whether the tournament shows its bots' notes to everyone (the file's ``public_notes``)."""
    display = (tournament.settings or {}).get("display")
    return bool(isinstance(display, dict) and display.get("public_notes"))
