"""Bot packages, the acceptance items of issues 24 and 25 that test_packages.py does not cover:
`referee runtimes` (text and JSON, with a tournament file's runtime), an operator's runtime used
by a package in a real `arena run`, `arena bots add PACKAGE` then a ladder round and `arena
gauntlet --opponent PACKAGE`, two `referee check`s building one package at once, a Node.js
package with a build step, and a Node.js bot whose choose() throws. Real processes, the real
sandbox; the helpers are test_packages.py's."""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from referee.packages.runtimes import python_runtime
from referee.sandbox.view import DEFAULT_PATH
from tests.arena_support import run_arena, write_tournament
from tests.conftest import ROOT
from tests.sandbox.test_packages import caches  # noqa: F401  (a fixture)
from tests.sandbox.test_packages import CHECK_TIMEOUT_S, CLEAN, check, needs_bwrap, package, random_bot
from tests.support import arena_here, run_referee

RANDOM_KIT = ROOT / "sample_bots" / "random"
GREEDY_KIT = ROOT / "sample_bots" / "greedy"


def operator_runtime_toml(lib: Path, mark: str) -> str:
    """A tournament file's ``[runtimes.python-op]``: the python runtime's folders and PATH, plus
    ``lib`` (a folder of the operator's modules) on PYTHONPATH and a variable of its own."""
    base = python_runtime()
    return (f"[runtimes.python-op]\ndescription = \"the operator's Python with opmod\"\n"
            f"folders = {json.dumps([*base.folders, str(lib)])}\npath = {json.dumps(list(base.path))}\n"
            f"env = {{ PYTHONPATH = {json.dumps(f'{lib}:deps')}, OP_MARK = {json.dumps(mark)} }}\n"
            f"offers = [\"opmod 1.0\"]\n")


# --- a. referee runtimes -------------------------------------------------------------------------------


def test_referee_runtimes_lists_each_runtime_with_its_versions_in_text_and_json(tmp_path: Path) -> None:
    """python, node and native with what they offer here (the interpreter's and gRPC's versions,
    Node.js's, the C++ compiler's), the same in JSON as in text; a tournament file's runtime added
    with --sandbox-from (and only then)."""
    plain = run_referee("runtimes", "--format", "json")
    assert plain.returncode == 0, plain.stderr
    assert [r["name"] for r in json.loads(plain.stdout)["runtimes"]] == ["python", "node", "native"]
    lib = tmp_path / "oplib"
    lib.mkdir()
    cup = tmp_path / "cup.toml"
    cup.write_text('name = "cup"\n' + operator_runtime_toml(lib, "m1"), encoding="utf-8")
    text, as_json = run_referee("runtimes", "--sandbox-from", str(cup)), \
        run_referee("runtimes", "--sandbox-from", str(cup), "--format", "json")
    assert text.returncode == 0 and as_json.returncode == 0, text.stderr + as_json.stderr
    listed = {r["name"]: r for r in json.loads(as_json.stdout)["runtimes"]}
    assert list(listed) == ["python", "node", "native", "python-op"]
    python_offers = [f"Python {platform.python_version()}", f"grpcio {importlib.metadata.version('grpcio')}",
                     f"protobuf {importlib.metadata.version('protobuf')}"]
    expected = {"python": python_offers, "python-op": ["opmod 1.0"]}
    if (node := shutil.which("node", path=DEFAULT_PATH)) is not None:  # where the runtimes probe
        version = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
        expected["node"] = [f"Node.js {version}", "@grpc/grpc-js ", "@grpc/proto-loader "]
    if shutil.which("g++", path=DEFAULT_PATH) is not None:
        expected["native"] = ["g++ "]
    lines = text.stdout.splitlines()
    for name, wanted in expected.items():
        offers = listed[name]["offers"]
        assert all(any(o.startswith(w) for o in offers) for w in wanted), (name, offers, wanted)
        first = next(i for i, line in enumerate(lines) if line.startswith(f"{name}: "))
        assert lines[first + 1] == f"  offers: {', '.join(offers)}", "the text says what the JSON says"
    mine = listed["python-op"]
    assert mine["offers"] == ["opmod 1.0"] and str(lib) in mine["folders"] and mine["problem"] is None
    assert mine["env"] == {"OP_MARK": "m1", "PYTHONPATH": f"{lib}:deps"}
    assert "python-op: the operator's Python with opmod\n  offers: opmod 1.0\n" in text.stdout


