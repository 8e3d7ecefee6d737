"""Scenario tests: hand-worked positions checked against the engine and the reference generator.

Every expected set below was worked out by hand from /work/shared/rules/royal-casino.md (rules
1-18 and the worked examples), not copied from engine output. Each position is checked twice:
against ``legal_moves`` and against the independent brute-force generator in
``tests/reference/casino_reference.py``. Seats: the rules' P1 is seat 0, P2 seat 1, P3 seat 2.

Build specs are ``(value, "cards", owner)``; a build is multiple when its cards do not sum to its
value (as ``make_position`` derives it). Build ids are b1, b2, ... in the order given.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from referee.rules import (
    Build,
    IllegalMoveError,
    InvalidCardError,
    InvalidDeckError,
    InvalidMoveError,
    InvalidOptionError,
    InvalidSeatError,
    Move,
    MoveKind,
    RuleOptions,
    apply,
    card_code,
    legal_moves,
    make_position,
    new_game,
    parse_card,
    parse_cards,
    parse_deck,
    parse_move,
)
from tests.reference.casino_reference import rank_value, reference_legal_plays

# ---------------------------------------------------------------------------------------------
# The scenario table
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    id: str
    rule: int
    why: str
    hand: str
    expected: frozenset[str]
    loose: str = ""
    builds: tuple[tuple[int, str, int], ...] = ()
    players: int = 2
    partnerships: bool = True
    to_move: int = 0
    others: dict[int, str] = field(default_factory=dict)  # other seats' hands, where they matter

    @property
    def options(self) -> RuleOptions:
        return RuleOptions(players=self.players, partnerships=self.partnerships)


def plays(*notation: str) -> frozenset[str]:
    return frozenset(notation)


CASES: list[Case] = [
    # ---- the worked examples of the rules file (every one of them) ----------------------------
    Case(
        "r06-example1-king-takes-equal-card-and-optional-sums",
        6,
        "Example 1; 3D is missing from the rules' list but may trail or build 4 with AH (holding 4H)",
        hand="KS 2C 3D 4H",
        loose="KH 8C 7D 5S AH",
        expected=plays(
            "KS capture KH", "KS capture 5S 8C KH", "KS capture AH 5S 7D KH",
            "2C trail", "2C build 3 AH",
            "3D trail", "3D build 4 AH",
            "4H trail", "4H build 13 AH 8C", "4H build 13 AH 8C KH",
        ),
    ),
    Case(
        "r07-example2-ten-must-take-both-tens",
        7,
        "Example 2: 10S takes both loose tens, never one; the other cards can only trail",
        hand="10S 3C 5D 7H",
        loose="10D 10C 8H 6H",
        expected=plays("10S capture 10C 10D", "3C trail", "5D trail", "7H trail"),
    ),
    Case(
        "r08-example3-raise-opponents-build-to-14-with-ace-held",
        8,
        "Example 3: 2S raises 12 to 14 (AH covers 14); 6C/3D pass 14; AH makes 13 with no K",
        hand="2S AH 6C 3D",
        builds=((12, "7C 5D", 1),),
        expected=plays("2S raise b1 14", "2S trail", "AH trail", "6C trail", "3D trail"),
    ),
    Case(
        "r10-example4-owner-can-only-capture-own-build",
        10,
        "Example 4: owner may not trail nor raise its own build; QS takes it (a sweep)",
        hand="QS 2H AD",
        builds=((12, "7C 5D", 0),),
        expected=plays("QS capture b1"),
    ),
    Case(
        "r08-example5-raise-with-optional-absorb",
        8,
        "Example 5: 2S trails or raises 7 to 9, optionally absorbing 9H; 9C must take 9H",
        hand="2S 9C",
        loose="9H",
        builds=((7, "3C 4D", 1),),
        expected=plays("2S trail", "2S raise b1 9", "2S raise b1 9 9H", "9C capture 9H"),
    ),
    Case(
        "r08-example6-single-and-multiple-builds-of-7",
        8,
        "Example 6: 2C+5H is 7, optionally with 7S and/or 3C+4D; 7H takes 7S, optionally 3C+4D",
        hand="2C 7H",
        loose="3C 4D 5H 7S",
        expected=plays(
            "2C trail", "2C build 7 5H", "2C build 7 5H 7S", "2C build 7 3C 4D 5H",
            "2C build 7 3C 4D 5H 7S", "7H capture 7S", "7H capture 3C 4D 7S",
        ),
    ),
    Case(
        "r06-example7-ace-takes-aces-and-14-sum",
        6,
        "Example 7: AS must take both Aces, optionally KS (KS+A is 14); or build 3 holding 3C",
        hand="AS 3C",
        loose="AH KS AC",
        expected=plays("AS capture AC AH", "AS capture AC AH KS", "AS build 3 AC AH", "3C trail"),
    ),
    Case(
        "r09-example8-partners-build",
        9,
        "Example 8: partner owns b1; trail allowed, no add without a second 9, raise to 13 with KH",
        hand="9S 4H KH 2C",
        loose="2H",
        builds=((9, "5C 4D", 2),),
        players=4,
        expected=plays(
            "9S trail", "9S capture b1", "4H trail", "4H raise b1 13", "KH trail",
            "2C capture 2H", "2C build 4 2H",
        ),
    ),
    # ---- rule 5: trail ------------------------------------------------------------------------
    Case(
        "r05-trail-forbidden-by-loose-ace-for-an-ace",
        5,
        "AS may not trail beside AH; 5D+9C is a single 14 and AH a lone-Ace group of a multiple 14",
        hand="AS 5D",
        loose="AH 9C",
        expected=plays("AS capture AH", "5D trail", "5D build 14 9C", "5D build 14 AH 9C"),
    ),
    Case(
        "r05-owner-never-trails",
        5,
        "owning b1 forbids every trail; the 7s add alone or capture, 2H builds/adds with 5C",
        hand="7S 7D 2H",
        loose="5C 10C",
        builds=((7, "4C 3D", 0),),
        expected=plays(
            "7D capture b1", "7D add b1 7", "7S capture b1", "7S add b1 7",
            "2H build 7 5C", "2H add b1 7 5C",
        ),
    ),
    Case(
        "r05-equal-build-does-not-block-trail",
        5,
        "only a loose card of the same value forbids a trail; a build of 5 does not, nor is it a summand",
        hand="9S 5H",
        loose="4H",
        builds=((5, "3C 2D", 1),),
        expected=plays("9S trail", "5H trail", "5H capture b1", "5H build 9 4H"),
    ),
    # ---- rule 6: capture -----------------------------------------------------------------------
    Case(
        "r06-several-groups-in-one-capture",
        6,
        "9D must take 9C and may add 3H+6D and/or 4C+5S; 2H builds 9 with 3H+4C, optionally 9C",
        hand="9D 2H",
        loose="9C 6D 3H 5S 4C",
        expected=plays(
            "9D capture 9C", "9D capture 3H 6D 9C", "9D capture 4C 5S 9C",
            "9D capture 3H 4C 5S 6D 9C", "2H trail", "2H build 9 3H 4C", "2H build 9 3H 4C 9C",
        ),
    ),
    Case(
        "r06-sum-capture-is-optional-trail-allowed",
        6,
        "with no equal loose card a sum capture is optional: 10H may trail or take 3D+7C",
        hand="10H 4S",
        loose="7C 3D",
        expected=plays("10H trail", "10H capture 3D 7C", "4S trail"),
    ),
    Case(
        "r06-jack-takes-disjoint-sums",
        6,
        "J is 11: 8C+3H and 5D+6S, alone or together; 2C builds 11 with 3H+6S (holding JH)",
        hand="JH 2C",
        loose="8C 3H 5D 6S",
        expected=plays(
            "JH trail", "JH capture 3H 8C", "JH capture 5D 6S", "JH capture 3H 5D 6S 8C",
            "2C trail", "2C build 11 3H 6S",
        ),
    ),
    Case(
        "r06-ace-alone-captures-14-sum",
        6,
        "an Ace captures 14: 10C+4D; 7C captures 3H+4D or builds a single 14 with them (AS held)",
        hand="AS 7C",
        loose="10C 4D 3H",
        expected=plays(
            "AS trail", "AS capture 4D 10C", "7C trail", "7C capture 3H 4D", "7C build 14 3H 4D",
        ),
    ),
    Case(
        "r06-ace-takes-loose-aces-sums-and-14-builds-together",
        6,
        "AS must take AH, may add 9S+5C and/or the 14 build; AS+AH is also a single 2 (2D held)",
        hand="AS 2D",
        loose="AH 9S 5C",
        builds=((14, "10C 4D", 1),),
        expected=plays(
            "AS capture AH", "AS capture AH 5C 9S", "AS capture b1 AH", "AS capture b1 AH 5C 9S",
            "AS build 2 AH", "2D trail",
        ),
    ),
    Case(
        "r06-build-is-never-a-summand",
        6,
        "b1 (6) + 3C would be 9 but a build is never part of a sum: 9H can only trail",
        hand="9H 2D",
        loose="3C",
        builds=((6, "4S 2C", 1),),
        expected=plays("9H trail", "2D trail"),
    ),
    Case(
        "r06-duplicates-collapse-to-one-play",
        6,
        "AC+(KS+AH) and AH+(KS+AC) are one capture; (AS+KS)+AC+AH, AS+(KS+AC)+AH... are one build",
        hand="AS AD",
        loose="KS AC AH",
        expected=plays(
            "AS capture AC AH", "AS capture AC AH KS",
            "AS build 14 AC", "AS build 14 AH", "AS build 14 AC AH", "AS build 14 KS",
            "AS build 14 AC KS", "AS build 14 AH KS", "AS build 14 AC AH KS",
            "AD capture AC AH", "AD capture AC AH KS",
            "AD build 14 AC", "AD build 14 AH", "AD build 14 AC AH", "AD build 14 KS",
            "AD build 14 AC KS", "AD build 14 AH KS", "AD build 14 AC AH KS",
        ),
    ),
    Case(
        "r06-several-equal-builds-captured-in-any-combination",
        6,
        "8C takes either or both builds of 8; builds are never merged; 4D must take 4S or build",
        hand="8C 4D",
        loose="4S",
        builds=((8, "5C 3D", 1), (8, "6H 2S", 1)),
        expected=plays(
            "8C trail", "8C capture b1", "8C capture b2", "8C capture b1 b2",
            "4D capture 4S", "4D build 8 4S", "4D add b1 8 4S", "4D add b2 8 4S",
        ),
    ),
    # ---- rule 7: compulsory part ---------------------------------------------------------------
    Case(
        "r07-compulsory-capture-takes-every-equal-card",
        7,
        "5S must take all three loose 5s at once; 9C can only trail",
        hand="5S 9C",
        loose="5C 5D 5H",
        expected=plays("5S capture 5C 5D 5H", "9C trail"),
    ),
    Case(
        "r07-compulsory-with-optional-sum-or-build-instead",
        7,
        "6S takes 6C+6D (4H+2S optional) or builds 8 with 2S; 8D may take 2S with either 6",
        hand="6S 8D",
        loose="6C 6D 4H 2S",
        expected=plays(
            "6S capture 6C 6D", "6S capture 2S 4H 6C 6D", "6S build 8 2S",
            "8D trail", "8D capture 2S 6C", "8D capture 2S 6D",
        ),
    ),
    Case(
        "r07-equal-loose-card-compulsory-builds-optional",
        7,
        "8H must take 8D; the build of 8 is optional but cannot be taken instead of 8D",
        hand="8H 3D",
        loose="8D",
        builds=((8, "5C 3S", 1),),
        expected=plays("8H capture 8D", "8H capture b1 8D", "3D trail"),
    ),
    Case(
        "r07-building-instead-of-compulsory-capture",
        7,
        "4C may take 4D or build 10 with 6C (10H optional) leaving 4D; 10S must take 10H",
        hand="4C 10S",
        loose="6C 4D 10H",
        expected=plays(
            "4C capture 4D", "4C build 10 6C", "4C build 10 6C 10H",
            "10S capture 10H", "10S capture 4D 6C 10H",
        ),
    ),
    # ---- rule 8: builds ------------------------------------------------------------------------
    Case(
        "r08-single-build-from-loose-card",
        8,
        "3D+6C is a single 9 held by 9S",
        hand="3D 9S",
        loose="6C",
        expected=plays("3D trail", "3D build 9 6C", "9S trail"),
    ),
    Case(
        "r08-build-needs-the-capture-card-afterwards",
        8,
        "4D+3C is 7 held by 7H/7S; a 7 alone with no loose 7-group makes no build",
        hand="4D 7H 7S",
        loose="3C",
        expected=plays("4D trail", "4D build 7 3C", "7H trail", "7S trail"),
    ),
    Case(
        "r08-no-build-without-capture-card",
        8,
        "4D+3C=7 and 6H+3C=9 are not held: only trails",
        hand="4D 6H",
        loose="3C",
        expected=plays("4D trail", "6H trail"),
    ),
    Case(
        "r08-multiple-build-played-card-alone-as-group",
        8,
        "8S (8C held) is a group alone: builds with 8H and/or 3D+5C; or it must take 8H",
        hand="8S 8C",
        loose="8H 5C 3D",
        expected=plays(
            "8C capture 8H", "8C capture 3D 5C 8H", "8C build 8 8H", "8C build 8 3D 5C",
            "8C build 8 3D 5C 8H",
            "8S capture 8H", "8S capture 3D 5C 8H", "8S build 8 8H", "8S build 8 3D 5C",
            "8S build 8 3D 5C 8H",
        ),
    ),
    Case(
        "r08-multiple-build-of-14-from-lone-aces-never-value-1",
        8,
        "(AS)+(AH) is a multiple 14 with AD held; no build of value 1, and 2 is not held",
        hand="AS AD",
        loose="AH 5C",
        expected=plays("AS capture AH", "AS build 14 AH", "AD capture AH", "AD build 14 AH"),
    ),
    Case(
        "r08-ace-counts-1-in-a-summed-build-of-14",
        8,
        "AS+KC is a single 14 held by the other Ace; KC alone is no 14-group",
        hand="AS AD",
        loose="KC",
        expected=plays("AS trail", "AS build 14 KC", "AD trail", "AD build 14 KC"),
    ),
    Case(
        "r08-ace-counts-1-in-a-build-of-13",
        8,
        "AC+QD is a single 13 held by KS; KS cannot take QD",
        hand="KS AC",
        loose="QD",
        expected=plays("KS trail", "AC trail", "AC build 13 QD"),
    ),
    Case(
        "r08-ace-pair-single-build-of-2",
        8,
        "AS must take AH or build: AS+AH is a single 2 held by 2C; 2C cannot take a lone Ace",
        hand="AS 2C",
        loose="AH",
        expected=plays("AS capture AH", "AS build 2 AH", "2C trail"),
    ),
    Case(
        "r08-add-to-own-build",
        8,
        "owner with a spare 9 adds alone or with 3S+6H; 3H adds 6H to b1 or builds a second 9",
        hand="9C 9D 3H",
        loose="6H 3S",
        builds=((9, "5C 4D", 0),),
        expected=plays(
            "9C capture b1", "9C capture 3S 6H", "9C capture b1 3S 6H", "9C build 9 3S 6H",
            "9C add b1 9", "9C add b1 9 3S 6H",
            "9D capture b1", "9D capture 3S 6H", "9D capture b1 3S 6H", "9D build 9 3S 6H",
            "9D add b1 9", "9D add b1 9 3S 6H",
            "3H capture 3S", "3H build 9 6H", "3H add b1 9 6H",
        ),
    ),
    Case(
        "r08-add-to-opponents-build",
        8,
        "2D+6S joins the opponent's 8 (8H held); 8H may take b1 and/or 2H+6S",
        hand="2D 8H 4C",
        loose="6S 2H",
        builds=((8, "5C 3D", 1),),
        expected=plays(
            "2D capture 2H", "2D build 8 6S", "2D build 4 2H", "2D add b1 8 6S",
            "8H trail", "8H capture b1", "8H capture 2H 6S", "8H capture b1 2H 6S", "4C trail",
        ),
    ),
    Case(
        "r08-add-with-extra-loose-groups",
        8,
        "2D+5S joins b1, optionally with 7C; 7H must take 7C, b1 and 2H+5S optional",
        hand="2D 7H",
        loose="5S 2H 7C",
        builds=((7, "4C 3D", 1),),
        expected=plays(
            "2D capture 2H", "2D build 7 5S", "2D build 7 5S 7C", "2D add b1 7 5S",
            "2D add b1 7 5S 7C",
            "7H capture 7C", "7H capture 2H 5S 7C", "7H capture b1 7C", "7H capture b1 2H 5S 7C",
        ),
    ),
    Case(
        "r08-add-to-multiple-build",
        8,
        "a multiple 6 takes another group (the card alone or with AC+5S); it is never raised",
        hand="6S 6D",
        loose="5S AC",
        builds=((6, "4C 2D 6H", 1),),
        expected=plays(
            "6D trail", "6D capture b1", "6D capture AC 5S", "6D capture b1 AC 5S",
            "6D build 6 AC 5S", "6D add b1 6", "6D add b1 6 AC 5S",
            "6S trail", "6S capture b1", "6S capture AC 5S", "6S capture b1 AC 5S",
            "6S build 6 AC 5S", "6S add b1 6", "6S add b1 6 AC 5S",
        ),
    ),
    Case(
        "r08-raise-opponents-build-absorbing-a-sum",
        8,
        "3H raises 6 to 9 (9D held), optionally absorbing 4H+5S; 9D may take 4H+5S",
        hand="3H 9D",
        loose="5S 4H",
        builds=((6, "4C 2D", 1),),
        expected=plays(
            "3H trail", "3H raise b1 9", "3H raise b1 9 4H 5S", "9D trail", "9D capture 4H 5S",
        ),
    ),
    Case(
        "r08-raise-partners-build",
        8,
        "seat 1 may raise its partner seat 3's 5 to 7 holding 7H",
        hand="2S 7H",
        loose="8C",
        builds=((5, "3C 2D", 3),),
        players=4,
        to_move=1,
        expected=plays("2S trail", "2S raise b1 7", "7H trail"),
    ),
    Case(
        "r08-never-raise-own-build",
        8,
        "3H would raise own 6 to 9 (9D held) but that is forbidden; spare 6s add alone",
        hand="3H 9D 6S 6D",
        loose="5C 4H",
        builds=((6, "4C 2D", 0),),
        expected=plays(
            "9D capture 4H 5C", "6D capture b1", "6D add b1 6", "6S capture b1", "6S add b1 6",
        ),
    ),
    Case(
        "r08-never-raise-a-multiple-build",
        8,
        "2S would raise 8 to 10 (10C held) but b1 is multiple: its value never changes",
        hand="2S 10C",
        loose="4D",
        builds=((8, "5C 3D 8H", 1),),
        expected=plays("2S trail", "10C trail"),
    ),
    Case(
        "r08-raise-limit-is-14",
        8,
        "11+3 = 14 (AS covers 14); 11+4 passes 14; AS makes 12 (not held); KD 24",
        hand="3S 4H AS KD",
        builds=((11, "7C 4D", 1),),
        expected=plays("3S trail", "3S raise b1 14", "4H trail", "AS trail", "KD trail"),
    ),
    Case(
        "r08-ace-counts-1-when-raising",
        8,
        "AS raises 12 to 13 (KH held), never to 26; KH passes 14",
        hand="AS KH",
        builds=((12, "7C 5D", 1),),
        expected=plays("AS trail", "AS raise b1 13", "KH trail"),
    ),
    Case(
        "r08-raise-to-14-absorbing-a-lone-ace",
        8,
        "4S raises 10 to 14 (AD held), optionally absorbing AH as a 14-group; AD must take AH",
        hand="4S AD",
        loose="AH",
        builds=((10, "6C 4D", 1),),
        expected=plays("4S trail", "4S raise b1 14", "4S raise b1 14 AH", "AD capture AH"),
    ),
    # ---- rule 9: ownership and partnerships ---------------------------------------------------
    Case(
        "r09-add-to-partners-build-with-own-capture-card",
        9,
        "3S+7H joins partner's 10 because seat 0 holds 10S itself; trail still allowed",
        hand="3S 10S 5D",
        loose="7H",
        builds=((10, "6C 4D", 2),),
        players=4,
        expected=plays(
            "3S trail", "3S build 10 7H", "3S add b1 10 7H", "10S trail", "10S capture b1", "5D trail",
        ),
    ),
    Case(
        "r09-no-add-to-partners-build-relying-on-partners-card",
        9,
        "3S+7H would make 10 but only the partner (seat 2) holds a 10: only trails",
        hand="3S 5D 9C",
        loose="7H",
        builds=((10, "6C 4D", 2),),
        players=4,
        others={2: "10H 2C"},
        expected=plays("3S trail", "5D trail", "9C trail"),
    ),
    Case(
        "r09-no-build-relying-on-partners-card",
        9,
        "4C+5S is 9 but only partner seat 2 holds 9H: no build",
        hand="4C 7D",
        loose="5S",
        players=4,
        others={2: "9H KD"},
        expected=plays("4C trail", "7D trail"),
    ),
    Case(
        "r09-trail-allowed-while-only-partner-owns-a-build",
        9,
        "partner seat 2 owns b1; seat 0 owns nothing and may trail",
        hand="4H 6S",
        loose="JD",
        builds=((8, "5C 3D", 2),),
        players=4,
        expected=plays("4H trail", "6S trail"),
    ),
    # ---- rule 10: owner obligations -----------------------------------------------------------
    Case(
        "r10-owner-must-keep-the-capture-card",
        10,
        "9C is the last 9: it must take b1 (and 9H by rule 7); 3H and KS have no legal play",
        hand="9C 3H KS",
        loose="9H 2S 7D",
        builds=((9, "5C 4D", 0),),
        expected=plays("9C capture b1 9H", "9C capture b1 2S 7D 9H"),
    ),
    Case(
        "r10-owner-with-two-builds",
        10,
        "9S must take b1 (JC keeps b2), JC must take b2; 2C must take 2D",
        hand="9S JC 2C",
        loose="2D",
        builds=((9, "5C 4D", 0), (11, "8H 3S", 0)),
        expected=plays("9S capture b1", "JC capture b2", "2C capture 2D"),
    ),
    Case(
        "r10-owner-two-builds-same-value",
        10,
        "9C is the only 9: it takes both owned 9s or neither; 4H+5D builds or adds (9C kept)",
        hand="9C 4H",
        loose="5D",
        builds=((9, "5C 4D", 0), (9, "6H 3S", 0)),
        expected=plays("9C capture b1 b2", "4H build 9 5D", "4H add b1 9 5D", "4H add b2 9 5D"),
    ),
    Case(
        "r10-last-card-must-take-own-build",
        10,
        "QS is seat 0's last card: it takes b1, optionally with 3H+9D",
        hand="QS",
        loose="3H 9D",
        builds=((12, "7C 5D", 0),),
        expected=plays("QS capture b1", "QS capture b1 3H 9D"),
    ),
    Case(
        "r10-no-add-with-last-capture-card",
        10,
        "9S alone on own b1 would leave no 9, so 9S must capture; 2C+7H builds or adds",
        hand="9S 2C",
        loose="7H",
        builds=((9, "5C 4D", 0),),
        expected=plays("9S capture b1", "2C build 9 7H", "2C add b1 9 7H"),
    ),
    Case(
        "r10-owner-raises-another-build-to-its-value",
        10,
        "owning b1 (9), 3C raises the opponent's 6 to 9, keeping 9S for both",
        hand="9S 3C",
        builds=((9, "5C 4D", 0), (6, "4H 2S", 1)),
        expected=plays("9S capture b1", "3C raise b2 9"),
    ),
    Case(
        "r10-no-raise-spending-last-capture-card",
        10,
        "5S would raise b2 to 13 (KD held) but it is the last 5 for owned b1",
        hand="5S KD",
        builds=((5, "3C 2D", 0), (8, "6H 2S", 1)),
        expected=plays("5S capture b1"),
    ),
    # ---- rule 11: sweeps and the empty table --------------------------------------------------
    Case(
        "r11-empty-table-only-trails",
        11,
        "after a sweep the table is empty: every card trails, duplicates of rank included",
        hand="5C 5D KH",
        expected=plays("5C trail", "5D trail", "KH trail"),
    ),
    Case(
        "r11-sweep-available",
        11,
        "4H must take both 4s (a sweep) or build 8; 8S may sweep 4C+4D",
        hand="4H 8S",
        loose="4C 4D",
        expected=plays(
            "4H capture 4C 4D", "4H build 8 4C", "4H build 8 4D", "8S trail", "8S capture 4C 4D",
        ),
    ),
    # ---- rule 2: 3 players and 4 individuals --------------------------------------------------
    Case(
        "r02-three-players-seat-2",
        2,
        "3 players: seat 2 raises seat 1's 7 to 10 (10S held), takes seat 0's 10, builds/adds 7C+3C",
        hand="3D 10S 7C",
        loose="3C",
        builds=((10, "6C 4D", 0), (7, "5H 2S", 1)),
        players=3,
        to_move=2,
        expected=plays(
            "3D capture 3C", "3D raise b2 10", "10S trail", "10S capture b1",
            "7C trail", "7C capture b2", "7C build 10 3C", "7C add b1 10 3C",
        ),
    ),
    Case(
        "r02-four-individuals-seat-3",
        2,
        "4 individuals: seat 3 owns b2 (11); JC must take it; 6C takes 6D or raises seat 1's 5 to 11",
        hand="JC 6C 2H",
        loose="6D",
        builds=((5, "3C 2D", 1), (11, "6H 5S", 3)),
        players=4,
        partnerships=False,
        to_move=3,
        expected=plays("JC capture b2", "6C capture 6D", "6C raise b1 11"),
    ),
]


def position(case: Case):
    hands = {case.to_move: case.hand, **case.others}
    builds = [{"value": v, "cards": cards, "owner": owner} for v, cards, owner in case.builds]
    return make_position(case.options, to_move=case.to_move, hands=hands, loose=case.loose, builds=builds)


def reference_dict(case: Case) -> dict:
    """The position in the reference generator's own format."""
    builds = []
    for i, (value, cards, owner) in enumerate(case.builds, start=1):
        codes = cards.split()
        builds.append({
            "id": i, "value": value, "cards": codes, "owner": owner,
            "multiple": sum(rank_value(c) for c in codes) != value,
        })
    return {
        "players": case.players,
        "partnerships": case.partnerships if case.players == 4 else False,
        "to_move": case.to_move,
        "hand": case.hand.split(),
        "loose": case.loose.split(),
        "builds": builds,
    }


