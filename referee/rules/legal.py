"""Legal plays (rules 5-11): ``legal_moves`` lists them, ``explain_illegal`` says why a play is not one.

The table arithmetic (which loose cards can form groups worth v, rule 6-8) depends only on the
ranks of the loose cards, so it is computed once per rank pattern and memoised (``table_plan``).
"""

from __future__ import annotations

from .cards import ACE, ACE_HIGH, CODE, RANK
from .moves import Move, MoveKind
from .state import Build, GameState

MAX_BUILD = 14
MIN_BUILD = 2


class TablePlan:
    """Group arithmetic over loose cards with the given ranks (sorted ascending).

    Sets of loose cards are bit masks over the positions in ``ranks``; results are memoised
    per plan, and plans are memoised per rank pattern.
    """

    __slots__ = ("ranks", "rank_mask", "by_sum", "_unions", "_captures", "_builds", "no_builds", "sum_bits")


    def __init__(self, ranks: tuple[int, ...]) -> None:
        self.ranks = ranks
        rank_mask = [0] * (MAX_BUILD + 1)
        for i, r in enumerate(ranks):
            rank_mask[r] |= 1 << i
        self.rank_mask = tuple(rank_mask)
        # by_sum[s]: non-empty subsets whose sum (Ace = 1) is s, for s <= 14. Tuples of ints, like
        # every memo below, so the garbage collector stops tracking them (a long memo of lists
        # makes every full collection slow).
        by_sum: list[list[int]] = [[] for _ in range(MAX_BUILD + 1)]
        self._subsets(by_sum, 0, 0, 0)
        self.by_sum = tuple(tuple(masks) for masks in by_sum)
        self.sum_bits = sum(1 << v for v, masks in enumerate(by_sum) if masks)  # bit s: some subset sums to s
        self._unions: dict[int, tuple[int, ...]] = {}
        self._captures: dict[int, tuple[int, ...]] = {}
        self._builds: dict[int, tuple[int, ...]] = {}
        self.no_builds = 0  # bit (rank << 4 | v) set: no build of v with that rank

    def _subsets(self, by_sum: list[list[int]], start: int, mask: int, total: int) -> None:
        for i in range(start, len(self.ranks)):
            s = total + self.ranks[i]
            if s > MAX_BUILD:
                break  # ranks are sorted, so every later card overshoots too
            m = mask | (1 << i)
            by_sum[s].append(m)
            self._subsets(by_sum, i + 1, m, s)

    def groups(self, v: int) -> list[int]:
        """Loose groups worth v: sets summing to v, and for v = 14 each lone Ace (rule 6, 8)."""
        groups = list(self.by_sum[v])
        if v == ACE_HIGH:
            mask = self.rank_mask[ACE]
            groups.extend(1 << i for i in range(len(self.ranks)) if mask >> i & 1)
        return groups

    def unions(self, v: int) -> tuple[int, ...]:
        """Every union of pairwise disjoint loose groups worth v, the empty union first."""
        found = self._unions.get(v)
        if found is None:
            unions = {0}
            for g in self.groups(v):
                unions.update([u | g for u in unions if not u & g])
            found = self._unions[v] = tuple(sorted(unions))
        return found

    def captures(self, rank: int) -> tuple[int, ...]:
        """Loose sets a card of ``rank`` may capture (rule 6, 7): unions of groups worth its
        value that take every loose card of its rank. The empty set is included when no such
        card lies loose, for captures of builds alone."""
        found = self._captures.get(rank)
        if found is None:
            must = self.rank_mask[rank]
            unions = self.unions(ACE_HIGH if rank == ACE else rank)
            found = self._captures[rank] = tuple([u for u in unions if u & must == must])
        return found

    def build_sets(self, rank: int, v: int) -> tuple[int, ...]:
        """Loose sets U such that a played card of ``rank`` and U split into groups worth v
        (rule 8). U is empty only when the card alone is worth v (a lone Ace is worth 14)."""
        key = rank << 4 | v
        found = self._builds.get(key)
        if found is None:
            found = self._build_sets(rank, v)
            if found:
                self._builds[key] = found
            else:
                self.no_builds |= 1 << key  # most pairs have no build: one bit, not a dict entry
        return found

    def _build_sets(self, rank: int, v: int) -> tuple[int, ...]:
        if v < MIN_BUILD:
            return ()  # there is no build of 1
        heads = list(self.by_sum[v - rank]) if v - rank >= 1 else []  # loose cards with the played card
        if rank == v or (rank == ACE and v == ACE_HIGH):
            heads.append(0)
        if not heads:
            return ()
        unions = self.unions(v)
        sets: set[int] = set()
        for head in heads:
            sets.update([head | w for w in unions if not head & w])
        return tuple(sorted(sets))


