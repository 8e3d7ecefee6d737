"""Making a play: ``apply`` checks it and returns the next state; the old state is unchanged."""

from __future__ import annotations

from dataclasses import replace

from .errors import GameOverError, IllegalMoveError, InvalidMoveError
from .legal import explain_illegal, legal_moves
from .moves import Move, MoveKind, parse_move
from .scoring import condition_certain, continuation_after, score_deal
from .state import Build, GameState, LogEntry, deal_hands, deal_new, is_multiple, successor


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
    plays = state.plays + 1
    kind = move.kind

    if kind == TRAIL:
        loose = tuple(sorted(loose + (c,)))
    elif kind == CAPTURE:
        side = options.side_of(seat)
        taken = [c, *move.loose]
        if move.builds:
            taken_ids = move.builds
            for b in builds:
                if b.id in taken_ids:
                    taken.extend(b.cards)
            builds = tuple([b for b in builds if b.id not in taken_ids])
        if move.loose:
            loose = tuple([x for x in loose if x not in move.loose])
        piles = _add_to_pile(piles, side, taken)
        last_capturer = seat
        if not loose and not builds:
            sweeps = _bump(sweeps, side)  # rule 11
        if any(state.restricted):
            certain_at = _mark_certain(state, piles, certain_at, plays)
    else:
        if move.loose:
            loose = tuple([x for x in loose if x not in move.loose])
        added = (c, *move.loose)
        if kind == BUILD:
            cards = tuple(sorted(added))
            builds = builds + (Build(next_build_id, move.value, cards, seat, is_multiple(cards, move.value)),)
            next_build_id += 1
        else:
            target_id = move.builds[0]
            multiple = kind == ADD or bool(move.loose)
            builds = tuple(
                [
                    Build(b.id, move.value, tuple(sorted(b.cards + added)), seat, b.multiple or multiple)
                    if b.id == target_id
                    else b
                    for b in builds
                ]
            )

    to_move = (seat + 1) % options.players
    stock = state.stock
    round_ = state.round
    log = (state.log, _new_tuple(LogEntry, (state.deal, seat, move)))
    if not hands[to_move] and not any(hands):
        if not stock:
            return _settle(state, tuple(hands), loose, builds, piles, sweeps, last_capturer, certain_at, plays, log, next_build_id)
        new_hands, stock = deal_hands(stock, options.players, state.leader)
        return successor(
            state, round_ + 1, state.leader, new_hands, loose, builds, next_build_id, stock, piles,
            sweeps, last_capturer, plays, certain_at, log,
        )
    return successor(
        state, round_, to_move, tuple(hands), loose, builds, next_build_id, stock, piles, sweeps,
        last_capturer, plays, certain_at, log,
    )


_new_tuple = tuple.__new__  # a NamedTuple without its Python-level __new__ (hot path)
TRAIL, CAPTURE, BUILD, ADD = MoveKind.TRAIL, MoveKind.CAPTURE, MoveKind.BUILD, MoveKind.ADD


def _add_to_pile(piles: tuple[tuple[int, ...], ...], side: int, cards: list[int]) -> tuple[tuple[int, ...], ...]:
    out = list(piles)
    out[side] = out[side] + tuple(cards)
    return tuple(out)


def _bump(counts: tuple[int, ...], side: int) -> tuple[int, ...]:
    out = list(counts)
    out[side] += 1
    return tuple(out)


def _mark_certain(state: GameState, piles, certain_at, plays: int):  # type: ignore[no-untyped-def]
    """Record the play at which each restricted side's condition became certain (rule 16).

    Every restricted side is checked after every capture, not only the capturer's: with three
    sides, a rival's capture can leave too few cards for anyone to catch the leader."""
    out = None
    for side, condition in enumerate(state.restricted):
        if condition is not None and certain_at[side] is None and condition_certain(condition, side, piles):
            out = out or list(certain_at)
            out[side] = plays
    return certain_at if out is None else tuple(out)


def _tie_break(state: GameState, certain_at, plays: int, last_capturer: int | None) -> tuple[int, ...]:  # type: ignore[no-untyped-def]
    """Rule 16 when one event made two conditions certain at once (three sides only): the side
    that made that play, or took the residue after the last play, first, then playing order."""
    n = state.options.players
    order = []
    for side, at in enumerate(certain_at):
        if at is None:
            order.append(0)
            continue
        event_seat = last_capturer if at == plays and last_capturer is not None else (state.leader + at - 1) % n
        order.append((side - event_seat) % n)
    return tuple(order)


def _settle(state, hands, loose, builds, piles, sweeps, last_capturer, certain_at, plays, log, next_build_id) -> GameState:  # type: ignore[no-untyped-def]
    """Rule 12: the last capturer's side takes what is left (not a sweep); then score (rule 13-18)."""
    options = state.options
    residue = list(loose)
    for b in builds:
        residue.extend(b.cards)
    if residue and last_capturer is not None:
        side = options.side_of(last_capturer)
        piles = _add_to_pile(piles, side, residue)
        certain_at = _mark_certain(state, piles, certain_at, plays)
        loose, builds = (), ()
    sheet, result = score_deal(
        options, state.deal, state.dealer, piles, sweeps, state.scores, state.restricted, certain_at,
        _tie_break(state, certain_at, plays, last_capturer),
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
