"""A fault of the platform is never a bot's fault (issue 26): real ``referee match`` and ``referee
check`` processes, real bots, real file systems. A log folder on a full tmpfs, a log that fills up
mid-game (also through ``play_game``, as the arena calls it), a records folder with no room and a
referee out of file descriptors each end the run with exit 4 and one line naming the condition
(``play_game``: PlatformFault); no record blames a bot, nothing is left running."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import REGISTRY

from referee.bots.endpoint import BotEndpoint
from referee.bots.launcher import LocalLauncher
from referee.bots.slot import BotSlot
from referee.errors import EXIT_PLATFORM, PlatformFault
from referee.match.game import play_game
from referee.match.spec import MatchSpec
from referee.rules import RuleOptions
from tests.conftest import ROOMY_TIME, ROOT, assert_no_bot_processes, builtin_bot_command, python_bot_command
from tests.support import run_referee


@contextlib.contextmanager
def small_tmpfs(size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` mounted on a new folder for the test (skipped, with the reason, where
    this user may not mount one); unmounted and removed at the end."""
    folder = Path(tempfile.mkdtemp(prefix="pf-tmpfs-", dir="/tmp"))
    try:
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(folder)],
                              capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as exc:
        folder.rmdir()
        pytest.skip(f"cannot mount a tmpfs here: {exc}")
    if done.returncode != 0:
        folder.rmdir()
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip() or done.returncode}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True, timeout=10, check=False)
        shutil.rmtree(folder, ignore_errors=True)


def fill(folder: Path, leave: int = 0) -> None:
    """Write zeros into ``folder`` until its file system has no room left, then give ``leave``
    bytes back (a page is room for one small file: Python's tempfile takes a TMPDIR only where it
    can write one, a check's second bot log then finds none)."""
    fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        with contextlib.suppress(OSError):
            while os.write(fd, b"\0" * 4096):
                pass
        os.ftruncate(fd, max(0, os.fstat(fd).st_size - leave))
    finally:
        os.close(fd)
    assert shutil.disk_usage(folder).free <= leave, "the file system is full"


def error_lines(stderr: str) -> list[str]:
    """The referee's own lines on stderr (not its warnings, not gRPC's)."""
    return [line for line in stderr.splitlines() if line.startswith("referee: error:")]


def assert_one_platform_line(done: subprocess.CompletedProcess[str], condition: str, *words: str,
                             only: bool = True) -> str:
    """Exit 4, one error line naming ``condition`` (and ``words``), no traceback; with ``only``,
    nothing else on stderr but the referee's warnings (gRPC's C core logs its own EMFILE lines)."""
    assert done.returncode == EXIT_PLATFORM, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])
    assert "Traceback" not in done.stderr, done.stderr
    if only:
        assert all(line.startswith(("referee: warning:", "referee: error:")) for line in done.stderr.splitlines()), (
            done.stderr)
    (line,) = error_lines(done.stderr)
    assert line.startswith(f"referee: error: platform fault ({condition}): "), line
    assert "no bot is to blame" in line
    for word in words:
        assert word in line, (word, line)
    return line


def test_a_full_disk_under_the_log_folder_is_the_platforms_fault(tmp_path: Path) -> None:
    """The fault injection of issue 26: each game had been the bot's startup forfeit ("[Errno 28]")."""
    records = tmp_path / "records"
    with small_tmpfs("64k") as disk:
        fill(disk)
        done = run_referee("match", "--bot", builtin_bot_command(1), "--bot", builtin_bot_command(2),
                           "--games", "2", "--sandbox", "none", "--logs", str(disk / "logs"),
                           "--records", str(records))
    assert_one_platform_line(done, "disk", "cannot write the bot's log", "No space left on device")
    assert list(records.iterdir()) == [], "no record at all, none that blames a bot"
    assert "-> forfeit" not in done.stdout
    assert_no_bot_processes()


def test_a_log_that_fills_up_mid_game_ends_the_game_as_the_platforms_fault_not_a_timeout(tmp_path: Path) -> None:
    """The bot prints 32 KiB a turn from its second turn on; the log's file system holds 256 KiB.
    Before: the referee stopped draining the pipe at the first failed write, the bot blocked on
    it and timed out (its forfeit). Now the pipe is drained and the game ends at the next turn."""
    records = tmp_path / "records"
    chatty = python_bot_command("chatty", after=2) + " --ms 32"
    with small_tmpfs("256k") as disk:
        done = run_referee("match", "--bot", chatty, "--bot", builtin_bot_command(2), "--sandbox", "none",
                           "--move-time", "2000", "--logs", str(disk / "logs"), "--records", str(records))
        (log,) = (disk / "logs").glob("*/bot0.log")
        assert b"chatter" in log.read_bytes(), "the game was under way: the bot's output filled the disk"
    assert_one_platform_line(done, "disk", "cannot write the bot's log", "No space left on device")
    assert list(records.iterdir()) == []
    assert "timeout" not in done.stdout + done.stderr
    assert_no_bot_processes()


