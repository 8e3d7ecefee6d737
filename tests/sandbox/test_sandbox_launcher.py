"""The sandbox launcher with real processes: a bot's clean environment and own uid, SIGTERM reaching
it inside bubblewrap, the folders it is refused, the mode chosen (and said) on a machine without
bubblewrap, the "limits" mode, and the whole sandbox run by a user other than root."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from referee.bots.cpu import ProcTreeMeter
from referee.bots.endpoint import BotEndpoint
from referee.bots.launcher import BotProcess, LocalLauncher
from referee.errors import UsageError
from referee.match.run import run_match
from referee.match.spec import MatchSpec
from referee.rules import RuleOptions
from referee.sandbox import SandboxLauncher, SandboxSettings, SandboxUnavailableError, make_launcher
from referee.sandbox.cgroups import CgroupCpuMeter
from referee.sandbox.machine import Machine, probe
from referee.sandbox.process import SandboxedProcess, _uid_pids
from tests.conftest import ROOMY_TIME, ROOT, assert_no_bot_processes, builtin_bot_command, sample_bot_path

HOSTILE = ROOT / "tests" / "bots" / "hostile"
NO_BWRAP = probe().bwrap_problem
needs_bwrap = pytest.mark.skipif(NO_BWRAP is not None, reason=f"bubblewrap cannot run here: {NO_BWRAP}")
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (a uid of the bot's own)")
PRINT_ENV = "import json, os; print('env', json.dumps(sorted(os.environ.items())), os.getuid(), flush=True)"


@pytest.fixture
def socket_root() -> Iterator[Path]:
    """A socket root as run_match makes one, somewhere a bot's own uid may pass through (mode "limits"
    has no namespaces: its uid walks the host path to its socket)."""
    folder = Path(tempfile.mkdtemp(prefix="sbx-", dir="/tmp"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def limits_python() -> tuple[str, dict[str, str]]:
    """An interpreter a bot with a uid of its own can run in mode "limits" (no namespaces: it walks
    the host's folders), and the env its bots need: this one when others may reach it, else the
    system's of the same version with this venv's packages on PYTHONPATH (this interpreter may live
    in root's private home)."""
    from referee.sandbox.view import runtime_folders

    def passable(path: str) -> bool:
        parts = Path(path).parents
        return all(os.stat(p).st_mode & 0o001 for p in parts if str(p) != "/")

    if os.geteuid() != 0 or all(passable(f) for f in runtime_folders(os.path.normpath(sys.executable))):
        return sys.executable, {}
    system = _nobody_python()
    if system is None:
        pytest.skip("no interpreter a bot's own uid can reach without namespaces")
    site = next(Path(sys.prefix).glob("lib/python3*/site-packages"))
    return system, {"PYTHONPATH": f"{site}:{ROOT}"}


async def start(launcher: SandboxLauncher | LocalLauncher, command: str, folder: Path, name: str = "b",
                cwd: Path | None = None, **env: str) -> BotProcess:
    (folder / name).mkdir(exist_ok=True)
    return await launcher.launch(BotEndpoint.parse(command, cwd=str(cwd) if cwd else None, env=env),
                                 f"unix:{folder / name / '1.sock'}", folder / f"{name}.log")


def printed_env(log: Path) -> tuple[dict[str, str], int]:
    line = next(x for x in log.read_text().splitlines() if x.startswith("env "))
    data, uid = line.removeprefix("env ").rsplit(" ", 1)
    return dict(json.loads(data)), int(uid)


@needs_bwrap
@pytest.mark.parametrize("mode", ["bwrap", "limits"])
def test_a_clean_environment_and_a_uid_of_its_own(socket_root: Path, monkeypatch: pytest.MonkeyPatch,
                                                   mode: str) -> None:
    monkeypatch.setenv("REFEREE_SECRET", "s3cret")
    launcher = make_launcher(SandboxSettings(mode=mode))
    python = sys.executable if mode == "bwrap" else limits_python()[0]  # (json and os need no PYTHONPATH)

    async def both() -> list[tuple[dict[str, str], int]]:
        command = f"{shlex.quote(python)} -c {shlex.quote(PRINT_ENV + '; import time; time.sleep(30)')}"
        procs = [await start(launcher, command, socket_root, name, BOT_SETTING="x") for name in ("a", "b")]
        try:
            for _ in range(600):
                if all("env " in (socket_root / f"{n}.log").read_text() for n in ("a", "b")):
                    break
                await asyncio.sleep(0.05)
            return [printed_env(socket_root / f"{n}.log") for n in ("a", "b")]
        finally:
            for proc in procs:
                await proc.stop()

    (env_a, uid_a), (_, uid_b) = asyncio.run(both())
    assert "REFEREE_SECRET" not in env_a
    expected = {"PATH", "HOME", "TMPDIR", "CASINO_BOT_ADDRESS", "BOT_SETTING", "CASINO_TEST_SESSION"}
    # PWD (its working directory, set by the shell that joins its cgroup) and LC_CTYPE (Python's own
    # locale coercion) come from inside, not from the referee
    assert set(env_a) - {"PWD", "LC_CTYPE"} == expected, "its spec's env, the address, HOME, TMPDIR, PATH, markers"
    assert env_a["BOT_SETTING"] == "x"
    if mode == "bwrap":
        assert env_a["CASINO_BOT_ADDRESS"] == "unix:/run/casino/1.sock" and env_a["HOME"] == env_a["TMPDIR"] == "/tmp"
    else:
        assert env_a["CASINO_BOT_ADDRESS"] == f"unix:{socket_root / 'a' / '1.sock'}"
    if os.geteuid() == 0:
        assert uid_a != 0 and uid_b != 0 and uid_a != uid_b, "a uid of its own, one per running bot"
        assert 800_000 <= uid_a < 810_000


@needs_bwrap
def test_sigterm_reaches_the_bot_inside_bubblewrap(tmp_path: Path) -> None:
    """The sample bots say "shutting down" on SIGTERM: the referee's stop reaches the bot itself,
    not only bubblewrap (whose death would SIGKILL it)."""
    launcher = make_launcher(SandboxSettings(mode="bwrap"))
    greedy = shlex.join([sys.executable, str(sample_bot_path("greedy_bot.py"))])
    spec = MatchSpec(bots=[BotEndpoint.parse(greedy), BotEndpoint.parse(builtin_bot_command(1))],
                     options=RuleOptions(players=2), time_control=ROOMY_TIME, logs_dir=tmp_path)
    report = asyncio.run(asyncio.wait_for(run_match(spec, launcher=launcher), 120))
    assert report.games[0].result.failures == []
    assert "greedy-bot: shutting down" in (report.logs_dir / "bot0.log").read_text()


@needs_bwrap
def test_a_folder_holding_the_logs_is_refused(tmp_path: Path) -> None:
    (tmp_path / "bot.py").write_text("")
    launcher = make_launcher(SandboxSettings(mode="bwrap"))
    spec = MatchSpec(bots=[BotEndpoint.parse(f"{shlex.quote(sys.executable)} bot.py", cwd=str(tmp_path)),
                           BotEndpoint.parse(builtin_bot_command(1))],
                     options=RuleOptions(players=2), time_control=ROOMY_TIME, logs_dir=tmp_path / "logs")
    report = asyncio.run(asyncio.wait_for(run_match(spec, launcher=launcher), 120))
    (failure,) = report.games[0].result.failures
    assert failure.reason == (f"cannot start {spec.bots[0].spec!r}: {tmp_path} holds the referee's logs "
                              f"({report.logs_dir}): give the bot a folder of its own (cwd), not one with the "
                              "tournament's files")


@needs_bwrap
@needs_root
def test_a_folder_its_uid_cannot_read_is_refused_with_its_mode(socket_root: Path) -> None:
    private = Path(tempfile.mkdtemp(dir=socket_root))  # 0700, as mktemp makes them
    (private / "bot.py").write_text("")
    launcher = make_launcher(SandboxSettings(mode="bwrap"))
    with pytest.raises(PermissionError, match=r"is not readable by the bot's own uid \(mode 0700\): chmod o\+rx it"):
        asyncio.run(start(launcher, f"{shlex.quote(sys.executable)} bot.py", socket_root, cwd=private))


def test_the_mode_chosen_and_said_once() -> None:
    said: list[str] = []
    machine = probe()
    without = Machine(as_root=machine.as_root, tools=machine.tools, bwrap_problem="bubblewrap (bwrap) is not installed",
                      limits_problem=None, cgroups=machine.cgroups, cgroup_problem=machine.cgroup_problem)
    fallback = make_launcher(SandboxSettings(), without, said.append)
    assert isinstance(fallback, SandboxLauncher) and fallback.mode == "limits"
    assert len(said) == 1 and said[0].startswith(
        'sandbox: no bubblewrap sandbox (bubblewrap (bwrap) is not installed): bots run in mode "limits"')
    with pytest.raises(SandboxUnavailableError, match=r'^sandbox mode "bwrap" cannot run here: bubblewrap \(bwrap\) '
                                                      r"is not installed$"):
        make_launcher(SandboxSettings(mode="bwrap"), without, said.append)
    said.clear()
    off = make_launcher(SandboxSettings(mode="none"), warn=said.append)
    assert isinstance(off, LocalLauncher) and said == [(
        'sandbox off (mode "none"): bots run as this user with the referee\'s environment, files and network, '
        "and no limits")]
    with pytest.raises(UsageError, match="^sandbox read_only path /no/such/path does not exist$"):
        make_launcher(SandboxSettings(read_only=("/no/such/path",)), machine, said.append)


@needs_bwrap
def test_bwrap_without_a_system_call_filter_says_so_once_and_in_each_log(socket_root: Path) -> None:
    """Where libseccomp is missing, mode "bwrap" still runs (the filter is a layer on top of the
    namespaces), says so in its one warning line, and each bot's first log line says it."""
    import dataclasses

    said: list[str] = []
    machine = dataclasses.replace(probe(), seccomp_problem="libseccomp is not usable (here, on purpose)")
    launcher = make_launcher(SandboxSettings(mode="bwrap"), machine, said.append)
    assert isinstance(launcher, SandboxLauncher) and launcher.mode == "bwrap"
    assert len(said) == 1 and "no system-call filter (libseccomp is not usable (here, on purpose))" in said[0], said
    async def start_and_stop() -> None:
        bot = await start(launcher, f"{shlex.quote(sys.executable)} -c 'pass'", socket_root)
        await bot.stop()

    asyncio.run(start_and_stop())
    header = (socket_root / "b.log").read_text().splitlines()[0]
    assert "; no system-call filter;" in header and "system calls filtered" not in header, header
    filtered = make_launcher(SandboxSettings(mode="bwrap"), probe(), said.append)
    if probe().seccomp_problem is None:
        assert "system calls filtered (seccomp)" in filtered.describe(BotEndpoint.parse("unix:/x.sock"))[0]


@needs_bwrap
def test_limits_mode_plays_and_kills_what_the_bot_leaves(socket_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No namespaces: the bot runs on the host as its own uid (root), yet its daemon ends with it
    (its cgroup, or every process of its uid) and a memory hog is killed at its limit."""
    monkeypatch.setattr(tempfile, "tempdir", str(socket_root))  # run_match's socket root: reachable by its uid
    launcher = make_launcher(SandboxSettings(mode="limits", memory_mib=128))
    python, env = limits_python()
    daemon = shlex.join([python, str(HOSTILE / "daemon.py")])
    hog = shlex.join([python, str(HOSTILE / "hog_memory.py")])
    spec = MatchSpec(bots=[BotEndpoint.parse(daemon, env=env), BotEndpoint.parse(hog, env=env)],
                     options=RuleOptions(players=2),
                     time_control=ROOMY_TIME, logs_dir=socket_root / "logs")
    report = asyncio.run(asyncio.wait_for(run_match(spec, launcher=launcher), 120))
    (failure,) = report.games[0].result.failures
    if launcher.machine.cgroups is not None and "memory" in launcher.machine.cgroups.bases:  # type: ignore[attr-defined]
        assert failure.reason == "the bot process killed by the sandbox: memory limit (128 MiB)"
    assert "(sandbox limits;" in (report.logs_dir / "bot0.log").read_text()
    assert_no_bot_processes(patterns=("tests/bots/hostile/",))


def _nobody_python() -> str | None:
    """A system interpreter of this Python's version that an unprivileged user can run (this one
    may live in root's home), or None."""
    candidate = f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}"
    return candidate if os.access(candidate, os.X_OK) else None


@needs_bwrap
@needs_root
@pytest.mark.skipif(_nobody_python() is None, reason="no system Python of this version for an unprivileged user")
def test_an_unprivileged_referee_sandboxes_its_bots_in_user_namespaces(socket_root: Path) -> None:
    """`referee match` run as nobody: bubblewrap makes a user namespace per bot; without cgroups the
    process limit is RLIMIT_NPROC, counted in the bot's own user namespace (a fork bomb is refused
    below it although every bot has the same host uid), and nothing is left running."""
    site = next(Path(sys.prefix).glob("lib/python3*/site-packages"))
    os.chown(socket_root, 65534, 65534)
    python = _nobody_python()
    assert python is not None
    env = {"PATH": "/usr/bin:/bin", "HOME": str(socket_root), "TMPDIR": str(socket_root),
           "PYTHONPATH": f"{site}:{ROOT}", "CASINO_TEST_SESSION": os.environ["CASINO_TEST_SESSION"],
           "CASINO_SANDBOX_PASS_ENV": "PYTHONPATH,CASINO_TEST_SESSION"}
    bomb = shlex.join([python, str(HOSTILE / "fork_bomb.py")])
    work = socket_root / "work"  # the bots' working directory: their folder (/ would be refused)
    work.mkdir()
    os.chown(work, 65534, 65534)
    done = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", python, "-m", "referee.cli",
                           "match", "--bot", bomb, "--bot", f"{python} -m referee.bots.builtin", "--processes", "32",
                           "--sandbox", "bwrap", "--read-only", str(ROOT), "--logs", str(socket_root / "logs"),
                           "--move-time", "2000"],
                          cwd=work, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "(forfeit)" not in done.stdout
    (log,) = (socket_root / "logs").glob("*/bot0.log")
    text = log.read_text()
    assert "(sandbox bwrap; system calls filtered; memory 512 MiB" in text, text.splitlines()[0]
    assert "processes 32 (RLIMIT_NPROC of its uid)" in text
    forks = json.loads(next(line for line in text.splitlines() if line.startswith("hostile: forks "))[15:])
    assert forks["refused"] == "EAGAIN" and 0 < forks["children"] < 32, forks
    assert_no_bot_processes(patterns=("tests/bots/hostile/",))


@needs_bwrap
def test_the_referees_cpu_group_weighs_as_many_processes_as_it_has_bots(socket_root: Path) -> None:
    """Outside a sandbox each bot competes for CPU as one process; in their group all of them would
    weigh as one, unless the group's weight follows the number of bots. The count is this
    process's groups, read from the cgroup folder: the tree is the process's, shared with the tests
    that ran before in it."""
    launcher = make_launcher(SandboxSettings(mode="bwrap"))
    tree = launcher.machine.cgroups if isinstance(launcher, SandboxLauncher) else None
    if tree is None or "cpu" not in tree.bases:
        pytest.skip("no cpu cgroup here")
    base = tree.bases["cpu"]
    weight = base / ("cpu.weight" if tree.version == 2 else "cpu.shares")
    unit = 100 if tree.version == 2 else 1024
    sleeper = f"{shlex.quote(sys.executable)} -c 'import time; time.sleep(60)'"

    def now() -> tuple[int, int]:
        return len([p for p in base.iterdir() if p.is_dir()]), int(weight.read_text())

    async def two() -> list[tuple[int, int]]:
        seen = []
        a = await start(launcher, sleeper, socket_root, "a")
        seen.append(now())
        b = await start(launcher, sleeper, socket_root, "b")
        seen.append(now())
        await a.stop()
        seen.append(now())
        await b.stop()
        return seen

    seen = asyncio.run(two())
    groups = [count for count, _ in seen]
    assert groups[1:] == [groups[0] + 1, groups[0]], f"one group per running bot: {groups}"
    assert [w for _, w in seen] == [unit * count for count in groups], seen


@needs_bwrap
@pytest.mark.parametrize("kept_by", ["cgroup", "uid"])
def test_a_bot_whose_stop_is_interrupted_gives_its_group_and_uid_back_once_it_is_gone(
        socket_root: Path, monkeypatch: pytest.MonkeyPatch, kept_by: str) -> None:
    """A stop cancelled on its way (a match cancelled again while it stops its bots) kills the bot
    at once; its cgroup (still counted in the referee's CPU weight) and its uid are given back
    before the next launch, not only when the referee exits. "uid": a root referee without
    cgroups, which finds the bot's processes by its uid."""
    import dataclasses

    import referee.bots.launcher as bots_launcher
    from referee.sandbox.uids import _lock_dir

    machine = probe()
    if kept_by == "cgroup" and machine.cgroups is None:
        pytest.skip("no cgroups here")
    if kept_by == "uid":
        if not machine.as_root:
            pytest.skip("needs root (a uid of the bot's own)")
        machine = dataclasses.replace(machine, cgroups=None, cgroup_problem="left out by this test")
    launcher = make_launcher(SandboxSettings(mode="bwrap"), machine=machine)
    assert isinstance(launcher, SandboxLauncher)
    tree = machine.cgroups
    stubborn = (f"{shlex.quote(sys.executable)} -c 'import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN);"
                " print(\"ready\", flush=True); time.sleep(120)'")

    async def interrupted() -> tuple[list[Path], int | None, int, int]:
        before = tree.live if tree else 0
        a = await start(launcher, stubborn, socket_root, "a")
        assert isinstance(a, SandboxedProcess) and (a.cgroup is not None) == (kept_by == "cgroup")
        for _ in range(1200):  # bounded: until it ignores SIGTERM (its own line; the log's header names the command)
            if "ready" in (socket_root / "a.log").read_text().splitlines():
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("the stubborn bot never said it was ready")
        folders, uid, cgroup = a.cgroup.folders if a.cgroup else [], a.uid.uid if a.uid else None, a.cgroup
        with monkeypatch.context() as patched:
            patched.setattr(bots_launcher, "STOP_WAIT_S", 120.0)  # the stop is surely waiting when it is cancelled
            stopping = asyncio.ensure_future(a.stop())
            await asyncio.sleep(0.2)
            assert not stopping.done(), "the stop waits for a bot that ignores SIGTERM"
            stopping.cancel()
            with pytest.raises(asyncio.CancelledError):
                await stopping
        for _ in range(600):  # bounded: until the killed bot's processes are gone
            if not (cgroup.pids() if cgroup else _uid_pids(uid)):
                break
            await asyncio.sleep(0.05)
        b = await start(launcher, f"{shlex.quote(sys.executable)} -c 'import time; time.sleep(60)'", socket_root, "b")
        live_with_b = tree.live if tree else 1
        await b.stop()
        return folders, uid, before, live_with_b

    folders, uid, before, live_with_b = asyncio.run(interrupted())
    assert [f for f in folders if f.exists()] == [], "the interrupted bot's group is removed by the next launch"
    assert live_with_b == before + 1, "the interrupted bot's group no longer counts"
    if uid is not None:  # root: its uid lease is free again (flock locks per open file: this open conflicts)
        fd = os.open(_lock_dir() / str(uid), os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
    assert_no_bot_processes()


DAEMON_BURNER = """
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:  # re-parented away from the bot: outside the tree a /proc walk from the bot sees
        start = time.process_time()
        while time.process_time() - start < 60:
            pass
    os._exit(0)
time.sleep(60)
"""


@needs_bwrap
def test_a_double_forked_process_is_counted_in_the_bots_cpu_time(socket_root: Path) -> None:
    """A process the bot double-forks (re-parented to the namespace's init) still counts: the
    bot's meter is its cgroup's count, which holds every process of the bot; and the /proc tree
    meter, which starts outside the bot's PID namespace, agrees with it. Once the bot is stopped
    the meter reads None (its file is closed)."""
    launcher = make_launcher(SandboxSettings(mode="bwrap"))

    async def readings() -> tuple[object, float, float, int | None]:
        proc = await start(launcher, f"{shlex.quote(sys.executable)} -c {shlex.quote(DAEMON_BURNER)}", socket_root)
        try:
            meter = proc.cpu_meter()
            assert meter is not None
            if proc.cpu_seconds() is None:  # type: ignore[attr-defined]
                pytest.skip("no cgroup CPU count here to compare with")
            tree = ProcTreeMeter(proc.process.pid)  # type: ignore[union-attr]
            for _ in range(600):  # bounded: 30 s for the burner to use 0.3 s of CPU
                if (meter.cpu_ns() or 0) >= 0.3e9:
                    break
                await asyncio.sleep(0.05)
            in_tree, in_meter = tree.cpu_ns(), meter.cpu_ns()
            tree.close()
            assert in_tree is not None and in_meter is not None
            return type(meter), in_meter / 1e9, in_tree / 1e9, meter
        finally:
            await proc.stop()

    kind, in_meter, in_tree, meter = asyncio.run(readings())
    assert kind is CgroupCpuMeter, "a bot with a cgroup is metered by its cgroup's count"
    assert in_meter >= 0.3 and in_tree >= 0.8 * in_meter, (in_meter, in_tree)
    assert meter.cpu_ns() is None, "a stopped bot's meter is closed"  # type: ignore[attr-defined]
    assert_no_bot_processes()


@needs_root
def test_limits_mode_refuses_a_socket_its_uid_cannot_reach(socket_root: Path) -> None:
    """Without a mount namespace the bot's own uid walks the host's folders to its socket: one it
    may not pass through stops its start, naming the folder (instead of a bot that never listens)."""
    if probe().limits_problem:
        pytest.skip(probe().limits_problem or "")
    private = Path(tempfile.mkdtemp(dir=socket_root))  # 0700, above the sockets' own folder (which is made 0711)
    (private / "sockets").mkdir()
    launcher = make_launcher(SandboxSettings(mode="limits"))
    python, env = limits_python()
    with pytest.raises(PermissionError, match=rf"^the bot's own uid cannot pass through {private} \(mode 0700\)"):
        asyncio.run(start(launcher, f"{python} -m referee.bots.builtin", private / "sockets", **env))


def test_a_bot_left_by_a_killed_referee_is_killed_by_the_next_one() -> None:
    """A bot can outlive its referee killed with SIGKILL only through bubblewrap's start-up race
    (containers/bubblewrap#633: ``--die-with-parent`` is set in bwrap's child after the fork). It
    is still in the dead referee's cgroup: the next referee that looks for its cgroup tree kills
    it and removes the group."""
    from referee.sandbox.cgroups import _clean_stale, find_tree, join_command

    tree, why = find_tree()
    if tree is None:
        pytest.skip(f"no cgroups here: {why}")
    gone = subprocess.Popen(["true"])
    gone.wait()  # a referee pid that no longer exists
    parents = sorted({base.parent for base in tree.bases.values()})
    groups = [parent / f"royal-casino-{gone.pid}" / "bot1-1" for parent in parents]
    for group in groups:
        group.mkdir(parents=True)
    leftover = subprocess.Popen([*join_command([g / "cgroup.procs" for g in groups]), "sleep", "600"],
                                start_new_session=True)
    try:
        for _ in range(200):  # bounded: until the shell has joined the groups and exec'd sleep
            if all((g / "cgroup.procs").read_text().split() == [str(leftover.pid)] for g in groups):
                break
            time.sleep(0.05)
        for parent in parents:
            _clean_stale(parent)
        assert leftover.wait(timeout=30) == -signal.SIGKILL
        assert not any(g.parent.exists() for g in groups), "the dead referee's groups are removed"
    finally:
        if leftover.poll() is None:
            leftover.kill()
            leftover.wait()
        for group in groups:
            for folder in (group, group.parent):
                with contextlib.suppress(OSError):
                    folder.rmdir()
