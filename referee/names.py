"""Text a bot chooses about itself (its Hello ``name`` and ``version``), made safe to print and store.

A bot could otherwise paint the referee's terminal (ANSI escapes), print lines of its own (a fake
"FORFEITS" line after a newline) or copy a 200 kB name into every record. Cleaning removes
escape sequences and every control, format and line-separator character (whitespace ones become
a space), collapses runs of spaces, and caps the length (docs/protocol.md, "Hello").
"""

from __future__ import annotations

import re
import unicodedata

MAX_NAME_CHARS = 64  # of a bot's Hello name, after cleaning
MAX_VERSION_CHARS = 64  # of its Hello version (and protocol_version, when it is quoted in a failure)
ELLIPSIS = "…"  # ends a capped text, within the cap

# ESC-introduced sequences as terminals read them: CSI (colours, cursor moves), OSC (titles,
# links; ended by BEL or ESC \), and two-character escapes. Removed whole, so no "[31m" is left.
_ESCAPES = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]?|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_]?)|\x9b[0-?]*[ -/]*[@-~]?")
_SPACES = re.compile(r"\s+")


def _printable(ch: str) -> str:
    """The character, a space for a whitespace control, or nothing for any other control."""
    category = unicodedata.category(ch)
    if category[0] == "C" or category in ("Zl", "Zp"):  # Cc, Cf (e.g. bidi overrides), Cs, Co, Cn
        return " " if ch.isspace() else ""
    return ch


def clean_text(text: str, limit: int) -> str:
    """``text`` on one line, without escapes or control characters, at most ``limit`` characters
    (a capped text ends with an ellipsis); empty if nothing printable is left."""
    # cap the input before the work, so a huge name costs no more than a short one
    text = _ESCAPES.sub("", text[: limit * 16])
    text = _SPACES.sub(" ", "".join(map(_printable, text))).strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + ELLIPSIS


def clean_name(name: str) -> str:
    """A bot's self-reported name as shown and recorded (see the module docstring)."""
    return clean_text(name, MAX_NAME_CHARS)


def clean_version(version: str) -> str:
    """A bot's self-reported version string as recorded."""
    return clean_text(version, MAX_VERSION_CHARS)
