"""What every answer carries and every request must have (arena/web/guard.py): the security
headers on every kind of response, the Host names the server answers to (else a 400 saying why),
links that are paths whatever the Host, the forwarded headers of trusted proxies only (the
session cookie's Secure flag), and `arena web`'s refusals of bad settings. Through the ASGI
client and a real server."""

from __future__ import annotations

import http.client
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.routing import Route
from starlette.testclient import TestClient

from arena.web.app import create_app
from arena.web.guard import CSP
from arena.web.settings import WebSettings
from tests.support import arena_here
from tests.web.browser_support import serve
from tests.web.web_support import TOURNAMENT, client_for

SECURITY = {"content-security-policy": CSP, "x-content-type-options": "nosniff", "referrer-policy": "same-origin",
            "x-frame-options": "DENY"}


def assert_guarded(answer: object, what: str) -> None:
    headers = answer.headers  # type: ignore[attr-defined]
    for name, value in SECURITY.items():
        assert headers.get(name) == value, (what, name, headers.get(name))


def _boom(request: object) -> None:
    raise RuntimeError("a page that fails")


@pytest.fixture
def boom_web(played_db: str) -> Iterator[TestClient]:
    """The app with one more route that fails, to see the 500 page's headers."""
    app = create_app(WebSettings(db=played_db, allowed_hosts=("testserver",)))
    app.router.routes.append(Route("/boom", _boom))
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client


# --- security headers -----------------------------------------------------------------------------


def test_every_kind_of_answer_carries_the_security_headers(web: TestClient, boom_web: TestClient) -> None:
    answers = {
        "page": web.get(f"/t/{TOURNAMENT}"),
        "JSON": web.get(f"/t/{TOURNAMENT}.json"),
        "states": web.get(f"/t/{TOURNAMENT}/games/1/states"),
        "404 page": web.get("/no/such/page"),
        "400 page": web.get(f"/t/{TOURNAMENT}/games?before=x"),
        "static file": web.get("/static/style.css"),
        "script": web.get("/static/site.js"),
        "login form": web.get("/login"),
        "403 form": web.post("/logout", data={}),
        "500 page": boom_web.get("/boom"),
        "refused host": web.get("/", headers={"host": "evil.example"}),
    }
    with web.stream("GET", f"/t/{TOURNAMENT}/games/1/events") as stream:  # a stored game: done at once
        answers["event stream"] = stream
        assert stream.headers["content-type"].startswith("text/event-stream")
    assert answers["500 page"].status_code == 500 and "Traceback" not in answers["500 page"].text
    assert answers["403 form"].status_code == 403
    for what, answer in answers.items():
        assert_guarded(answer, what)
    assert answers["script"].headers["content-type"].startswith("text/javascript")


def test_no_page_has_inline_script_or_style(web: TestClient, played_db: str) -> None:
    """What the policy would block: inline handlers, script blocks that run, style attributes.
    JSON data blocks are fine (never run)."""
    bot = web.get(f"/t/{TOURNAMENT}.json").json()["standings"][0]["name"]
    for path in ("/", f"/t/{TOURNAMENT}", f"/t/{TOURNAMENT}/bots/{bot}", f"/t/{TOURNAMENT}/games",
                 f"/t/{TOURNAMENT}/games/1", "/live", "/login", "/no/such/page"):
        html = web.get(path).text
        assert not re.search(r"\son[a-z]+\s*=", html, re.IGNORECASE), path
        assert not re.search(r"\sstyle\s*=", html, re.IGNORECASE), path
        assert "javascript:" not in html.lower(), path
        for tag in re.findall(r"<script\b[^>]*>", html):
            assert "src=" in tag or 'type="application/json"' in tag, (path, tag)


# --- hosts and links ---------------------------------------------------------------------------------


def test_a_host_the_server_was_not_given_is_refused_saying_why(web: TestClient) -> None:
    for host in ("evil.example", "evil.example:80", "testserver.evil.example", "[::2]:8000"):
        refused = web.get("/", headers={"host": host})
        assert refused.status_code == 400, host
        assert "does not answer to the host name" in refused.text and "--allowed-host" in refused.text, host
        assert refused.text.count("\n") == 1
    assert web.get("/", headers={"host": "TestServer:8000"}).status_code == 200  # no port or case in the match


@pytest.mark.parametrize("settings, allowed, refused", [
    ({}, ["127.0.0.1:8000", "localhost", "[::1]:8000"], ["evil.example", "10.0.0.1"]),  # a loopback listen
    ({"host": "0.0.0.0", "public_url": "https://arena.example.org"}, ["arena.example.org", "ARENA.example.org."],
     ["127.0.0.1", "localhost", "evil.example"]),
    ({"host": "192.0.2.7", "allowed_hosts": ("*.example.org",)}, ["192.0.2.7:8000", "a.example.org"],
     ["example.org", "localhost"]),
    ({"host": "0.0.0.0", "allowed_hosts": ("*",)}, ["anything.example"], []),
])
def test_the_hosts_come_from_listen_public_url_and_allowed_hosts(
        played_db: str, settings: dict[str, object], allowed: list[str], refused: list[str]) -> None:
    for web in client_for(played_db, **settings, **({} if "allowed_hosts" in settings else {"allowed_hosts": ()})):
        for host in allowed:
            assert web.get("/login", headers={"host": host}).status_code == 200, host
        for host in refused:
            assert web.get("/login", headers={"host": host}).status_code == 400, host