# --- b. an operator's runtime in a real tournament ---------------------------------------------------------


OP_BOT = '''import os, sys
import opmod  # only in the operator's runtime's folder
from casino_bot import CasinoBot, run


class Op(CasinoBot):
    name = "op-bot"

    def choose(self, turn):
        return 0


if __name__ == "__main__":
    print(f"opmod says {opmod.GREETING}, OP_MARK={os.environ.get('OP_MARK')}", file=sys.stderr, flush=True)
    run(Op())
'''


@needs_bwrap
def test_a_package_naming_an_operators_runtime_plays_with_its_folders_and_env(tmp_path: Path,
                                                                             caches: dict[str, str]) -> None:
    lib = tmp_path / "oplib"
    lib.mkdir()
    (lib / "opmod.py").write_text("GREETING = 'hello from the operator'\n", encoding="utf-8")
    bot = package(tmp_path / "op", 'runtime = "python-op"\nrun = "python op_bot.py"\n', {"op_bot.py": OP_BOT})
    path = write_tournament(tmp_path / "cup.toml", {"name": "opcup", "games_per_pairing": 2},
                            [{"name": "op", "package": str(bot)}, {"name": "random", "package": str(RANDOM_KIT)}],
                            {"move_ms": 2000, "startup_ms": 20000})
    path.write_text(path.read_text(encoding="utf-8") + "\n" + operator_runtime_toml(lib, "op-42"), encoding="utf-8")
    run = run_arena("run", str(path), timeout=CHECK_TIMEOUT_S, env=caches)
    assert run.returncode == 0 and "standings after 2 games" in run.stdout, run.stdout[-2000:] + run.stderr
    logs = "".join(p.read_text(errors="replace") for p in (tmp_path / "cup-logs").glob("op-*.log"))
    assert "opmod says hello from the operator, OP_MARK=op-42" in logs, logs[-2000:]
    games = arena_here("games", str(path), "--bot", "op", "--failed")
    assert games.returncode == 0 and "no games" in games.stdout, games.stdout


# --- c. arena bots add PACKAGE, arena gauntlet --opponent PACKAGE ----------------------------------------------


@needs_bwrap
def test_a_package_added_with_bots_add_plays_the_ladders_next_round(tmp_path: Path, caches: dict[str, str]) -> None:
    mine = random_bot(tmp_path / "mine", build="mkdir -p built")
    path = write_tournament(tmp_path / "ladder.toml", {"name": "lad", "seed": 5},
                            [{"name": "random", "package": str(RANDOM_KIT)},
                             {"name": "greedy", "package": str(GREEDY_KIT)}],
                            {"move_ms": 2000, "startup_ms": 20000},
                            ladder={"interval": "1h", "pairings_per_bot": 1, "sets_per_pairing": 1})
    added = run_arena("bots", "add", "mine", str(mine), "-f", str(path), env=caches)
    assert added.returncode == 0 and added.stdout.startswith("added mine: package"), added.stdout + added.stderr
    served = run_arena("serve", str(path), "--rounds", "1", timeout=CHECK_TIMEOUT_S, env=caches)
    assert served.returncode == 0 and "round 1: " in served.stdout, served.stdout[-2000:] + served.stderr
    games = arena_here("games", str(path), "--bot", "mine")
    rows = [line.split() for line in games.stdout.splitlines()[1:]]
    assert games.returncode == 0 and rows and all("mine" in row and row[6] == "done" for row in rows), games.stdout
    failed = arena_here("games", str(path), "--bot", "mine", "--failed")
    assert failed.stdout == "no games\n", failed.stdout
    assert [p for p in Path(caches["CASINO_BUILD_CACHE"]).iterdir() if p.is_dir()], "its build step ran"


