"""Hostile bots (tests/bots/hostile/) against the default sandbox, one behaviour per test, each in
a real match of real processes over real gRPC: what the bot tried is read from its log, the match
(or tournament) must go on with the other bots unharmed, and nothing of the hostile bot may be
left running afterwards. A few attacks are also run once without the sandbox (mode "none"), to
show the attack itself works and it is the sandbox that stops it.

Skipped, with the reason, where bubblewrap cannot run.
"""


from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import shlex
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY

from referee.bots.endpoint import BotEndpoint
from referee.match.report import MatchReport
from referee.match.run import run_match
from referee.match.spec import MatchSpec
from referee.rules import RuleOptions
from referee.sandbox import SandboxSettings, make_launcher
from referee.sandbox.launcher import SandboxLauncher
from referee.sandbox.machine import probe
from tests.arena_support import game_results, wait_no_marked_processes, write_tournament
from tests.conftest import ROOMY_TIME, ROOT, assert_no_bot_processes, builtin_bot_command, sample_bot_path
from tests.support import run_arena, run_referee

HOSTILE = ROOT / "tests" / "bots" / "hostile"
HOSTILE_PATTERN = ("tests/bots/hostile/",)

pytestmark = pytest.mark.skipif(probe().bwrap_problem is not None,
                                reason=f"bubblewrap cannot run here: {probe().bwrap_problem}")


def hostile(script: str, **env: str) -> BotEndpoint:
    """A hostile bot run in its folder (what the sandbox shows it)."""
    return BotEndpoint.parse(shlex.join([sys.executable, str(HOSTILE / script)]), cwd=str(HOSTILE), env=env)


def reports(log: Path) -> dict[str, Any]:
    """What a hostile bot printed, ``hostile: KEY JSON`` lines, by key (the last of each)."""
    found: dict[str, Any] = {}
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith("hostile: "):
            key, _, value = line.removeprefix("hostile: ").partition(" ")
            found[key] = json.loads(value) if value[:1] in "[{\"tf0123456789" else value
    return found


def play(bots: Sequence[BotEndpoint], logs: Path, games: int = 1,
         **settings: Any) -> tuple[MatchReport, SandboxLauncher]:
    """A match under the sandbox (mode "bwrap" unless told), bounded in time."""
    launcher = make_launcher(SandboxSettings(**{"mode": "bwrap", **settings}))
    spec = MatchSpec(bots=list(bots), options=RuleOptions(players=len(bots)), games=games, seed=5,
                     time_control=ROOMY_TIME, logs_dir=logs)
    report = asyncio.run(asyncio.wait_for(run_match(spec, launcher=launcher), 120))
    return report, launcher  # type: ignore[return-value]


def failures_of(report: MatchReport, bot: int) -> list[str]:
    return [f.reason for g in report.games for f in g.result.failures if g.seat_bots[f.seat] == bot]


def victim() -> BotEndpoint:
    return BotEndpoint.parse(builtin_bot_command(2))


@pytest.fixture
def marker() -> str:
    return uuid.uuid4().hex


@pytest.fixture
def address_victim(tmp_path_factory: pytest.TempPathFactory, marker: str) -> Iterator[tuple[str, int]]:
    """A built-in bot the test starts itself (not sandboxed, its host pid known), carrying the
    marker a hostile bot looks for: (address, pid)."""
    address = f"unix:{tmp_path_factory.mktemp('victim') / 'v.sock'}"
    proc = subprocess.Popen(shlex.split(builtin_bot_command(4)), cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True,
                            env={**os.environ, "CASINO_BOT_ADDRESS": address, "HOSTILE_MARKER": marker})
    try:
        deadline = time.monotonic() + 30
        while not Path(address[5:]).exists():
            assert proc.poll() is None and time.monotonic() < deadline, "the victim did not start"
            time.sleep(0.05)
        yield address, proc.pid
    finally:
        proc.kill()
        proc.wait(timeout=10)


