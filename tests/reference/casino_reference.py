"""Independent, deliberately naive reference for Royal Casino's legal plays.

Used only by tests, to cross-check the real engine.  It is written from
/work/shared/rules/royal-casino.md plus the interpretations settled in the
brief, and shares no code with the engine.  Obviousness beats speed: every
choice of loose cards is found by brute force over subsets.

Public API
----------
reference_legal_plays(position) -> set[str]
reference_perft(players, deck, depth, partnerships=True) -> int
reference_perft_divide(players, deck, depth, partnerships=True) -> dict[str, int]

Notation (one string per play, deduplicated by effect)
------------------------------------------------------
    <card> trail
    <card> capture <items>                 builds as b<id> (increasing id), then
                                           loose cards in canonical card order
    <card> build <v> <loose cards>
    <card> add b<id> <v> [<loose cards>]    v = the build's unchanged value
    <card> raise b<id> <v> [<loose cards>]  v = the new value

Canonical card order: rank A 2 .. 10 J Q K, then suit C < D < H < S.

Worked example 1 of the rules (table KH 8C 7D 5S AH, hand KS 2C 3D 4H):

>>> pos = {"players": 2, "to_move": 0, "hand": ["KS", "2C", "3D", "4H"],
...        "loose": ["KH", "8C", "7D", "5S", "AH"], "builds": []}
>>> for play in sorted(reference_legal_plays(pos)): print(play)
2C build 3 AH
2C trail
3D build 4 AH
3D trail
4H build 13 AH 8C
4H build 13 AH 8C KH
4H trail
KS capture 5S 8C KH
KS capture AH 5S 7D KH
KS capture KH
"""

from __future__ import annotations

__all__ = [
    "reference_legal_plays",
    "reference_perft",
    "reference_perft_divide",
]

# ---------------------------------------------------------------------------
# Cards
# ---------------------------------------------------------------------------

RANKS = ["A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K"]
SUITS = ["C", "D", "H", "S"]
ALL_CARDS = [r + s for r in RANKS for s in SUITS]  # canonical order


def parse_card(text) -> str:
    """Return the canonical code of a card ("T" is accepted for 10)."""
    if not isinstance(text, str):
        raise ValueError(f"card must be a string, got {text!r}")
    t = text.strip().upper()
    if len(t) < 2:
        raise ValueError(f"malformed card {text!r}")
    rank, suit = t[:-1], t[-1]
    if rank == "T":
        rank = "10"
    if rank not in RANKS or suit not in SUITS:
        raise ValueError(f"malformed card {text!r}")
    return rank + suit


def rank_value(card: str) -> int:
    """A=1, 2..10, J=11, Q=12, K=13.  This is also a card's value in any sum."""
    return RANKS.index(card[:-1]) + 1


def is_ace(card: str) -> bool:
    return card[:-1] == "A"


def card_key(card: str):
    return (rank_value(card), SUITS.index(card[-1]))


def sort_cards(cards) -> list:
    return sorted(cards, key=card_key)


def capture_value(card: str) -> int:
    """The value a played card captures: its rank, except an Ace captures 14."""
    return 14 if is_ace(card) else rank_value(card)


def holds_value(hand, v: int) -> bool:
    """Does `hand` hold a card of value v?  (v = 14 is covered by an Ace.)"""
    if v == 14:
        return any(is_ace(c) for c in hand)
    return any(rank_value(c) == v for c in hand)


def group_worth(cards, v: int) -> bool:
    """Is this non-empty set of cards one group worth v?

    A group is worth v when its cards sum to v (Ace = 1), or, only when
    v = 14, when it is a single Ace.
    """
    cards = list(cards)
    if not cards:
        return False
    if sum(rank_value(c) for c in cards) == v:
        return True
    return v == 14 and len(cards) == 1 and is_ace(cards[0])


# ---------------------------------------------------------------------------
# Subsets of the loose cards (bit masks over a fixed list)
# ---------------------------------------------------------------------------

