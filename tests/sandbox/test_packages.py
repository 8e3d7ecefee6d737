"""Bot packages (docs/packages.md): bot.toml read and refused in one line, builds run once per
package in the real sandbox (a dependency installed from a wheel folder the test makes, the C++
and Go kits built from source), builds that fail, run too long, reach for the network, grow too
large or fork-bomb, each a clear verdict with nothing left running, and the same package through
`referee check`, `referee match`, `arena compare` and a tournament."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from referee.packages.manifest import PackageError, parse_manifest
from referee.sandbox.machine import probe
from tests.arena_support import run_arena, write_tournament
from tests.conftest import ROOT
from tests.support import run_referee

needs_bwrap = pytest.mark.skipif(probe().bwrap_problem is not None,
                                 reason=f"bubblewrap cannot run here: {probe().bwrap_problem}")
CLEAN = "clean: every answer was a legal move in time"
CHECK_TIMEOUT_S = 600  # a first build on 2 busy cores, then the games


@pytest.fixture
def caches(tmp_path: Path) -> dict[str, str]:
    """This test's own unpack and build caches (the environment of the commands it runs)."""
    return {"ARENA_ARCHIVE_CACHE": str(tmp_path / "archives"), "CASINO_BUILD_CACHE": str(tmp_path / "builds")}


def package(folder: Path, manifest: str, files: dict[str, str | bytes] | None = None) -> Path:
    """A package folder: bot.toml and ``files`` (text or bytes)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "bot.toml").write_text(manifest, encoding="utf-8")
    for name, content in (files or {}).items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return folder


def random_bot(folder: Path, build: str | None = None) -> Path:
    """The sample random bot as a package, with ``build`` as its build step."""
    toml = 'runtime = "python"\nrun = "python random_bot.py"\n' + (f"build = {json.dumps(build)}\n" if build else "")
    return package(folder, toml, {"random_bot.py": (ROOT / "sample_bots" / "random" / "random_bot.py").read_text()})


def check(target: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return run_referee("check", str(target), "--games", "1", *args, timeout=CHECK_TIMEOUT_S, env=env)


def processes_with(token: str) -> list[str]:
    """Command lines of live processes holding ``token`` (a build's marker)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if token in line and "pytest" not in line:
                found.append(line)
    return found


# --- bot.toml ---------------------------------------------------------------------------------------


def test_bot_toml_is_checked_key_by_key_in_one_line_each() -> None:
    manifest = parse_manifest('runtime = "python"\nrun = "python bot.py --level 3"\nbuild = "make"\n'
                              'env = { LEVEL = "3" }\n')
    assert (manifest.runtime, manifest.run, manifest.build, manifest.env) == (
        "python", ("python", "bot.py", "--level", "3"), "make", (("LEVEL", "3"),))
    for text, said in [
        ('runtime = "python"\nrn = "python bot.py"\n', 'unknown key "rn" (did you mean "run"?)'),
        ('run = "python bot.py"\n', "runtime is missing"),
        ('runtime = "python"\n', "run is missing"),
        ('runtime = "python"\nrun = "python bot.py"\nformat = 2\n', "format must be 1"),
        ('runtime = "py thon"\nrun = "x"\n', "must be a runtime's name"),
        ('runtime = "python"\nrun = "x"\nenv = { PATH = "/x" }\n', 'env "PATH" is not a variable a package may set'),
        ('runtime = "python"\nrun = "x \'unclosed"\n', "run is not a command line"),
        ("runtime = ", "bot.toml is not TOML"),
    ]:
        with pytest.raises(PackageError) as caught:
            parse_manifest(text)
        assert said in str(caught.value) and "\n" not in str(caught.value), (text, str(caught.value))


def test_a_folder_that_is_not_a_package_or_names_an_unknown_runtime_is_refused(tmp_path: Path,
                                                                                caches: dict[str, str]) -> None:
    unknown = package(tmp_path / "cobol", 'runtime = "cobol"\nrun = "./bot"\n')
    done = check(unknown, env=caches)
    assert done.returncode == 2 and "runtime 'cobol' is not offered here" in done.stderr, done.stderr
    missing = package(tmp_path / "missing", 'runtime = "python"\nrun = "./nowhere"\n')
    done = check(missing, env=caches)
    assert done.returncode == 2 and "run's program './nowhere' is not an executable file" in done.stderr


# --- builds ------------------------------------------------------------------------------------------


def make_wheel(folder: Path) -> Path:
    """A wheel of a tiny package ``tinydep`` (ANSWER = 0), built here with pip: the test's own
    package source for a build that has no network."""
    source = folder / "tinydep-src"
    (source / "tinydep").mkdir(parents=True)
    (source / "tinydep" / "__init__.py").write_text("ANSWER = 0\n")
    (source / "pyproject.toml").write_text('[project]\nname = "tinydep"\nversion = "1.0"\n[build-system]\n'
                                           'requires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n')
    wheels = folder / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(wheels),
                    "."], cwd=source, check=True, timeout=300, capture_output=True)
    return wheels