def test_play_game_raises_the_fault_and_leaves_no_seat_running() -> None:
    """The arena's contract (it calls ``play_game`` with its own slots): a log that fills up
    mid-game makes ``play_game`` raise PlatformFault("disk"), never return a report blaming a
    bot, and every seat's bot is stopped by then, not at some later shutdown."""
    chatty = python_bot_command("chatty", after=2) + " --ms 32"
    spec = MatchSpec(bots=[BotEndpoint.parse(chatty), BotEndpoint.parse(builtin_bot_command(2))],
                     options=RuleOptions(players=2), time_control=ROOMY_TIME)
    setup = spec.game("platform-faults", 1)
    failed_before = REGISTRY.get_sample_value("referee_games_failed_total", {"error": "platform_disk"}) or 0
    sockets = Path(tempfile.mkdtemp(prefix="pf-s", dir="/tmp"))  # short: a unix socket's path is at most 107 bytes

    async def play(logs: Path) -> tuple[PlatformFault, list[BotSlot]]:
        slots = [BotSlot(i, bot, logs, sockets, launcher=LocalLauncher()) for i, bot in enumerate(spec.bots)]
        try:
            with pytest.raises(PlatformFault) as raised:
                await play_game(setup, [slots[b] for b in setup.seat_bots], setup.handshake(1))
            return raised.value, [slot for slot in slots if slot.process is not None]
        finally:
            await asyncio.gather(*(slot.shutdown() for slot in slots))

    try:
        with small_tmpfs("256k") as disk:
            (disk / "logs").mkdir()
            fault, running = asyncio.run(asyncio.wait_for(play(disk / "logs"), 120))
    finally:
        shutil.rmtree(sockets, ignore_errors=True)
    assert fault.condition == "disk" and "No space left on device" in str(fault)
    assert running == [], "play_game stopped its seats' bots before it raised"
    assert (REGISTRY.get_sample_value("referee_games_failed_total", {"error": "platform_disk"}) or 0) - failed_before == 1
    assert_no_bot_processes()


def test_a_record_that_cannot_be_written_is_the_platforms_fault(tmp_path: Path) -> None:
    """The game is played; its record finds no room: exit 4 naming the record, and no record cut
    short left behind as if it were the game's."""
    with small_tmpfs("64k") as disk:
        records = disk / "records"
        records.mkdir()
        fill(disk)
        done = run_referee("match", "--bot", builtin_bot_command(1), "--bot", builtin_bot_command(2),
                           "--sandbox", "none", "--logs", str(tmp_path / "logs"), "--records", str(records))
        left = list(records.iterdir())
    assert_one_platform_line(done, "disk", "cannot write the game record")
    assert left == []
    assert_no_bot_processes()


def test_referee_check_on_a_full_disk_exits_4_not_not_clean(tmp_path: Path) -> None:
    with small_tmpfs("64k") as disk:
        fill(disk)
        done = run_referee("check", "--bot", builtin_bot_command(3), "--sandbox", "none",
                           "--logs", str(disk / "logs"))
    assert_one_platform_line(done, "disk", "No space left on device")
    assert "NOT CLEAN" not in done.stdout and "clean" not in done.stdout.split("\n")[-2:]
    assert_no_bot_processes()


def test_a_referee_out_of_file_descriptors_exits_4_naming_them() -> None:
    """``referee match`` under lower and lower RLIMIT_NOFILE (prlimit): where it runs out after it
    started (past the interpreter's and gRPC's own start, which may abort in gRPC's C core), it
    exits 4 naming the descriptors, never with a bot's failure or a traceback."""
    prlimit = shutil.which("prlimit")
    if prlimit is None:
        pytest.skip("no prlimit here")
    outcomes: dict[int, tuple[int, str]] = {}
    for limit in [64, *range(22, 13, -1)]:  # from plenty down until the referee cannot even start
        done = subprocess.run(
            [prlimit, f"--nofile={limit}:{limit}", sys.executable, "-m", "referee.cli", "match",
             "--bot", builtin_bot_command(1), "--bot", builtin_bot_command(2), "--sandbox", "none"],
            cwd=ROOT, capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
        outcomes[limit] = (done.returncode, done.stderr)
        assert "Traceback" not in done.stderr, (limit, done.stderr[-3000:])
        if done.returncode == 0:
            assert "-> forfeit" not in done.stdout, (limit, done.stdout)  # enough descriptors: a game played as ever
        elif done.returncode == EXIT_PLATFORM:
            assert_one_platform_line(done, "descriptors", "Too many open files", only=False)
            assert_no_bot_processes()
            break  # one limit where it ran out and said so is the point; lower ones cost CI time
        else:
            assert done.returncode < 0 or done.returncode > 128 or done.returncode == 1 and not error_lines(
                done.stderr), (limit, done.returncode, done.stderr[-3000:])
            break  # the interpreter or gRPC's core itself could not start: below what the referee handles
        assert_no_bot_processes()
    assert any(code == EXIT_PLATFORM for code, _ in outcomes.values()), {k: v[0] for k, v in outcomes.items()}
    assert outcomes[64][0] == 0, "with enough descriptors the match is played"
