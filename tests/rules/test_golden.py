"""Golden transcripts: whole seeded games, compared line by line with tests/golden/<name>.txt.

The transcript is produced by tests/golden_transcript.py, the same code the files were written
with (scripts/make_golden.py). A difference means the engine, the random players or the
rendering changed behaviour.
"""

from __future__ import annotations

import re

import pytest

from tests.golden_transcript import GAMES, GOLDEN_DIR, golden_path, transcript

REGENERATE = "If (and only if) this change is intended, regenerate the files with `python scripts/make_golden.py`."


@pytest.mark.parametrize("name", list(GAMES))
def test_golden_transcript(name: str) -> None:
    path = golden_path(name)
    assert path.exists(), f"{path} is missing. {REGENERATE}"
    expected = path.read_text(encoding="utf-8").splitlines()
    options, seed = GAMES[name]
    actual = transcript(options, seed)
    for i, (want, got) in enumerate(zip(expected, actual)):
        if want != got:
            pytest.fail(
                f"{path.name}: first difference at line {i + 1}\n"
                f"  file:   {want}\n"
                f"  engine: {got}\n"
                f"{REGENERATE}",
                pytrace=False,
            )
    if len(expected) != len(actual):
        i = min(len(expected), len(actual))
        extra = (f"  file continues:   {expected[i]}" if len(expected) > i else f"  engine continues: {actual[i]}")
        pytest.fail(
            f"{path.name}: file has {len(expected)} lines, engine produced {len(actual)}; "
            f"first difference at line {i + 1}\n{extra}\n{REGENERATE}",
            pytrace=False,
        )


def test_no_stale_golden_files() -> None:
    files = sorted(p.stem for p in GOLDEN_DIR.glob("*.txt"))
    assert files == sorted(GAMES), f"tests/golden holds {files}, tests/golden_transcript.py names {sorted(GAMES)}. {REGENERATE}"


def test_transcripts_cover_every_table_and_both_endings() -> None:
    """The chosen seeds show 2, 3, 4 (partners) and 4 (individuals) players, a game won on a
    restricted side's condition (rule 15) and one won on points (rule 17)."""
    kinds = {(o.players, o.teams) for o, _ in GAMES.values()}
    assert kinds == {(2, False), (3, False), (4, True), (4, False)}
    endings = set()
    for name in GAMES:
        text = golden_path(name).read_text(encoding="utf-8")
        endings.update(re.findall(r"^.* \((\w+)\) after \d+ deal\(s\): .*$", text, flags=re.MULTILINE))
    assert {"condition_met", "target_reached"} <= endings