def test_table_is_well_formed() -> None:
    ids = [c.id for c in CASES]
    assert len(CASES) >= 45
    assert len(set(ids)) == len(ids)
    for c in CASES:
        assert c.id.startswith(f"r{c.rule:02d}-"), c.id
        assert c.why and "\n" not in c.why
    assert sum("example" in c.id for c in CASES) == 8  # every worked example of the rules file


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_scenario(case: Case) -> None:
    state = position(case)
    moves = legal_moves(state)
    got = [str(m) for m in moves]
    assert len(got) == len(set(got)), "a play is listed twice"
    assert moves == sorted(moves), "legal moves are not in the documented order"
    assert set(got) == case.expected, (
        f"missing {sorted(case.expected - set(got))}, extra {sorted(set(got) - case.expected)}"
    )
    ref = reference_legal_plays(reference_dict(case))
    assert ref == case.expected, (
        f"reference: missing {sorted(case.expected - ref)}, extra {sorted(ref - case.expected)}"
    )


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_every_expected_play_applies_and_round_trips(case: Case) -> None:
    state = position(case)
    for text in sorted(case.expected):
        assert str(parse_move(text)) == text
        apply(state, text)  # legal by the table: must not raise


# ---------------------------------------------------------------------------------------------
# apply: the next state, and the old state left alone
# ---------------------------------------------------------------------------------------------


