"""The SDK is a package of its own: ``sample_bots/python`` (its pyproject.toml and ``casino_bot/``
alone, copied out of the repository) installs as the distribution ``casino-bot``, and a bot file
outside the repository that imports it plays a real game against the built-in bot from that copy."""

from __future__ import annotations

import importlib.metadata
import json
import os
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

from referee.sandbox.settings import PASS_ENV_VARIABLE
from tests.conftest import ROOMY_TIME, builtin_bot_command
from tests.support import ROOT, run_referee

SDK = ROOT / "sample_bots" / "python"
BOT = '''\
import sys

import casino_bot
from casino_bot import CasinoBot, run


class FirstMove(CasinoBot):
    name = "first-move"
    threaded = False

    def choose(self, turn):
        return 0


if __name__ == "__main__":
    print(f"casino_bot from {casino_bot.__file__}", file=sys.stderr)
    run(FirstMove())
'''


def test_the_sdk_installs_and_a_bot_outside_the_repository_plays_from_it(tmp_path: Path) -> None:
    source, site, bots = tmp_path / "casino-bot", tmp_path / "site", tmp_path / "bots"
    shutil.copytree(SDK / "casino_bot", source / "casino_bot", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(SDK / "pyproject.toml", source)
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-index",
         "--target", str(site), str(source)],
        check=False, capture_output=True, text=True, timeout=120,
    )
    assert installed.returncode == 0, installed.stderr

    (dist,) = importlib.metadata.distributions(path=[str(site)])
    assert (dist.metadata["Name"], dist.version) == ("casino-bot", "0.1.0")
    assert sorted(p.name for p in site.iterdir() if not p.name.endswith(".dist-info")) == ["casino_bot"]
    every = list(map(Requirement, dist.requires or []))
    requires = {r.name: r for r in every if r.marker is None}  # the extras' requirements have markers
    root = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    research = {(r.name, r.specifier) for r in every if r.marker is not None and r.marker.evaluate({"extra": "research"})}
    assert research == {(r.name, r.specifier) for r in map(Requirement, root["optional-dependencies"]["research"])}
    same_as_root = {r.name: r for r in map(Requirement, root["dependencies"]) if r.name.startswith(("grpc", "proto"))}
    assert set(requires) == {root["name"], *same_as_root}
    assert all(requires[name].specifier == r.specifier for name, r in same_as_root.items())

    bots.mkdir()
    (bots / "first_bot.py").write_text(BOT, encoding="utf-8")
    records, logs = tmp_path / "records", tmp_path / "logs"
    done = run_referee(
        # the sandbox gives a bot a clean environment: PYTHONPATH is passed on by name, and the
        # installed SDK is a read-only path it may see besides its own folder (where it is started)
        "match", "--bot", shlex.join([sys.executable, "first_bot.py"]),
        "--bot", builtin_bot_command(2), "--read-only", str(site),
        "--games", "1", "--seed", "3", "--move-time", str(ROOMY_TIME.move_time_ms), "--records", str(records),
        "--logs", str(logs),
        env={"PYTHONPATH": f"{site}:{ROOT}", PASS_ENV_VARIABLE: f"{os.environ.get(PASS_ENV_VARIABLE, '')},PYTHONPATH"},
        cwd=bots,
    )
    assert done.returncode == 0, done.stderr
    (record_file,) = records.glob("*.json")
    record = json.loads(record_file.read_text(encoding="utf-8"))
    assert record["failures"] == [] and record["result"]["reason"] in ("target_reached", "condition_met", "max_deals")
    bot_log = "".join(p.read_text(encoding="utf-8") for p in logs.rglob("*") if p.is_file())
    assert f"casino_bot from {site / 'casino_bot' / '__init__.py'}" in bot_log
    assert "first-move 0.1.0 serving on" in bot_log
