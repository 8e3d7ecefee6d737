"""`arena remote`: a participant's client of an arena's web API (docs/api.md), standard library
only: submit a package and wait for its check's verdict, start a challenge and wait for its
verdict, list one's games. The server and token come from --server/--token or ARENA_SERVER and
ARENA_TOKEN. Every wait is bounded (--timeout); an HTTP refusal or an unreachable server is one line.

Exit status: submit 0 accepted, 1 rejected; challenge 0 better, 1 not better or undecided (as
`arena compare`); 2 bad arguments or a refusal; 3 no verdict within --timeout."""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from ..errors import ArenaError, UsageError, one_line

EXIT_TIMEOUT = 3
REQUEST_TIMEOUT_S = 30.0  # one request's own bound (a wait is many requests, bounded by --timeout)
ANSWER_BYTES = 4 * 1024 * 1024  # of an answer read
USER_AGENT = "arena-remote/1"


class Waited(ArenaError):
    """No verdict within --timeout (exit status 3)."""

    exit_status = EXIT_TIMEOUT


def add_remote_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("remote", help="a participant's client of an arena web server: submit, challenge, games")
    actions = p.add_subparsers(dest="remote_action", required=True, metavar="{submit,challenge,games}")
    q = actions.add_parser("submit", help="submit a bot package (a folder or a .tar.gz) and wait for its verdict")
    q.add_argument("package", help="the package: a folder with bot.toml at its root, or its .tar.gz")
    q = actions.add_parser("challenge", help="start an unrated challenge and wait for its verdict")
    q.add_argument("--tournament", required=True, help="the ladder")
    q.add_argument("--bot", required=True, help="your bot (one of its versions), the challenger")
    q.add_argument("--opponent", required=True, help="the bot it plays")
    q.add_argument("--pairs", type=int, help="pairs of duplicate games (default: until the sequential test decides)")
    q = actions.add_parser("games", help="list your bots' games in a tournament, newest first")
    q.add_argument("--tournament", required=True, help="the tournament")
    q.add_argument("--before", type=int, help="games numbered below this")
    for q in actions.choices.values():
        q.add_argument("--server", default=os.environ.get("ARENA_SERVER"),
                       help="the arena's web address, e.g. https://arena.example.org (default: $ARENA_SERVER)")
        q.add_argument("--token", default=os.environ.get("ARENA_TOKEN"),
                       help="your token (default: $ARENA_TOKEN; the environment keeps it out of `ps`)")
        q.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for a verdict (default 600)")
        q.add_argument("--poll", type=float, default=2.0, help="seconds between looks at the verdict (default 2)")
        q.add_argument("--json", action="store_true", help="print the final JSON instead of a line")
    p.set_defaults(func=cmd_remote)


class Client:
    """Requests to one server with one token; answers as JSON, refusals as ArenaError (one line)."""

    def __init__(self, server: str, token: str) -> None:
        parts = urllib.parse.urlsplit(server)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise UsageError(f"--server must be an http(s) address such as https://arena.example.org, not {server!r}")
        self.base = server.rstrip("/")
        self.token = token

    def request(self, method: str, path: str, body: bytes | None = None, content_type: str | None = None,
                expect: tuple[int, ...] = (200,)) -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json", "User-Agent": USER_AGENT}
        if content_type:
            headers["Content-Type"] = content_type
        url = self.base + path
        try:
            with urllib.request.urlopen(urllib.request.Request(url, data=body, method=method, headers=headers),
                                        timeout=REQUEST_TIMEOUT_S) as answer:
                status, raw = answer.status, answer.read(ANSWER_BYTES)
        except urllib.error.HTTPError as exc:
            status, raw = exc.code, exc.read(ANSWER_BYTES)
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ArenaError(f"cannot reach {self.base}: {one_line(str(reason))}") from None
        try:
            data = json.loads(raw) if raw else {}
        except ValueError:
            data = {}
        if status not in expect:
            said = data.get("error") if isinstance(data, dict) else None
            raise ArenaError(f"{method} {path}: the server answered {status}"
                             + (f": {one_line(str(said))}" if said else " (not the arena's JSON API?)"))
        if not isinstance(data, dict):
            raise ArenaError(f"{method} {path}: the server's answer is not the arena's JSON")
        return data


def _package(path: str) -> bytes:
    from referee.packages.tree import pack

    target = Path(path)
    if target.is_dir():
        if not (target / "bot.toml").is_file():
            raise UsageError(f"{path}: a package folder has bot.toml at its root")
        return pack(target)
    if target.is_file():
        return target.read_bytes()
    raise UsageError(f"{path}: no such folder or file")


def _multipart(field: str, filename: str, content: bytes) -> tuple[bytes, str]:
    boundary = "arena-" + secrets.token_hex(12)
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"{field}\"; filename=\"{filename}\"\r\n"
            "Content-Type: application/gzip\r\n\r\n").encode()
    return head + content + f"\r\n--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