def state_of(pid: int) -> str:
    """A process's state letter (R, S, T for stopped, ...)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


# --- one test per behaviour ----------------------------------------------------------------------


def test_it_cannot_find_or_signal_other_bots(tmp_path: Path, marker: str, address_victim: tuple[str, int]) -> None:
    address, victim_pid = address_victim
    sandboxed_victim = BotEndpoint.parse(builtin_bot_command(3), env={"HOSTILE_MARKER": marker})
    bots = [hostile("signal_others.py", HOSTILE_MARKER=marker, HOSTILE_VICTIM_PID=str(victim_pid)),
            sandboxed_victim, BotEndpoint.parse(address)]
    report, _ = play(bots, tmp_path / "logs", games=2)
    found = reports(report.logs_dir / "bot0.log")
    assert found["bots"] == [], "no other bot is visible through /proc"
    assert found["visible"] == [1], "only its own sandbox's init (pid 1) besides itself"
    assert set(found["signals"].values()) == {"ESRCH"}, found["signals"]  # the host pid means nothing inside
    assert len(report.games) == 2 and failures_of(report, 1) == failures_of(report, 2) == []
    assert state_of(victim_pid) != "T", "the victim was not stopped"
    assert_no_bot_processes(patterns=HOSTILE_PATTERN)


@pytest.mark.parametrize("mode", ["bwrap", "none"])
def test_it_cannot_read_another_bots_source_logs_or_the_hosts_secrets(tmp_path: Path, mode: str) -> None:
    logs = tmp_path / "logs"
    database = tmp_path / "arena.db"
    database.write_bytes(b"SQLite format 3\0" + bytes(1000))
    secrets = [str(ROOT / "tests" / "bots" / "scripted_bot.py"), str(sample_bot_path("greedy_bot.py")),
               str(database), str(ROOT / "pyproject.toml"), "/etc/shadow", "/root/.bash_history"]
    # bot1 (started first, the same match) writes its log where the hostile bot then looks
    report, _ = play([hostile("read_files.py", HOSTILE_READ=":".join(secrets)), victim()], logs, mode=mode)
    reads = reports(report.logs_dir / "bot0.log")["reads"]
    if mode == "none":  # the attack works without a sandbox: it reads them
        assert all(reads[p].startswith("read") for p in secrets[:4]), reads
        return
    assert {path: reads[path] for path in secrets} == {path: "ENOENT" for path in secrets}, reads
    assert failures_of(report, 0) == failures_of(report, 1) == []
    assert_no_bot_processes(patterns=HOSTILE_PATTERN)


def test_a_link_in_its_folder_reaches_nothing_outside_it(tmp_path: Path) -> None:
    """A bot's folder (a package) with symbolic links to the arena's database, the archive cache
    and the folder above: inside the sandbox they lead nowhere."""
    import shutil

    folder, cache = tmp_path / "bot", tmp_path / "cache"
    folder.mkdir()
    (cache / ("a" * 64)).mkdir(parents=True)
    (cache / ("a" * 64) / "bot.py").write_text("secret = 1\n")
    (tmp_path / "arena.db").write_bytes(b"SQLite format 3\0" + bytes(100))
    for name in ("_bot.py", "read_files.py"):
        shutil.copy(HOSTILE / name, folder / name)
    (folder / "db").symlink_to(tmp_path / "arena.db")
    (folder / "cache").symlink_to(cache)
    (folder / "up").symlink_to("..")
    targets = ["db", f"cache/{'a' * 64}/bot.py", "cache", "up/arena.db", "up"]
    reader = BotEndpoint.parse(shlex.join([sys.executable, "read_files.py", *targets]), cwd=str(folder))
    report, _ = play([reader, victim()], tmp_path / "logs", private=(str(tmp_path / "arena.db"), str(cache)))
    reads = reports(report.logs_dir / "bot0.log")["reads"]
    assert reads.pop("up") == "listed 1 entries", "the way to its folder: its folder alone"
    assert set(reads.values()) == {"ENOENT"}, reads
    assert failures_of(report, 0) == failures_of(report, 1) == []


def test_what_it_writes_outside_its_sandbox_never_reaches_the_host(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir(mode=0o777)
    name = f"planted-{uuid.uuid4().hex}"
    targets = [str(outside / name), f"/tmp/{name}", str(ROOT / name), f"/root/{name}"]
    report, _ = play([hostile("write_files.py", HOSTILE_WRITE=":".join(targets)), victim()], tmp_path / "logs")
    writes = reports(report.logs_dir / "bot0.log")["writes"]
    assert writes[str(HOSTILE / "planted.txt")] == "EROFS", "its own folder is read-only"
    assert writes[f"/tmp/{name}"] == "written", "its private /tmp is writable"
    assert not [t for t in [*targets, str(HOSTILE / "planted.txt")] if os.path.exists(t)], "nothing on the host"
    assert failures_of(report, 0) == failures_of(report, 1) == []
    assert_no_bot_processes(patterns=HOSTILE_PATTERN)


@pytest.mark.parametrize("mode", ["bwrap", "none"])
def test_it_cannot_reach_another_bots_socket(tmp_path: Path, mode: str) -> None:
    socket_root = f"{os.environ.get('TMPDIR', '/tmp')}/casino-sock-*/*/*.sock"
    # bot1 starts first (a running victim whose socket the hostile bot, bot2, then looks for)
    bots = [victim(), BotEndpoint.parse(builtin_bot_command(5)),
            hostile("connect_sockets.py", HOSTILE_SOCKETS=socket_root)]
    report, _ = play(bots, tmp_path / "logs", mode=mode)
    sockets = reports(report.logs_dir / "bot2.log")["sockets"]
    if mode == "none":  # without a sandbox it finds the other bots' sockets and gets their Hello
        assert any(v.startswith("hello from") for v in sockets.values()), sockets
        return
    assert sockets == {}, f"no other bot's socket is even visible: {sockets}"
    assert len(report.games) == 1 and failures_of(report, 0) == failures_of(report, 1) == []
    assert_no_bot_processes(patterns=HOSTILE_PATTERN)


def kills(reason: str) -> float:
    """``referee_sandbox_kills_total{reason}`` in this process (tests run one at a time in it)."""
    return REGISTRY.get_sample_value("referee_sandbox_kills_total", {"reason": reason}) or 0.0


def test_a_memory_hog_is_killed_at_its_limit_and_recorded(tmp_path: Path) -> None:
    before = kills("memory")
    report, launcher = play([hostile("hog_memory.py"), victim()], tmp_path / "logs", games=2, memory_mib=128)
    killed_in_notes = sum(int(line.split(": ")[1].split()[0]) for _, line in launcher.notes
                          if line.startswith("memory limit"))
    assert killed_in_notes >= 1 and kills("memory") - before == killed_in_notes, "the metrics count each OOM kill"
    assert len(report.games) == 2, "the match goes on"
    reasons = failures_of(report, 0)
    killed = "the bot process killed by the sandbox: memory limit (128 MiB)"
    assert reasons and all(r == killed for r in reasons), reasons
    assert [g.result.reason for g in report.games] == ["forfeit", "forfeit"] and failures_of(report, 1) == []
    assert ("bot0.log", "memory limit (128 MiB) reached: 1 process(es) killed") in launcher.notes
    assert_no_bot_processes(patterns=HOSTILE_PATTERN)


def test_a_fork_bomb_is_capped_by_the_process_limit_and_recorded(tmp_path: Path) -> None:
    before = kills("pids")
    report, launcher = play([hostile("fork_bomb.py"), victim()], tmp_path / "logs", processes=32)
    capped = [line for _, line in launcher.notes if line.startswith("process limit")]
    assert kills("pids") - before == len(capped) >= 1, "the metrics count each bot process capped"
    forks = reports(report.logs_dir / "bot0.log")["forks"]
    assert forks["refused"] == "EAGAIN" and 0 < forks["children"] < 32, forks
    assert any(line.startswith("process limit (32) reached: ") for _, line in launcher.notes), launcher.notes
    assert "--- process limit (32) reached" in (report.logs_dir / "bot0.log").read_text()
    assert len(report.games) == 1 and failures_of(report, 1) == []
    assert_no_bot_processes(patterns=HOSTILE_PATTERN)  # its sleeping children too


def test_500_mib_on_stdout_are_cut_at_the_log_cap(tmp_path: Path) -> None:
    report, launcher = play([hostile("flood_stdout.py"), victim()], tmp_path / "logs", log_cap_mib=1)
    log = report.logs_dir / "bot0.log"
    assert log.stat().st_size < (1 << 20) + 4096
    text = log.read_bytes()
    assert b"\n--- log cut: the bot's output reached the log cap (1048576 bytes); the rest is discarded\n" in text
    (cut,) = [line for name, line in launcher.notes if name == "bot0.log"]
    discarded = int(cut.split(": ")[1].split()[0])
    assert cut.startswith("log cap (1 MiB) reached") and discarded >= (500 << 20) - (1 << 20)
    assert text.rstrip().endswith(cut.encode()), "the log ends saying how much was cut"
    assert len(report.games) == 1 and failures_of(report, 0) == failures_of(report, 1) == []
    assert_no_bot_processes(patterns=HOSTILE_PATTERN)


def test_a_double_forked_daemon_is_gone_when_referee_match_ends(tmp_path: Path) -> None:
    done = run_referee("match", "--bot", shlex.join([sys.executable, str(HOSTILE / "daemon.py")]),
                       "--bot", builtin_bot_command(1), "--logs", str(tmp_path / "logs"), "--sandbox", "bwrap")
    assert done.returncode == 0, done.stderr
    (log,) = (tmp_path / "logs").glob("*/bot0.log")
    assert reports(log)["daemon"] == "started"
    assert_no_bot_processes(patterns=HOSTILE_PATTERN)


@pytest.mark.parametrize("mode", ["bwrap", "none"])
def test_it_cannot_open_connections_to_the_hosts_ports(tmp_path: Path, mode: str) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setblocking(False)
    port = listener.getsockname()[1]
    postgres_here = _listening(5432)  # this machine's PostgreSQL: open from the host, refused inside
    with listener:
        report, _ = play([hostile("network.py", HOSTILE_PORTS=f"127.0.0.1:{port}"), victim()], tmp_path / "logs",
                         mode=mode)
        results = reports(report.logs_dir / "bot0.log")["network"]
        try:
            accepted = listener.accept()[0]
            accepted.close()
        except BlockingIOError:
            accepted = None
    if mode == "none":  # the attack works without a sandbox
        assert results[f"127.0.0.1:{port}"] == "connected" and accepted is not None
        return
    assert results == {"127.0.0.1:5432": "ECONNREFUSED", f"127.0.0.1:{port}": "ECONNREFUSED"}, (results, postgres_here)
    assert accepted is None, "the test's port was never reached"
    assert failures_of(report, 0) == failures_of(report, 1) == []
    assert_no_bot_processes(patterns=HOSTILE_PATTERN)


FILTERED = {"unshare": "EPERM", "setns": "EPERM", "keyctl": "EPERM", "bpf": "EPERM", "perf_event_open": "EPERM",
            "io_uring_setup": "EPERM", "ptrace": "EPERM", "clone3": "ENOSYS"}


@pytest.mark.parametrize("mode", ["bwrap", "bwrap-unfiltered", "none"])
def test_the_system_calls_an_escape_starts_with_are_refused(tmp_path: Path, mode: str) -> None:
    """Under the filter each call the hostile bot makes is refused (EPERM; clone3 ENOSYS, so the C
    library uses clone, whose namespace flags are refused too) and the match goes on; without the
    filter ("bwrap-unfiltered": the sandbox as before it, root) or without the sandbox, the same
    calls reach the kernel, which answers otherwise."""
    machine = probe()
    if mode != "none" and machine.seccomp_problem is not None:
        pytest.skip(f"no system-call filter here: {machine.seccomp_problem}")
    if mode == "bwrap-unfiltered":
        machine = dataclasses.replace(machine, seccomp_problem="left out by this test")
    launcher = make_launcher(SandboxSettings(mode="none" if mode == "none" else "bwrap"), machine=machine)
    spec = MatchSpec(bots=[hostile("kernel_calls.py"), victim()], options=RuleOptions(players=2), games=1, seed=5,
                     time_control=ROOMY_TIME, logs_dir=tmp_path / "logs")
    report = asyncio.run(asyncio.wait_for(run_match(spec, launcher=launcher), 120))
    log = (report.logs_dir / "bot0.log").read_text()
    results = reports(report.logs_dir / "bot0.log")["kernel_calls"]
    assert isinstance(results, dict), results
    if mode == "bwrap":
        assert results == FILTERED
        assert "system calls filtered" in log.splitlines()[0]
    else:
        assert results["ptrace"] == "ok" and results["io_uring_setup"] != "EPERM" and results["clone3"] != "ENOSYS"
        if machine.as_root:  # as root, without the filter, the bot may make a user namespace (docs/sandbox.md)
            assert results["unshare"] == "ok", results
    assert failures_of(report, 0) == failures_of(report, 1) == []
    assert_no_bot_processes(patterns=HOSTILE_PATTERN)


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        return True
    except OSError:
        return False



# --- a tournament with hostile bots in it ----------------------------------------------------------


def test_a_tournament_with_hostile_bots_goes_on_and_leaves_nothing_running(tmp_path: Path, marker: str) -> None:
    """`arena run`: the database and another bot's source are unreadable, a daemon and a signalling
    bot change nothing for the others, and no process is left when it ends."""
    database = tmp_path / "cup.db"
    bots = [
        {"name": "reader", "command": shlex.join([sys.executable, str(HOSTILE / "read_files.py")]), "cwd": str(HOSTILE),
         "env": {"HOSTILE_READ": f"{database}:{ROOT / 'tests' / 'bots' / 'scripted_bot.py'}:{tmp_path / 'cup.toml'}"}},
        {"name": "daemon", "command": shlex.join([sys.executable, str(HOSTILE / "daemon.py")]), "cwd": str(HOSTILE)},
        {"name": "signaller", "command": shlex.join([sys.executable, str(HOSTILE / "signal_others.py")]), "cwd": str(HOSTILE),
         "env": {"HOSTILE_MARKER": marker}},
        {"name": "victim", "command": builtin_bot_command(6), "env": {"HOSTILE_MARKER": marker}},
    ]
    write_tournament(tmp_path / "cup.toml", {"name": "hostile-cup", "games_per_pairing": 2, "concurrency": 2,
                                             "database": f"sqlite:///{database}"},
                     bots, {"move_ms": 2000, "startup_ms": 30_000}, marker=marker)
    done = run_arena("run", str(tmp_path / "cup.toml"), timeout=240)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert wait_no_marked_processes(marker) == [], "bots (or their daemon) outlived arena run"
    assert_no_bot_processes(patterns=HOSTILE_PATTERN)
    from arena.store.store import Store

    store = Store(f"sqlite:///{database}", read_only=True)
    try:
        tid = store.tournament_id("hostile-cup")
        results = game_results(store, tid)
    finally:
        store.close()
    assert len(results) == 12 and all(status == "done" for _, _, status, _ in results.values())
    assert not [r for _, _, _, r in results.values() if r and r.get("failures")], "nobody failed: no one was harmed"
    reader_logs = sorted(tmp_path.rglob("reader-*.log"))
    assert reader_logs, f"the reader's log ({sorted(p.name for p in tmp_path.rglob('*.log'))})"
    reads = reports(reader_logs[0])["reads"]
    assert set(reads.values()) == {"ENOENT"}, reads
    signaller = reports(min(tmp_path.rglob("signaller-*.log")))
    assert signaller["bots"] == [], "the signaller found no other bot"
