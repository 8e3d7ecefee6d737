"""Files and folders the user names on the command line: read or made, every problem one line."""

from __future__ import annotations

from pathlib import Path

from ..errors import UsageError


def read_text_file(path: str, what: str, max_bytes: int) -> str:
    """The UTF-8 text of a file the user named (``what`` says which, for errors); a missing,
    unreadable, binary or oversized file (``/dev/zero``, say) is a UsageError, never a traceback."""
    try:
        with open(path, "rb") as file:
            data = file.read(max_bytes + 1)
    except OSError as exc:
        raise UsageError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    if len(data) > max_bytes:
        raise UsageError(f"{what} {path} is larger than {max_bytes} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{what} {path} is not text (not UTF-8 at byte {exc.start})") from None


def make_folder(path: str, what: str) -> Path:
    """A folder the user named for output, created if need be; UsageError when it cannot be."""
    folder = Path(path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create {what} {path}: {exc.strerror or exc}") from None
    return folder