_POSITIONS: dict[int, tuple[int, ...]] = {}


def positions(mask: int) -> tuple[int, ...]:
    """The bit positions set in ``mask``, memoised (masks are small: one bit per loose card)."""
    found = _POSITIONS.get(mask)
    if found is None:
        found = _POSITIONS[mask] = tuple(i for i in range(mask.bit_length()) if mask >> i & 1)
    return found


_PLANS: dict[tuple[int, ...], TablePlan] = {}
PLAN_MEMO_LIMIT = 1 << 14  # plans kept before the memo starts afresh (bounds memory)


def table_plan(ranks: tuple[int, ...]) -> TablePlan:
    """The plan for loose cards of these sorted ranks, memoised: a pure function's cache, the
    only module-level state of the engine, invisible except in speed."""
    plan = _PLANS.get(ranks)
    if plan is None:
        if len(_PLANS) >= PLAN_MEMO_LIMIT:
            _PLANS.clear()
        plan = _PLANS[ranks] = TablePlan(ranks)
    return plan


def _held_values(ranks: list[int]) -> set[int]:
    """Build values a hand with these ranks can capture (an Ace covers 14)."""
    held = set(ranks)
    if ACE in held:
        held.add(ACE_HIGH)
    return held


TRAIL, CAPTURE, BUILD, ADD, RAISE = MoveKind.TRAIL, MoveKind.CAPTURE, MoveKind.BUILD, MoveKind.ADD, MoveKind.RAISE


def legal_moves(state: GameState) -> list[Move]:
    """Every legal play for the player to move, each once, sorted (see ``Move``'s field order).

    The list is computed once per state and shared: do not mutate it.
    """
    cached = state._legal
    if cached is None:
        cached = state._legal = _generate(state) if state.result is None and not state.deal_over else []
    return cached


_new_move = tuple.__new__  # builds a Move without NamedTuple's Python-level __new__


BUILD_VALUES = sum(1 << v for v in range(MIN_BUILD, MAX_BUILD + 1))  # bit v set for v = 2..14