def mask_cards(cards, mask: int) -> list:
    return [cards[i] for i in range(len(cards)) if mask >> i & 1]


def partitionable_masks(cards, v: int) -> list:
    """ok[mask] is True when the cards of mask split into groups each worth v.

    The empty set counts as partitionable (zero groups).  Brute force: the
    lowest card of the set must lie in some group; try every such group.
    """
    n = len(cards)
    groups = [g for g in range(1, 1 << n) if group_worth(mask_cards(cards, g), v)]
    ok = [False] * (1 << n)
    ok[0] = True
    for mask in range(1, 1 << n):
        low = mask & -mask
        for g in groups:
            if g & low and g & mask == g and ok[mask ^ g]:
                ok[mask] = True
                break
    return ok


# ---------------------------------------------------------------------------
# Play generation
# ---------------------------------------------------------------------------
# A play is a tuple, keyed by its notation:
#   ("trail", card)
#   ("capture", card, loose_taken_tuple, build_ids_tuple)
#   ("build", card, value, loose_used_tuple, multiple)
#   ("add", card, build_id, loose_used_tuple)
#   ("raise", card, build_id, new_value, loose_used_tuple, multiple)
# Builds are dicts {"id", "value", "cards", "owner", "multiple"}.


def _cards_text(cards) -> str:
    return " ".join(sort_cards(cards))


def _capture_notation(card, taken_loose, taken_ids) -> str:
    items = [f"b{i}" for i in sorted(taken_ids)] + sort_cards(taken_loose)
    return f"{card} capture " + " ".join(items)


def _with_loose(prefix: str, loose_used) -> str:
    return prefix + (" " + _cards_text(loose_used) if loose_used else "")


def _owner_obligations_met(me, remaining_hand, builds_after) -> bool:
    """Rule 10: every build the mover owns after the play needs a held card."""
    return all(
        holds_value(remaining_hand, b["value"])
        for b in builds_after
        if b["owner"] == me
    )


