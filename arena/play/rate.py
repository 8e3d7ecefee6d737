"""Rating in game order: the settled games after the last rated one, one at a time by number,
through TrueSkill (rating/ratings.py), in one transaction of the store's (``Store.rating_pass``).
A game still pending or running stops the pass, so ratings never depend on finishing order."""

from __future__ import annotations

from ..metrics import RATING_UPDATES
from ..rating.ratings import RatingBook, make_env
from ..store.store import Store


def apply_ratings(store: Store, tid: int) -> int:
    """Rate the settled games after ``rated_through``, in number order, stopping at the first one
    still pending or running; all or none. Returns how many games were rated."""
    applied = 0
    with store.rating_pass(tid) as games:
        book = RatingBook(make_env(), games.ratings())
        for number, outcome in games.settled_games():
            games.rated(number, book.update(outcome) if outcome is not None else {})
            applied += 1
    RATING_UPDATES.inc(applied)  # committed
    return applied