def cards(text: str) -> tuple[int, ...]:
    return tuple(sorted(parse_cards(text))) if text else ()


def snapshot(state):
    return (state.to_move, state.hands, state.loose, state.builds, state.piles, state.sweeps,
            state.last_capturer, state.plays, state.next_build_id, state.stock)


def test_apply_raise_absorbing_makes_a_multiple_build_owned_by_the_raiser() -> None:
    state = make_position(
        to_move=0, hands={0: "2S 9C", 1: "5H 6D"}, loose="9H", builds=[{"value": 7, "cards": "3C 4D", "owner": 1}]
    )
    before = snapshot(state)
    after = apply(state, "2S raise b1 9 9H")
    assert snapshot(state) == before
    assert state.builds == (Build(1, 7, cards("3C 4D"), 1, False),)
    assert after.hands == (cards("9C"), cards("5H 6D"))
    assert after.loose == ()
    assert after.builds == (Build(1, 9, cards("2S 3C 4D 9H"), 0, True),)
    assert after.to_move == 1
    assert after.piles == ((), ())
    assert after.sweeps == (0, 0)
    assert after.last_capturer is None
    # seat 1 cannot raise the multiple build; it trails, and then seat 0 must take its build
    assert {str(m) for m in legal_moves(after)} == {"5H trail", "6D trail"}
    later = apply(after, "5H trail")
    assert {str(m) for m in legal_moves(later)} == {"9C capture b1"}
    last = apply(later, "9C capture b1")
    assert last.loose == cards("5H") and last.builds == ()
    assert sorted(last.piles[0]) == sorted(cards("9C 2S 3C 4D 9H"))
    assert last.sweeps == (0, 0)  # 5H stays: no sweep
    assert last.last_capturer == 0