def generate_plays(me: int, hand, loose, builds) -> dict:
    """All legal plays of seat `me`: {notation: play tuple}.

    Naive: for every card of the hand, every subset of loose cards and every
    subset of builds is considered; illegal ones are filtered by the rules.
    """
    loose = sort_cards(loose)
    n = len(loose)
    all_masks = range(1 << n)
    ok_cache = {}

    def ok_for(v):
        if v not in ok_cache:
            ok_cache[v] = partitionable_masks(loose, v)
        return ok_cache[v]

    plays = {}
    i_own_a_build = any(b["owner"] == me for b in builds)

    for card in sort_cards(set(hand)):
        remaining = list(hand)
        remaining.remove(card)
        same_rank = [c for c in loose if c[:-1] == card[:-1]]
        same_rank_mask = sum(1 << i for i, c in enumerate(loose) if c in same_rank)

        # --- Trail (rule 5) ------------------------------------------------
        if not i_own_a_build and not same_rank:
            plays[f"{card} trail"] = ("trail", card)

        # --- Capture (rules 6, 7, 10) -------------------------------------
        v = capture_value(card)
        ok = ok_for(v)
        capturable_builds = [b for b in builds if b["value"] == v]
        for mask in all_masks:
            if not ok[mask]:
                continue
            if mask & same_rank_mask != same_rank_mask:
                continue  # compulsory part: every same-rank loose card
            taken_loose = mask_cards(loose, mask)
            for bmask in range(1 << len(capturable_builds)):
                taken_builds = mask_cards(capturable_builds, bmask)
                if not taken_loose and not taken_builds:
                    continue
                taken_ids = {b["id"] for b in taken_builds}
                builds_after = [b for b in builds if b["id"] not in taken_ids]
                if not _owner_obligations_met(me, remaining, builds_after):
                    continue
                play = ("capture", card, tuple(taken_loose), tuple(sorted(taken_ids)))
                plays[_capture_notation(card, taken_loose, taken_ids)] = play

        # Groups containing the played card: {card} + W (W loose, maybe empty).
        def card_group_masks(v):
            return [w for w in all_masks
                    if group_worth([card] + mask_cards(loose, w), v)]

        # --- New build (rule 8), single or multiple -----------------------
        for v in range(2, 15):
            if not holds_value(remaining, v):
                continue
            ok = ok_for(v)
            for w in card_group_masks(v):
                for r in all_masks:
                    if r & w or not ok[r]:
                        continue
                    used_mask = w | r
                    if used_mask == 0:
                        continue  # a build needs at least one table card
                    used = mask_cards(loose, used_mask)
                    multiple = r != 0 or w == 0  # two or more groups
                    new_build = {"id": None, "value": v, "cards": [card] + used,
                                 "owner": me, "multiple": multiple}
                    if not _owner_obligations_met(me, remaining, builds + [new_build]):
                        continue
                    play = ("build", card, v, tuple(sort_cards(used)), multiple)
                    key = f"{card} build {v} {_cards_text(used)}"
                    if key in plays and plays[key] != play:
                        raise RuntimeError(f"one notation, two effects: {key}")
                    plays[key] = play

        # --- Add to an existing build (anyone's) --------------------------
        for b in builds:
            v = b["value"]
            if not holds_value(remaining, v):
                continue
            ok = ok_for(v)
            for w in card_group_masks(v):
                for r in all_masks:
                    if r & w or not ok[r]:
                        continue
                    used = mask_cards(loose, w | r)
                    new_b = dict(b, cards=list(b["cards"]) + [card] + used,
                                 owner=me, multiple=True)
                    after = [new_b if x["id"] == b["id"] else x for x in builds]
                    if not _owner_obligations_met(me, remaining, after):
                        continue
                    play = ("add", card, b["id"], tuple(sort_cards(used)))
                    plays[_with_loose(f"{card} add b{b['id']} {v}", used)] = play

        # --- Raise a single build the mover does not own ------------------
        for b in builds:
            if b["multiple"] or b["owner"] == me:
                continue
            v = b["value"] + rank_value(card)  # Ace counts 1 here
            if v > 14 or not holds_value(remaining, v):
                continue
            ok = ok_for(v)
            for r in all_masks:
                if not ok[r]:
                    continue
                used = mask_cards(loose, r)
                new_b = dict(b, value=v, cards=list(b["cards"]) + [card] + used,
                             owner=me, multiple=bool(used))
                after = [new_b if x["id"] == b["id"] else x for x in builds]
                if not _owner_obligations_met(me, remaining, after):
                    continue
                play = ("raise", card, b["id"], v, tuple(sort_cards(used)), bool(used))
                plays[_with_loose(f"{card} raise b{b['id']} {v}", used)] = play

    return plays


# ---------------------------------------------------------------------------
# Position input
# ---------------------------------------------------------------------------