def _generate(state: GameState) -> list[Move]:
    """The legal plays, sorted. Values are handled as bit sets (bit v = value v) so that "does
    the mover still hold a card of v" and "can this card build v here" are single operations."""
    seat = state.to_move
    hand = state.hands[seat]
    loose = state.loose
    builds = state.builds
    if not loose and not builds:
        return [_new_move(Move, (c, TRAIL, 0, (), ())) for c in hand]  # after a sweep (rule 11)
    ranks = tuple([RANK[c] for c in loose])
    plan = _PLANS.get(ranks) or table_plan(ranks)
    rank_mask = plan.rank_mask
    build_memo = plan._builds
    capture_memo = plan._captures
    owned = [b for b in builds if b.owner == seat]
    owned_bits = 0
    for b in owned:
        owned_bits |= 1 << b.value
    hand_ranks = [RANK[c] for c in hand]
    hand_bits = 0
    repeated = 0  # ranks held twice or more: playing one still leaves one
    for r in hand_ranks:
        repeated |= hand_bits & (1 << r)
        hand_bits |= 1 << r
    moves: list[Move] = []
    append = moves.append
    for i, c in enumerate(hand):
        r = hand_ranks[i]
        held = hand_bits if repeated >> r & 1 else hand_bits & ~(1 << r)
        if held & (1 << ACE):
            held |= 1 << ACE_HIGH  # values whose capture card the mover keeps after playing c
        keeps_owned = not owned_bits & ~held
        captures = capture_memo.get(r)
        if captures is None:
            captures = plan.captures(r)

        if not owned and not rank_mask[r]:
            append(_new_move(Move, (c, TRAIL, 0, (), ())))  # rule 5

        capture_value = ACE_HIGH if r == ACE else r
        targets = [b for b in builds if b.value == capture_value] if builds else None
        if targets:
            for taken in _build_subsets(targets):
                if not keeps_owned and not all([held >> b.value & 1 for b in owned if b not in taken]):
                    continue  # rule 10: an owned build left behind needs its capture card
                ids = tuple([b.id for b in taken])
                for mask in captures:
                    if mask or taken:
                        append(_new_move(Move, (c, CAPTURE, 0, ids, tuple([loose[j] for j in positions(mask)]))))
        elif keeps_owned:
            for mask in captures:
                if mask:
                    append(_new_move(Move, (c, CAPTURE, 0, (), tuple([loose[j] for j in positions(mask)]))))

        if not keeps_owned:
            continue  # every build play leaves the owned builds on the table
        # new builds: v held, and some loose cards can join c in a group worth v (or c alone is)
        buildable = (plan.sum_bits << r | 1 << r | (1 << ACE_HIGH if r == ACE else 0)) & held & BUILD_VALUES
        while buildable:
            v = buildable.bit_length() - 1
            buildable &= ~(1 << v)
            masks = build_memo.get(r << 4 | v)
            if masks is None:
                masks = plan.build_sets(r, v)
            for mask in masks:
                if mask:
                    append(_new_move(Move, (c, BUILD, v, (), tuple([loose[j] for j in positions(mask)]))))
        for b in builds:
            v = b.value
            if held >> v & 1:
                for mask in plan.build_sets(r, v):
                    append(_new_move(Move, (c, ADD, v, (b.id,), tuple([loose[j] for j in positions(mask)]))))
            if not b.multiple and b.owner != seat:
                v += r
                if v <= MAX_BUILD and held >> v & 1:
                    for mask in plan.unions(v):
                        append(_new_move(Move, (c, RAISE, v, (b.id,), tuple([loose[j] for j in positions(mask)]))))
    moves.sort()
    return moves


def _build_subsets(builds: list[Build]) -> list[tuple[Build, ...]]:
    subsets: list[tuple[Build, ...]] = [()]
    for b in builds:
        subsets += [s + (b,) for s in subsets]
    return subsets


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
    held_after = [RANK[x] for x in hand if x != move.card]
    same_rank_loose = [c for c in state.loose if RANK[c] == r]
    ranks = tuple(RANK[c] for c in state.loose)
    plan = table_plan(ranks)
    captures = plan.captures(r)
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
    if v not in _held_values(held_after):
        return f"after playing {CODE[move.card]} seat {seat} would not hold a card worth {v} (rule 8)"
    if kind == MoveKind.BUILD:
        if mask not in plan.build_sets(r, v):
            return f"{CODE[move.card]} and the cards named do not split into groups worth {v} (rule 8)"
    else:
        target = by_id[move.builds[0]]
        if kind == MoveKind.ADD:
            if v != target.value:
                return f"adding keeps build b{target.id}'s value {target.value}, not {v} (rule 8)"
            if mask not in plan.build_sets(r, v):
                return f"{CODE[move.card]} and the cards named do not form groups worth {v} (rule 8)"
        else:
            if target.owner == seat:
                return f"seat {seat} owns build b{target.id} and may not raise it (rule 8)"
            if target.multiple:
                return f"build b{target.id} is a multiple build; its value never changes (rule 8)"
            if v != target.value + r:
                return f"raising b{target.id} ({target.value}) with {CODE[move.card]} makes {target.value + r}, not {v} (rule 8)"
            if mask not in plan.unions(v):
                return f"the loose cards absorbed do not split into groups worth {v} (rule 8)"
    return _owner_reason(seat, owned, held_after, set()) or "not a legal play here"


def _owner_reason(seat: int, owned: list[Build], held_after: list[int], captured: set[int]) -> str | None:
    for b in owned:
        if b.id not in captured and b.value not in _held_values(held_after):
            return f"seat {seat} owns build b{b.id} ({b.value}) and must keep a card to capture it (rule 10)"
    return None