def test_apply_sweep_then_only_trails() -> None:
    state = make_position(to_move=0, hands={0: "4H 8S", 1: "2C 9D"}, loose="4C 4D")
    before = snapshot(state)
    after = apply(state, "8S capture 4C 4D")
    assert snapshot(state) == before
    assert after.hands == (cards("4H"), cards("2C 9D"))
    assert after.loose == () and after.builds == ()
    assert sorted(after.piles[0]) == sorted(cards("8S 4C 4D")) and after.piles[1] == ()
    assert after.sweeps == (1, 0)
    assert after.last_capturer == 0
    assert after.to_move == 1
    assert {str(m) for m in legal_moves(after)} == {"2C trail", "9D trail"}


def test_apply_new_builds_single_and_multiple() -> None:
    state = make_position(to_move=0, hands={0: "2C 7H", 1: "KS QS"}, loose="3C 4D 5H 7S")
    single = apply(state, "2C build 7 5H")
    assert single.builds == (Build(1, 7, cards("2C 5H"), 0, False),)
    assert single.loose == cards("3C 4D 7S")
    multiple = apply(state, "2C build 7 3C 4D 5H 7S")
    assert multiple.builds == (Build(1, 7, cards("2C 3C 4D 5H 7S"), 0, True),)
    assert multiple.loose == ()
    assert multiple.sweeps == (0, 0) and multiple.piles == ((), ())
    assert multiple.next_build_id == 2
    assert state.loose == cards("3C 4D 5H 7S") and state.builds == () and state.hands[0] == cards("2C 7H")
    # seat 1 owns nothing and the table is not empty: it trails (no capture of 7 possible)
    assert {str(m) for m in legal_moves(multiple)} == {"QS trail", "KS trail"}


