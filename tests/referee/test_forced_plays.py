"""Forced plays (docs/protocol.md section 3, "Forced plays"; protocol 1.1): with ``auto_forced``
(the default) the referee plays a seat's only legal move itself, asks no bot, charges no time,
and tells everyone: the next Turn's plays, PlayMade and the service's PlayEvent carry
``forced``, and the record lists them, which ``referee replay`` checks."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from referee.match.report import GameReport
from referee.rules import RuleOptions, legal_moves, replay_record
from referee.wire.convert import PROTOCOL_VERSION
from tests.arena_support import sample_bot_command
from tests.conftest import ROOMY_TIME, assert_no_bot_processes
from tests.fake_bot import PLAYS_WELL, ScriptedBot, hello, move
from tests.referee.test_referee_failures import opponent, play_inprocess
from tests.referee.test_referee_games import match
from tests.support import assert_usage_error, run_referee

GAMES = 3


def listener() -> ScriptedBot:
    """A bot that plays the first legal move and asks for PlayMade events."""
    return ScriptedBot(otherwise={"handshake": hello(play_events=True), "turn": move(0)})


def one_move_states(report: GameReport) -> list[int]:
    """The plays of a game (indices over the game) whose mover had exactly one legal move."""
    indices: list[int] = []
    replay_record(report.record["engine"], on_play=lambda state, _text: indices.append(len(legal_moves(state))))
    return [i for i, choices in enumerate(indices) if choices == 1]


def test_with_auto_forced_no_turn_has_one_legal_move_and_every_bot_sees_every_play() -> None:
    bot = listener()
    played = play_inprocess(bot, opponent(3), games=GAMES)
    games = played.report.games
    assert [g.result.termination for g in games] and not any(g.result.failures for g in games)
    # the referee made exactly the plays that had one legal move, and recorded them so
    forced = [g.record.get("forced", []) for g in games]
    assert forced == [one_move_states(g) for g in games]
    assert sum(map(len, forced)) > 0, "these games have forced plays"
    for g in games:
        assert all(g.record["timings_us"][i][1] == 0 and g.record["cpu_us"][i] is None for i in g.record.get("forced", []))
    # the bot was never asked for one of them
    turns = bot.turns()
    assert turns and all(len(t.legal_moves) > 1 for t in turns), sorted({len(t.legal_moves) for t in turns})
    # ... and saw every play: each Turn lists the deal's plays so far, forced ones marked; PlayMade
    # came for each play, forced ones marked; the client's PlayEvents too
    made = [r.play_made for r in bot.received if r.WhichOneof("event") == "play_made"]
    plays = [e.play for e in played.events if e.WhichOneof("event") == "play"]
    assert [(m.game_id, m.move, m.forced) for m in made] == [(p.game_id, p.move, p.forced) for p in plays]
    by_game = {g.game_id: g for g in games}
    flags: dict[str, list[bool]] = {}
    for p in plays:
        flags.setdefault(p.game_id, []).append(p.forced)
    assert {gid: [i for i, f in enumerate(fl) if f] for gid, fl in flags.items()} == {
        gid: g.record.get("forced", []) for gid, g in by_game.items()}
    for turn in turns:  # the observation's plays of this deal carry the same flags
        deal_plays = [p for p in plays if p.game_id == turn.game_id and p.deal == turn.observation.deal]
        seen = list(turn.observation.plays)
        assert [(s.seat, s.move, s.forced) for s in seen] == [(p.seat, p.move, p.forced) for p in deal_plays[:len(seen)]]
    assert_no_bot_processes()


def test_asking_for_every_move_sends_turns_with_one_legal_move() -> None:
    bot = ScriptedBot(otherwise=PLAYS_WELL)
    played = play_inprocess(bot, opponent(3), games=GAMES, auto_forced=False)
    assert all("forced" not in g.record for g in played.report.games)
    assert any(len(t.legal_moves) == 1 for t in bot.turns()), "without auto_forced the bot is asked for those"
    handshakes = [r.handshake for r in bot.received if r.WhichOneof("event") == "handshake"]
    assert handshakes and not any(h.auto_forced for h in handshakes)
    assert {h.protocol_version for h in handshakes} == {PROTOCOL_VERSION}  # 1.1 or later: forced plays


def test_a_1_0_bot_keeps_working_and_is_simply_not_asked() -> None:
    """A bot that says protocol "1" (it knows nothing of forced plays) plays on."""
    bot = ScriptedBot(otherwise={"handshake": hello(protocol_version="1"), "turn": move(0)})
    played = play_inprocess(bot, opponent(3), games=GAMES)
    assert not any(g.result.failures for g in played.report.games)
    assert [r.handshake.auto_forced for r in bot.received if r.WhichOneof("event") == "handshake"] == [True]


@pytest.mark.parametrize("players", [2, 3])
def test_deterministic_bots_play_the_same_games_with_and_without_it(players: int) -> None:
    """The greedy sample bot chooses by the position alone, so whether the referee or the bot
    plays an only legal move changes nothing: the same moves, scores and results."""
    options = RuleOptions(players=players)
    bots = [sample_bot_command("greedy_bot.py")] * players
    runs = {auto: match(bots, options, games=2, seed=9, auto_forced=auto).games for auto in (True, False)}
    on, off = runs[True], runs[False]
    assert sum(len(g.record.get("forced", [])) for g in on) > 0 and all("forced" not in g.record for g in off)
    assert [g.record["engine"] for g in on] == [g.record["engine"] for g in off]
    assert [(list(g.result.scores), list(g.result.ranks), g.result.reason) for g in on] == [
        (list(g.result.scores), list(g.result.ranks), g.result.reason) for g in off]
    assert_no_bot_processes()


def _replay(path: Path) -> subprocess.CompletedProcess[str]:
    return run_referee("replay", str(path))


def test_records_with_forced_plays_replay_and_a_false_mark_is_refused(tmp_path: Path) -> None:
    records = tmp_path / "records"
    done = run_referee("match", "--bot", sample_bot_command("greedy_bot.py"), "--bot", sample_bot_command("random_bot.py"),
                       "--seed", "4", "--move-time", str(ROOMY_TIME.move_time_ms), "--records", str(records),
                       "--logs", str(tmp_path / "logs"))
    assert done.returncode == 0, done.stderr
    (path,) = records.glob("*.json")
    record = json.loads(path.read_text())
    forced = record["forced"]
    assert forced, "a whole game has forced plays"
    shown = _replay(path)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.count("[forced: the only legal move]") == len(forced)
    # a hand-edited record marking a play with a choice as forced
    choices: list[int] = []
    replay_record(record["engine"], on_play=lambda state, _text: choices.append(len(legal_moves(state))))
    lie = next(i for i, n in enumerate(choices) if n > 1)
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps({**record, "forced": sorted({*forced, lie})}))
    line = assert_usage_error(_replay(edited), "referee")
    assert f"play {lie + 1} of the game" in line and f"its mover had {choices[lie]} legal moves" in line, line
    for bad in ("3", [-1], [len(choices)], [1.5]):
        edited.write_text(json.dumps({**record, "forced": bad}))
        line = assert_usage_error(_replay(edited), "referee")
        assert "forced" in line, line
