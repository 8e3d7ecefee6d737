"""Legal plays (rules 5-11): ``legal_moves`` lists them, ``explain_illegal`` says why a play is not one.

The table arithmetic (which loose cards can form groups worth v, rule 6-8) depends only on the
ranks of the loose cards, so it is computed once per rank pattern and memoised (``_table_plan``,
``_card_plan``). Positions in that arithmetic are bit masks over the sorted loose cards.
"""

from __future__ import annotations

from functools import lru_cache

from .cards import ACE, ACE_HIGH, CODE, RANK, Card
from .moves import Move, MoveKind
from .state import Build, GameState

MAX_BUILD = 14
MIN_BUILD = 2


class TablePlan:
    """Group arithmetic over loose cards with the given ranks (sorted ascending)."""

    __slots__ = ("ranks", "rank_mask", "by_sum", "unions")

    def __init__(self, ranks: tuple[int, ...]) -> None:
        self.ranks = ranks
        self.rank_mask = [0] * 15
        for i, r in enumerate(ranks):
            self.rank_mask[r] |= 1 << i
        # by_sum[s]: non-empty subsets whose sum (Ace = 1) is s, for s <= 14
        self.by_sum: list[list[int]] = [[] for _ in range(MAX_BUILD + 1)]
        self._subsets(0, 0, 0)
        # unions[v]: every union of pairwise disjoint groups worth v, the empty union included
        self.unions: list[tuple[int, ...]] = [()] * (MAX_BUILD + 1)
        for v in range(MIN_BUILD, MAX_BUILD + 1):
            self.unions[v] = tuple(sorted(_disjoint_unions(self.groups(v))))

    def _subsets(self, start: int, mask: int, total: int) -> None:
        for i in range(start, len(self.ranks)):
            s = total + self.ranks[i]
            if s > MAX_BUILD:
                break  # ranks are sorted, so every later card overshoots too
            m = mask | (1 << i)
            self.by_sum[s].append(m)
            self._subsets(i + 1, m, s)

    def groups(self, v: int) -> list[int]:
        """Loose groups worth v: sets summing to v, and for v = 14 each lone Ace (rule 6, 8)."""
        groups = list(self.by_sum[v])
        if v == ACE_HIGH:
            mask = self.rank_mask[ACE]
            groups.extend(1 << i for i in range(len(self.ranks)) if mask >> i & 1)
        return groups


def _disjoint_unions(groups: list[int]) -> set[int]:
    unions = {0}
    for g in groups:
        unions.update([u | g for u in unions if not u & g])
    return unions


@lru_cache(maxsize=1 << 16)
def _table_plan(ranks: tuple[int, ...]) -> TablePlan:
    return TablePlan(ranks)


@lru_cache(maxsize=1 << 17)
def _card_plan(ranks: tuple[int, ...], rank: int) -> tuple[tuple[int, ...], tuple[tuple[int, ...], ...]]:
    """For a card of ``rank`` played onto loose cards of ``ranks``:

    - the loose sets it may capture (rule 6, 7): unions of groups worth its value, each taking
      every loose card of its rank; the empty set is included when no such card lies loose, for
      captures of builds only;
    - ``build_sets[v]``: loose sets U such that the played card and U split into groups worth v
      (rule 8); U may be empty only when the card alone is worth v.
    """
    plan = _table_plan(ranks)
    capture_value = ACE_HIGH if rank == ACE else rank
    must = plan.rank_mask[rank]
    captures = tuple(u for u in plan.unions[capture_value] if u & must == must)
    build_sets: list[tuple[int, ...]] = [()] * (MAX_BUILD + 1)
    for v in range(MIN_BUILD, MAX_BUILD + 1):
        found: set[int] = set()
        # the group holding the played card: the card alone (if worth v) or with loose cards S0
        heads = list(plan.by_sum[v - rank]) if v - rank >= 1 else []
        if rank == v or (rank == ACE and v == ACE_HIGH):
            heads.append(0)
        for head in heads:
            found.update(head | w for w in plan.unions[v] if not head & w)
        build_sets[v] = tuple(sorted(found))
    return captures, tuple(build_sets)


def _cards(loose: tuple[Card, ...], mask: int) -> tuple[Card, ...]:
    out = []
    i = 0
    while mask:
        if mask & 1:
            out.append(loose[i])
        mask >>= 1
        i += 1
    return tuple(out)


def _holds(ranks: set[int], value: int) -> bool:
    return (ACE if value == ACE_HIGH else value) in ranks


def legal_moves(state: GameState) -> list[Move]:
    """Every legal play for the player to move, each once, sorted (see ``Move``'s field order).

    The list is computed once per state and shared: do not mutate it.
    """
    cached = state._legal
    if cached is None:
        cached = _generate(state) if state.result is None and not state.deal_over else []
        object.__setattr__(state, "_legal", cached)
    return cached