def test_apply_add_takes_over_an_opponents_build() -> None:
    state = make_position(
        to_move=0, hands={0: "2D 8H 4C", 1: "JS 3H"}, loose="6S 2H", builds=[{"value": 8, "cards": "5C 3D", "owner": 1}]
    )
    after = apply(state, "2D add b1 8 6S")
    assert after.builds == (Build(1, 8, cards("2D 3D 5C 6S"), 0, True),)
    assert after.loose == cards("2H")
    assert after.hands[0] == cards("8H 4C")
    assert state.builds == (Build(1, 8, cards("5C 3D"), 1, False),)
    # seat 0 now owns b1: it may not trail, and 8H (its only 8) must take b1
    after_opp = apply(after, "3H trail")
    assert {str(m) for m in legal_moves(after_opp)} == {"8H capture b1"}


def test_apply_partnership_piles_and_sweeps_by_side() -> None:
    state = make_position(
        RuleOptions(players=4),
        to_move=0,
        hands={0: "9S 4H KH 2C", 1: "2D 7C", 2: "QH 3S", 3: "JH 6D"},
        loose="2H",
        builds=[{"value": 9, "cards": "5C 4D", "owner": 2}],
    )
    s1 = apply(state, "9S capture b1")
    assert sorted(s1.piles[0]) == sorted(cards("9S 5C 4D")) and s1.piles[1] == ()
    assert s1.loose == cards("2H") and s1.builds == ()
    assert s1.sweeps == (0, 0) and s1.last_capturer == 0 and s1.to_move == 1
    s2 = apply(s1, "2D capture 2H")  # seat 1 (side 1) clears the table: a sweep
    assert len(s2.piles[1]) == 2 and len(s2.piles[0]) == 3
    assert s2.sweeps == (0, 1) and s2.last_capturer == 1 and s2.to_move == 2
    assert {str(m) for m in legal_moves(s2)} == {"QH trail", "3S trail"}
    assert state.piles == ((), ()) and state.builds[0].owner == 2 and state.hands[0] == cards("9S 4H KH 2C")


