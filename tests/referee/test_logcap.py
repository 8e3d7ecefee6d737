"""A bot's log through a pipe (referee/bots/logcap.py): everything up to the cap is kept as it came,
then one marker line, and the rest is read and counted but not written; a log that already holds
earlier starts counts them against the cap."""

from __future__ import annotations

import os
from pathlib import Path

from referee.bots.logcap import CappedLog, cut_marker


def feed(path: Path, cap: int, chunks: list[bytes]) -> CappedLog:
    read_end, write_end = os.pipe()
    log = CappedLog(read_end, path, cap)
    for chunk in chunks:
        os.write(write_end, chunk)
    os.close(write_end)
    assert log.finish(10)
    return log


def test_output_under_the_cap_is_kept_whole(tmp_path: Path) -> None:
    log = feed(tmp_path / "bot.log", 100, [b"hello\n", b"world\n"])
    assert (tmp_path / "bot.log").read_bytes() == b"hello\nworld\n"
    assert (log.cut, log.discarded) == (False, 0)


def test_past_the_cap_one_marker_and_the_rest_counted(tmp_path: Path) -> None:
    log = feed(tmp_path / "bot.log", 10, [b"0123456", b"789abcdef", b"x" * 100_000])
    assert (tmp_path / "bot.log").read_bytes() == b"0123456789" + cut_marker(10)
    assert log.cut and log.discarded == 6 + 100_000


def test_earlier_starts_count_against_the_cap(tmp_path: Path) -> None:
    (tmp_path / "bot.log").write_bytes(b"--- starting 1\n" + b"a" * 20)
    log = feed(tmp_path / "bot.log", 40, [b"b" * 10])
    assert (tmp_path / "bot.log").read_bytes() == b"--- starting 1\n" + b"a" * 20 + b"b" * 5 + cut_marker(40)
    assert log.discarded == 5
    again = feed(tmp_path / "bot.log", 40, [b"more"])
    assert again.discarded == 4 and again.cut, "a full log keeps nothing more"


def test_a_log_that_cannot_be_written_is_noted_and_the_pipe_still_drained() -> None:
    """/dev/full refuses every write (ENOSPC): the error is kept for the game to end on (the
    platform's fault), and everything the bot writes is still read, so the bot never blocks on a
    full pipe (1 MiB is 16 times a pipe's buffer: a reader that stopped would leave ``feed`` stuck)."""
    import errno
    import threading

    read_end, write_end = os.pipe()
    log = CappedLog(read_end, Path("/dev/full"), 4 << 20)
    writer = threading.Thread(target=lambda: [os.write(write_end, b"x" * 4096) for _ in range(256)], daemon=True)
    writer.start()
    writer.join(10)
    assert not writer.is_alive(), "the bot's writes were not drained"
    os.close(write_end)
    assert log.finish(10)
    assert log.error is not None and log.error.errno == errno.ENOSPC
    assert log.lost == 256 * 4096 and not log.cut and log.discarded == 0
