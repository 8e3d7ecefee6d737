"""Shared fixtures for the referee integration tests (real bot processes, real gRPC).

* ``python_bot(mode, after=3)``: the command line of the scripted misbehaving bot
  (tests/bots/scripted_bot.py) in one of its modes.
* ``builtin_bot(seed)``: the command line of the referee's built-in random bot.
* ``fast_time``: the move limit for tests of timeouts (a bot that never answers, or answers only
  after the limit; the opponent cannot miss it); the startup time stays generous (slow CI).
  ``ROOMY_TIME``: a long move limit for games where nobody should time out.
* ``bot_processes()`` / ``assert_no_bot_processes()``: live scripted or built-in bot processes
  started by this test session (read from /proc), so tests can check that nothing is left
  running after a match.
* ``running_builtin_bot``: a built-in random bot the test starts itself, already healthy:
  (address, pid); lets a test use a short startup time without racing the opponent's start.
  ``running_bot(command, address)`` does the same for any bot command (a context manager).
* ``node_bot``: the sample Node.js bot's package, after ``npm ci`` for its runtime if needed; skipped with a
  reason when node/npm or the bot's package-lock.json is absent.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import psycopg
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from referee.bots.endpoint import BotEndpoint
from referee.clock import TimeControl

ROOT = Path(__file__).resolve().parent.parent
# A root referee runs each sandboxed bot under a uid of its own, which must read the checkout's
# sample bots, test bots and packages (docs/sandbox.md). A checkout made in a private folder (e.g.
# `git clone` into `mktemp -d`, mode 0700) would refuse every bot with "not readable by the bot's
# own uid ... chmod o+rx it": the suite does that chmod for its own checkout, as a user would.
if os.geteuid() == 0 and not ROOT.stat().st_mode & 0o005 == 0o005:
    ROOT.chmod(ROOT.stat().st_mode | 0o005)
SCRIPTED_BOT = ROOT / "tests" / "bots" / "scripted_bot.py"
NODE_BOT_DIR = ROOT / "sample_bots" / "node"


def sample_bot_path(script: str) -> Path:
    """A sample Python bot's script (``random_bot.py``, ``greedy_bot.py``, ``lookahead_bot.py``) in
    its package's folder, sample_bots/<name>/."""
    return ROOT / "sample_bots" / script.removesuffix("_bot.py") / script
BOT_PATTERNS = ("scripted_bot.py", "referee.bots.builtin")

# Every process this session starts inherits this variable (the referee passes its environment
# on to the bots it starts), so the process checks below see our bots and never those of another
# test run, of another pytest-xdist worker of this run, or of a referee on the same machine.
# (Kept when already ours: this module may be imported twice, as ``conftest`` and as
# ``tests.conftest``; a worker inherits the controller's value and makes its own.)
SESSION_ENV = "CASINO_TEST_SESSION"
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "main")
if not os.environ.get(SESSION_ENV, "").endswith(f"-{_WORKER}"):
    os.environ[SESSION_ENV] = f"{uuid.uuid4().hex}-{_WORKER}"
SESSION_ID = os.environ[SESSION_ENV]
# The sandbox gives bots a clean environment; these two markers (this session's, and the arena
# tests' per-tournament one) are let through, so the checks below still find our bots.
os.environ["CASINO_SANDBOX_PASS_ENV"] = f"{SESSION_ENV},ARENA_TEST_MARKER"

# For tests of timeouts, where one bot never answers (or answers only after the limit): a move
# time that the well-behaved opponent, which answers in a millisecond or two, cannot miss even on
# a saturated machine, and a generous startup (a Python gRPC bot can take seconds to import and
# bind on a loaded CI machine). Clock logic itself (bank, grace, increment) is tested on a
# ManualClock, not against real waits.
FAST_TIME = TimeControl(move_time_ms=1000, grace_ms=50, startup_time_ms=10_000)
# For games that must not time out: well-behaved bots answer in a millisecond or two, so a long
# limit costs nothing and keeps a stalled CI machine from turning a normal game into a forfeit.
ROOMY_TIME = TimeControl(move_time_ms=2000, grace_ms=50, startup_time_ms=10_000)


def python_bot_command(mode: str, after: int = 3) -> str:
    return shlex.join([sys.executable, str(SCRIPTED_BOT), mode, "--after", str(after)])


def builtin_bot_command(seed: int = 0) -> str:
    return shlex.join([sys.executable, "-m", "referee.bots.builtin", "--seed", str(seed)])


@pytest.fixture
def python_bot() -> Callable[..., str]:
    """``python_bot(mode, after=3)``: the scripted bot's command line."""
    return python_bot_command


@pytest.fixture
def builtin_bot() -> Callable[..., str]:
    """``builtin_bot(seed=0)``: the built-in random bot's command line."""
    return builtin_bot_command


@pytest.fixture
def fast_time() -> TimeControl:
    return FAST_TIME


def _ours(pid: str) -> bool:
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False
    return f"{SESSION_ENV}={SESSION_ID}".encode() in environ.split(b"\0")


