"""The sandbox's flags of the referee command, as real processes: a bad value is one line naming
the flag (exit 2), "none" is said once, `referee check` reports the sandbox and what it limited, and
--sandbox-from reads a tournament file's [sandbox] table."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from referee.sandbox.machine import probe
from tests.conftest import ROOT, builtin_bot_command
from tests.support import run_referee

HOSTILE = ROOT / "tests" / "bots" / "hostile"
needs_bwrap = pytest.mark.skipif(probe().bwrap_problem is not None,
                                 reason=f"bubblewrap cannot run here: {probe().bwrap_problem}")


@pytest.mark.parametrize("args, message", [
    (["--memory", "8"], "referee: error: --memory must be a whole number from 32 to 1048576, not 8"),
    (["--cpus", "0"], "referee: error: --cpus must be a number from 0.01 to 1024, not 0.0"),
    (["--processes", "2"], "referee: error: --processes must be a whole number from 8 to 65536, not 2"),
    (["--read-only", "/no/such/path"], "referee: error: sandbox read_only path /no/such/path does not exist"),
])
def test_a_bad_flag_is_one_line_naming_it(args: list[str], message: str) -> None:
    done = run_referee("match", "--bot", builtin_bot_command(1), "--bot", builtin_bot_command(2), *args)
    assert (done.returncode, done.stderr, done.stdout) == (2, message + "\n", "")


def test_mode_none_is_said_once_and_plays(tmp_path: Path) -> None:
    done = run_referee("match", "--bot", builtin_bot_command(1), "--bot", builtin_bot_command(2), "--sandbox", "none",
                       "--logs", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stderr.count('referee: warning: sandbox off (mode "none")') == 1
    (log,) = tmp_path.glob("*/bot0.log")
    assert "(sandbox" not in log.read_text(), "started as before, without a sandbox"


@needs_bwrap
def test_check_reports_the_sandbox_and_the_limit_a_bot_reached(tmp_path: Path) -> None:
    hog = shlex.join([sys.executable, str(HOSTILE / "hog_memory.py")])
    done = run_referee("check", "--bot", hog, "--memory", "128", "--games", "1", "--sandbox", "bwrap", timeout=180,
                       cwd=HOSTILE)
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout
    assert out.splitlines()[1].startswith("sandbox: bwrap: own PID, network, IPC, UTS namespaces (no network), ")
    assert "  limits: memory 128 MiB (cgroup), processes 128 (cgroup)" in out
    assert f"  read-only: its folder {HOSTILE} (its working directory)" in out
    assert "limits reached: " in out
    assert " x against itself: memory limit (128 MiB) reached: 1 process(es) killed" in out
    assert "crash: the bot process killed by the sandbox: memory limit (128 MiB)" in out


@needs_bwrap
def test_check_takes_a_tournament_files_sandbox(tmp_path: Path) -> None:
    (tmp_path / "cup.toml").write_text('name = "cup"\n[sandbox]\nmemory_mib = 256\nprocesses = 64\n')
    done = run_referee("check", "--bot", builtin_bot_command(3), "--games", "1", "--sandbox-from",
                       str(tmp_path / "cup.toml"), "--processes", "96", timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "  limits: memory 256 MiB (cgroup), processes 96 (cgroup)" in done.stdout, "the file, then the flags"
    assert "limits reached: none" in done.stdout
    (tmp_path / "bad.toml").write_text("[sandbox]\nmemory_mib = 1\n")
    bad = run_referee("check", "--bot", builtin_bot_command(3), "--sandbox-from", str(tmp_path / "bad.toml"))
    expected = (f"referee: error: {tmp_path / 'bad.toml'}: [sandbox] memory_mib must be a whole number from 32 to "
                "1048576, not 1\n")
    assert (bad.returncode, bad.stderr) == (2, expected)


@needs_bwrap
def test_serve_runs_the_programs_clients_name_in_its_sandbox(tmp_path_factory: pytest.TempPathFactory) -> None:
    """`referee serve --allow-commands` starts the bots a client names with the sandbox its flags say."""
    import asyncio
    import signal


    from casino.v1 import game_pb2, referee_pb2, referee_pb2_grpc
    from referee.service.client import referee_channel
    from tests.conftest import ROOMY_TIME
    from tests.service_support import TOKEN
    from tests.support import start_referee

    folder = tmp_path_factory.mktemp("serve")  # short: unix socket paths are limited to 107 bytes
    socket, records = folder / "referee.sock", folder / "records"
    request = referee_pb2.RunMatchRequest(bots=[builtin_bot_command(1), builtin_bot_command(2)],
                                          options=game_pb2.RuleOptions(players=2), games=1,
                                          time_control=ROOMY_TIME.to_pb())

    token_file = folder / "token"
    token_file.write_text(TOKEN + "\n", encoding="utf-8")  # --allow-commands needs a token

    async def client() -> list[str]:
        async with referee_channel(f"unix:{socket}", token=TOKEN) as channel:
            async with asyncio.timeout(90):
                await channel.channel_ready()
                return [reply.WhichOneof("event") async for reply in
                        referee_pb2_grpc.RefereeServiceStub(channel).RunMatch(request)]

    server = start_referee("serve", "--allow-commands", "--token-file", str(token_file), "--listen", f"unix:{socket}",
                           "--records", str(records),
                           "--memory", "256", "--sandbox", "bwrap")
    try:
        events = asyncio.run(client())
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
    assert events[0] == "match_started" and events[-1] == "match_result"
    (log, _) = sorted((records / "logs").glob("*/bot*.log"))
    assert "(sandbox bwrap; uid " in log.read_text() and "; memory 256 MiB (cgroup);" in log.read_text()