def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _parse_position(position):
    if not isinstance(position, dict):
        raise ValueError(f"position must be a dict, got {type(position).__name__}")
    for key in ("players", "to_move", "hand", "loose"):
        if key not in position:
            raise ValueError(f"position lacks {key!r}")
    players = position["players"]
    if not _is_int(players) or players not in (2, 3, 4):
        raise ValueError(f"players must be 2, 3 or 4, got {players!r}")
    partnerships = position.get("partnerships", players == 4)
    if not isinstance(partnerships, bool):
        raise ValueError(f"partnerships must be a bool, got {partnerships!r}")
    me = position["to_move"]
    if not _is_int(me) or not 0 <= me < players:
        raise ValueError(f"to_move out of range: {me!r}")

    seen = set()

    def cards_of(value, what):
        if not isinstance(value, (list, tuple)):
            raise ValueError(f"{what} must be a list of cards, got {value!r}")
        out = []
        for text in value:
            c = parse_card(text)
            if c in seen:
                raise ValueError(f"card {c} appears twice in the position")
            seen.add(c)
            out.append(c)
        return out

    hand = cards_of(position["hand"], "hand")
    loose = cards_of(position["loose"], "loose")
    raw_builds = position.get("builds", [])
    if not isinstance(raw_builds, (list, tuple)):
        raise ValueError(f"builds must be a list, got {raw_builds!r}")
    builds, ids = [], set()
    for rb in raw_builds:
        if not isinstance(rb, dict):
            raise ValueError(f"build must be a dict, got {rb!r}")
        for key in ("id", "value", "cards", "owner", "multiple"):
            if key not in rb:
                raise ValueError(f"build {rb!r} lacks {key!r}")
        bid, value, owner, multiple = rb["id"], rb["value"], rb["owner"], rb["multiple"]
        if not _is_int(bid) or bid < 1 or bid in ids:
            raise ValueError(f"bad or repeated build id {bid!r}")
        ids.add(bid)
        if not _is_int(value) or not 2 <= value <= 14:
            raise ValueError(f"build value must be 2..14, got {value!r}")
        if not _is_int(owner) or not 0 <= owner < players:
            raise ValueError(f"build owner out of range: {owner!r}")
        if not isinstance(multiple, bool):
            raise ValueError(f"build 'multiple' must be a bool, got {multiple!r}")
        cards = cards_of(rb["cards"], "build cards")
        if len(cards) < 2:
            raise ValueError(f"a build holds at least two cards: {rb!r}")
        if not multiple and sum(rank_value(c) for c in cards) != value:
            raise ValueError(f"single build's cards do not sum to its value: {rb!r}")
        if multiple and not partitionable_masks(cards, value)[(1 << len(cards)) - 1]:
            raise ValueError(f"multiple build's cards do not split into groups "
                             f"worth its value: {rb!r}")
        builds.append({"id": bid, "value": value, "cards": cards,
                       "owner": owner, "multiple": multiple})
    return players, partnerships, me, hand, loose, builds


def reference_legal_plays(position: dict) -> set[str]:
    """The set of legal plays (canonical notation) of the mover in `position`.

    position = {"players": 2|3|4, "partnerships": bool (4 players only,
    optional), "to_move": seat, "hand": [...], "loose": [...],
    "builds": [{"id", "value", "cards", "owner", "multiple"}, ...]}.
    Raises ValueError on malformed input.
    """
    _players, _partners, me, hand, loose, builds = _parse_position(position)
    return set(generate_plays(me, hand, loose, builds))


# ---------------------------------------------------------------------------
# Deal state and transitions (for perft)
# ---------------------------------------------------------------------------

