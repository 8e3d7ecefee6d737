"""docs/service.md against the code: its options table is `referee serve`'s options with their
defaults, its refusals are what the command prints, and its TLS walk-through (the openssl
certificate, the token, the server with its own bots, the Python client) runs as written."""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from referee.cli.main import build_parser
from referee.cli.sandbox_args import add_sandbox_args
from referee.service import settings as service
from tests.support import run_referee

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "service.md").read_text(encoding="utf-8")


def serve_parser() -> argparse.ArgumentParser:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["serve"]


def section(heading: str) -> str:
    start = DOC.index(heading)
    end = DOC.find("\n## ", start + len(heading))
    return DOC[start:end if end >= 0 else len(DOC)]


def table(heading: str) -> dict[str, list[str]]:
    """The rows of the first table under ``heading``, by the option in their first cell."""
    rows = {}
    for line in section(heading).splitlines():
        if line.startswith("| `"):
            cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
            rows[re.match(r"`(-[-\w]+)", cells[0]).group(1)] = cells  # type: ignore[union-attr]
    return rows


def blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", DOC, flags=re.DOTALL)


def test_the_options_table_is_the_commands() -> None:
    rows = table("## Options")
    sandbox = argparse.ArgumentParser()
    add_sandbox_args(sandbox)  # documented in docs/sandbox.md, named in a sentence here
    sandbox_options = {a.option_strings[-1] for a in sandbox._actions if a.option_strings}
    options = {action.option_strings[-1]: action for action in serve_parser()._actions
               if action.option_strings and action.dest != "help" and action.option_strings[-1] not in sandbox_options}
    assert all(f"`{name}`" in DOC for name in ("--sandbox", "--memory", "--read-only"))
    assert set(rows) == set(options) - {"--verbose"} | {"-v"}
    for name, action in options.items():
        if name == "--verbose" or action.default in (None, False):
            continue
        default = rows[name][1].strip("`")
        shown = {service.DEFAULT_MAX_RECORD_BYTES: "1G"}.get(action.default, str(action.default))
        assert default == shown, (name, default, action.default)
    limits = table("## Limits")
    assert {name: cells[1] for name, cells in limits.items()} == {
        "--max-matches": str(service.DEFAULT_MAX_MATCHES), "--max-games": str(service.DEFAULT_MAX_GAMES),
        "--max-record-bytes": "1G"}
    assert service.parse_size("1G") == service.DEFAULT_MAX_RECORD_BYTES
    assert f"less than {service.DEFAULT_MIN_FREE_DISK_BYTES} bytes free" in DOC
    assert f"{service.DEFAULT_MIN_FREE_DISK_BYTES >> 20} MiB" in DOC


def test_the_refusals_are_what_serve_prints() -> None:
    console = blocks("console")[0]
    pairs = re.findall(r"^\$ referee (.*)\n(referee: error: .*)$", console, flags=re.MULTILINE)
    assert len(pairs) == 2
    for command, error in pairs:
        done = run_referee(*shlex.split(command), timeout=30)
        assert (done.returncode, done.stderr.strip()) == (2, error)


@pytest.mark.skipif(shutil.which("openssl") is None, reason="the walk-through makes its certificate with openssl")
def test_the_tls_walk_through_runs_as_written(tmp_path: Path) -> None:
    token_block, _, tls_block, _ = (block.replace("\\\n", " ") for block in blocks("sh"))  # continued lines joined
    make_token = token_block.splitlines()[0]
    make_cert, serve = tls_block.splitlines()[:2]
    assert make_token.startswith("python3 -c ") and make_cert.startswith("openssl req ") and "--tls-cert" in serve
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    python = shlex.quote(sys.executable)
    subprocess.run(make_token.replace("python3", python, 1), shell=True, cwd=tmp_path, check=True, timeout=30)
    subprocess.run(make_cert, shell=True, cwd=tmp_path, check=True, timeout=60, capture_output=True)
    args = shlex.split(serve)
    assert args[:4] == ["referee", "serve", "--listen", "127.0.0.1:50051"]
    args = [a.replace(".venv/bin/python", python).replace("sample_bots/", f"{ROOT}/sample_bots/") for a in args[4:]]
    # on a free port: "127.0.0.1:0" in the start-up line, the port after it
    documented = re.search(r"# (referee listening on .*)\n", section("## TLS")).group(1)  # type: ignore[union-attr]
    pattern = (re.escape(documented.replace("127.0.0.1:50051", "@ADDR@").replace("(port 50051;", "(port @PORT@;")
                         .replace("/tmp/casino-records-…", "@DIR@"))
               .replace("@ADDR@", r"127\.0\.0\.1:0").replace("@PORT@", r"(\d+)").replace("@DIR@", r"\S+"))
    server = subprocess.Popen([sys.executable, "-m", "referee.cli", "serve", "--listen", "127.0.0.1:0", *args],
                              cwd=tmp_path, env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        line = server.stdout.readline()  # printed at once, or EOF when the server exits
        started = re.fullmatch(pattern, line.rstrip("\n"))
        assert started, (pattern, line)
        client = blocks("python")[0].replace("localhost:50051", f"localhost:{started.group(1)}")
        done = subprocess.run([sys.executable, "-c", client], cwd=tmp_path, env=env, capture_output=True, text=True,
                              check=False, timeout=120)
    finally:
        server.send_signal(signal.SIGTERM)
        code = server.wait(timeout=30)
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(r"wins: \[\d, \d\] games: \['\w{12}-g1', '\w{12}-g2'\]\n", done.stdout), done.stdout
    assert code == 0