@needs_bwrap
def test_a_python_package_installs_its_dependency_in_its_build_once(tmp_path: Path, caches: dict[str, str]) -> None:
    bot = package(tmp_path / "dep_bot", 'runtime = "python"\nrun = "python bot.py"\n'
                  'build = "python -m pip install --no-index --find-links wheels -r requirements.txt --target deps"\n',
                  {"requirements.txt": "tinydep\n", "bot.py": (
                      "import tinydep\nfrom casino_bot import CasinoBot, run\n\n\nclass Dep(CasinoBot):\n"
                      "    name = 'dep-bot'\n\n    def choose(self, turn):\n        return tinydep.ANSWER\n\n\n"
                      "if __name__ == '__main__':\n    run(Dep())\n")})
    shutil.copytree(make_wheel(tmp_path), bot / "wheels")
    first = check(bot, env=caches)
    assert first.returncode == 0 and CLEAN in first.stdout, first.stdout[-3000:] + first.stderr[-2000:]
    assert "runtime python, built in" in first.stdout
    second = check(bot, env=caches)
    assert second.returncode == 0 and "runtime python, found built" in second.stdout, second.stdout[:500]
    assert not (bot / "deps").exists(), "the package itself is never changed: its build ran on a copy"


@needs_bwrap
@pytest.mark.parametrize("case", ["fails", "too-long", "network", "too-large", "fork-bomb"])
def test_a_bad_build_is_a_verdict_with_its_log_and_leaves_nothing(tmp_path: Path, caches: dict[str, str],
                                                                 case: str) -> None:
    token = f"build-{uuid.uuid4().hex}"  # in every build process's command line: what must not be left
    python = 'python -c "{}" ' + token
    builds = {
        "fails": python.format("import sys; print('compiling...'); sys.exit(7)"),
        "too-long": python.format("import time; time.sleep(600)"),
        "network": python.format("import socket; socket.create_connection(('1.1.1.1', 80), 5)"),
        "too-large": python.format("open('big', 'wb').write(bytes(3 << 20))"),
        "fork-bomb": python.format("import os, time; [os.fork() for _ in range(12)]; time.sleep(600)"),
    }
    def limits_file(name: str, build_time_s: int) -> Path:
        path = tmp_path / name
        path.write_text(f'name = "limits"\n[sandbox]\nbuild_time_s = {build_time_s}\nbuild_size_mib = 1\n'
                        'build_processes = 64\n[[bots]]\nname = "a"\ncommand = "true"\n[[bots]]\nname = "b"\n'
                        'command = "true"\n', encoding="utf-8")
        return path

    # the build that never ends waits out its limit: a short one (the others must finish within theirs)
    limits = limits_file("limits.toml", 20)
    bot = random_bot(tmp_path / "bot", build=builds[case])
    done = check(bot, "--sandbox-from", str(limits_file("short.toml", 3) if case == "too-long" else limits), env=caches)
    said = {"fails": "exited with status 7", "too-long": "ran longer than 3 s (build_time_s)",
            "network": "exited with status 1", "too-large": "1 MiB", "fork-bomb": "it had reached its process limit, 64"}
    assert done.returncode == 1 and "NOT CLEAN: build failed: " in done.stdout, done.stdout[-3000:] + done.stderr
    assert said[case] in done.stdout, done.stdout[-2000:]
    if case == "fails":
        assert "| compiling..." in done.stdout, "the end of its log, for its owner"
    if case == "network":
        assert "OSError" in done.stdout or "unreachable" in done.stdout, done.stdout[-2000:]
    deadline = time.monotonic() + 10
    while processes_with(token) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_with(token) == [], "nothing of the build is left running"
    assert not [p for p in Path(caches["CASINO_BUILD_CACHE"]).iterdir() if p.is_dir()], "and no copy is kept"
    fine = check(random_bot(tmp_path / "fine", build="mkdir -p out"), "--sandbox-from", str(limits), env=caches)
    assert fine.returncode == 0 and CLEAN in fine.stdout, "the next build is fine"