def _follow(client: Client, path: str, done: Any, deadline: float, poll_s: float, what: str) -> dict[str, Any]:
    """GET ``path`` until ``done(answer)``; Waited past ``deadline`` (time.monotonic)."""
    while True:
        answer = client.request("GET", path)
        if done(answer):
            return answer
        if time.monotonic() + poll_s > deadline:
            raise Waited(f"no verdict for {what} yet; it goes on at {client.base}{path.removesuffix('.json')}")
        time.sleep(poll_s)


def cmd_remote(args: argparse.Namespace) -> int:
    if not args.server:
        raise UsageError("give the server: --server URL or ARENA_SERVER")
    if not args.token:
        raise UsageError("give your token: --token TOKEN or ARENA_TOKEN")
    if not 0 < args.timeout <= 7 * 86400 or not 0 < args.poll <= 3600:
        raise UsageError("--timeout is seconds from above 0 to a week, --poll above 0 to an hour")
    client = Client(args.server, args.token)
    deadline = time.monotonic() + args.timeout
    if args.remote_action == "submit":
        return _submit(client, args, deadline)
    if args.remote_action == "challenge":
        return _challenge(client, args, deadline)
    return _games(client, args)


def _submit(client: Client, args: argparse.Namespace, deadline: float) -> int:
    body, content_type = _multipart("archive", "bot.tar.gz", _package(args.package))
    sent = client.request("POST", "/submit", body, content_type, expect=(202,))
    sub = sent.get("submission") or {}
    path = str(sent.get("url", f"/submissions/{sub.get('id')}")) + ".json"
    sys.stderr.write(f"submission {sub.get('id')} sent (version {sub.get('version')}); its check is running\n")
    final = _follow(client, path, lambda a: (a.get("submission") or {}).get("status") != "checking", deadline,
                    args.poll, f"submission {sub.get('id')}")
    row = final["submission"]
    if args.json:
        sys.stdout.write(json.dumps(final, indent=2) + "\n")
    elif row["status"] == "accepted":
        sys.stdout.write(f"submission {row['id']}: accepted, {row['bot']} joins {row['tournament']}\n")
    else:
        sys.stdout.write(f"submission {row['id']}: rejected: {one_line(str(row.get('reason')))}\n")
    return 0 if row["status"] == "accepted" else 1


def _challenge(client: Client, args: argparse.Namespace, deadline: float) -> int:
    if args.pairs is not None and args.pairs < 1:
        raise UsageError("--pairs is a number of pairs from 1 (or leave it out: until the test decides)")
    t = urllib.parse.quote(args.tournament, safe="")
    fields: dict[str, Any] = {"bot": args.bot, "opponent": args.opponent,
                              "pairs": args.pairs if args.pairs is not None else "until_decided"}
    made = client.request("POST", f"/t/{t}/challenges", json.dumps(fields).encode(), "application/json",
                          expect=(200, 201))
    cid = made.get("id")
    if not isinstance(cid, int):
        raise ArenaError("the server's answer to the challenge has no id")
    page = f"/t/{t}/challenges/{cid}"
    sys.stderr.write(f"challenge {cid} started: {args.bot} against {args.opponent}; its page: {client.base}{page}\n")
    final = _follow(client, f"{page}.json", lambda a: a.get("status") in ("decided", "failed"),
                    deadline, args.poll, f"challenge {cid}")
    if args.json:
        sys.stdout.write(json.dumps(final, indent=2) + "\n")
    elif final.get("status") == "failed":  # the platform could not play one of its games: no verdict, and why
        sys.stdout.write(f"challenge {cid}: failed, no verdict: {final.get('error')}\n")
    else:
        interval = final.get("interval")
        shown = f", interval [{interval[0]}, {interval[1]}]" if isinstance(interval, list) and len(interval) == 2 else ""
        sys.stdout.write(f"challenge {cid}: {final.get('status')}, verdict {final.get('verdict')} "
                         f"({final.get('games_played')} games, {final.get('games_failed')} failed{shown})\n")
    return 0 if final.get("verdict") == "better" else 1


def _games(client: Client, args: argparse.Namespace) -> int:
    t = urllib.parse.quote(args.tournament, safe="")
    query = f"?before={args.before}" if args.before is not None else ""
    answer = client.request("GET", f"/t/{t}/me/games.json{query}")
    if args.json:
        sys.stdout.write(json.dumps(answer, indent=2) + "\n")
        return 0
    for g in answer.get("games", []):
        result = g.get("outcome") or g.get("status")
        forfeit = f" (forfeit: {g['forfeit']})" if g.get("forfeit") else ""
        sys.stdout.write(f"{g['number']:>7}  {g['bot']:<24} {result:<6}{forfeit}  {g.get('finished_at') or ''}\n")
    if answer.get("older_url"):
        sys.stderr.write(f"older games: --before {answer['games'][-1]['number']}\n")
    return 0
