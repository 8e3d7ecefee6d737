"""The web app in a real browser: `arena web` as a server process over a database, headless
Chromium driven by Playwright, and screenshots at desktop and phone widths.

Chromium is the system's (Debian's ``chromium``, which scripts/setup-system.sh installs): this
machine cannot download Playwright's own browser builds, so Playwright only drives it
(``executable_path``). Where chromium or the playwright package is missing, or the browser cannot
start, every browser test skips, saying which. Each pytest-xdist worker starts its own servers, and
each test module its own browser (see ``browser``).

A page's browser test (see tests/web/test_web_browser.py)::

    def test_the_leaderboard(page: Page, web_server: WebServer) -> None:
        page.goto(web_server.url("/t/runs"))
        assert page.locator("h1").inner_text() == "runs"
        screenshot(page, "leaderboard")

The ``page`` fixture fails the test when the page opened a JavaScript dialog (alert, confirm: an
injected script ran), threw an uncaught error, broke the app's content security policy (a
``securitypolicyviolation`` event, or Chromium's console saying it refused something), or asked
for anything outside the app's server (no CDN, nothing fetched at run time).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.conftest import ROOT

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
SCREENSHOTS_ENV = "ARENA_WEB_SCREENSHOTS"  # a folder: screenshots go there (to refresh docs/web/)
START_TIMEOUT_S = 30.0  # a server process that does not answer by then has failed
STOP_TIMEOUT_S = 10.0
CHROMIUM_NAMES = ("chromium", "chromium-browser")  # Debian's name, then other distributions'


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (the server binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class WebServer:
    """A running `arena web` process: its base address and its output (for failure messages)."""

    base: str
    process: subprocess.Popen[bytes]
    log: Path

    def url(self, path: str = "/") -> str:
        return self.base + path

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")[-3000:]


def _answers(url: str) -> bool:
    """Whether an HTTP server answers at ``url`` (any status counts: it is up)."""
    try:
        with urllib.request.urlopen(url, timeout=2):
            return True
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False


@contextmanager
def serve(db: str, folder: Path, *options: str) -> Iterator[WebServer]:
    """`python -m arena.cli web --db DB` on a free port, until it answers (bounded); stopped at the end.
    Its output goes to a log file in ``folder``."""
    port = free_port()
    log = folder / f"arena-web-{port}.log"
    with log.open("wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "arena.cli", "web", "--db", db, "--listen",
                                    f"127.0.0.1:{port}", *options], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL)
    server = WebServer(f"http://127.0.0.1:{port}", process, log)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _answers(server.url("/")):
            if process.poll() is not None:
                raise AssertionError(f"arena web exited with status {process.returncode}:\n{server.output()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"arena web did not answer within {START_TIMEOUT_S:.0f} s:\n{server.output()}")
            time.sleep(0.1)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(STOP_TIMEOUT_S)


def chromium_path() -> str | None:
    """The system's Chromium, or None."""
    for name in CHROMIUM_NAMES:
        if (found := shutil.which(name)) is not None:
            return found
    return None


@contextmanager
def launch_browser() -> Iterator[Browser]:
    """Headless system Chromium under Playwright; skips the test (one line saying what is missing)
    when chromium or playwright is not there or the browser cannot start."""
    os.environ.setdefault("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")  # never fetch a browser build
    try:
        from playwright.sync_api import Error, sync_playwright
    except ImportError:
        pytest.skip("browser tests need the playwright package (pip install -e '.[dev]')")
    executable = chromium_path()
    if executable is None:
        pytest.skip("browser tests need Chromium: no chromium on PATH (scripts/setup-system.sh installs it "
                    "with apt-get install chromium)")
    # Chromium refuses to start its sandbox as root (CI runs as root): --no-sandbox there. The
    # pages it opens are the app's own, served from 127.0.0.1, so the sandbox protects nothing here.
    args = ["--no-sandbox"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []
    with sync_playwright() as playwright:
        try:
            browser = playwright.chromium.launch(executable_path=executable, headless=True, args=args)
        except Error as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            pytest.skip(f"browser tests skip: {executable} does not start under Playwright: {first}")
        try:
            yield browser
        finally:
            browser.close()


LOCAL = "http://127.0.0.1:"  # the test servers' origins: anything else a page asks for is refused
CSP_MARK = "CSP violation:"
# run in every page before its own scripts: each violation of the content security policy is told
# on the console, where PageWatch sees it (the browser also says so itself, in its own words)
REPORT_CSP = f"""document.addEventListener("securitypolicyviolation", (e) =>
  console.error("{CSP_MARK} " + e.violatedDirective + " blocked " + (e.blockedURI || "inline") +
                " at " + e.sourceFile + ":" + e.lineNumber));"""


@dataclass
class PageWatch:
    """What a page did that a test of the app must never see."""

    dialogs: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)
    csp: list[str] = field(default_factory=list)  # what broke the content security policy

    def problems(self) -> list[str]:
        return ([f"a JavaScript dialog opened: {d}" for d in self.dialogs]
                + [f"an uncaught script error: {e}" for e in self.errors]
                + [f"a request outside the app: {u}" for u in self.outside]
                + [f"the content security policy refused something: {c}" for c in self.csp])

    def console(self, message: Any) -> None:
        text = str(message.text)
        if text.startswith(CSP_MARK) or "Content Security Policy" in text:
            self.csp.append(text)


