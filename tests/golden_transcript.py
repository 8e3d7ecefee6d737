"""Golden transcripts of seeded games: the one function that writes them, shared by
scripts/make_golden.py (which writes tests/golden/<name>.txt) and tests/rules/test_golden.py (which
regenerates each transcript in memory and compares it with the file).

A transcript is the whole game between built-in random players (referee.players.RandomPlayer,
seat s of game seed N seeded N * 31 + s, as ``referee play`` does): a deal header per deal, one
line per play (state, mover's hand, table, number of legal plays, the play chosen), the score
sheet of every deal and the result line, all rendered by referee.render.
"""

from __future__ import annotations

from pathlib import Path

from referee.cli.render import deal_header, describe_result, describe_sheet, play_line
from referee.players import RandomPlayer
from referee.rules import RuleOptions, apply, new_game

GOLDEN_DIR = Path(__file__).resolve().parent / "golden"

# name -> (options, seed)
GAMES: dict[str, tuple[RuleOptions, int]] = {
    "2p-seed7": (RuleOptions(players=2), 7),
    "3p-seed3": (RuleOptions(players=3), 3),
    "4p-partners-seed5": (RuleOptions(players=4, partnerships=True), 5),
    "4p-individuals-seed9": (RuleOptions(players=4, partnerships=False), 9),
}


def transcript(options: RuleOptions, seed: int) -> list[str]:
    """The transcript lines (without newlines) of the game of ``seed`` under ``options``."""
    teams = options.teams
    lines = [f"# Royal Casino golden transcript: seed {seed}, options {options.to_dict()}"]
    state = new_game(options, seed=seed)
    players = [RandomPlayer(seed * 31 + seat) for seat in range(options.players)]
    limit = options.max_deals * 48  # a bound on plays: a game that runs longer is a bug
    deal = -1
    for _ in range(limit):
        if state.is_over:
            break
        if state.deal != deal:
            deal = state.deal
            lines.append(deal_header(state))
        move = players[state.to_move].choose(state)
        lines.append(play_line(state, str(move)))
        before = state
        state = apply(state, move)
        if state.deal != before.deal or state.is_over:
            lines.append(f"-- score sheet, deal {before.deal + 1}")
            lines.extend(describe_sheet(state.sheets[before.deal], teams))
    else:
        raise AssertionError(f"game of seed {seed} did not end within {limit} plays")
    assert state.result is not None
    lines.append(describe_result(state.result, teams))
    return lines


def golden_path(name: str) -> Path:
    return GOLDEN_DIR / f"{name}.txt"


def render(name: str) -> str:
    """The file content of golden transcript ``name``."""
    options, seed = GAMES[name]
    return "\n".join(transcript(options, seed)) + "\n"