@needs_bwrap
def test_a_gauntlet_against_a_package_opponent_reaches_a_verdict(tmp_path: Path, caches: dict[str, str]) -> None:
    opponent = random_bot(tmp_path / "rnd")
    report = tmp_path / "g.json"
    done = run_arena("gauntlet", "--candidate", str(GREEDY_KIT), "--opponent", f"rnd={opponent}", "--units", "4",
                     "--move-time", "2000", "--seed", "3", "--json", str(report), timeout=CHECK_TIMEOUT_S, env=caches,
                     cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr
    (row,) = json.loads(report.read_text())["opponents"]
    assert row["opponent"] == "rnd" and row["games"] == 4 and row["failures"] == [], row
    assert row["wins"] + row["draws"] + row["losses"] == 4 and "ci" in row["statistics"]


# --- d. one package built by two processes at once ------------------------------------------------------------


@needs_bwrap
def test_two_checks_building_one_package_at_once_build_it_once(tmp_path: Path, caches: dict[str, str]) -> None:
    """Two `referee check`s started together, one empty build cache, a build of about 2 s: one
    builds it, the other waits on the lock and finds it built; both clean; one build kept."""
    bot = random_bot(tmp_path / "slow", build="sleep 2 && echo built >> count")
    argv = [sys.executable, "-m", "referee.cli", "check", str(bot), "--games", "1"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), **caches}
    procs = [subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = []
    for proc in procs:
        try:
            outs.append(proc.communicate(timeout=CHECK_TIMEOUT_S))
        finally:
            proc.kill()
    for (out, err), proc in zip(outs, procs):
        assert proc.returncode == 0 and CLEAN in out, out[-2000:] + err[-2000:]
    said = sorted("found built" if "runtime python, found built" in out else
                  "built" if re.search(r"runtime python, built in [\d.]+ s", out) else out for out, _ in outs)
    assert said == ["built", "found built"], said
    root = Path(caches["CASINO_BUILD_CACHE"])
    (kept,) = [p for p in root.iterdir() if p.is_dir()]  # no half-built copy left either
    assert (kept / "count").read_text() == "built\n", "the build ran once in the copy that was kept"


# --- e, g. Node.js packages -----------------------------------------------------------------------------------------


def node_kit(folder: Path, node_bot: str) -> Path:
    """A copy of the sample Node.js kit (bot.js, proto/, bot.toml)."""
    shutil.copytree(node_bot, folder)
    return folder


@needs_bwrap
def test_a_node_package_with_a_build_step_passes_the_check(tmp_path: Path, caches: dict[str, str],
                                                           node_bot: str) -> None:
    """Its build makes the program it runs (dist/bot.js): without the build there is no bot."""
    bot = node_kit(tmp_path / "node", node_bot)
    (bot / "bot.toml").write_text('runtime = "node"\nrun = "node dist/bot.js"\n'
                                  'build = "mkdir -p dist && cp bot.js dist/bot.js && cp -r proto dist/proto"\n')
    done = check(bot, env=caches)
    assert done.returncode == 0 and CLEAN in done.stdout, done.stdout[-3000:] + done.stderr[-2000:]
    assert f"package {bot}: runtime node, built in" in done.stdout
    assert not (bot / "dist").exists(), "built on a copy"


@needs_bwrap
def test_a_node_bot_whose_choose_throws_is_not_clean_and_the_check_names_the_error(
        tmp_path: Path, caches: dict[str, str], node_bot: str) -> None:
    bot = node_kit(tmp_path / "node", node_bot)
    source = (bot / "bot.js").read_text(encoding="utf-8")
    head = "function choose(turn) {\n"
    assert source.count(head) == 1
    source = source.replace(head, head + "  throw new TypeError('no strategy yet');\n")
    (bot / "bot.js").write_text(source, encoding="utf-8")
    line = source.splitlines().index("  throw new TypeError('no strategy yet');") + 1
    done = check(bot, env=caches)
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr
    said = f"bot error: TypeError: no strategy yet (bot.js:{line})"
    assert "NOT CLEAN: " in done.stdout and said in done.stdout, done.stdout[-2000:]