@needs_bwrap
@pytest.mark.parametrize("kit, tools", [("cpp", ("g++", "make", "pkg-config", "grpc_cpp_plugin")),
                                        ("go", ("go", "make", "protoc-gen-go", "protoc-gen-go-grpc"))])
def test_a_compiled_kit_builds_from_source_in_its_build_step(tmp_path: Path, caches: dict[str, str], kit: str,
                                                            tools: tuple[str, ...]) -> None:
    missing = [tool for tool in tools if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed (scripts/setup-system.sh installs them)")
    done = check(ROOT / "sample_bots" / kit, "--players", "3", env=caches)
    assert done.returncode == 0 and CLEAN in done.stdout, done.stdout[-3000:] + done.stderr[-2000:]
    assert f"package {ROOT / 'sample_bots' / kit}: runtime native, built in" in done.stdout
    assert not (ROOT / "sample_bots" / kit / "bot").exists(), "built on a copy, never in the checkout"


# --- the same package everywhere ------------------------------------------------------------------------


@needs_bwrap
def test_the_same_package_plays_through_match_compare_and_a_tournament(tmp_path: Path, caches: dict[str, str],
                                                                        node_bot: str) -> None:
    bot = random_bot(tmp_path / "mine", build="mkdir -p built && echo ok > built/marker")
    env = {**os.environ, **caches}
    match = run_referee("match", "--bot", str(bot), "--bot", node_bot, "--games", "2", "--move-time", "2000",
                        timeout=CHECK_TIMEOUT_S, env=caches)
    assert match.returncode == 0 and "built in" in match.stdout and "(forfeit)" not in match.stdout, match.stdout
    compare = subprocess.run([sys.executable, "-m", "arena.cli", "compare", "--candidate", str(bot), "--baseline",
                              str(ROOT / "sample_bots" / "greedy"), "--units", "4", "--move-time", "2000"],
                             capture_output=True, text=True, timeout=CHECK_TIMEOUT_S, env=env, check=False, cwd=tmp_path)
    assert compare.returncode in (0, 1, 3) and "pairs" in compare.stdout, compare.stdout[-2000:] + compare.stderr
    write_tournament(tmp_path / "cup.toml", {"name": "pcup", "games_per_pairing": 2},
                     [{"name": "mine", "package": str(bot)}, {"name": "greedy", "package": str(ROOT / "sample_bots" /
                                                                                               "greedy")}],
                     {"move_ms": 2000, "startup_ms": 20000})
    run = run_arena("run", str(tmp_path / "cup.toml"), timeout=CHECK_TIMEOUT_S, env=caches)
    assert run.returncode == 0 and "standings after 2 games" in run.stdout, run.stdout[-2000:] + run.stderr
    assert "startup" not in run.stdout
    builds = [p for p in Path(caches["CASINO_BUILD_CACHE"]).iterdir() if p.is_dir()]
    assert len(builds) == 1, "one build for match, compare and the tournament"


def test_a_tournament_whose_bot_never_starts_exits_3_naming_it(tmp_path: Path, caches: dict[str, str]) -> None:
    broken = package(tmp_path / "broken", 'runtime = "python"\nrun = "python bot.py"\n',
                     {"bot.py": "raise SystemExit('no such luck')\n"})
    write_tournament(tmp_path / "cup.toml", {"name": "bcup", "games_per_pairing": 2},
                     [{"name": "broken", "package": str(broken)},
                      {"name": "random", "package": str(ROOT / "sample_bots" / "random")}],
                     {"move_ms": 2000, "startup_ms": 20000})
    run = run_arena("run", str(tmp_path / "cup.toml"), timeout=CHECK_TIMEOUT_S, env=caches)
    assert run.returncode == 3, run.stdout[-2000:] + run.stderr
    assert "arena: error: bot broken could not be started in any of its games: the bot process exited with " \
           "status 1 before it was ready" in run.stderr.splitlines(), run.stderr


def test_the_demo_on_a_fresh_machine_says_in_one_line_why_its_bots_cannot_start(tmp_path: Path) -> None:
    """No bubblewrap (hidden from the sandbox's tools), the interpreter under a folder a bot's uid
    may not enter (root's home, mode 0700, where pyenv puts it): one line, exit 2, no game."""
    interpreter = Path(os.path.realpath(sys.executable))
    blocked = next((p for p in interpreter.parents if p != Path("/") and not os.stat(p).st_mode & 0o001), None)
    if os.geteuid() != 0 or blocked is None:
        pytest.skip("needs root with an interpreter under a folder others may not pass (a fresh machine's)")
    tools = tmp_path / "tools"
    tools.mkdir()
    for tool in ("setpriv", "prlimit", "sh"):
        found = shutil.which(tool)
        assert found is not None
        (tools / tool).symlink_to(found)
    done = subprocess.run([sys.executable, "-m", "arena.cli", "demo", "--dir", str(tmp_path / "demo")],
                          capture_output=True, text=True, timeout=300, check=False, cwd=tmp_path,
                          env={**os.environ, "CASINO_SANDBOX_TOOLS_PATH": str(tools), "PYTHONPATH": str(ROOT)})
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("arena: error:")]
    assert len(errors) == 1 and f"cannot pass through {blocked}" in errors[0], done.stderr
    assert "install bubblewrap" in errors[0] and "games/s" not in done.stdout, "said before any game"