def test_links_and_scripts_are_paths_so_the_host_never_becomes_an_origin(played_db: str) -> None:
    for web in client_for(played_db, allowed_hosts=("testserver", "other.example")):
        for path in ("/", f"/t/{TOURNAMENT}", f"/t/{TOURNAMENT}/games/1", "/live", "/login", "/nope"):
            html = web.get(path, headers={"host": "other.example"}).text
            assert "other.example" not in html and "http://" not in html, path
        links = web.get(f"/t/{TOURNAMENT}/games/1.json", headers={"host": "other.example"}).json()["links"]
        assert links["states"] == f"/t/{TOURNAMENT}/games/1/states" and links["events"].startswith("/t/")


def test_the_json_link_of_a_page_stays_on_this_site(web: TestClient) -> None:
    html = web.get("//evil.example/x").text  # a 404 page: no JSON link at all
    assert "evil.example" not in html
    html = web.get(f"/t/{TOURNAMENT}/games?bot=greedy&forfeits=1").text
    assert f'href="/t/{TOURNAMENT}/games.json?bot=greedy&amp;forfeits=1"' in html


# --- forwarded headers ---------------------------------------------------------------------------------


def _cookie_from(played_db: str, client: tuple[str, int], headers: dict[str, str], **settings: object) -> str:
    app = create_app(WebSettings(db=played_db, allowed_hosts=("testserver",), **settings))  # type: ignore[arg-type]
    with TestClient(app, client=client) as web:
        answer = web.get("/login", headers=headers)
        assert answer.status_code == 200
        return answer.headers["set-cookie"]


def test_only_a_trusted_proxy_makes_the_cookie_secure(played_db: str) -> None:
    https = {"x-forwarded-proto": "https", "x-forwarded-for": "203.0.113.9"}
    proxies = ("10.0.0.0/8",)
    assert "Secure" in _cookie_from(played_db, ("10.1.2.3", 4000), https, trusted_proxies=proxies)
    assert "Secure" not in _cookie_from(played_db, ("192.0.2.1", 4000), https, trusted_proxies=proxies)
    assert "Secure" not in _cookie_from(played_db, ("10.1.2.3", 4000), {}, trusted_proxies=proxies)
    assert "Secure" not in _cookie_from(played_db, ("10.1.2.3", 4000), https)  # by default loopback only
    # an https public URL: Secure whoever asks
    assert "Secure" in _cookie_from(played_db, ("192.0.2.1", 4000), {}, public_url="https://testserver")


def test_a_real_server_believes_its_trusted_proxy_and_nobody_else(played_db: str, tmp_path: Path) -> None:
    """`arena web --trusted-proxy 127.0.0.2`: a request through 127.0.0.2 saying https gets a Secure
    cookie; the same request from 127.0.0.1 (not the proxy) does not."""
    with serve(played_db, tmp_path, "--trusted-proxy", "127.0.0.2") as server:
        port = int(server.base.rsplit(":", 1)[1])

        def cookie_via(source: str) -> str:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30, source_address=(source, 0))
            try:
                connection.request("GET", "/login", headers={"X-Forwarded-Proto": "https",
                                                             "X-Forwarded-For": "203.0.113.9"})
                answer = connection.getresponse()
                answer.read()
                assert answer.status == 200
                return answer.getheader("set-cookie") or ""
            finally:
                connection.close()

        assert "Secure" in cookie_via("127.0.0.2")
        assert "Secure" not in cookie_via("127.0.0.1")
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        connection.request("GET", "/", headers={"Host": "evil.example"})
        refused = connection.getresponse()
        assert refused.status == 400 and b"evil.example" in refused.read()
        connection.close()


# --- arena web's settings ----------------------------------------------------------------------------


@pytest.mark.parametrize("args, said", [
    (["--listen", "0.0.0.0:8000"], "needs --public-url URL or --allowed-host HOST"),
    (["--public-url", "ftp://arena.example.org"], "--public-url"),
    (["--public-url", "https://arena.example.org/sub"], "--public-url"),
    (["--allowed-host", "arena.example.org:443"], "--allowed-host"),
    (["--trusted-proxy", "10.0.0.1/8"], "--trusted-proxy"),
    (["--trusted-proxy", "proxy.local"], "--trusted-proxy"),
    (["--listen", "127.0.0.1:²"], "--listen"),
])
def test_arena_web_refuses_bad_host_and_proxy_settings_in_one_line(played_db: str, args: list[str], said: str,
                                                                  tmp_path: Path) -> None:
    done = arena_here("web", "--db", played_db, *args, cwd=tmp_path)
    assert done.returncode == 2 and said in done.stderr and done.stderr.count("\n") == 1, done.stderr


def test_the_command_line_becomes_the_settings() -> None:
    from arena.cli.main import build_parser
    from arena.cli.web import web_settings

    args = build_parser().parse_args(["web", "--db", "sqlite:///x.db", "--listen", "0.0.0.0:8000", "--public-url",
                                      "https://Arena.example.org/", "--allowed-host", "localhost", "--trusted-proxy",
                                      "10.0.0.0/8", "--trusted-proxy", "fd00::/8"])
    settings = web_settings(args)
    assert settings.public_url == "https://Arena.example.org" and settings.secure_cookies
    assert settings.hosts() == ("arena.example.org", "localhost")
    assert settings.trusted_proxies == ("10.0.0.0/8", "fd00::/8")
    default = web_settings(build_parser().parse_args(["web", "--db", "sqlite:///x.db"]))
    assert default.trusted_proxies == ("127.0.0.1", "::1") and not default.secure_cookies
    assert default.hosts() == ("localhost", "127.0.0.1", "::1")
