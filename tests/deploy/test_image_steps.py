"""The image's install steps, run here as the Dockerfile runs them (no Docker engine and no base
image can be had here): its build stage's COPY lines and its RUN of deploy/install-venv.sh and
deploy/install-bots.sh, against scratch folders standing for /src, /opt/arena and /srv/bots; then
the entry point runs the installed (not editable) commands: the schema step, and a real match of
the installed sample bots (Python and Node.js) in the sandbox.

Decision: the default run installs the project with ``--no-deps`` into a virtual environment that
sees this one's packages (a .pth file): the project's own build and install, its package data
(migrations, templates) and its commands are what differ between images, and a full dependency
install takes about 15 s here. The slow tier (``-m slow``) runs the Dockerfile's steps as they
are, dependencies included."""

from __future__ import annotations

import os
import re
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

from tests.deploy.deploy_support import DEPLOY, DOCKERFILE, IMAGE_BOTS, IMAGE_RUNTIMES, IMAGE_VENV
from tests.support import ROOT

INSTALL_TIMEOUT_S = 300
MATCH_TIMEOUT_S = 120
ENTRYPOINT = DEPLOY / "entrypoint.sh"


def _build_stage() -> list[str]:
    """The build stage's instructions, continuation lines joined."""
    text = DOCKERFILE.read_text(encoding="utf-8").replace("\\\n", " ")
    stages = re.split(r"^FROM ", text, flags=re.M)
    build = next(stage for stage in stages if stage.split("\n", 1)[0].rstrip().endswith("AS build"))
    return [line.strip() for line in build.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def _install(root: Path, full: bool) -> tuple[Path, Path]:
    """The build stage's COPY and install RUN into scratch folders under ``root``: the venv and the bots."""
    src, venv, bots = root / "src", root / "opt-arena", root / "srv-bots"
    src.mkdir()
    steps = _build_stage()
    for line in steps:
        if line.startswith("COPY "):
            *sources, dest = line.split()[1:]
            for source in sources:  # each to the same place under WORKDIR /src, as the Dockerfile has them
                assert dest in ("./", source, "deploy/"), line
                target = src / source.rstrip("/")
                if (ROOT / source).is_dir():
                    shutil.copytree(ROOT / source, target, ignore=shutil.ignore_patterns(
                        "__pycache__", "node_modules", ".npm-ci.lock"))
                else:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(ROOT / source, target)
    [run] = [line for line in steps if line.startswith("RUN ") and "install-venv.sh" in line]
    command = run.removeprefix("RUN ").replace(IMAGE_VENV, str(venv)).replace(IMAGE_BOTS, str(bots)) \
        .replace(IMAGE_RUNTIMES, str(root / "srv-runtimes")).replace(" /src", f" {src}")
    env = {**os.environ, "PYTHON": sys.executable}
    if not full:
        # the venv the script makes sees this environment's packages: only the project is installed
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=INSTALL_TIMEOUT_S)
        [site_packages] = list(venv.glob("lib/python*/site-packages"))
        (site_packages / "_deps_of_the_test_env.pth").write_text(
            "\n".join(p for p in site.getsitepackages() if Path(p).is_dir()) + "\n", encoding="utf-8")
        env["PIP_ARGS"] = "--no-deps"
    done = subprocess.run(["sh", "-c", command], cwd=src, env=env, capture_output=True, text=True,
                          timeout=INSTALL_TIMEOUT_S, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return venv, bots


def _entrypoint(venv: Path, *args: str, cwd: Path, extra: dict[str, str] | None = None,
                timeout: float = MATCH_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run(["sh", str(ENTRYPOINT), *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={**env, "ARENA_VENV": str(venv), **(extra or {})}, check=False)


def _check_image(tmp_path: Path, venv: Path, bots: Path) -> None:
    work = tmp_path / "work"  # not the checkout: nothing may come from it
    work.mkdir()
    probe = subprocess.run([str(venv / "bin" / "python"), "-c", "import arena, referee; print(arena.__file__)"],
                           cwd=work, capture_output=True, text=True, timeout=60, check=True)
    assert Path(probe.stdout.strip()).is_relative_to(venv), probe.stdout  # the installed copy, not the checkout
    # the schema step from the installed package (its migrations are package data)
    migrated = _entrypoint(venv, "arena", "migrate", "--db", f"sqlite:///{work / 'arena.db'}", cwd=work)
    assert migrated.returncode == 0, migrated.stderr
    assert migrated.stdout.splitlines()[-1].startswith("schema revision after: ")
    # the installed bots, as the image's tournament file and the Referee name them, in a real match
    runtimes = tmp_path / "srv-runtimes"  # the image's CASINO_RUNTIMES_HOME
    match = _entrypoint(venv, "referee", "match", "--bot", f"{bots}/greedy", "--bot", f"{bots}/node", "--games", "2",
                        "--move-time", "500", "--seed", "3", cwd=work,
                        extra={"CASINO_RUNTIMES_HOME": str(runtimes), "CASINO_BUILD_CACHE": str(work / "builds"),
                               "ARENA_ARCHIVE_CACHE": str(work / "archives")})
    assert match.returncode == 0, match.stdout[-2000:] + match.stderr[-2000:]
    games = [line for line in match.stdout.splitlines() if line.startswith("game ")]
    assert len(games) == 2 and all("forfeit" not in line for line in games), match.stdout
    rows = {line.split()[0]: line.split() for line in match.stdout.splitlines() if line.split()[:1] in (["greedy-bot"], ["node-bot"])}
    assert sorted(rows) == ["greedy-bot", "node-bot"] and all(row[5] == "0" for row in rows.values()), match.stdout
    for name in ("random/bot.toml", "greedy/greedy_bot.py", "lookahead/lookahead_bot.py", "node/bot.js"):
        assert (bots / name).is_file(), name
    assert (runtimes / "node" / "node_modules" / "@grpc" / "grpc-js").is_dir()
    assert (runtimes / "node" / "proto" / "casino" / "v1" / "bot.proto").is_file()


def _need_node() -> None:
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"{' and '.join(missing)} not on PATH: the image's Node.js bot cannot be installed here")


def test_the_dockerfiles_install_steps_make_a_working_image_layout(tmp_path: Path) -> None:
    _need_node()
    venv, bots = _install(tmp_path, full=False)
    _check_image(tmp_path, venv, bots)


@pytest.mark.slow
def test_the_dockerfiles_install_steps_with_every_dependency(tmp_path: Path) -> None:
    _need_node()
    venv, bots = _install(tmp_path, full=True)
    assert not list(venv.glob("lib/python*/site-packages/_deps_of_the_test_env.pth"))
    _check_image(tmp_path, venv, bots)


def test_the_entry_point_runs_only_arena_and_referee(tmp_path: Path) -> None:
    venv = Path(sys.executable).parent.parent  # this environment stands for the image's
    for argv in (["bash"], []):
        done = _entrypoint(venv, *argv, cwd=tmp_path, timeout=30)
        assert done.returncode == 2 and done.stdout == "", done
        assert done.stderr.count("\n") == 1 and done.stderr.startswith("entrypoint: error: "), done.stderr
    # the command it runs gets the arguments as given and PGPASSWORD from PGPASSWORD_FILE (a stand-in
    # `arena` that prints what it got: the entry point is what is tested here)
    fake = tmp_path / "fake-venv"
    (fake / "bin").mkdir(parents=True)
    (fake / "bin" / "arena").write_text('#!/bin/sh\nprintf "%s|" "$@"; echo "PGPASSWORD=$PGPASSWORD"\n', encoding="utf-8")
    (fake / "bin" / "arena").chmod(0o755)
    secret = tmp_path / "pgpassword"
    secret.write_text("s3cret-from-a-file\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PGPASSWORD"}
    ran = subprocess.run(["sh", str(ENTRYPOINT), "arena", "worker", "--name", "a b"], capture_output=True, text=True,
                         timeout=30, check=False, env={**env, "ARENA_VENV": str(fake), "PGPASSWORD_FILE": str(secret)})
    assert ran.returncode == 0 and ran.stdout == "worker|--name|a b|PGPASSWORD=s3cret-from-a-file\n", ran
    missing = _entrypoint(venv, "arena", "--help", cwd=tmp_path, extra={"PGPASSWORD_FILE": str(tmp_path / "none")})
    assert missing.returncode == 2 and "cannot read PGPASSWORD_FILE" in missing.stderr, missing.stderr
