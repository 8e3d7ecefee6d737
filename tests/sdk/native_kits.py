"""What the tests of the compiled starter bots (sample_bots/cpp, sample_bots/go) share: copy a kit
out of the repository, build it as a bot package is built (``make`` in its folder, no network, the
system read-only, a private /tmp, no HOME), and play the result for real."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
import tomllib
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from referee.sandbox.machine import probe
from tests.conftest import assert_no_bot_processes
from tests.support import ROOT, run_referee

BUILD_TIMEOUT_S = 900  # a first build takes some 10 s of CPU; far more on 2 busy cores
CHECK_TIMEOUT_S = 300
START_TIMEOUT_S = 20
STOP_TIMEOUT_S = 10
CLEAN = "clean: every answer was a legal move in time"
BUILT = ("gen", "*.o", "bot", ".gocache", "casinov1")  # what the kits' builds write


def copy_kit(kit: str, folder: Path) -> Path:
    """sample_bots/<kit>, its sources only (no build outputs of a checkout), copied to folder/<kit>."""
    target = folder / kit
    shutil.copytree(ROOT / "sample_bots" / kit, target, ignore=shutil.ignore_patterns(*BUILT))
    return target


def assert_is_a_package(folder: Path) -> None:
    """Its bot.toml: a native program, built by ``make``, run as ``./bot``."""
    description = tomllib.loads((folder / "bot.toml").read_text(encoding="utf-8"))
    assert description == {"runtime": "native", "build": "make", "run": "./bot"}, description


def sandbox_like(folder: Path) -> list[str]:
    """A bubblewrap prefix where only ``folder`` is writable, /tmp is private and there is no
    network, as in a package's build; empty where bubblewrap cannot run (the build then runs
    plainly: the kit's tests still build and play it)."""
    if probe().bwrap_problem is not None:
        return []
    return ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--perms", "01777", "--tmpfs", "/tmp",
            "--bind", str(folder), str(folder), "--unshare-net", "--die-with-parent", "--chdir", str(folder)]


def build(folder: Path) -> subprocess.CompletedProcess[str]:
    """``make`` in ``folder`` with a minimal environment (no HOME to write to)."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/nonexistent", "TMPDIR": "/tmp", "LANG": "C"}
    return subprocess.run([*sandbox_like(folder), "make"], cwd=folder, env=env, capture_output=True, text=True,
                          timeout=BUILD_TIMEOUT_S, check=False)


def assert_checks_clean(folder: Path, name: str, players: int) -> None:
    """``referee check --bot ./bot --players N`` from the built folder (all the sandbox shows the
    bot besides the system's folders) ends clean, the bot playing under its own name."""
    done = run_referee("check", "--bot", "./bot", "--players", str(players), cwd=folder, timeout=CHECK_TIMEOUT_S)
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-2000:])
    assert done.stdout.rstrip().endswith(CLEAN), done.stdout[-3000:]
    assert re.search(rf"^  game 1 \[P0 {name}, ", done.stdout, re.MULTILINE), done.stdout[-3000:]


def assert_needs_its_address(folder: Path) -> None:
    """Without CASINO_BOT_ADDRESS: one error line, status 2."""
    env = {k: v for k, v in os.environ.items() if k != "CASINO_BOT_ADDRESS"}
    done = subprocess.run(["./bot"], cwd=folder, env=env, capture_output=True, text=True, timeout=STOP_TIMEOUT_S,
                          check=False)
    assert done.returncode == 2 and done.stdout == "", done
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: CASINO_BOT_ADDRESS is not set"), done.stderr


def _serving(address: str, service: str) -> bool:
    with grpc.insecure_channel(address) as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=service), timeout=1)
        except grpc.RpcError:
            return False
    return reply.status == health_pb2.HealthCheckResponse.SERVING


def assert_serves_and_stops_on_sigterm(folder: Path, name: str) -> None:
    """Started by hand on a unix socket: SERVING for "" and casino.v1.BotService; SIGTERM ends it
    with status 0 and its socket file removed."""
    socket = folder / "bot.sock"
    address = f"unix:{socket}"
    proc = subprocess.Popen(["./bot"], cwd=folder, env={**os.environ, "CASINO_BOT_ADDRESS": address},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _serving(address, ""):
            assert proc.poll() is None, f"the bot exited before it was healthy: {proc.communicate()[1]}"
            assert time.monotonic() < deadline, f"not SERVING within {START_TIMEOUT_S} s"
            time.sleep(0.05)
        assert _serving(address, "casino.v1.BotService")
        proc.send_signal(signal.SIGTERM)
        _, log = proc.communicate(timeout=STOP_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=STOP_TIMEOUT_S)
    assert proc.returncode == 0, log
    assert f"{name}: {name} 0.1.0 serving on {address}" in log and "shutting down" in log, log
    assert not socket.exists()


def files_of(folder: Path) -> set[str]:
    """Every file and folder under ``folder``, relative to it."""
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def assert_make_clean_leaves(folder: Path, sources: set[str]) -> None:
    """``make clean`` removes everything the build wrote: the folder holds its ``sources`` again."""
    done = subprocess.run(["make", "clean"], cwd=folder, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert files_of(folder) == sources, sorted(files_of(folder) ^ sources)


def play_the_built_kit(folder: Path, name: str, sources: set[str]) -> None:
    """Everything a built kit must do, in order: check clean with 2, 3 and 4 players, refuse to
    start without its address, serve health and stop on SIGTERM, and clean up after itself."""
    assert os.access(folder / "bot", os.X_OK)
    for players in (2, 3, 4):
        assert_checks_clean(folder, name, players)
    assert_no_bot_processes(patterns=(str(folder), "./bot"))
    assert_needs_its_address(folder)
    assert_serves_and_stops_on_sigterm(folder, name)
    assert_make_clean_leaves(folder, sources)