class _Deal:
    """The state of one deal, copied (never shared) on every play."""

    def __init__(self, players, deck, partnerships):
        self.players = players
        self.partnerships = partnerships
        self.deck = list(deck)
        self.loose = self.deck[0:4]          # table: the first 4 cards
        self.next_card = 4
        self.hands = [[] for _ in range(players)]
        self._deal_round()
        self.builds = []
        self.next_build_id = 1
        n_sides = 2 if (players == 4 and partnerships) else players
        self.piles = [[] for _ in range(n_sides)]
        self.sweeps = [0] * n_sides
        self.last_capturer = None
        self.over = False

    def _deal_round(self):
        # 4 cards to each player, in consecutive blocks, seat 0 first.
        for seat in range(self.players):
            self.hands[seat] = self.deck[self.next_card:self.next_card + 4]
            self.next_card += 4
        self.to_move = 0  # the seat after the dealer (seat n-1) leads

    def side(self, seat):
        return seat % 2 if (self.players == 4 and self.partnerships) else seat

    def copy(self):
        other = _Deal.__new__(_Deal)
        other.__dict__.update(self.__dict__)
        other.deck = self.deck
        other.loose = list(self.loose)
        other.hands = [list(h) for h in self.hands]
        other.builds = [dict(b, cards=list(b["cards"])) for b in self.builds]
        other.piles = [list(p) for p in self.piles]
        other.sweeps = list(self.sweeps)
        return other

    def legal(self):
        me = self.to_move
        return generate_plays(me, self.hands[me], self.loose, self.builds)

    def apply(self, play):
        s = self.copy()
        me = s.to_move
        kind, card = play[0], play[1]
        s.hands[me].remove(card)
        if kind == "trail":
            s.loose.append(card)
        elif kind == "capture":
            taken_loose, taken_ids = play[2], play[3]
            taken = [card] + list(taken_loose)
            for c in taken_loose:
                s.loose.remove(c)
            for b in [b for b in s.builds if b["id"] in taken_ids]:
                taken += b["cards"]
                s.builds.remove(b)
            s.piles[s.side(me)] += taken
            s.last_capturer = me
            if not s.loose and not s.builds:
                s.sweeps[s.side(me)] += 1
        elif kind == "build":
            value, used, multiple = play[2], play[3], play[4]
            for c in used:
                s.loose.remove(c)
            s.builds.append({"id": s.next_build_id, "value": value,
                             "cards": [card] + list(used), "owner": me,
                             "multiple": multiple})
            s.next_build_id += 1
        elif kind == "add":
            build_id, used = play[2], play[3]
            for c in used:
                s.loose.remove(c)
            b = next(b for b in s.builds if b["id"] == build_id)
            b["cards"] += [card] + list(used)
            b["owner"] = me
            b["multiple"] = True
        elif kind == "raise":
            build_id, value, used, multiple = play[2], play[3], play[4], play[5]
            for c in used:
                s.loose.remove(c)
            b = next(b for b in s.builds if b["id"] == build_id)
            b["cards"] += [card] + list(used)
            b["value"] = value
            b["owner"] = me
            b["multiple"] = multiple
        else:
            raise RuntimeError(f"unknown play {play!r}")

        s.to_move = (me + 1) % s.players
        if all(not h for h in s.hands):
            if s.next_card < len(s.deck):
                s._deal_round()
            else:
                # Rule 12: end of the deal; the table goes to the last capturer.
                s.over = True
                leftovers = list(s.loose) + [c for b in s.builds for c in b["cards"]]
                if s.last_capturer is not None:
                    s.piles[s.side(s.last_capturer)] += leftovers
                s.loose, s.builds = [], []
        return s


def _start(players, deck, partnerships):
    if not _is_int(players) or players not in (2, 3, 4):
        raise ValueError(f"players must be 2, 3 or 4, got {players!r}")
    if not isinstance(partnerships, bool):
        raise ValueError(f"partnerships must be a bool, got {partnerships!r}")
    if not isinstance(deck, (list, tuple)):
        raise ValueError("deck must be a list of 52 card codes")
    cards = [parse_card(c) for c in deck]
    if len(cards) != 52 or len(set(cards)) != 52:
        raise ValueError("deck must hold the 52 distinct cards")
    return _Deal(players, cards, partnerships)


def _check_depth(depth):
    if not _is_int(depth) or depth < 0:
        raise ValueError(f"depth must be a non-negative int, got {depth!r}")


def _perft(state, depth):
    if depth == 0 or state.over:
        return 1
    return sum(_perft(state.apply(p), depth - 1) for p in state.legal().values())


def reference_perft(players: int, deck: list[str], depth: int,
                    partnerships: bool = True) -> int:
    """Number of distinct play sequences of length `depth` from the start of
    the first deal dealt from `deck`; a sequence ending the deal early counts
    as one leaf.  depth 0 -> 1."""
    _check_depth(depth)
    return _perft(_start(players, deck, partnerships), depth)


def reference_perft_divide(players: int, deck: list[str], depth: int,
                           partnerships: bool = True) -> dict[str, int]:
    """{first play notation: perft count below it}.  Empty for depth 0."""
    _check_depth(depth)
    state = _start(players, deck, partnerships)
    if depth == 0:
        return {}
    return {note: _perft(state.apply(p), depth - 1)
            for note, p in state.legal().items()}


# ---------------------------------------------------------------------------
# Self-check against every worked example of the rules file
# ---------------------------------------------------------------------------