# ---------------------------------------------------------------------------------------------
# Illegal plays: IllegalMoveError naming the reason
# ---------------------------------------------------------------------------------------------


EXAMPLE1 = dict(hands={0: "KS 2C 3D 4H", 1: "9D 9H"}, loose="KH 8C 7D 5S AH")

ILLEGAL = [
    ("card-not-in-hand", EXAMPLE1, "QS trail", "not in seat 0's hand"),
    ("trail-while-owning-a-build",
     dict(hands={0: "7S 7D 2H", 1: "KC"}, loose="5C 10C", builds=[{"value": 7, "cards": "4C 3D", "owner": 0}]),
     "2H trail", "may not trail"),
    ("trail-with-equal-loose-card", EXAMPLE1, "KS trail", "same rank"),
    ("capture-leaving-equal-loose-card",
     dict(hands={0: "10S 3C 5D 7H", 1: "KC"}, loose="10D 10C 8H 6H"), "10S capture 10C", "every loose card of its rank"),
    ("capture-build-leaving-equal-loose-card",
     dict(hands={0: "8H 3D", 1: "KC"}, loose="8D", builds=[{"value": 8, "cards": "5C 3S", "owner": 1}]),
     "8H capture b1", "every loose card of its rank"),
    ("build-without-capture-card", dict(hands={0: "4D 6H", 1: "KC"}, loose="3C"), "4D build 7 3C", "would not hold a card worth 7"),
    ("raise-own-build",
     dict(hands={0: "3H 9D 6S 6D", 1: "KC"}, loose="5C 4H", builds=[{"value": 6, "cards": "4C 2D", "owner": 0}]),
     "3H raise b1 9", "may not raise it"),
    ("raise-multiple-build",
     dict(hands={0: "2S 10C", 1: "KC"}, loose="4D", builds=[{"value": 8, "cards": "5C 3D 8H", "owner": 1}]),
     "2S raise b1 10", "multiple build"),
    ("raise-past-14",
     dict(hands={0: "2S AH 6C 3D", 1: "KC"}, builds=[{"value": 12, "cards": "7C 5D", "owner": 1}]),
     "6C raise b1 14", "makes 18"),
    ("spend-last-capture-card-by-capturing-loose",
     dict(hands={0: "9C 3H KS", 1: "QC"}, loose="9H 2S 7D", builds=[{"value": 9, "cards": "5C 4D", "owner": 0}]),
     "9C capture 9H", "must keep a card to capture it"),
    ("spend-last-capture-card-by-raising",
     dict(hands={0: "5S KD", 1: "QC"}, builds=[{"value": 5, "cards": "3C 2D", "owner": 0}, {"value": 8, "cards": "6H 2S", "owner": 1}]),
     "5S raise b2 13", "must keep a card to capture it"),
]


