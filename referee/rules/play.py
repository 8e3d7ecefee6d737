"""Making a play: ``apply`` checks it and returns the next state; the old state is unchanged."""

from __future__ import annotations

from dataclasses import replace

from .cards import RANK
from .errors import GameOverError, IllegalMoveError, InvalidMoveError
from .legal import explain_illegal, legal_moves
from .moves import Move, MoveKind, parse_move
from .scoring import condition_certain, continuation_after, score_deal
from .state import Build, GameState, LogEntry, deal_hands, deal_new


def apply(state: GameState, move: Move | str) -> GameState:
    """Play ``move`` (a Move or its notation) for the player to move and return the next state.

    After the last card of a deal the deal is scored and, unless the game is over, the next deal
    is dealt. Raises InvalidMoveError (malformed), IllegalMoveError (not legal here, with the
    reason) or GameOverError.
    """
    if state.result is not None:
        raise GameOverError(f"the game is over ({state.result.reason.value}); no more plays")
    if isinstance(move, str):
        move = parse_move(move)
    elif not isinstance(move, Move):
        raise InvalidMoveError(f"a move must be a Move or notation string, not {type(move).__name__}")
    if move not in legal_moves(state):
        raise IllegalMoveError(str(move), explain_illegal(state, move))
    return next_deal_if_over(play(state, move))


def next_deal_if_over(state: GameState) -> GameState:
    """Deal the next deal when ``state`` is a settled deal of an unfinished game."""
    if not state.deal_over or state.result is not None:
        return state
    return deal_new(
        options=state.options,
        decks=state.decks,
        deal=state.deal + 1,
        scores=state.scores,
        continuation=state.continuation or continuation_after(state.scores),
        sheets=state.sheets,
        log=state.log,
    )


def play(state: GameState, move: Move) -> GameState:
    """Make a play known to be legal. After a deal's last card the result has ``deal_over`` set
    and the deal scored, but the next deal is not dealt (perft stops there)."""
    options = state.options
    seat = state.to_move
    side = options.side_of(seat)
    c = move.card
    hands = list(state.hands)
    hands[seat] = tuple([x for x in hands[seat] if x != c])
    loose = state.loose
    builds = state.builds
    piles = state.piles
    sweeps = state.sweeps
    last_capturer = state.last_capturer
    certain_at = state.certain_at
    next_build_id = state.next_build_id
    kind = move.kind

    if kind == MoveKind.TRAIL:
        loose = tuple(sorted(loose + (c,)))
    elif kind == MoveKind.CAPTURE:
        taken_ids = move.builds
        taken = [c, *move.loose]
        for b in builds:
            if b.id in taken_ids:
                taken.extend(b.cards)
        loose = tuple([x for x in loose if x not in move.loose])
        builds = tuple([b for b in builds if b.id not in taken_ids])
        piles = _add_to_pile(piles, side, taken)
        last_capturer = seat
        if not loose and not builds:
            sweeps = _bump(sweeps, side)  # rule 11
    else:
        loose = tuple([x for x in loose if x not in move.loose])
        added = (c, *move.loose)
        if kind == MoveKind.BUILD:
            new = Build(next_build_id, move.value, tuple(sorted(added)), seat, len(added) > 1 and _is_multiple(added, move.value))
            builds = builds + (new,)
            next_build_id += 1
        else:
            target_id = move.builds[0]
            multiple = kind == MoveKind.ADD or bool(move.loose)
            builds = tuple(
                Build(b.id, move.value, tuple(sorted(b.cards + added)), seat, b.multiple or multiple) if b.id == target_id else b
                for b in builds
            )

    plays = state.plays + 1
    if kind == MoveKind.CAPTURE:
        certain_at = _mark_certain(state, side, piles, certain_at, plays)

    to_move = (seat + 1) % options.players
    stock = state.stock
    round_ = state.round
    hands_t = tuple(hands)
    log = (state.log, LogEntry(state.deal, seat, move))
    if not hands_t[to_move] and not any(hands_t):
        if stock:
            hands_t, stock = deal_hands(stock, options.players, state.leader)
            round_ += 1
            to_move = state.leader
        else:
            return _settle(state, hands_t, loose, builds, piles, sweeps, last_capturer, certain_at, plays, log, next_build_id)

    return GameState(
        options=options,
        decks=state.decks,
        deal=state.deal,
        dealer=state.dealer,
        round=round_,
        to_move=to_move,
        hands=hands_t,
        loose=loose,
        builds=builds,
        next_build_id=next_build_id,
        stock=stock,
        piles=piles,
        sweeps=sweeps,
        last_capturer=last_capturer,
        plays=plays,
        table_dealt=state.table_dealt,
        scores=state.scores,
        restricted=state.restricted,
        certain_at=certain_at,
        continuation=state.continuation,
        sheets=state.sheets,
        log=log,
    )


def _is_multiple(cards: tuple[int, ...], value: int) -> bool:
    return sum(RANK[x] for x in cards) != value


def _add_to_pile(piles: tuple[tuple[int, ...], ...], side: int, cards: list[int]) -> tuple[tuple[int, ...], ...]:
    out = list(piles)
    out[side] = out[side] + tuple(cards)
    return tuple(out)


def _bump(counts: tuple[int, ...], side: int) -> tuple[int, ...]:
    out = list(counts)
    out[side] += 1
    return tuple(out)


def _mark_certain(state: GameState, side: int, piles, certain_at, plays: int):  # type: ignore[no-untyped-def]
    """Record the play at which a restricted side's condition became certain (rule 16)."""
    condition = state.restricted[side]
    if condition is None or certain_at[side] is not None:
        return certain_at
    if not condition_certain(condition, side, piles):
        return certain_at
    out = list(certain_at)
    out[side] = plays
    return tuple(out)


def _settle(state, hands, loose, builds, piles, sweeps, last_capturer, certain_at, plays, log, next_build_id) -> GameState:  # type: ignore[no-untyped-def]
    """Rule 12: the last capturer's side takes what is left (not a sweep); then score (rule 13-18)."""
    options = state.options
    residue = list(loose)
    for b in builds:
        residue.extend(b.cards)
    if residue and last_capturer is not None:
        side = options.side_of(last_capturer)
        piles = _add_to_pile(piles, side, residue)
        certain_at = _mark_certain(state, side, piles, certain_at, plays)
        loose, builds = (), ()
    sheet, result = score_deal(
        options, state.deal, state.dealer, piles, sweeps, state.scores, state.restricted, certain_at
    )
    return replace(
        state,
        hands=hands,
        loose=loose,
        builds=builds,
        next_build_id=next_build_id,
        stock=(),
        piles=piles,
        sweeps=sweeps,
        last_capturer=last_capturer,
        plays=plays,
        certain_at=certain_at,
        scores=sheet.scores_after,
        sheets=state.sheets + (sheet,),
        log=log,
        deal_over=True,
        result=result,
        _legal=None,
    )