def bot_processes(patterns: tuple[str, ...] = BOT_PATTERNS, *, any_session: bool = False) -> list[tuple[int, str]]:
    """Live processes whose command line contains one of ``patterns``: (pid, command line).

    Only processes of this test session unless ``any_session``. Zombies (exited, not yet reaped)
    have an empty command line and are not listed.
    """
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        if cmdline and any(p in cmdline for p in patterns) and (any_session or _ours(entry.name)):
            found.append((int(entry.name), cmdline))
    return found


def assert_no_bot_processes(exclude: set[int] = frozenset(), wait_s: float = 0.5,  # type: ignore[assignment]
                            patterns: tuple[str, ...] = BOT_PATTERNS) -> None:
    """No bot process of this session is alive (other than ``exclude``), polling up to ``wait_s``."""
    deadline = time.monotonic() + wait_s
    while True:
        left = [p for p in bot_processes(patterns) if p[0] not in exclude]
        if not left or time.monotonic() >= deadline:
            break
        time.sleep(0.05)
    assert not left, f"bot processes left running: {left}"


@pytest.fixture
def no_bots_left() -> Callable[..., None]:
    """``no_bots_left(exclude=set())``: assert no bot process of this session is running."""
    return assert_no_bot_processes


@contextlib.contextmanager
def running_bot(command: str, address: str, timeout_s: float = 20) -> Iterator[int]:
    """Start the bot ``command`` listening on ``address`` (as an operator would, not the referee)
    and wait until it is healthy; yields its pid and kills it on the way out."""
    proc = subprocess.Popen(shlex.split(command), cwd=ROOT, env={**os.environ, "CASINO_BOT_ADDRESS": address},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + timeout_s
        with grpc.insecure_channel(address) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            while True:
                assert proc.poll() is None, f"{command} exited before it was healthy"
                assert time.monotonic() < deadline, f"{command} was not healthy within {timeout_s:.0f} s"
                try:
                    reply = stub.Check(health_pb2.HealthCheckRequest(), timeout=1)
                    if reply.status == health_pb2.HealthCheckResponse.SERVING:
                        break
                except grpc.RpcError:
                    time.sleep(0.05)
        yield proc.pid
    finally:
        proc.kill()
        proc.wait(timeout=10)


@pytest.fixture
def running_builtin_bot(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    address = f"unix:{tmp_path_factory.mktemp('bot') / 'random.sock'}"
    with running_bot(builtin_bot_command(3), address) as pid:
        yield address, pid


def install_node_bot() -> str | None:
    """Install the node runtime's packages (``npm ci`` in runtimes/node, under a file lock: several
    pytest-xdist workers ask at once) unless they are there; None when the Node.js bot is ready,
    else why it cannot be."""
    from referee.packages.runtimes import install_node_packages, node_runtime

    if shutil.which("node") is None:
        return "node is not on PATH"
    if (problem := install_node_packages()) is not None:
        return problem
    return node_runtime().problem


def package_endpoint(path: str | Path) -> BotEndpoint:
    """A bot package's endpoint, built as `referee check` builds it (default sandbox and runtimes)."""
    from referee.packages.load import Packages
    from referee.sandbox import SandboxSettings

    packages = Packages(SandboxSettings())
    folder, checked = packages.unpack(path)
    return packages.bot_sync(folder, str(path), checked.sha256).endpoint


@pytest.fixture(scope="session")
def node_bot() -> str:
    """The sample Node.js bot's package (sample_bots/node), its runtime's packages installed."""
    why = install_node_bot()
    if why:
        pytest.skip(f"Node.js bot not testable: {why}")
    return str(NODE_BOT_DIR)


@pytest.fixture(scope="session")
def node_bot_if_possible() -> str | None:
    """For tests that use every sample bot there is (the demos): the Node.js bot's packages
    installed when it can be, without skipping the test when it cannot; None or why not."""
    return install_node_bot()


@pytest.fixture
def tmp_path(tmp_path: Path) -> Path:
    """pytest's tmp_path, readable by others (0755) as bot folders are: a sandboxed bot runs with
    a uid of its own when the referee is root, and a test's bot may live in tmp_path."""
    tmp_path.chmod(0o755)
    return tmp_path


@pytest.fixture(scope="session", autouse=True)
def _match_temp_dirs_under_pytest(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """Matches without a logs folder keep their bot logs in a new temporary folder (on purpose,
    for operators); in tests those go under pytest's own temporary tree, which pytest prunes,
    instead of piling up in /tmp."""
    import tempfile

    previous, previous_env = tempfile.tempdir, os.environ.get("TMPDIR")
    tempfile.tempdir = os.environ["TMPDIR"] = str(tmp_path_factory.mktemp("casino-tmp"))  # subprocesses too
    yield
    tempfile.tempdir = previous
    if previous_env is None:
        os.environ.pop("TMPDIR", None)
    else:
        os.environ["TMPDIR"] = previous_env


PG_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/test"  # the server this machine kind starts


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A fresh, empty PostgreSQL database for one test, dropped afterwards."""
    try:
        admin = psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        pytest.skip(f"PostgreSQL not reachable at {PG_ADMIN_URL}: {str(exc).strip().splitlines()[0]}")
    name = f"arena_t_{secrets.token_hex(6)}"
    try:
        admin.execute(f'CREATE DATABASE "{name}"')
        yield f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()