@pytest.mark.parametrize("spec, move, reason", [i[1:] for i in ILLEGAL], ids=[i[0] for i in ILLEGAL])
def test_illegal_move_names_the_reason(spec, move, reason) -> None:
    state = make_position(to_move=0, **spec)
    before = snapshot(state)
    with pytest.raises(IllegalMoveError) as info:
        apply(state, move)
    assert reason in str(info.value)
    assert info.value.move == str(parse_move(move))
    assert snapshot(state) == before


def test_illegal_build_over_14() -> None:
    state = make_position(to_move=0, hands={0: "2S AH 6C 3D", 1: "KC"}, builds=[{"value": 12, "cards": "7C 5D", "owner": 1}])
    move = Move(parse_card("3D"), MoveKind.RAISE, 15, (1,), ())
    with pytest.raises(IllegalMoveError) as info:
        apply(state, move)
    assert "2 to 14" in str(info.value)
    new = Move(parse_card("6C"), MoveKind.BUILD, 15, (), ())
    with pytest.raises(IllegalMoveError, match="2 to 14"):
        apply(make_position(to_move=0, hands={0: "6C AD", 1: "KC"}, loose="9H"), new)


# ---------------------------------------------------------------------------------------------
# Malformed input: typed errors, never a bare KeyError / IndexError
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("code", ["1X", "", "11H", "KZ", "A", "10", "  "])
def test_bad_card_codes(code: str) -> None:
    with pytest.raises(InvalidCardError):
        parse_card(code)