@contextmanager
def open_page(browser: Browser) -> Iterator[tuple[Page, PageWatch]]:
    """A fresh page (its own context: no cookies shared) at desktop size, watched: dialogs are
    recorded and dismissed, script errors and violations of the content security policy
    recorded, requests to anything but a server on 127.0.0.1 refused."""
    context = browser.new_context(viewport=DESKTOP)  # type: ignore[arg-type]
    watch = PageWatch()
    page = context.new_page()
    page.set_default_timeout(10_000)  # every wait of a browser test is bounded, well under the test's own

    def on_dialog(dialog: Any) -> None:
        watch.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    def on_route(route: Any) -> None:
        url = route.request.url
        if url.startswith((LOCAL, "data:", "about:")):
            route.continue_()
        else:
            watch.outside.append(url)
            route.abort()

    page.on("dialog", on_dialog)
    page.on("pageerror", lambda error: watch.errors.append(str(error)))
    page.on("console", watch.console)
    page.add_init_script(REPORT_CSP)
    page.route("**/*", on_route)
    try:
        yield page, watch
    finally:
        context.close()


def screenshot_folder() -> Path:
    """Where screenshots go: $ARENA_WEB_SCREENSHOTS when set (to refresh docs/web/), else a folder
    under the system's temporary directory."""
    chosen = os.environ.get(SCREENSHOTS_ENV)
    folder = Path(chosen) if chosen else Path(tempfile.gettempdir()) / "arena-web-screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def screenshot(page: Page, name: str) -> dict[str, Path]:
    """Full-page PNGs of the page as it is at desktop (1280x800) and phone (390x844) widths,
    ``NAME-desktop.png`` and ``NAME-phone.png``; the page is left at its first size."""
    folder = screenshot_folder()
    before = page.viewport_size
    shots = {}
    try:
        for label, size in (("desktop", DESKTOP), ("phone", PHONE)):
            page.set_viewport_size(size)  # type: ignore[arg-type]
            shots[label] = folder / f"{name}-{label}.png"
            page.screenshot(path=str(shots[label]), full_page=True)
    finally:
        if before is not None:
            page.set_viewport_size(before)
    return shots


def png_size(path: Path) -> tuple[int, int]:
    """A PNG's width and height in pixels (from its IHDR chunk)."""
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


# --- fixtures (imported by tests/web/conftest.py) ---------------------------------------------


@pytest.fixture(scope="session")
def web_server(played_db: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebServer]:
    """`arena web` over ``played_db`` (the round robin "runs"), one process per test worker."""
    with serve(played_db, tmp_path_factory.mktemp("web-server")) as server:
        yield server


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Headless Chromium for one test module (skips where it cannot run). Not one per session:
    Playwright's sync API keeps an event loop running in the thread while it is open, so any
    asyncio.run() in the same process (a test of another module, or a fixture that plays a
    tournament) would fail meanwhile; pytest closes a module's fixtures before the next module's
    tests, so no other test runs while the browser is open. A fixture of a browser test that
    plays games must therefore be set up before ``browser`` (session-scoped, as ``played_db``)."""
    with launch_browser() as launched:
        yield launched


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A fresh watched page at 1280x800; the test fails if it opened a dialog, threw a script
    error or reached outside the test servers."""
    with open_page(browser) as (opened, watch):
        yield opened
    problems = watch.problems()
    assert not problems, "\n".join(problems)
