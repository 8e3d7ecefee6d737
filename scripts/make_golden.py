#!/usr/bin/env python3
"""Write the golden transcripts tests/golden/<name>.txt (see tests/golden_transcript.py).

Run from the repository root:  python scripts/make_golden.py [NAME ...]
Only do this when a change of the transcripts is intended (a rules change, a new render
format); tests/rules/test_golden.py compares the engine's output with these files.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.golden_transcript import GAMES, GOLDEN_DIR, golden_path, render  # noqa: E402


def main(argv: list[str]) -> int:
    names = argv or list(GAMES)
    unknown = [n for n in names if n not in GAMES]
    if unknown:
        sys.stderr.write(f"make_golden: error: unknown transcript {unknown[0]!r}; known: {', '.join(GAMES)}\n")
        return 2
    GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
    for name in names:
        path = golden_path(name)
        text = render(name)
        old = path.read_text(encoding="utf-8") if path.exists() else None
        path.write_text(text, encoding="utf-8")
        state = "unchanged" if old == text else ("written" if old is None else "CHANGED")
        print(f"{path.relative_to(GOLDEN_DIR.parent.parent)}: {text.count(chr(10))} lines, {state}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