@pytest.mark.parametrize(
    "text",
    ["KS fly", "KS capture", "4H build 15 AH", "KS capture KH KH", "b1", "", "XX trail", "KS trail KH",
     "4H build AH", "3C add 9 6D", "2S raise b0 9", "KS capture KS", "4H build 1 AH", "KS capture 1X"],
)
def test_bad_notation(text: str) -> None:
    with pytest.raises(InvalidMoveError):
        parse_move(text)


def test_bad_notation_through_apply() -> None:
    state = make_position(to_move=0, hands={0: "KS 2C", 1: "9D"}, loose="KH")
    for text in ("KS fly", "KS capture", "b1"):
        with pytest.raises(InvalidMoveError):
            apply(state, text)
    with pytest.raises(InvalidMoveError):
        apply(state, 42)  # type: ignore[arg-type]


def test_bad_decks() -> None:
    deck = [card_code(c) for c in range(52)]
    assert len(parse_deck(deck)) == 52
    with pytest.raises(InvalidDeckError):
        parse_deck(deck[:51])
    with pytest.raises(InvalidDeckError):
        parse_deck(deck[:51] + ["AC"])
    with pytest.raises(InvalidDeckError):
        parse_deck(deck[:51] + ["1X"])
    with pytest.raises(InvalidDeckError):
        new_game(decks=[parse_cards(" ".join(deck[:51]))])
    with pytest.raises(InvalidDeckError):
        new_game(decks=[parse_cards(" ".join(deck[:51] + ["AC"]))])


def test_bad_options_and_seats() -> None:
    with pytest.raises(InvalidOptionError):
        RuleOptions(players=5)
    with pytest.raises(InvalidOptionError):
        RuleOptions(players=1)
    with pytest.raises(InvalidSeatError):
        make_position(to_move=7)
    with pytest.raises(InvalidSeatError):
        make_position(to_move=0, hands={7: "AS"})
    with pytest.raises(InvalidSeatError):
        make_position(to_move=0, hands={0: "AS"}, builds=[{"value": 9, "cards": "5C 4D", "owner": 7}])
    with pytest.raises(InvalidDeckError):
        make_position(to_move=0, hands={0: "AS"}, loose="AS")


# ---------------------------------------------------------------------------------------------
# Notation
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["9C trail", "KS capture 5S 8C KH", "QS capture b1 QH", "4H build 13 AH 8C", "4H build 13 AH 8C KH",
     "3C add b1 9 6D", "2S raise b1 9 9H", "10S capture 10C 10D", "AS build 14 AC AH KS", "9C capture b1 b2",
     "6S add b1 6", "2S raise b1 14"],
)
def test_canonical_round_trip(text: str) -> None:
    assert str(parse_move(text)) == text


@pytest.mark.parametrize(
    "text, canonical",
    [
        ("ks CAPTURE 8c kh 5s", "KS capture 5S 8C KH"),
        ("TD trail", "10D trail"),
        ("  qs   Capture  B1   qh ", "QS capture b1 QH"),
        ("4h build 13 kh 8c ah", "4H build 13 AH 8C KH"),
        ("2s RAISE b1 9 9h", "2S raise b1 9 9H"),
        ("3c Add B1 9 6d", "3C add b1 9 6D"),
        ("as capture td 4d", "AS capture 4D 10D"),
    ],
)
def test_notation_normalises(text: str, canonical: str) -> None:
    assert str(parse_move(text)) == canonical