def test_queue_workers_each_build_a_tournaments_package_once(tmp_path: Path, pg_url: str) -> None:
    """`arena run --queue` with a package that has a build step: two workers (each a machine of
    its own: its own unpack and build caches) each build it once and play every game."""
    from arena.config import load_config
    from arena.store.store import Store
    from tests.arena.queue_support import run_queued, start_worker, stop

    bot = random_bot(tmp_path / "mine", build="mkdir -p built && echo ok > built/marker")
    path = write_tournament(tmp_path / "cup.toml", {"name": "qcup", "games_per_pairing": 4, "database": pg_url},
                            [{"name": "mine", "package": str(bot)},
                             {"name": "greedy", "package": str(ROOT / "sample_bots" / "greedy")}],
                            {"move_ms": 2000, "startup_ms": 20000})
    queued = run_queued(path, "--detach")
    assert queued.returncode == 0, queued.stdout + queued.stderr
    procs = []
    for n in range(2):
        machine = {"ARENA_ARCHIVE_CACHE": str(tmp_path / f"m{n}" / "archives"),
                   "CASINO_BUILD_CACHE": str(tmp_path / f"m{n}" / "builds")}
        os.environ.update(machine)  # start_worker passes this environment on
        try:
            procs.append(start_worker(pg_url, tmp_path / f"worker{n}.log"))
        finally:
            for key in machine:
                os.environ.pop(key, None)
    try:
        followed = run_queued(path)
        assert followed.returncode == 0, followed.stdout[-2000:] + followed.stderr
    finally:
        stop(procs)
    store = Store(load_config(path).database, read_only=True)
    try:
        tid = store.tournament_id("qcup")
        assert tid is not None and store.counts(tid)["done"] == 4
        assert not [g for g in store.games(tid) if (g.result or {}).get("failures")], "no one failed"
    finally:
        store.close()
    played = [n for n in range(2) if (tmp_path / f"m{n}" / "builds").is_dir()]
    assert played, "a worker built it"
    for n in played:
        assert len([p for p in (tmp_path / f"m{n}" / "builds").iterdir() if p.is_dir()]) == 1, "once on each"
