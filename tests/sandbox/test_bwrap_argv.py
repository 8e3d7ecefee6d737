"""The bubblewrap command line, as a pure function of a plan: every isolation option is there,
the environment is exactly the plan's, only the plan's paths are shown (read-only, at their host
paths), folders the bot must pass through are made readable, and root and other users differ
only where they must (setpriv's uid switch; a user namespace)."""

from __future__ import annotations

from referee.sandbox.bwrap import SOCKET_MOUNT, BwrapPlan, bwrap_argv, prlimit_argv, setpriv_argv

PLAN = BwrapPlan(
    bwrap="/usr/bin/bwrap",
    command=("/usr/bin/prlimit", "--nofile=64:64", "--", "/venv/bin/python", "bot.py"),
    cwd="/home/op/bots/a",
    env=(("CASINO_BOT_ADDRESS", "unix:/run/casino/1.sock"), ("HOME", "/tmp"), ("PATH", "/usr/bin")),
    system=(("/usr", None), ("/bin", "usr/bin"), ("/lib64", "usr/lib64")),
    etc=("/etc/ld.so.cache", "/etc/passwd"),
    read_only=("/home/op/bots/a", "/opt/python3.11", "/venv"),
    socket_folder="/tmp/casino-sock-x/bot0",
    tmp_bytes=64 << 20,
    as_root=False,
)


def pairs(argv: list[str], option: str, arity: int = 1) -> list[tuple[str, ...]]:
    """The arguments of every ``option`` in ``argv``."""
    return [tuple(argv[i + 1:i + 1 + arity]) for i, a in enumerate(argv) if a == option]


def before_command(argv: list[str]) -> list[str]:
    return argv[:argv.index("--")]


def test_every_namespace_and_no_network() -> None:
    argv = before_command(bwrap_argv(PLAN))
    for option in ("--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
                   "--die-with-parent", "--new-session"):
        assert option in argv, option
    assert "--share-net" not in argv
    assert pairs(argv, "--cap-drop") == [("ALL",)]
    assert pairs(argv, "--hostname") == [("bot",)]


def test_a_user_namespace_for_other_users_and_setpriv_for_root() -> None:
    user = before_command(bwrap_argv(PLAN))
    assert "--unshare-user" in user and "--disable-userns" in user and "--cap-add" not in user
    root = before_command(bwrap_argv(BwrapPlan(**{**PLAN.__dict__, "as_root": True})))
    assert "--unshare-user" not in root  # a root-made user namespace would map the bot to host root
    assert pairs(root, "--cap-add") == [("CAP_SETUID",), ("CAP_SETGID",), ("CAP_SETPCAP",)]
    assert setpriv_argv("/usr/bin/setpriv", 800123, True) == [
        "/usr/bin/setpriv", "--reuid=800123", "--regid=800123", "--clear-groups", "--bounding-set=-all",
        "--inh-caps=-all", "--no-new-privs", "--pdeathsig=KILL", "--"]
    assert setpriv_argv("/usr/bin/setpriv", 0, False) == [
        "/usr/bin/setpriv", "--no-new-privs", "--pdeathsig=KILL", "--"]


def test_the_environment_is_exactly_the_plans() -> None:
    argv = before_command(bwrap_argv(PLAN))
    assert "--clearenv" in argv
    assert argv.index("--clearenv") < argv.index("--setenv")
    assert pairs(argv, "--setenv", 2) == [("CASINO_BOT_ADDRESS", "unix:/run/casino/1.sock"), ("HOME", "/tmp"),
                                         ("PATH", "/usr/bin")]


