"""`arena remote challenge` (a real process, the participant's client) against a real `arena web
--submit` on loopback, decided both ways by a real `arena serve --rounds 1` (a process, the sample
bots over gRPC) that plays the ladder's round and then the challenges while the clients wait:
alice's greedy v2 against the seeded random bot is better (exit status 0, the verdict's line),
her random v1 against her v2 is not better (exit status 1, the challenge's JSON with its URL); a
challenge of a bot the ladder does not have is refused in one line, exit status 2."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from arena.config import load_config
from tests.support import ROOT, arena_here, assert_usage_error, run_arena
from tests.web.browser_support import WebServer, serve
from tests.web.test_web_browser_challenge import alice_ladder

PAIRS = 10  # the not-better challenge's duplicate pairs: random's interval ends far below upper (3) at seed 2
SERVE_WAIT_S = 180  # the round's 2 games and the challenges' 20 to 32 each on a loaded machine; bounded
CLIENT_WAIT_S = SERVE_WAIT_S + 60  # the clients' --timeout: they wait through the whole serve run
START_WAIT_S = 30  # a client's POST, from a new interpreter


@pytest.fixture(scope="module")
def remote_challenge_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[WebServer, Path, str]]:
    """`arena web --submit ladder` over alice_ladder: (server, the ladder's file, alice's token)."""
    folder = tmp_path_factory.mktemp("remote-challenge")
    path, token = alice_ladder(folder)
    with serve(load_config(path).database, folder, "--submit", "ladder") as server:
        yield server, path, token


@contextmanager
def clients() -> Iterator[list[subprocess.Popen[str]]]:
    """Where the test starts its clients: any still running at the end (the test failed) is killed."""
    started: list[subprocess.Popen[str]] = []
    try:
        yield started
    finally:
        for client in started:
            if client.poll() is None:
                client.kill()
            client.communicate(timeout=10)


def challenge_client(started: list[subprocess.Popen[str]], server: WebServer, token: str,
                     *args: str) -> subprocess.Popen[str]:
    """`arena remote challenge ARGS` started as a process; the server and token in its environment, as
    a participant keeps the token out of `ps`."""
    client = subprocess.Popen([sys.executable, "-m", "arena.cli", "remote", "challenge", "--tournament", "ladder",
                               *args, "--timeout", str(CLIENT_WAIT_S), "--poll", "0.5"],
                              cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env={**os.environ, "PYTHONPATH": str(ROOT), "ARENA_SERVER": server.base,
                                              "ARENA_TOKEN": token})
    started.append(client)
    return client


def ended(client: subprocess.Popen[str]) -> subprocess.CompletedProcess[str]:
    """The client's exit status and output; bounded (it gives up by itself at its --timeout)."""
    out, err = client.communicate(timeout=CLIENT_WAIT_S + 30)
    return subprocess.CompletedProcess(client.args, client.returncode, out, err)


def page_of(server: WebServer, cid: int) -> str:
    return server.url(f"/t/ladder/challenges/{cid}")


def wait_started(server: WebServer, cid: int, client: subprocess.Popen[str]) -> None:
    """Until challenge ``cid`` exists on the server (the client's POST was answered); bounded."""
    deadline = time.monotonic() + START_WAIT_S
    while True:
        try:
            with urllib.request.urlopen(page_of(server, cid) + ".json", timeout=5) as answer:
                assert json.load(answer)["status"] == "waiting"
                return
        except urllib.error.HTTPError as exc:
            assert exc.code == 404, exc
        if client.poll() is not None:
            done = ended(client)
            raise AssertionError(f"the client ended before challenge {cid} existed: {done.returncode}\n"
                                 f"{done.stdout}{done.stderr}{server.output()}")
        assert time.monotonic() < deadline, f"no challenge {cid} after {START_WAIT_S} s:\n{server.output()}"
        time.sleep(0.1)


def test_remote_challenges_wait_for_a_real_serve_and_exit_on_the_verdict(
        remote_challenge_server: tuple[WebServer, Path, str]) -> None:
    server, path, token = remote_challenge_server
    with clients() as started:
        # started one after the other, so each has its id (and so its seed): 1 better, until the
        # sequential test decides (the client's default); 2 not better, a fixed number of pairs
        better = challenge_client(started, server, token, "--bot", "alice.v2", "--opponent", "random")
        wait_started(server, 1, better)
        worse = challenge_client(started, server, token, "--bot", "alice.v1", "--opponent", "alice.v2",
                                 "--pairs", str(PAIRS), "--json")
        wait_started(server, 2, worse)
        assert better.poll() is None and worse.poll() is None  # both wait for a verdict no server plays yet
        served = run_arena("serve", str(path), "--rounds", "1", timeout=SERVE_WAIT_S)
        assert served.returncode == 0, served.stdout[-3000:] + served.stderr
        assert "challenge games played" in served.stdout
        won, lost = ended(better), ended(worse)

    # better: exit status 0, the verdict's line; on stderr, while it waited, the page to watch it on
    assert won.returncode == 0, won.stdout + won.stderr + server.output()
    assert won.stderr == f"challenge 1 started: alice.v2 against random; its page: {page_of(server, 1)}\n"
    line = re.fullmatch(r"challenge 1: decided, verdict better \((\d+) games, 0 failed, "
                        r"interval \[(-?[\d.]+), (-?[\d.]+)\]\)\n", won.stdout)
    assert line is not None, won.stdout
    assert 20 <= int(line[1]) <= 2 * 16 and int(line[1]) % 2 == 0  # whole pairs, 10 to max_pairs (16)
    assert 0 < float(line[2]) < float(line[3])  # the margin's interval lies above lower (0)

    # not better: exit status 1, the challenge's JSON (as the server's, its URL the page above)
    assert lost.returncode == 1, lost.stdout + lost.stderr + server.output()
    assert lost.stderr == f"challenge 2 started: alice.v1 against alice.v2; its page: {page_of(server, 2)}\n"
    final = json.loads(lost.stdout)
    assert {k: final[k] for k in ("id", "bot", "opponent", "user", "status", "verdict", "pairs_asked",
                                  "games_played", "games_failed", "url")} == {
        "id": 2, "bot": "alice.v1", "opponent": "alice.v2", "user": "alice", "status": "decided",
        "verdict": "not_better", "pairs_asked": PAIRS, "games_played": 2 * PAIRS, "games_failed": 0,
        "url": "/t/ladder/challenges/2"}
    assert final["margin"] < 0 and final["interval"][1] < final["bounds"]["upper"] and len(final["games"]) == 2 * PAIRS
    with urllib.request.urlopen(server.url(final["url"]) + ".json", timeout=10) as answer:
        assert json.load(answer)["verdict"] == "not_better"

    # a challenge of a bot the ladder does not have: one line, exit status 2, and no challenge made
    nobody = arena_here("remote", "challenge", "--tournament", "ladder", "--bot", "alice.v2", "--opponent", "nobody",
                        "--server", server.base, "--token", token)
    said = assert_usage_error(nobody, "arena")
    assert 'POST /t/ladder/challenges: the server answered 404: no active bot named "nobody" in ladder' in said, said
    with pytest.raises(urllib.error.HTTPError, match="404"):
        urllib.request.urlopen(page_of(server, 3) + ".json", timeout=10)