def _b(bid, value, cards, owner, multiple=False):
    return {"id": bid, "value": value, "cards": cards, "owner": owner,
            "multiple": multiple}


# P1 is seat 0, P2 seat 1, P3 seat 2.
_EXAMPLES = [
    ("1: KH 8C 7D 5S AH / KS 2C 3D 4H",
     {"players": 2, "to_move": 0, "hand": ["KS", "2C", "3D", "4H"],
      "loose": ["KH", "8C", "7D", "5S", "AH"], "builds": []},
     {"KS capture KH", "KS capture 5S 8C KH", "KS capture AH 5S 7D KH",
      "2C trail", "2C build 3 AH",
      "3D trail", "3D build 4 AH",
      "4H trail", "4H build 13 AH 8C", "4H build 13 AH 8C KH"}),
    ("2: 10D 10C 8H 6H / 10S 3C 5D 7H",
     {"players": 2, "to_move": 0, "hand": ["10S", "3C", "5D", "7H"],
      "loose": ["10D", "10C", "8H", "6H"], "builds": []},
     {"10S capture 10C 10D", "3C trail", "5D trail", "7H trail"}),
    ("3: b[12 P2 single] / 2S AH 6C 3D",
     {"players": 2, "to_move": 0, "hand": ["2S", "AH", "6C", "3D"],
      "loose": [], "builds": [_b(1, 12, ["7C", "5D"], 1)]},
     {"2S raise b1 14", "2S trail", "AH trail", "6C trail", "3D trail"}),
    ("4: b[12 P1 single] / QS 2H AD",
     {"players": 2, "to_move": 0, "hand": ["QS", "2H", "AD"],
      "loose": [], "builds": [_b(1, 12, ["7C", "5D"], 0)]},
     {"QS capture b1"}),
    ("5: b[7 P2 single], 9H / 2S 9C",
     {"players": 2, "to_move": 0, "hand": ["2S", "9C"],
      "loose": ["9H"], "builds": [_b(1, 7, ["3C", "4D"], 1)]},
     {"2S trail", "2S raise b1 9", "2S raise b1 9 9H", "9C capture 9H"}),
    ("6: 3C 4D 5H 7S / 2C 7H",
     {"players": 2, "to_move": 0, "hand": ["2C", "7H"],
      "loose": ["3C", "4D", "5H", "7S"], "builds": []},
     {"2C trail", "2C build 7 5H", "2C build 7 5H 7S", "2C build 7 3C 4D 5H",
      "2C build 7 3C 4D 5H 7S", "7H capture 7S", "7H capture 3C 4D 7S"}),
    ("7: AH KS AC / AS 3C",
     {"players": 2, "to_move": 0, "hand": ["AS", "3C"],
      "loose": ["AH", "KS", "AC"], "builds": []},
     {"AS capture AC AH", "AS capture AC AH KS", "AS build 3 AC AH", "3C trail"}),
    ("8: partners, b[9 P3 single], 2H / 9S 4H KH 2C",
     {"players": 4, "partnerships": True, "to_move": 0,
      "hand": ["9S", "4H", "KH", "2C"], "loose": ["2H"],
      "builds": [_b(1, 9, ["5C", "4D"], 2)]},
     {"9S trail", "9S capture b1", "4H trail", "4H raise b1 13", "KH trail",
      "2C capture 2H", "2C build 4 2H"}),
]


def _self_check() -> bool:
    good = True
    for name, position, expected in _EXAMPLES:
        got = reference_legal_plays(position)
        if got == expected:
            print(f"ok    example {name}")
        else:
            good = False
            print(f"FAIL  example {name}")
            print("      missing:", sorted(expected - got))
            print("      extra:  ", sorted(got - expected))
    return good


if __name__ == "__main__":
    import sys

    name, first, _ = _EXAMPLES[0]
    print(f"Example {name}: legal plays")
    for play in sorted(reference_legal_plays(first)):
        print("  " + play)
    print()
    sys.exit(0 if _self_check() else 1)