def _generate(state: GameState) -> list[Move]:
    seat = state.to_move
    hand = state.hands[seat]
    loose = state.loose
    builds = state.builds
    ranks = tuple(RANK[c] for c in loose)
    plan = _table_plan(ranks)
    owned = [b for b in builds if b.owner == seat]
    moves: list[Move] = []
    for i, c in enumerate(hand):
        r = RANK[c]
        held = {RANK[x] for j, x in enumerate(hand) if j != i}
        captures, build_sets = _card_plan(ranks, r)
        owned_kept = all(_holds(held, b.value) for b in owned)

        if not owned and not plan.rank_mask[r]:
            moves.append(Move(c, MoveKind.TRAIL))  # rule 5

        capture_value = ACE_HIGH if r == ACE else r
        targets = [b for b in builds if b.value == capture_value]
        for taken in _build_subsets(targets):
            ids = tuple(b.id for b in taken)
            if not all(_holds(held, b.value) for b in owned if b not in taken):
                continue  # rule 10: an owned build left behind needs its capture card
            for mask in captures:
                if mask or taken:
                    moves.append(Move(c, MoveKind.CAPTURE, 0, ids, _cards(loose, mask)))

        if not owned_kept:
            continue  # every build play leaves the owned builds on the table
        for v in range(MIN_BUILD, MAX_BUILD + 1):
            if build_sets[v] and _holds(held, v):
                for mask in build_sets[v]:
                    if mask:
                        moves.append(Move(c, MoveKind.BUILD, v, (), _cards(loose, mask)))
        for b in builds:
            v = b.value
            if _holds(held, v):
                for mask in build_sets[v]:
                    moves.append(Move(c, MoveKind.ADD, v, (b.id,), _cards(loose, mask)))
            if not b.multiple and b.owner != seat:
                v = b.value + r
                if v <= MAX_BUILD and _holds(held, v):
                    for mask in plan.unions[v]:
                        moves.append(Move(c, MoveKind.RAISE, v, (b.id,), _cards(loose, mask)))
    moves.sort()
    return moves


def _build_subsets(builds: list[Build]) -> list[tuple[Build, ...]]:
    subsets: list[tuple[Build, ...]] = [()]
    for b in builds:
        subsets += [s + (b,) for s in subsets]
    return subsets


def legal_set(state: GameState) -> frozenset[Move]:
    """The legal plays as a set, for membership tests."""
    return frozenset(legal_moves(state))


def explain_illegal(state: GameState, move: Move) -> str:
    """Why ``move`` is not legal here, naming the rule; used for IllegalMoveError messages."""
    seat = state.to_move
    hand = state.hands[seat]
    if move.card not in hand:
        return f"{CODE[move.card]} is not in seat {seat}'s hand ({' '.join(CODE[c] for c in hand)})"
    missing = [c for c in move.loose if c not in state.loose]
    if missing:
        return f"{CODE[missing[0]]} is not a loose card on the table"
    by_id = {b.id: b for b in state.builds}
    unknown = [b for b in move.builds if b not in by_id]
    if unknown:
        return f"there is no build b{unknown[0]} on the table"
    r = RANK[move.card]
    owned = [b for b in state.builds if b.owner == seat]
    held = set(RANK[x] for x in hand)
    held_after = [RANK[x] for x in hand if x != move.card]
    same_rank_loose = [c for c in state.loose if RANK[c] == r]
    ranks = tuple(RANK[c] for c in state.loose)
    captures, build_sets = _card_plan(ranks, r)
    mask = sum(1 << state.loose.index(c) for c in move.loose)
    kind = move.kind
    if kind == MoveKind.TRAIL:
        if owned:
            return f"seat {seat} owns build b{owned[0].id} and may not trail (rule 5, 10)"
        return f"loose {CODE[same_rank_loose[0]]} has the same rank: {CODE[move.card]} must capture it or build (rule 5, 7)"
    if kind == MoveKind.CAPTURE:
        value = ACE_HIGH if r == ACE else r
        for bid in move.builds:
            if by_id[bid].value != value:
                return f"build b{bid} is worth {by_id[bid].value}, {CODE[move.card]} captures {value} (rule 6)"
        missed = [c for c in same_rank_loose if c not in move.loose]
        if missed:
            return f"a capture with {CODE[move.card]} must take every loose card of its rank, and leaves {CODE[missed[0]]} (rule 7)"
        if move.loose and mask not in captures:
            return f"the loose cards taken do not split into groups worth {value} (rule 6)"
        return _owner_reason(seat, owned, held_after, set(move.builds)) or "not a legal play here"
    v = move.value
    if v < MIN_BUILD or v > MAX_BUILD:
        return f"a build is worth 2 to 14, not {v} (rule 8)"
    if not _holds(set(held_after), v):
        return f"after playing {CODE[move.card]} seat {seat} would not hold a card worth {v} (rule 8)"
    if kind == MoveKind.BUILD:
        if mask not in build_sets[v]:
            return f"{CODE[move.card]} and the cards named do not split into groups worth {v} (rule 8)"
    else:
        target = by_id[move.builds[0]]
        if kind == MoveKind.ADD:
            if v != target.value:
                return f"adding keeps build b{target.id}'s value {target.value}, not {v} (rule 8)"
            if mask not in build_sets[v]:
                return f"{CODE[move.card]} and the cards named do not form groups worth {v} (rule 8)"
        else:
            if target.owner == seat:
                return f"seat {seat} owns build b{target.id} and may not raise it (rule 8)"
            if target.multiple:
                return f"build b{target.id} is a multiple build; its value never changes (rule 8)"
            if v != target.value + r:
                return f"raising b{target.id} ({target.value}) with {CODE[move.card]} makes {target.value + r}, not {v} (rule 8)"
            if mask not in _table_plan(ranks).unions[v]:
                return f"the loose cards absorbed do not split into groups worth {v} (rule 8)"
    return _owner_reason(seat, owned, held_after, set()) or "not a legal play here"


def _owner_reason(seat: int, owned: list[Build], held_after: list[int], captured: set[int]) -> str | None:
    for b in owned:
        if b.id not in captured and not _holds(set(held_after), b.value):
            return f"seat {seat} owns build b{b.id} ({b.value}) and must keep a card to capture it (rule 10)"
    return None
