"""Perft: the number of distinct play sequences from the start of a deal (referee/perft.py).

The expected figures were computed once with the independent reference generator
(tests/reference/casino_reference.py, ``reference_perft``) and are written here as literals;
``test_small_rows_match_the_reference_live`` recomputes the cheap rows to show where they came
from. Deck files (tests/data/decks/, 52 codes in dealing order, front card first):

- sorted.txt: the canonical order AC AD AH AS 2C ... KS;
- seed-11.txt, seed-2024.txt: ``random.Random(seed).shuffle`` of the canonical order
  (checked by ``test_seeded_deck_files_are_what_their_name_says``);
- aces-builds.txt: made by hand: small cards and all four Aces in the table and first hands,
  so builds, multiple builds and Aces worth 14 come up in the first plays.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from referee.perft import perft, perft_divide
from referee.rules import RuleOptions, new_game, parse_deck
from referee.rules.cards import ALL_CARDS, CODE
from tests.reference.casino_reference import reference_perft, reference_perft_divide
from tests.support import run_referee

ROOT = Path(__file__).resolve().parents[2]
DECKS = ROOT / "tests" / "data" / "decks"

# (deck, players, partnerships, depth, expected) -- expected from reference_perft.
PERFT_TABLE = [
    ("sorted", 2, True, 1, 60),
    ("sorted", 2, True, 2, 528),
    ("sorted", 2, True, 3, 7392),
    ("sorted", 2, True, 4, 66672),
    ("sorted", 3, True, 1, 60),
    ("sorted", 3, True, 2, 528),
    ("sorted", 3, True, 3, 7104),
    ("sorted", 3, True, 4, 69504),
    ("sorted", 4, True, 1, 60),
    ("sorted", 4, True, 2, 528),
    ("sorted", 4, True, 3, 7104),
    ("sorted", 4, True, 4, 86784),
    ("seed-11", 2, True, 1, 14),
    ("seed-11", 2, True, 2, 188),
    ("seed-11", 2, True, 3, 1014),
    ("seed-11", 2, True, 4, 6418),
    ("seed-11", 2, True, 5, 22089),
    ("seed-11", 3, True, 1, 14),
    ("seed-11", 3, True, 2, 188),
    ("seed-11", 3, True, 3, 1832),
    ("seed-11", 3, True, 4, 10519),
    ("seed-11", 4, True, 1, 14),
    ("seed-11", 4, True, 2, 188),
    ("seed-11", 4, True, 3, 1832),
    ("seed-11", 4, True, 4, 26165),
    ("seed-2024", 2, True, 1, 22),
    ("seed-2024", 2, True, 2, 185),
    ("seed-2024", 2, True, 3, 993),
    ("seed-2024", 2, True, 4, 4533),
    ("seed-2024", 2, True, 5, 13258),
    ("seed-2024", 2, True, 6, 37596),
    ("seed-2024", 2, True, 7, 49819),
    ("seed-2024", 3, True, 1, 22),
    ("seed-2024", 3, True, 2, 185),
    ("seed-2024", 3, True, 3, 1530),
    ("seed-2024", 3, True, 4, 8305),
    ("seed-2024", 3, True, 5, 37019),
    ("seed-2024", 4, True, 1, 22),
    ("seed-2024", 4, True, 2, 185),
    ("seed-2024", 4, True, 3, 1530),
    ("seed-2024", 4, True, 4, 15530),
    ("seed-2024", 4, True, 5, 80685),
    ("seed-2024", 4, False, 5, 80685),
    ("aces-builds", 2, True, 1, 28),
    ("aces-builds", 2, True, 2, 375),
    ("aces-builds", 2, True, 3, 2337),
    ("aces-builds", 2, True, 4, 14126),
    ("aces-builds", 2, True, 5, 47625),
    ("aces-builds", 3, True, 1, 28),
    ("aces-builds", 3, True, 2, 375),
    ("aces-builds", 3, True, 3, 4114),
    ("aces-builds", 3, True, 4, 27057),
    ("aces-builds", 4, True, 1, 28),
    ("aces-builds", 4, True, 2, 375),
    ("aces-builds", 4, True, 3, 4114),
    ("aces-builds", 4, True, 4, 33142),
    ("aces-builds", 4, False, 4, 33142),
]


def row_id(row: tuple) -> str:
    deck, players, partnerships, depth, _ = row
    who = f"{players}p" + ("" if partnerships or players < 4 else "-individuals")
    return f"{deck}-{who}-d{depth}"


def deck_text(name: str) -> str:
    return (DECKS / f"{name}.txt").read_text(encoding="utf-8")


def start(name: str, players: int, partnerships: bool = True):  # type: ignore[no-untyped-def]
    return new_game(RuleOptions(players=players, partnerships=partnerships), decks=[parse_deck(deck_text(name))])


@pytest.mark.parametrize("row", PERFT_TABLE, ids=row_id)
def test_perft_matches_the_reference_figures(row: tuple) -> None:
    deck, players, partnerships, depth, expected = row
    assert perft(start(deck, players, partnerships), depth) == expected


@pytest.mark.parametrize("deck", ["sorted", "seed-11", "seed-2024", "aces-builds"])
def test_perft_depth_zero_is_one(deck: str) -> None:
    assert perft(start(deck, 2), 0) == 1


@pytest.mark.parametrize(
    "row", [r for r in PERFT_TABLE if r[3] <= 3 and r[2]], ids=row_id
)
def test_small_rows_match_the_reference_live(row: tuple) -> None:
    """The literals are reference_perft figures: recompute the cheap ones."""
    deck, players, partnerships, depth, expected = row
    assert reference_perft(players, deck_text(deck).split(), depth, partnerships) == expected


@pytest.mark.parametrize(
    "deck, players, depth",
    [("sorted", 2, 3), ("seed-11", 3, 3), ("seed-2024", 4, 3), ("aces-builds", 2, 3), ("aces-builds", 4, 3)],
)
def test_divide_sums_to_the_total_and_matches_the_reference(deck: str, players: int, depth: int) -> None:
    state = start(deck, players)
    divide = perft_divide(state, depth)
    moves = [m for m, _ in divide]
    assert len(set(moves)) == len(moves)
    assert sum(n for _, n in divide) == perft(state, depth)
    reference = reference_perft_divide(players, deck_text(deck).split(), depth)
    assert {str(m): n for m, n in divide} == reference


def test_seeded_deck_files_are_what_their_name_says() -> None:
    for seed in (11, 2024):
        deck = list(ALL_CARDS)
        random.Random(seed).shuffle(deck)
        assert parse_deck(deck_text(f"seed-{seed}")) == tuple(deck)
    assert parse_deck(deck_text("sorted")) == ALL_CARDS


def test_hand_made_deck_is_rich_in_aces_and_small_cards() -> None:
    front = deck_text("aces-builds").split()[:20]  # table + first hands of up to 4 players
    assert sum(code.startswith("A") for code in front) == 4
    assert len(parse_deck(deck_text("aces-builds"))) == 52


# --------------------------------------------------------------------------- the CLI


referee = run_referee


def test_cli_perft() -> None:
    deck = str(DECKS / "seed-11.txt")
    done = referee("perft", "--deck", deck, "--depth", "4")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "6418\n"
    assert done.stderr == ""
    done = referee("perft", "--deck", deck, "--depth", "4", "--players", "4")
    assert done.returncode == 0 and done.stdout == "26165\n"


def test_cli_perft_divide_sums_to_the_total() -> None:
    done = referee("perft", "--deck", str(DECKS / "aces-builds.txt"), "--depth", "3", "--players", "3", "--divide")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    *rows, total = [line.rsplit(": ", 1) for line in lines]
    assert total[0] == "total" and int(total[1]) == 4114
    counts = {move: int(n) for move, n in rows}
    assert len(counts) == len(rows) == 28  # perft depth 1 of this deck
    assert sum(counts.values()) == 4114
    assert counts == reference_perft_divide(3, deck_text("aces-builds").split(), 3)


def test_cli_perft_depth_zero() -> None:
    done = referee("perft", "--deck", str(DECKS / "sorted.txt"), "--depth", "0")
    assert done.returncode == 0 and done.stdout == "1\n"


@pytest.mark.parametrize(
    "deck_content, extra",
    [
        (None, []),  # missing deck file
        ("AC AD AH", []),  # too few cards
        (" ".join(CODE[c] for c in ALL_CARDS[:-1]) + " AC", []),  # AC twice, KS missing
        (" ".join(CODE[c] for c in ALL_CARDS[:-1]) + " 1X", []),  # not a card
        ("sorted", ["--depth", "-1"]),
        ("sorted", ["--players", "5"]),
        ("sorted", ["--depth", "two"]),
    ],
    ids=["missing-file", "short-deck", "duplicate-card", "bad-code", "negative-depth", "five-players", "depth-not-a-number"],
)
def test_cli_perft_bad_input_exits_2_with_one_error_line(tmp_path: Path, deck_content, extra) -> None:  # type: ignore[no-untyped-def]
    if deck_content is None:
        deck = str(tmp_path / "no-such-deck.txt")
    elif deck_content == "sorted":
        deck = str(DECKS / "sorted.txt")
    else:
        deck = str(tmp_path / "deck.txt")
        Path(deck).write_text(deck_content + "\n", encoding="utf-8")
    args = ["perft", "--deck", deck, *(extra or ["--depth", "2"])]
    if extra and "--depth" not in extra:
        args += ["--depth", "2"]
    done = referee(*args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert "error:" in lines[0]
    assert "Traceback" not in done.stderr
