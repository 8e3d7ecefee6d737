"""docs/how-to-write-a-bot.md stays true: its bot, every command of its shell blocks and its
tournament file are run as written (real processes, real gRPC, a real SQLite database, the real
sandbox), from the root of a repository laid out in a temporary folder (the page's bot next to the
SDK and the sample bots, the interpreter at .venv); the engine names it calls public are the
engine's public names; its interpreter examples print what they say on the turn they describe."""

from __future__ import annotations

import doctest
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import referee.wire.convert
import referee.rules
from casino.v1 import bot_pb2, game_pb2

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "how-to-write-a-bot.md").read_text(encoding="utf-8")


def blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", PAGE, flags=re.MULTILINE | re.DOTALL)


def commands(block: str) -> list[str]:
    """The block's command lines: continuations joined, comments dropped."""
    joined = re.sub(r"\\\n\s*", "", block)
    return [line.split("  #")[0].strip() for line in joined.splitlines() if line.strip()]


def test_the_page_bot_commands_and_tournament_work_as_written(tmp_path: Path) -> None:
    bot, _ = blocks("python")
    manifest, toml = blocks("toml")
    # as on the page, in a repository of the test's own: the bot package my_bot/, the sample bots
    # (this checkout's), the interpreter at .venv (this one's environment), the commands run from its
    # root, the tournament file at its root
    if not (Path(sys.prefix) / "pyvenv.cfg").is_file():
        pytest.skip("the page's commands use a virtual environment's interpreter; these tests run in none")
    (tmp_path / "my_bot").mkdir()
    (tmp_path / "my_bot" / "my_bot.py").write_text(bot, encoding="utf-8")
    (tmp_path / "my_bot" / "bot.toml").write_text(manifest, encoding="utf-8")
    (tmp_path / ".venv").symlink_to(sys.prefix)
    (tmp_path / "sample_bots").symlink_to(ROOT / "sample_bots")
    records = tmp_path / "rec"
    python = shlex.quote(sys.executable)

    def local(text: str) -> str:
        """The page's paths, as this test runs them."""
        moved = {".venv/bin/referee": f"{python} -m referee.cli", ".venv/bin/arena": f"{python} -m arena.cli"}
        return re.sub("|".join(map(re.escape, moved)), lambda m: moved[m.group(0)], text)  # one pass

    (tmp_path / "my-cup.toml").write_text(local(toml), encoding="utf-8")
    # (the referee's own environment; a sandboxed bot gets none of it)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    outputs: dict[str, str] = {}
    for line in (command for block in blocks("sh") for command in commands(block)):
        if "<one of the records>" in line:
            first = min(records.glob("*.json"))
            line = line.replace("rec/<one of the records>.json", str(first.relative_to(tmp_path)))
        argv = shlex.split(local(line))
        done = subprocess.run(argv, check=False, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"{line}\nexit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        outputs[" ".join(line.split()[:2])] = done.stdout

    assert set(outputs) == {".venv/bin/referee check", ".venv/bin/referee match", ".venv/bin/referee replay",
                            ".venv/bin/arena compare", ".venv/bin/arena run", ".venv/bin/arena standings",
                            ".venv/bin/arena games", "tar -czf"}
    assert "clean: every answer was a legal move in time" in outputs[".venv/bin/referee check"]
    assert re.search(r"^most-cards\s+10\s", outputs[".venv/bin/referee match"], flags=re.MULTILINE)
    assert len(list(records.glob("*.json"))) == 10
    assert outputs[".venv/bin/referee replay"].startswith("game ") and "== deal 1" in outputs[".venv/bin/referee replay"]
    assert "H1 accepted" in outputs[".venv/bin/arena compare"]
    assert "standings after 12 games" in outputs[".venv/bin/arena run"]
    ranked = {row["name"]: row for row in json.loads(subprocess.run(
        [sys.executable, "-m", "arena.cli", "standings", str(tmp_path / "my-cup.toml"), "--format", "json"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True).stdout)["standings"]}
    assert set(ranked) == {"most-cards", "greedy", "random"}
    assert all(row["games"] == 8 and sum(row["forfeits"].values()) == 0 for row in ranked.values())
    assert outputs[".venv/bin/arena games"].strip() == "no games"
    assert (tmp_path / "my-cup.db").exists(), "results go next to the tournament file"
    from referee.packages.load import manifest_of

    assert manifest_of((tmp_path / "my_bot.tar.gz").read_bytes()).run == ("python", "my_bot.py"), "what /submit takes"


def test_the_page_noted_bot_notes_its_plays_in_the_record_and_replay(tmp_path: Path) -> None:
    """Section 7's bot, next to section 1's and run as the page says (``run = "python noted.py"``),
    plays a real game: its notes are in the record's ``bot_reports`` and ``referee replay`` prints them."""
    bot, noted = blocks("python")
    package = tmp_path / "my_bot"
    package.mkdir()
    (package / "my_bot.py").write_text(bot, encoding="utf-8")
    (package / "noted.py").write_text(noted, encoding="utf-8")
    (package / "bot.toml").write_text('runtime = "python"\nrun = "python noted.py"\n', encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    played = subprocess.run([sys.executable, "-m", "referee.cli", "match", "--bot", str(package), "--bot",
                             str(ROOT / "sample_bots" / "random"), "--games", "1", "--records", str(tmp_path / "rec")],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert played.returncode == 0, played.stdout[-2000:] + played.stderr[-2000:]
    (path,) = (tmp_path / "rec").glob("*.json")
    record = json.loads(path.read_text())
    notes = [r["note"] for r in record["bot_reports"] if r["seat"] == 0]
    assert notes and all(re.fullmatch(r"(trail|capture|build|add|raise), move \d+ of \d+", n) for n in notes), notes
    assert not any("error" in r for r in record["bot_reports"])
    shown = subprocess.run([sys.executable, "-m", "referee.cli", "replay", str(path)], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=120, check=True).stdout
    assert notes[0] in shown


def test_the_engine_names_the_page_offers_are_public() -> None:
    (paragraph,) = re.findall(r"^A bot may use the rules engine itself.*?\n\n", PAGE, flags=re.MULTILINE | re.DOTALL)
    engine, _, wire = paragraph.partition("`referee.wire.convert`")
    names = set(re.findall(r"`(\w+)`", engine)) - {"__all__", "state_from_turn"}  # the SDK's name for resample
    assert {"resample", "observation", "legal_moves", "RANK"} <= names
    assert sorted(names - set(referee.rules.__all__)) == []
    assert all(hasattr(referee.wire.convert, name) for name in re.findall(r"`(\w+)`", wire))


def worked_turn() -> bot_pb2.Turn:
    """The Turn of docs/protocol.md section 3 (turn_id 3): seat 0 of a 2-player game of seed 3,
    after "6H trail" and "3H build 9 6H", as the referee sends it."""
    state = referee.rules.new_game(referee.rules.RuleOptions(players=2), seed=3)
    plays = []
    for move in ("6H trail", "3H build 9 6H"):
        plays.append(game_pb2.PublicPlay(seat=state.to_move, move=move))
        state = referee.rules.apply(state, move)
    return referee.wire.convert.turn_to_pb("1ef61ae841d3-g1", 3, referee.rules.observation(state, 0),
                                           referee.rules.legal_moves(state), 1000, 0, plays)


def test_the_page_examples_print_what_they_say(monkeypatch: pytest.MonkeyPatch) -> None:
    """The page's ```pycon blocks, run as doctests on the turn they describe, with the SDK on the
    path as it is for the page's bot (next to it)."""
    monkeypatch.syspath_prepend(str(ROOT / "sample_bots" / "python"))
    examples = blocks("pycon")
    assert examples, "the page reads a turn in an interpreter session"
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    report: list[str] = []
    for i, text in enumerate(examples):
        test = doctest.DocTestParser().get_doctest(text, {"turn": worked_turn()}, f"pycon block {i + 1}", None, 0)
        runner.run(test, out=report.append)
    assert runner.tries and not runner.failures, "".join(report)