def test_only_the_plans_paths_are_shown_read_only_at_their_host_paths() -> None:
    argv = before_command(bwrap_argv(PLAN))
    assert pairs(argv, "--ro-bind", 2) == [
        ("/usr", "/usr"), ("/etc/ld.so.cache", "/etc/ld.so.cache"), ("/etc/passwd", "/etc/passwd"),
        ("/home/op/bots/a", "/home/op/bots/a"), ("/opt/python3.11", "/opt/python3.11"), ("/venv", "/venv")]
    assert pairs(argv, "--symlink", 2) == [("usr/bin", "/bin"), ("usr/lib64", "/lib64")]
    assert pairs(argv, "--bind", 2) == [("/tmp/casino-sock-x/bot0", SOCKET_MOUNT)], "its socket folder, writable"
    assert not [a for a in argv if a in ("--dev-bind", "--bind-try", "--dev-bind-try")]
    assert pairs(argv, "--proc") == [("/proc",)] and pairs(argv, "--dev") == [("/dev",)]


def test_private_bounded_tmpfs() -> None:
    argv = before_command(bwrap_argv(PLAN))
    assert pairs(argv, "--tmpfs") == [("/tmp",), ("/dev/shm",)]
    assert pairs(argv, "--size") == [(str(64 << 20),), (str(64 << 20),)]
    for at in (i for i, a in enumerate(argv) if a == "--tmpfs"):
        assert argv[at - 4:at] == ["--perms", "1777", "--size", str(64 << 20)]


def test_folders_on_the_way_are_made_readable_once() -> None:
    argv = before_command(bwrap_argv(PLAN))
    made = [d for (d,) in pairs(argv, "--dir")]
    assert made == ["/etc", "/home", "/home/op", "/home/op/bots", "/opt", "/run"]
    for at in (i for i, a in enumerate(argv) if a == "--dir"):
        assert argv[at - 2:at] == ["--perms", "0755"]
    for folder in made:  # each before anything is mounted below it
        first_below = min(i for i, a in enumerate(argv) if a.startswith(folder + "/") and argv[i - 1] != "--dir")
        assert argv.index(folder) < first_below


def test_a_folder_below_tmp_is_made_on_the_private_tmp() -> None:
    plan = BwrapPlan(**{**PLAN.__dict__, "read_only": ("/tmp/pytest-1/bots",), "cwd": "/tmp/pytest-1/bots"})
    argv = before_command(bwrap_argv(plan))
    made = [d for (d,) in pairs(argv, "--dir")]
    assert "/tmp/pytest-1" in made and argv.index("--tmpfs") < argv.index("/tmp/pytest-1")


def test_the_working_directory() -> None:
    argv = bwrap_argv(PLAN)
    assert pairs(argv, "--chdir") == [("/home/op/bots/a",)]
    elsewhere = bwrap_argv(BwrapPlan(**{**PLAN.__dict__, "cwd": "/srv/arena"}))
    assert ("/srv/arena",) in pairs(before_command(elsewhere), "--dir"), "an empty folder when not shown"


def test_the_command_comes_last_after_the_separator() -> None:
    argv = bwrap_argv(PLAN)
    assert argv[0] == "/usr/bin/bwrap"
    assert argv[argv.index("--") + 1:] == list(PLAN.command)


def test_prlimit_sets_soft_and_hard_limits() -> None:
    assert prlimit_argv("/usr/bin/prlimit", {"nofile": 64, "core": 0, "nproc": 32}) == [
        "/usr/bin/prlimit", "--core=0:0", "--nofile=64:64", "--nproc=32:32", "--"]


def test_the_system_call_filter_is_read_from_its_descriptor_when_there_is_one() -> None:
    assert "--seccomp" not in bwrap_argv(PLAN)
    argv = before_command(bwrap_argv(BwrapPlan(**{**PLAN.__dict__, "seccomp_fd": 7})))
    assert pairs(argv, "--seccomp") == [("7",)]


def test_its_status_is_written_to_its_descriptor_when_there_is_one() -> None:
    """``--json-status-fd``: how a set-up that failed is told from the bot's own exit (issue 26)."""
    assert "--json-status-fd" not in bwrap_argv(PLAN)
    argv = before_command(bwrap_argv(BwrapPlan(**{**PLAN.__dict__, "status_fd": 9})))
    assert pairs(argv, "--json-status-fd") == [("9",)]
